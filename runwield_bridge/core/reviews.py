"""Browser review of a Plan revision: capability links, one decision per review, and waiters that receive it."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

from .plans import PlanBook
from .records import PlanRecord, ReviewRecord

if TYPE_CHECKING:
    from .store import Store
    from .store.notifier import Notifier

T = TypeVar("T")

REVIEW_PATH = "/review/"
LINK_NOT_KEPT = "(the link was sent earlier and is not kept; send /plan-review to get a new one)"
_STORED_LINK = re.compile(rf"\S+{re.escape(REVIEW_PATH)}[A-Za-z0-9_-]+")
DEFAULT_REVIEW_TTL = 24 * 3600.0
WAIT_POLL_SECONDS = 1.0
"""Where notifications stay in one process (SQLite), how often a waiter looks for a decision made by another."""
DECISIONS = "wld_review_decisions"
"""The notification channel a decided review's id is sent on."""
TOKEN_BYTES = 32

LinkBase = Callable[[], Awaitable[str]]
RefusalReason = Literal["unknown", "expired", "superseded", "decided"]
OutcomeState = Literal["approved", "changes_requested", "expired", "superseded"]


def without_links(text: str) -> str:
    """``text`` with each review link replaced by a note that it is not kept (release 0.1.0 stored them)."""
    return _STORED_LINK.sub(LINK_NOT_KEPT, text)


@dataclass(frozen=True, slots=True)
class LineComment:
    """Feedback on one line of the Plan's markdown."""

    line: int
    quote: str
    comment: str


@dataclass(frozen=True, slots=True)
class Feedback:
    """What a reviewer wrote: comments on lines, and a general note."""

    general: str = ""
    lines: tuple[LineComment, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.general.strip() and not self.lines

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, data: str) -> Feedback:
        raw = json.loads(data or "{}")
        return cls(raw.get("general", ""), tuple(LineComment(**c) for c in raw.get("lines", ())))

    def as_text(self) -> str:
        """The feedback as the Agent reads it."""
        parts = [f"Line {c.line} ({c.quote.strip()}): {c.comment.strip()}" for c in self.lines]
        if self.general.strip():
            parts.append(self.general.strip())
        return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class ReviewLink:
    """A live review's link: plain text that works in any client, until it expires or the Plan changes."""

    review_id: str
    plan_id: str
    revision: int
    url: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """How a review ended; what the waiting Session receives."""

    review_id: str
    plan_id: str
    revision: int
    state: OutcomeState
    feedback: Feedback

    @property
    def approved(self) -> bool:
        return self.state == "approved"


@dataclass(frozen=True, slots=True)
class OpenReview:
    """A review a valid link opens: the record, its Plan, and the markdown of the reviewed revision."""

    review: ReviewRecord
    plan: PlanRecord
    text: str


