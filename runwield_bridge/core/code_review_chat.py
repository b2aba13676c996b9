"""The delivery question with its Code Review: the link goes to the chat, and whichever decides first, the chat's
question or the review page, decides; a page's decision is reported in the chat with the reviewer's notes."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .builtin_commands import choose
from .code_reviews import CodeReviewHub, CodeReviewLink, CodeReviewOutcome
from .commands import CommandContext
from .events import PlanLink
from .interactions import Choice
from .records import ExecutionRecord, PlanRecord
from .reviews import ReviewUnavailable

CODE_LINK_NOT_KEPT = "(the link was sent earlier and is not kept; choose Execute for the Plan in /load-plan to get a new one)"
CODE_REVIEW_LABEL = "Review the code"
REPORTED = {"publish": "chose Publish", "changes": "requested changes", "abandon": "chose Abandon"}


def code_link(plan: PlanRecord, record: ExecutionRecord, link: CodeReviewLink) -> PlanLink:
    """The Code Review link as an event: plain text with the URL for the live client, without it to keep."""
    until = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(link.expires_at))
    words = f"Review the code of “{plan.title}” (branch {record.branch}, round {link.round}) in your browser: {{url}}\n(The link works until {until}.)"
    live, kept = (words.format(url=url) for url in (link.url, CODE_LINK_NOT_KEPT))
    return PlanLink(live, kept, link.url, plan.id, record.revision, link.expires_at, label=CODE_REVIEW_LABEL)


def changes_prompt(plan: PlanRecord, text: str, worktree: Path, notes: str) -> str:
    """What the Agent is asked when a Code Review requests changes: the reviewer's notes first, as written."""
    return (
        f"{notes}\n\nThat is what the code review of Plan “{plan.title}” asks you to change in the worktree {worktree}. "
        f"Make the changes there with write_file or edit_file, then say what you did. The project's validation runs "
        f"again afterwards.\n\nThe Plan, for reference:\n\n{text}"
    )


@dataclass(frozen=True, slots=True)
class Delivery:
    """What was decided: a delivery choice's value (``changes`` when the page requested changes) and the notes."""

    choice: str
    notes: str = ""


@dataclass(frozen=True)
class CodeReviewChat:
    """Offers a Code Review beside the delivery question (when this process serves review pages)."""

    hub: CodeReviewHub | None

    async def choose(
        self, ctx: CommandContext, plan: PlanRecord, record: ExecutionRecord, prompt: str, choices: Sequence[Choice]
    ) -> Delivery | None:
        """The delivery choice, from the chat's question or the review page, whichever comes first; None if neither."""
        hub = self.hub
        link = await self._open(ctx, hub, plan, record) if hub and any(c.value == "publish" for c in choices) else None
        if hub is None or link is None:
            return await _asked(ctx, prompt, choices)
        prompt += "\n(Or decide on the code review page: the link above.)"
        asked = asyncio.ensure_future(_asked(ctx, prompt, choices))
        decided = asyncio.ensure_future(_decided(hub, link.review_id))
        try:
            await asyncio.wait({asked, decided}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (asked, decided):
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            if decided.cancelled():  # nobody waits for the page any more
                await asyncio.shield(hub.close(link.review_id))
        if not decided.cancelled():
            outcome = decided.result()
            await ctx.say(report(plan, outcome))
            return Delivery(outcome.state, outcome.notes)
        return asked.result()

    @staticmethod
    async def _open(ctx: CommandContext, hub: CodeReviewHub, plan: PlanRecord, record: ExecutionRecord) -> CodeReviewLink | None:
        try:
            link = await hub.start(record, ctx.session.id)
        except ReviewUnavailable as exc:
            await ctx.say(f"No code review link: {exc}.")
            return None
        await ctx.show_link(code_link(plan, record, link))
        return link



async def _decided(hub: CodeReviewHub, review_id: str) -> CodeReviewOutcome:
    """The page's decision; a review that expires or is replaced without one never decides (the question does)."""
    outcome = await hub.wait(review_id)
    if not outcome.decided:
        await asyncio.Event().wait()
    return outcome


def report(plan: PlanRecord, outcome: CodeReviewOutcome) -> str:
    """A page's decision as the chat reports it, with the reviewer's notes."""
    notes = f" Notes:\n{outcome.notes}" if outcome.notes else ""
    return f"The code review of “{plan.title}” (round {outcome.round}) {REPORTED[outcome.state]} in the browser.{notes}"


async def _asked(ctx: CommandContext, prompt: str, choices: Sequence[Choice]) -> Delivery | None:
    choice = await choose(ctx, "", prompt, list(choices), "choice")
    return None if choice is None else Delivery(choice)
