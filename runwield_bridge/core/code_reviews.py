"""Code Review in the browser: a capability link to an execution's validated change, decided once per round (Publish,
Request changes or Abandon); the waiting Session carries the decision out."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .execution import PUBLISHABLE
from .plans import PlanBook
from .records import CodeReviewRecord, ExecutionRecord, PlanRecord
from .reviews import DECISIONS, TOKEN_BYTES, ReviewHub, ReviewRefused, hash_token, wait_for_decision

if TYPE_CHECKING:
    from .store import Store

CODE_REVIEW_PATH = "/code-review/"
CodeDecision = Literal["publish", "changes", "abandon"]
DECIDED = {"publish": "published", "changes": "sent back with notes", "abandon": "abandoned"}


@dataclass(frozen=True, slots=True)
class CodeReviewLink:
    """A live Code Review's link, for one round of one execution."""

    review_id: str
    execution_id: str
    round: int
    url: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class CodeReviewOutcome:
    """How a Code Review ended: a decision (with the reviewer's notes), or ``expired`` / ``superseded``."""

    review_id: str
    execution_id: str
    round: int
    state: str
    notes: str

    @property
    def decided(self) -> bool:
        return self.state in DECIDED


@dataclass(frozen=True, slots=True)
class OpenCodeReview:
    """A Code Review a valid link opens: the record, its execution and its Plan."""

    review: CodeReviewRecord
    execution: ExecutionRecord
    plan: PlanRecord


class CodeReviewHub:
    """Starts Code Reviews, checks their links and records the one decision; links and expiry as for Plan reviews."""

    def __init__(self, store: Store, plans: PlanBook, reviews: ReviewHub) -> None:
        self.store = store
        self.plans = plans
        self.reviews = reviews

    async def start(self, execution: ExecutionRecord, session_id: str | None = None) -> CodeReviewLink:
        """Open a review of the execution's current round; an earlier open review of it is superseded."""
        base = await self.reviews.page_base()  # first, so a page that cannot be served opens no review
        token = secrets.token_urlsafe(TOKEN_BYTES)
        review = CodeReviewRecord(
            id=f"crv_{uuid.uuid4().hex[:16]}", execution_id=execution.id, round=execution.round, session_id=session_id,
            token_hash=hash_token(token), expires_at=self.reviews.now() + self.reviews.ttl,
        )
        await self.store.code_reviews.add_code_review(review)
        return CodeReviewLink(review.id, execution.id, review.round, f"{base}{CODE_REVIEW_PATH}{token}", review.expires_at)

    async def resolve(self, token: str) -> OpenCodeReview:
        """The review a link opens, or ReviewRefused saying why it cannot be used."""
        review = await self.store.code_reviews.find_code_review(hash_token(token)) if token else None
        execution = await self.store.executions.get_execution(review.execution_id) if review else None
        if review is None or execution is None:
            raise ReviewRefused("unknown", "This review link is not valid. The chat offers a new one with each validated change.")
        plan = await self.plans.get(execution.plan_id)
        if review.round != execution.round:
            raise ReviewRefused(
                "superseded",
                f"This link is for round {review.round} of the work on “{plan.title}”, which has been revised since "
                f"(now round {execution.round}). Use the newest review link in the chat.",
            )
        if review.state == "superseded":
            raise ReviewRefused("superseded", f"A newer review link replaced this one for “{plan.title}”. Use the newest link.")
        if review.state == "closed":
            raise ReviewRefused("decided", f"This review is closed: the chat's question on “{plan.title}” was answered or withdrawn. Execute in /load-plan offers a new one.")
        if review.state in DECIDED:
            raise ReviewRefused("decided", f"This review is closed: round {review.round} of “{plan.title}” was already {DECIDED[review.state]}.")
        if execution.state not in PUBLISHABLE:
            state = execution.state.replace("_", " ")
            raise ReviewRefused("decided", f"This review is closed: the work on “{plan.title}” is {state} now.")
        if review.state == "expired" or self.reviews.now() >= review.expires_at:
            raise ReviewRefused("expired", "This review link has expired. Choose Execute for the Plan in /load-plan to get a new one.")
        return OpenCodeReview(review, execution, plan)

    async def decide(self, token: str, decision: CodeDecision, notes: str = "") -> CodeReviewOutcome:
        """Record the one decision on the reviewed round; Request changes needs notes."""
        if decision == "changes" and not notes.strip():
            raise ValueError("Write what should change, or choose Publish.")
        review = (await self.resolve(token)).review
        if not await self.store.code_reviews.settle_code_review(review.id, decision, notes.strip()):
            await self.resolve(token)  # it closed in between: refuse with the reason
            raise ReviewRefused("decided", "This review was closed while you were reading it.")
        await self.store.notifier.notify(DECISIONS, review.id)
        return CodeReviewOutcome(review.id, review.execution_id, review.round, decision, notes.strip())

    async def close(self, review_id: str) -> None:
        """The chat's question was answered or withdrawn: the open review's link no longer decides anything."""
        await self.store.code_reviews.settle_code_review(review_id, "closed")

    async def wait(self, review_id: str) -> CodeReviewOutcome:
        """The review's outcome: at once if stored, else when decided (here or in another process) or expired."""
        return await wait_for_decision(self.store.notifier, review_id, lambda: self._stored(review_id), self.reviews.now)

    async def _stored(self, review_id: str) -> tuple[CodeReviewOutcome | None, float]:
        review = await self.store.code_reviews.get_code_review(review_id)
        if review is None:
            raise LookupError(f"no code review with id {review_id!r}")
        if review.state == "open":
            if self.reviews.now() < review.expires_at:
                return None, review.expires_at
            await self.store.code_reviews.settle_code_review(review.id, "expired")
            review = await self.store.code_reviews.get_code_review(review_id) or review
        return CodeReviewOutcome(review.id, review.execution_id, review.round, review.state, review.notes), review.expires_at