class ReviewRefused(Exception):
    """The link cannot be used (unknown, expired, superseded or already decided); nothing was changed."""

    def __init__(self, reason: RefusalReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class ReviewUnavailable(RuntimeError):
    """Review pages cannot be served (for example, ``[web] listen`` is taken); no review was opened."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def static_link_base(url: str) -> LinkBase:
    """Links under a fixed URL, for pages served by a server started elsewhere."""

    async def base() -> str:
        return url.rstrip("/")

    return base


async def wait_for_decision(
    notifier: Notifier, review_id: str, stored: Callable[[], Awaitable[tuple[T | None, float]]],
    now: Callable[[], float], poll: float = WAIT_POLL_SECONDS,
) -> T:
    """A review's outcome as ``stored`` reads it (with when the review expires): at once if there is one, else when
    decided (woken by the notifier, which on SQLite stays in this process, so another process's decision is looked
    for every ``poll`` seconds) or expired."""
    woken = asyncio.Event()

    def wake(payload: str | None) -> None:
        if payload in (None, review_id):  # None: notifications may have been missed
            woken.set()

    await notifier.listen(DECISIONS, wake)
    try:
        while True:
            woken.clear()  # before reading: a decision stored after the read wakes this wait
            outcome, expires_at = await stored()
            if outcome is not None:
                return outcome
            left = max(0.0, expires_at - now())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), left if notifier.shared else min(poll, left))
    finally:
        await notifier.unlisten(DECISIONS, wake)


class ReviewHub:
    """Starts reviews, checks their links, records the one decision, and wakes whoever waits for it.
    ``link_base`` says where the review pages are served (and may start serving them)."""

    def __init__(
        self,
        store: Store,
        plans: PlanBook,
        link_base: LinkBase | None = None,
        ttl: float = DEFAULT_REVIEW_TTL,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.plans = plans
        self.link_base = link_base
        self.ttl = ttl
        self.now = now
        self._links: dict[str, ReviewLink] = {}  # tokens are stored hashed, so only this process can show its links again

    async def start(self, plan_id: str, session_id: str | None = None) -> ReviewLink:
        """Open a review of the Plan's current revision; any earlier open review of the Plan is superseded."""
        plan = await self.plans.get(plan_id)
        base = await self.page_base()  # first, so a page that cannot be served opens no review
        token = secrets.token_urlsafe(TOKEN_BYTES)
        review = ReviewRecord(
            id=f"rvw_{uuid.uuid4().hex[:16]}", plan_id=plan.id, revision=plan.current_revision,
            session_id=session_id, token_hash=hash_token(token), expires_at=self.now() + self.ttl,
        )
        await self.store.reviews.add_review(review)
        link = ReviewLink(review.id, plan.id, review.revision, f"{base}{REVIEW_PATH}{token}", review.expires_at)
        self._links[review.id] = link
        return link

    async def live_link(self, plan_id: str) -> ReviewLink | None:
        """The link of the Plan's open, unexpired review, if this process started it."""
        latest = next(iter(await self.store.reviews.reviews_for_plan(plan_id)), None)
        if latest is None or latest.state != "open" or self.now() >= latest.expires_at:
            return None
        return self._links.get(latest.id)

    async def resolve(self, token: str) -> OpenReview:
        """The review a link opens, or ReviewRefused saying why it cannot be used."""
        review = await self.store.reviews.find_review(hash_token(token)) if token else None
        plan = await self.store.plans.get_plan(review.plan_id) if review else None
        if review is None or plan is None:
            raise ReviewRefused("unknown", "This review link is not valid. Ask the Agent for a new one with /plan-review.")
        if plan.current_revision != review.revision:
            raise ReviewRefused(
                "superseded",
                f"This link is for revision {review.revision} of “{plan.title}”, which has been revised since "
                f"(now revision {plan.current_revision}). Use the newest review link.",
            )
        if review.state == "superseded":
            raise ReviewRefused("superseded", f"A newer review link replaced this one for “{plan.title}”. Use the newest link.")
        if review.state in ("approved", "changes_requested"):
            done = "approved" if review.state == "approved" else "sent back with feedback"
            raise ReviewRefused("decided", f"This review is closed: revision {review.revision} of “{plan.title}” was already {done}.")
        if review.state == "expired" or self.now() >= review.expires_at:
            raise ReviewRefused("expired", "This review link has expired. Ask the Agent for a new one with /plan-review.")
        return OpenReview(review, plan, self.plans.text(plan, review.revision))

    async def approve(self, token: str, notes: Feedback = Feedback()) -> ReviewOutcome:
        """Approve the reviewed revision (notes, if any, go to the Agent with the approval)."""
        return await self._decide(token, "approved", notes)

    async def request_changes(self, token: str, feedback: Feedback) -> ReviewOutcome:
        """Send the revision back with feedback; empty feedback is refused."""
        if feedback.empty:
            raise ValueError("Write some feedback, or approve the Plan.")
        return await self._decide(token, "changes_requested", feedback)

    async def wait(self, review_id: str, poll: float = WAIT_POLL_SECONDS) -> ReviewOutcome:
        """The review's outcome: at once if already stored, else when decided (here or in another process) or expired."""
        return await wait_for_decision(self.store.notifier, review_id, lambda: self._stored_outcome(review_id), self.now, poll)

    async def page_base(self) -> str:
        """Where review pages are served (starting to serve them if need be); ReviewUnavailable if nowhere."""
        if self.link_base is None:
            raise ReviewUnavailable("no review pages are served by this process")
        return await self.link_base()

    async def _decide(self, token: str, state: OutcomeState, feedback: Feedback) -> ReviewOutcome:
        review = (await self.resolve(token)).review
        plan_changes = {"state": "approved", "approved_revision": review.revision} if state == "approved" else {"state": state}
        if not await self.store.reviews.settle_review(review.id, state, feedback.to_json(), plan_changes):
            await self.resolve(token)  # it closed in between: refuse with the reason
            raise ReviewRefused("decided", "This review was closed while you were reading it.")
        await self.store.notifier.notify(DECISIONS, review.id)
        return ReviewOutcome(review.id, review.plan_id, review.revision, state, feedback)

    async def _stored_outcome(self, review_id: str) -> tuple[ReviewOutcome | None, float]:
        """The review's outcome if it has one (an open review past its time is first settled as expired), and when
        it expires."""
        review = await self.store.reviews.get_review(review_id)
        if review is None:
            raise LookupError(f"no review with id {review_id!r}")
        if review.state == "open":
            if self.now() < review.expires_at:
                return None, review.expires_at
            await self.store.reviews.settle_review(review.id, "expired", "{}", {"state": "draft"})
            review = await self.store.reviews.get_review(review_id)
        outcome = ReviewOutcome(review.id, review.plan_id, review.revision, review.state, Feedback.from_json(review.feedback))
        return outcome, review.expires_at
