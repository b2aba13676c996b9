"""Code Review pages: GET shows an execution's change (highlighted diffs, validation, commit message); POST decides
it once: Publish, Request changes (with notes) or Abandon (confirmed)."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

from aiohttp import web
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from ..core.code_change import DiffLine, FileChange, code_change
from ..core.code_reviews import CODE_REVIEW_PATH, CodeDecision, CodeReviewHub, OpenCodeReview
from ..core.reviews import ReviewRefused
from .review import opened, posted_form, refusal_page, render_page
from .server import WebServer

LINES_SHOWN = 2000
"""A file's diff lines shown on the page; the rest are counted."""
SIGN = {"added": "+", "removed": "−", "context": " "}
DONE = {
    "publish": ("Publishing", "is being published on its branch; the chat reports the commit. You can close this page."),
    "changes": ("Changes requested", "goes back to the Agent with your notes; validation runs again and the chat offers a new review."),
    "abandon": ("Abandoned", "is abandoned; nothing was deleted. The chat says so. You can close this page."),
}
FORMATTER = HtmlFormatter(nowrap=True)


def add_code_review_routes(server: WebServer, hub: CodeReviewHub) -> None:
    """Mount the Code Review pages on the shared web server (before it starts)."""
    pages = CodeReviewPages(hub)
    server.add_route("GET", CODE_REVIEW_PATH + "{token}", pages.show)
    server.add_route("POST", CODE_REVIEW_PATH + "{token}", pages.decide)


@dataclass(frozen=True, slots=True)
class ShownLine:
    """A diff line as the page shows it: its kind, number, sign and highlighted HTML (or the gap's words)."""

    kind: str
    text: str
    number: int | None
    sign: str
    html: Markup


@dataclass(frozen=True, slots=True)
class ShownFile:
    """A changed file as the page shows it; ``hidden`` counts the diff lines left out."""

    path: str
    added: int
    removed: int
    binary: bool
    lines: tuple[ShownLine, ...]
    hidden: int


class CodeReviewPages:
    """The handlers; the token in the path is the only credential (no cookies, so no cross-site forgery)."""

    def __init__(self, hub: CodeReviewHub) -> None:
        self.hub = hub

    async def show(self, request: web.Request) -> web.Response:
        current = await opened(self.hub.resolve, request)
        return current if isinstance(current, web.Response) else await self._page(current)

    async def decide(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        current = await opened(self.hub.resolve, request)
        if isinstance(current, web.Response):
            return current
        form = await posted_form(request)
        if form is None:
            return await self._page(current, "That was not a form this page sent. Nothing was changed.", status=400)
        notes = str(form.get("notes", ""))
        if form.get("round") != str(current.review.round):
            return await self._page(current, "This form was for another round of the work. Nothing was changed.", notes, 400)
        action = form.get("action")
        if action not in DONE:
            return await self._page(current, "Choose Publish, Request changes or Abandon. Nothing was changed.", notes, 400)
        if action == "abandon" and form.get("confirm") != "yes":
            return await self._page(current, "Tick the box to confirm Abandon. Nothing was changed.", notes, 400)
        decision: CodeDecision = action  # type: ignore[assignment]
        try:
            await self.hub.decide(token, decision, notes)
        except ReviewRefused as refused:
            return refusal_page(refused)
        except ValueError as exc:
            return await self._page(current, f"{exc} Nothing was changed.", notes, 400)
        title, rest = DONE[decision]
        return render_page("code_review_done.html", 200, title=title, round=current.review.round, plan_title=current.plan.title, rest=rest)

    async def _page(self, current: OpenCodeReview, error: str = "", notes: str = "", status: int = 200) -> web.Response:
        change = await code_change(self.hub.store, self.hub.plans, current.execution)
        return render_page(
            "code_review.html",
            status,
            title=f"Code review: {current.plan.title}",
            plan_title=current.plan.title,
            round=current.review.round,
            expires=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(current.review.expires_at)),
            change=change,
            files=[shown_file(f) for f in change.files],
            highlight_css=Markup(FORMATTER.get_style_defs(".code")),  # Pygments' own CSS, no user input
            error=error,
            notes=notes,
        )


def shown_file(change: FileChange) -> ShownFile:
    """A file's diff lines highlighted for its language (guessed from its name), up to ``LINES_SHOWN``."""
    lexer = lexer_for(change.path)
    lines = tuple(shown_line(line, lexer) for line in change.lines[:LINES_SHOWN])
    return ShownFile(change.path, change.added, change.removed, change.binary, lines, max(0, len(change.lines) - LINES_SHOWN))


def shown_line(line: DiffLine, lexer: Lexer) -> ShownLine:
    html = Markup("") if line.kind == "gap" else Markup(highlight(line.text, lexer, FORMATTER).rstrip("\n"))
    return ShownLine(line.kind, line.text, line.number, SIGN.get(line.kind, ""), html)  # Pygments escapes the text


@functools.lru_cache(maxsize=64)
def lexer_for(path: str) -> Lexer:
    try:
        return get_lexer_for_filename(path, stripnl=False, stripall=False)
    except ClassNotFound:
        return TextLexer(stripnl=False)
