"""Plan review pages: GET shows the Plan revision a link opens; POST sends feedback or approves it."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.web_request import FileField
from aiohttp.http import HttpProcessingError
from jinja2 import Environment, PackageLoader
from markupsafe import Markup
from multidict import MultiDictProxy

from ..core.reviews import REVIEW_PATH, Feedback, LineComment, OpenReview, ReviewHub, ReviewRefused
from .plan_blocks import block_html, parse_blocks
from .server import WebServer

T = TypeVar("T")
TEMPLATES = Environment(loader=PackageLoader("runwield_bridge.web"), autoescape=True, keep_trailing_newline=True)

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
def add_review_routes(server: WebServer, hub: ReviewHub) -> None:
    """Mount the review pages on the shared web server (before it starts)."""
    pages = ReviewPages(hub)
    server.add_route("GET", REVIEW_PATH + "{token}", pages.show)
    server.add_route("POST", REVIEW_PATH + "{token}", pages.decide)


async def opened(resolve: Callable[[str], Awaitable[T]], request: web.Request) -> T | web.Response:
    """What the link in the request's path opens, or the page saying why it cannot be used."""
    try:
        return await resolve(request.match_info["token"])
    except ReviewRefused as refused:
        return refusal_page(refused)


async def posted_form(request: web.Request) -> MultiDictProxy[str | bytes | FileField] | None:
    """The posted form; None when the body is none (not UTF-8, an unknown charset, a broken multipart body)."""
    try:
        return await request.post()
    except (ValueError, LookupError, HttpProcessingError):
        return None


class ReviewPages:
    """The handlers; the token in the path is the only credential (no cookies, so no cross-site forgery)."""

    def __init__(self, hub: ReviewHub) -> None:
        self.hub = hub

    async def show(self, request: web.Request) -> web.Response:
        current = await opened(self.hub.resolve, request)
        return current if isinstance(current, web.Response) else _review_page(current)

    async def decide(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        current = await opened(self.hub.resolve, request)
        if isinstance(current, web.Response):
            return current
        form = await posted_form(request)
        if form is None:
            return _problem(current, "That was not a form this page sent. Nothing was changed.", {})
        if form.get("revision") != str(current.review.revision):
            return _problem(current, "This form was for another revision of the Plan. Nothing was changed.", form)
        action = form.get("action")
        try:
            feedback = _feedback(form, current.text)
            if action == "approve":
                await self.hub.approve(token, feedback)
                return _notice("Approved", current, "is approved. The Agent has been told; you can close this page.")
            if action == "feedback":
                await self.hub.request_changes(token, feedback)
                return _notice("Feedback sent", current, "goes back to the Agent with your feedback. You can close this page.")
            return _problem(current, "Choose Send feedback or Approve. Nothing was changed.", form)
        except ReviewRefused as refused:
            return refusal_page(refused)
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


def _review_page(current: OpenReview, error: str = "", typed: Mapping[str, Any] | None = None, status: int = 200) -> web.Response:
    """The Plan with a comment box per block, the general box and the two actions; ``typed`` refills the boxes.

    Only the blocks are Markup: the shared parser has escaped everything in them it did not mark up.
    """
    review, typed = current.review, typed or {}
    blocks = [
        {"line": b.line, "html": Markup(block_html(b)), "comment": str(typed.get(f"line-{b.line}", ""))}
        for b in parse_blocks(current.text)
    ]
    return render_page(
        "review.html",
        status,
        title=f"Review: {current.plan.title}",
        plan_title=current.plan.title,
        revision=review.revision,
        expires=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(review.expires_at)),
        error=error,
        blocks=blocks,
        general=str(typed.get("general", "")),
    )


def _notice(title: str, current: OpenReview, rest: str) -> web.Response:
    return render_page("notice.html", 200, title=title, revision=current.review.revision, plan_title=current.plan.title, rest=rest)


def _problem(current: OpenReview, message: str, typed: Mapping[str, Any]) -> web.Response:
    return _review_page(current, message, typed, status=400)


def refusal_page(refused: ReviewRefused) -> web.Response:
    heading = REFUSAL_HEADING[refused.reason]
    return render_page("refusal.html", REFUSAL_STATUS[refused.reason], title=heading, reason=str(refused))


def render_page(template: str, status: int, **context: Any) -> web.Response:
    """A page from the package's templates, every value escaped unless it is Markup."""
    html = TEMPLATES.get_template(template).render(**context)
    return web.Response(text=html, content_type="text/html", status=status, headers=SECURITY_HEADERS)
