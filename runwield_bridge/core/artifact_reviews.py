"""Artifact Review: the agent asks the person to review a file it produced; a browser page shows the file and takes
one answer (feedback, or an empty acceptance), which answers the agent's tool call."""

from __future__ import annotations

import asyncio
import functools
import secrets
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .events import ArtifactLink, MessageChunk
from .models import ToolSpec
from .project_paths import OutsideProject, confined, relative
from .records import ArtifactReviewRecord
from .reviews import DECISIONS, TOKEN_BYTES, WAIT_POLL_SECONDS, ReviewHub, ReviewRefused, ReviewUnavailable, hash_token, wait_for_decision
from .tools import Tool, ToolContext, ToolError

if TYPE_CHECKING:
    from .store import Store

ARTIFACT_PATH = "/artifact/"
LINK_NOT_KEPT = "(the link was sent to the client that was live then, and is not kept)"
MAX_QUESTION_LENGTH = 2000
AnswerState = Literal["answered", "expired", "withdrawn"]


@dataclass(frozen=True, slots=True)
class ArtifactAnswer:
    """How an Artifact Review ended: what the reviewer wrote (empty: accepted as it is), or that nobody answered."""

    review_id: str
    path: str
    state: AnswerState
    feedback: str = ""

    def for_agent(self) -> str:
        """The tool's result, as the agent reads it."""
        if self.state == "expired":
            return f"The review link for {self.path} expired without an answer."
        if self.state == "withdrawn":
            return f"The review of {self.path} was withdrawn before anyone answered."
        if not self.feedback:
            return f"The reviewer accepted {self.path} without comments."
        return f"The reviewer answered about {self.path}:\n{self.feedback}"


class ArtifactReviews:
    """Opens Artifact Reviews, checks their links, records the one answer and wakes the tool call that waits for it.
    Links, their lifetime and the clock are the Plan reviews' (``reviews``): the same server, the same rules."""

    def __init__(self, store: Store, reviews: ReviewHub) -> None:
        self.store = store
        self.reviews = reviews

    async def start(self, session_id: str, root: Path, path: str, question: str) -> ArtifactLink:
        """Open a review of the regular file ``path`` inside ``root``; ValueError if it cannot be reviewed."""
        target = confined(root, path)
        if not target.is_file():
            raise ValueError(f"{path!r} is not a file in the project")
        base = await self.reviews.page_base()  # first, so a page that cannot be served opens no review
        token = secrets.token_urlsafe(TOKEN_BYTES)
        shown = relative(root, target)
        review = ArtifactReviewRecord(
            id=f"art_{uuid.uuid4().hex[:16]}", session_id=session_id, project_dir=str(root.resolve()), path=shown,
            question=question, token_hash=hash_token(token), expires_at=self.reviews.now() + self.reviews.ttl,
        )
        await self.store.artifact_reviews.add(review)
        url = f"{base}{ARTIFACT_PATH}{token}"
        until = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(review.expires_at))
        words = f"Review {shown} in your browser: {{link}}\n{question}\n(The link works until {until}.)"
        return ArtifactLink(words.format(link=url), words.format(link=LINK_NOT_KEPT), url, review.id, shown, review.expires_at, uuid.uuid4().hex)

    async def resolve(self, token: str) -> ArtifactReviewRecord:
        """The open review a link opens, or ReviewRefused saying why it cannot be used."""
        review = await self.store.artifact_reviews.find(hash_token(token)) if token else None
        if review is None:
            raise ReviewRefused("unknown", "This review link is not valid.")
        if review.state == "answered":
            raise ReviewRefused("decided", f"This review is closed: {review.path} was already answered.")
        if review.state == "withdrawn":
            raise ReviewRefused("superseded", f"The agent stopped waiting for this review of {review.path}.")
        if review.state == "expired" or self.reviews.now() >= review.expires_at:
            raise ReviewRefused("expired", "This review link has expired.")
        return review

    async def answer(self, token: str, feedback: str) -> ArtifactAnswer:
        """Answer the review once: ``feedback`` (empty: accepted as it is) goes to the waiting tool call."""
        review = await self.resolve(token)
        if not await self.store.artifact_reviews.settle(review.id, "answered", feedback.strip()):
            await self.resolve(token)  # it closed in between: refuse with the reason
            raise ReviewRefused("decided", "This review was closed while you were reading it.")
        await self.store.notifier.notify(DECISIONS, review.id)
        return ArtifactAnswer(review.id, review.path, "answered", feedback.strip())

    async def wait(self, review_id: str, poll: float = WAIT_POLL_SECONDS) -> ArtifactAnswer:
        """The review's answer, once there is one (or it expired)."""
        return await wait_for_decision(self.store.notifier, review_id, functools.partial(self._stored, review_id), self.reviews.now, poll)

    async def withdraw(self, review_id: str) -> None:
        """Nobody waits for the review any more (its turn was cancelled): its page says so and takes no answer."""
        await self.store.artifact_reviews.settle(review_id, "withdrawn")

    async def _stored(self, review_id: str) -> tuple[ArtifactAnswer | None, float]:
        review = await self.store.artifact_reviews.get(review_id)
        if review is None:
            raise LookupError(f"no Artifact Review with id {review_id!r}")
        if review.state == "open":
            if self.reviews.now() < review.expires_at:
                return None, review.expires_at
            await self.store.artifact_reviews.settle(review.id, "expired")
            review = await self.store.artifact_reviews.get(review_id)
            assert review is not None
        state: AnswerState = review.state if review.state in ("answered", "withdrawn") else "expired"  # type: ignore[assignment]
        return ArtifactAnswer(review.id, review.path, state, review.feedback), review.expires_at


ARTIFACT_REVIEW_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file to review, relative to the project (Markdown, an image, or text)"},
        "question": {"type": "string", "description": "What the person should look at or decide"},
    },
    "required": ["path", "question"],
}


def artifact_review_tool(reviews: ArtifactReviews) -> Tool:
    """``request_artifact_review(path, question)``: shows the person a review link and returns their feedback."""

    async def request_artifact_review(arguments: dict[str, Any], ctx: ToolContext) -> str:
        question = " ".join(str(arguments.get("question", "")).split())
        if not question or len(question) > MAX_QUESTION_LENGTH:
            raise ToolError(f"'question' is required (at most {MAX_QUESTION_LENGTH} characters)")
        if ctx.show is None:
            raise ToolError("nobody can be shown a review link in this turn")
        try:
            link = await reviews.start(ctx.session_id, ctx.cwd, str(arguments.get("path", "")), question)
        except (OutsideProject, ValueError) as exc:
            raise ToolError(str(exc)) from None
        except ReviewUnavailable as exc:
            raise ToolError(f"{exc}; no review was opened") from None
        await ctx.show(link)
        try:
            said = (await reviews.wait(link.review_id)).for_agent()
        except asyncio.CancelledError:
            await asyncio.shield(reviews.withdraw(link.review_id))
            raise
        await ctx.show(MessageChunk(f"📝 {said}", uuid.uuid4().hex, aside=True))  # the answer, as a message of its own
        return said

    spec = ToolSpec(
        "request_artifact_review",
        "Ask the person to review a file you produced (a report, a page, an image) in their browser; returns their "
        "feedback, or that they accepted it without comments",
        ARTIFACT_REVIEW_PARAMETERS,
    )
    return Tool(spec, "other", request_artifact_review)
