"""Plan review pages: GET shows the Plan revision a link opens; POST sends feedback or approves it."""

from __future__ import annotations

import time
from collections.abc import Mapping
from html import escape
from typing import Any

from aiohttp import web
from aiohttp.http import HttpProcessingError

from ..core.reviews import REVIEW_PATH, Feedback, LineComment, OpenReview, ReviewHub, ReviewRefused
from .markdown import block_html, parse_blocks
from .server import WebServer

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}
REFUSAL_STATUS = {"unknown": 404, "expired": 410, "superseded": 410, "decided": 409}
REFUSAL_HEADING = {
    "unknown": "Link not valid",
    "expired": "Link expired",
    "superseded": "Link replaced",
    "decided": "Review closed",
}
STYLE = """
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:50rem;margin:2rem auto;padding:0 1rem}
.meta{color:#5b6475;font-size:.9rem}
article{background:#fff;border:1px solid #d9dde5;border-radius:8px;padding:1rem 1.5rem}
.block{position:relative}
.block details{margin:0 0 .5rem}
.block summary{color:#5b6475;font-size:.8rem;cursor:pointer}
textarea{width:100%;box-sizing:border-box;min-height:4rem;font:inherit}
pre{background:#f0f2f5;padding:.75rem;overflow-x:auto}
.actions{display:flex;gap:1rem;margin:1rem 0 3rem}
button{font:inherit;padding:.5rem 1rem;border-radius:6px;border:1px solid #8a93a6;background:#fff;cursor:pointer}
button.approve{background:#1f7a3a;border-color:#1f7a3a;color:#fff}
.error{color:#a11d1d}
"""


def add_review_routes(server: WebServer, hub: ReviewHub) -> None:
    """Mount the review pages on the shared web server (before it starts)."""
    pages = ReviewPages(hub)
    server.add_route("GET", REVIEW_PATH + "{token}", pages.show)
    server.add_route("POST", REVIEW_PATH + "{token}", pages.decide)


class ReviewPages:
    """The handlers; the token in the path is the only credential (no cookies, so no cross-site forgery)."""

    def __init__(self, hub: ReviewHub) -> None:
        self.hub = hub

    async def show(self, request: web.Request) -> web.Response:
        try:
            current = await self.hub.resolve(request.match_info["token"])
        except ReviewRefused as refused:
            return _refusal(refused)
        return _page(f"Review: {current.plan.title}", _review_body(current))

    async def decide(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        try:
            current = await self.hub.resolve(token)
        except ReviewRefused as refused:
            return _refusal(refused)
        try:
            form = await request.post()
        except (ValueError, LookupError, HttpProcessingError):  # not UTF-8, an unknown charset, a broken multipart body
            return _problem(current, "That was not a form this page sent. Nothing was changed.", {})
        if form.get("revision") != str(current.review.revision):
            return _problem(current, "This form was for another revision of the Plan. Nothing was changed.", form)
        action = form.get("action")
        try:
            feedback = _feedback(form, current.text)
            if action == "approve":
                await self.hub.approve(token, feedback)
                return _page("Approved", _notice(current, "is approved. The Agent has been told; you can close this page."))
            if action == "feedback":
                await self.hub.request_changes(token, feedback)
                return _page("Feedback sent", _notice(current, "goes back to the Agent with your feedback. You can close this page."))
            return _problem(current, "Choose Send feedback or Approve. Nothing was changed.", form)
        except ReviewRefused as refused:
            return _refusal(refused)
        except ValueError as exc:
            return _problem(current, f"{exc} Nothing was changed.", form)


def _feedback(form: Mapping[str, Any], text: str) -> Feedback:
    """Line comments (fields ``line-N`` on a line where a block starts) and the general note; bad fields raise ValueError."""
    source = text.splitlines()
    starts = {block.line for block in parse_blocks(text)}
    comments = []
    for key, value in form.items():
        if not key.startswith("line-") or not str(value).strip():
            continue
        number = key.removeprefix("line-")
        if not number.isdigit() or int(number) not in starts:
            raise ValueError(f"There is no line {number} to comment on.")
        comments.append(LineComment(int(number), source[int(number) - 1], str(value).strip()))
    comments.sort(key=lambda c: c.line)
    return Feedback(str(form.get("general", "")).strip(), tuple(comments))


def _review_body(current: OpenReview, error: str = "", typed: Mapping[str, Any] | None = None) -> str:
    """The Plan with a comment box per block, the general box and the two actions; ``typed`` refills the boxes."""
    review, plan = current.review, current.plan
    typed = typed or {}

    def box(name: str) -> str:
        return escape(str(typed.get(name, "")))

    expires = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(review.expires_at))
    blocks = "\n".join(
        f'<div class="block" id="L{b.line}">{block_html(b)}<details{" open" if box(f"line-{b.line}") else ""}>'
        f'<summary>Comment on line {b.line}</summary><textarea name="line-{b.line}" '
        f'aria-label="Comment on line {b.line}">{box(f"line-{b.line}")}</textarea></details></div>'
        for b in parse_blocks(current.text)
    )
    problem = f'<p class="error" role="alert">{escape(error)}</p>' if error else ""
    return f"""<p class="meta">Plan review · {escape(plan.title)} · revision {review.revision} · link expires {expires}</p>
{problem}<form method="post">
<input type="hidden" name="revision" value="{review.revision}">
<article>{blocks}</article>
<p><label for="general">General feedback</label></p>
<textarea id="general" name="general">{box("general")}</textarea>
<div class="actions">
<button type="submit" name="action" value="feedback">Send feedback</button>
<button type="submit" name="action" value="approve" class="approve">Approve revision {review.revision}</button>
</div>
</form>"""


def _notice(current: OpenReview, rest: str) -> str:
    return f"<h1>Thank you</h1><p>Revision {current.review.revision} of “{escape(current.plan.title)}” {escape(rest)}</p>"


def _problem(current: OpenReview, message: str, typed: Mapping[str, Any]) -> web.Response:
    return _page(f"Review: {current.plan.title}", _review_body(current, message, typed), status=400)


def _refusal(refused: ReviewRefused) -> web.Response:
    heading = REFUSAL_HEADING[refused.reason]
    body = f"<h1>{heading}</h1><p>{escape(str(refused))}</p><p>Nothing was changed.</p>"
    return _page(heading, body, status=REFUSAL_STATUS[refused.reason])


def _page(title: str, body: str, status: int = 200) -> web.Response:
    html = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>{escape(title)}</title><style>{STYLE}</style></head>
<body><main>{body}</main></body></html>"""
    return web.Response(text=html, content_type="text/html", status=status, headers=SECURITY_HEADERS)
