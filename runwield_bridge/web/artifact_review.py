"""Artifact Review pages: GET shows the file a link opens (Markdown rendered, an image shown, text as text) with a
feedback box; POST answers the review once. The file and the images it shows are read from inside its project only."""

from __future__ import annotations

import posixpath
import time
from pathlib import Path, PurePosixPath
from urllib.parse import quote, urlsplit

from aiohttp import web
from aiohttp.http import HttpProcessingError
from markupsafe import Markup

from ..core.artifact_reviews import ARTIFACT_PATH, ArtifactReviews
from ..core.project_paths import NotRegularFile, OutsideProject, confined, read_file
from ..core.records import ArtifactReviewRecord
from ..core.reviews import ReviewRefused
from ..markdown import PARSER
from .review import SECURITY_HEADERS, TEMPLATES, refusal_page, render_page
from .server import WebServer

IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}
"""The images a page shows, by suffix (SVG is not one: it can carry script)."""
MARKDOWN_SUFFIXES = (".md", ".markdown")
MAX_SHOWN_BYTES = 1024 * 1024
MAX_IMAGE_BYTES = 16 * 1024 * 1024
PAGE_HEADERS = SECURITY_HEADERS | {"Content-Security-Policy": SECURITY_HEADERS["Content-Security-Policy"] + "; img-src 'self'"}
"""The review page's headers: no script, no outside request; images only from this server (the project's own)."""


def add_artifact_routes(server: WebServer, reviews: ArtifactReviews) -> None:
    """Mount the Artifact Review pages on the shared web server (before it starts)."""
    pages = ArtifactPages(reviews)
    server.add_route("GET", ARTIFACT_PATH + "{token}", pages.show)
    server.add_route("POST", ARTIFACT_PATH + "{token}", pages.answer)
    server.add_route("GET", ARTIFACT_PATH + "{token}/file/{path:.+}", pages.image)


class ArtifactPages:
    """The handlers; the token in the path is the only credential (no cookies, so no cross-site forgery)."""

    def __init__(self, reviews: ArtifactReviews) -> None:
        self.reviews = reviews

    async def show(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        try:
            review = await self.reviews.resolve(token)
        except ReviewRefused as refused:
            return refusal_page(refused)
        return _review_page(review, token)

    async def answer(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        try:
            review = await self.reviews.resolve(token)
        except ReviewRefused as refused:
            return refusal_page(refused)
        try:
            form = await request.post()
        except (ValueError, LookupError, HttpProcessingError):  # not UTF-8, an unknown charset, a broken multipart body
            return _review_page(review, token, "That was not a form this page sent. Nothing was changed.", status=400)
        feedback = form.get("feedback")
        if form.get("action") != "answer" or not isinstance(feedback, str):
            return _review_page(review, token, "That was not a form this page sent. Nothing was changed.", status=400)
        try:
            answered = await self.reviews.answer(token, feedback)
        except ReviewRefused as refused:
            return refusal_page(refused)
        said = "your feedback goes to the Agent" if answered.feedback else "the Agent is told you accepted it as it is"
        return render_page("message.html", 200, title="Thank you", reason=f"{review.path}: {said}. You can close this page.")

    async def image(self, request: web.Request) -> web.StreamResponse:
        """An image inside the review's project (the artifact, or one its Markdown shows), with its content type."""
        try:
            review = await self.reviews.resolve(request.match_info["token"])
        except ReviewRefused as refused:
            return refusal_page(refused)
        name = request.match_info["path"]
        kind = IMAGE_TYPES.get(PurePosixPath(name).suffix.lower())
        try:
            if kind is None:
                raise NotRegularFile(f"{name!r} is not an image")
            root = Path(review.project_dir)
            data, _ = read_file(root, confined(root, name), MAX_IMAGE_BYTES)
        except (OutsideProject, NotRegularFile, OSError):
            return render_page("refusal.html", 404, title="Not found", reason="There is no such image in this review.")
        return web.Response(body=data, content_type=kind, headers=SECURITY_HEADERS)


def _review_page(review: ArtifactReviewRecord, token: str, error: str = "", status: int = 200) -> web.Response:
    """The question, the file and the feedback box."""
    html = TEMPLATES.get_template("artifact_review.html").render(
        title=f"Review: {review.path}",
        path=review.path,
        question=review.question,
        expires=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(review.expires_at)),
        error=error,
        body=_shown(review, token),
    )
    return web.Response(text=html, content_type="text/html", status=status, headers=PAGE_HEADERS)


def _shown(review: ArtifactReviewRecord, token: str) -> Markup:
    """The file as the page shows it: an image, rendered Markdown (raw HTML in it is text), or text; everything escaped
    that the shared parser did not mark up."""
    suffix = PurePosixPath(review.path).suffix.lower()
    if suffix in IMAGE_TYPES:
        return Markup('<img src="{}" alt="{}">').format(_file_url(token, review.path), review.path)
    root = Path(review.project_dir)
    try:
        data, info = read_file(root, confined(root, review.path), MAX_SHOWN_BYTES)
    except (OutsideProject, NotRegularFile, OSError) as exc:
        return Markup("<p class=\"error\">The file cannot be read now: {}</p>").format(exc)
    if b"\x00" in data[:8192]:
        return Markup("<p>This file is not text or an image this page shows; open it where it is.</p>")
    text = data.decode("utf-8", errors="replace")
    cut = Markup("<p class=\"meta\">(Only the first {} KiB are shown.)</p>").format(MAX_SHOWN_BYTES // 1024) if info.st_size > len(data) else ""
    if suffix in MARKDOWN_SUFFIXES:
        return _markdown(text, review.path, token) + cut
    return Markup("<pre><code>{}</code></pre>").format(text) + cut


def _markdown(text: str, path: str, token: str) -> Markup:
    """Markdown through the one parser (raw HTML off); an image with a relative address is read from the project,
    relative to the file."""
    tokens = PARSER.parse(text)
    folder = posixpath.dirname(path)
    for block in tokens:
        for child in block.children or ():
            source = str(child.attrGet("src") or "") if child.type == "image" else ""
            if source and not urlsplit(source).scheme and not source.startswith("/"):
                child.attrSet("src", _file_url(token, posixpath.normpath(posixpath.join(folder, source))))
    return Markup(PARSER.renderer.render(tokens, PARSER.options, {}))


def _file_url(token: str, path: str) -> str:
    """Where the page's image ``path`` (relative to the project) is served: relative to the page, so it works behind a
    reverse proxy's path too."""
    return f"{token}/file/{quote(path)}"

