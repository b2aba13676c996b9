"""Executing Plans from chat: the Agent's turn in the worktree, delivery choices, Pair Execution, recovery on load."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .builtin_commands import choose
from .code_review_chat import CodeReviewChat, changes_prompt
from .commands import Command, CommandContext
from .execution import AWAITING_CHOICE, ExecutionError, Executor, Work, is_pair
from .interactions import Choice
from .plans import PlanBook
from .records import ExecutionRecord, PlanRecord, SessionRecord

MODES = (
    Choice("whole", "All at once", "The Agent carries out the whole Plan, then validation runs"),
    Choice("pair", "Pair Execution", "The Agent stops after each increment; you decide in chat what comes next"),
)
DELIVERY = {
    "publish": Choice("publish", "Publish", "Commit exactly the validated work on the execution's branch"),
    "continue": Choice("continue", "Continue", "Run the work again from where it stopped, then validation"),
    "reopen": Choice("reopen", "Reopen for review", "Withdraw the approval; the worktree is kept"),
    "hold": Choice("hold", "Hold", "Leave everything as it is until you choose"),
    "abandon": Choice("abandon", "Abandon", "End the execution; nothing is deleted"),
}
CHOICES = {
    "validated": ("publish", "hold", "abandon"),
    "unvalidated": ("publish", "hold", "abandon"),
    "validation_failed": ("continue", "reopen", "hold", "abandon"),
    "interrupted": ("continue", "reopen", "hold", "abandon"),
    "held": ("continue", "reopen", "hold", "abandon"),
}
STANDING = {
    "validated": "validation passed",
    "unvalidated": "not validated (no validation commands)",
    "validation_failed": "validation failed",
    "interrupted": "interrupted",
    "held": "on hold",
}
BASE_UNTOUCHED = "the branch it started from, such as main, is not changed"
UNDELIVERED = ("validated", "validation_failed", "unvalidated")
ACCEPTANCE = ("done", "accept", "accepted", "finish", "finished", "complete")
PAIR_REMINDER = "Pair Execution of “{title}” is in progress on branch {branch}: your next message is the Agent's next increment; `done` accepts the work and validates it."


def accepts(text: str) -> bool:
    """Whether a plain message accepts a Pair Execution's work (``done``, ``accept``, ``finish``...)."""
    return text.strip().strip(".!").casefold() in ACCEPTANCE


def execution_prompt(plan: PlanRecord, text: str, worktree: Path, validation: str = "") -> str:
    """What the Agent is asked when it carries out a whole Plan (again, after the failed ``validation``)."""
    again = f"The last validation did not pass: {validation}\n\n" if validation else ""
    return (
        f"{again}Carry out Plan “{plan.title}” (id {plan.id}, revision {plan.approved_revision}) in the worktree "
        f"{worktree}; change files there with write_file, then say what you did. "
        f"The project's validation decides whether it worked.\n\n{text}"
    )


def increment_prompt(plan: PlanRecord, text: str, worktree: Path, number: int, message: str = "") -> str:
    """What the Agent is asked for one Pair Execution increment: the Plan first; later, the user's words first."""
    if number == 1:
        return (
            f"Pair Execution of Plan “{plan.title}” (id {plan.id}), increment 1, in the worktree {worktree}. "
            f"Do only the first small increment of the Plan with write_file, then stop and report what you did.\n\n{text}"
        )
    return (
        f"The user says:\n{message}\n\nThat is increment {number} of the Pair Execution of Plan “{plan.title}” in the "
        f"worktree {worktree}. Do only this increment with write_file, then stop and report what you did."
    )


@dataclass(frozen=True)
class ChatExecution:
    """Runs executions for a Session's commands and messages; every ending is the user's choice."""

    plans: PlanBook
    executor: Executor
    code_reviews: CodeReviewChat = CodeReviewChat(None)

    async def execute(self, ctx: CommandContext, plan: PlanRecord) -> None:
        """Start the approved Plan (all at once, or as a Pair Execution), after asking which."""
        mode = await choose(ctx, "", f"How should “{plan.title}” be executed?", list(MODES), "mode")
        if mode is None:
            return
        text = self.plans.text(plan)
        try:
            if mode == "pair":
                record = await self.executor.start(plan.id, work=None, emit=ctx.emit, session_id=ctx.session.id)
                if record.state == "pairing":
                    await self._increment(ctx, plan, record, text)
                else:
                    await self.deliver(ctx, record)
                return
            work = self._work(ctx, lambda worktree: execution_prompt(plan, text, worktree))
            record = await self.executor.start(plan.id, work=work, emit=ctx.emit, session_id=ctx.session.id)
        except ExecutionError as exc:
            await ctx.say(f"{exc}. Nothing was started.")
            return
        await self.deliver(ctx, record)

    async def deliver(self, ctx: CommandContext, record: ExecutionRecord) -> None:
        """Ask what happens to an execution awaiting a choice, until it is published, held, abandoned or reopened
        (or nobody chose: then it waits, unchanged). Where Publish is offered, so is a Code Review, whose page
        may decide instead of the chat."""
        plan = await self.plans.get(record.plan_id)
        while record.state in AWAITING_CHOICE:
            prompt = f"Execution of “{plan.title}” on branch {record.branch}: {STANDING[record.state]}. What now?"
            if "publish" in CHOICES[record.state]:
                prompt += f"\n(Publish commits the validated work to branch {record.branch}; {BASE_UNTOUCHED}.)"
            delivery = await self.code_reviews.choose(ctx, plan, record, prompt, [DELIVERY[c] for c in CHOICES[record.state]])
            if delivery is None:
                return
            text, validation = self.plans.text(plan, record.revision), json.loads(record.outcome).get("validation", "")
            if delivery.choice == "changes":  # from the Code Review page: another round on the reviewer's notes
                choice, work = "continue", self._work(ctx, lambda worktree: changes_prompt(plan, text, worktree, delivery.notes))
            else:
                choice, work = delivery.choice, self._work(ctx, lambda worktree: execution_prompt(plan, text, worktree, validation))
            try:
                if choice == "publish":
                    await self.executor.publish(record.id, emit=ctx.emit)
                    return
                record = await self.executor.choose(record.id, choice, work=work, emit=ctx.emit)  # type: ignore[arg-type]
            except ExecutionError as exc:
                await ctx.say(f"{exc}.")
                return
            if choice != "continue":
                return
            if record.state == "pairing" and delivery.choice == "changes":  # the reviewer's notes are the next increment
                await self._increment(ctx, plan, record, text, delivery.notes)
                return
        if record.state == "pairing":
            await ctx.say(PAIR_REMINDER.format(title=plan.title, branch=record.branch))

    async def waiting(self, session_id: str | None = None, plan_id: str | None = None) -> list[tuple[str, ExecutionRecord]]:
        """Executions awaiting the user's choice (of a Session's or one Plan's), each with its report; an
        interrupted one is repaired first (its report says how)."""
        found = [(r.describe(), r.execution) for r in await self.executor.recover(session_id)]
        for record in await self.executor.store.executions.list_executions(plan_id=plan_id, states=UNDELIVERED):
            if session_id is None or record.session_id == session_id:
                plan = await self.plans.get(record.plan_id)
                summary = json.loads(record.outcome).get("validation", "")
                found.append((f"The execution of “{plan.title}” on branch {record.branch} is not delivered yet. {summary}", record))
        return [(text, record) for text, record in found if plan_id is None or record.plan_id == plan_id]

    async def take_up(self, found: list[tuple[str, ExecutionRecord]], ctx: CommandContext, args: str) -> None:
        """Show each waiting execution's report and ask what happens to it."""
        for report, record in found:
            await ctx.say(report)
            await self.deliver(ctx, record)

    async def on_load(self, session_id: str) -> Command | None:
        """The command a loaded Session runs itself: executions of its Plans that were interrupted or await delivery."""
        found = await self.waiting(session_id)
        if found:
            return Command("recover", "Take up interrupted executions", functools.partial(self.take_up, found), advertised=False)
        if paired := await self._paired(session_id):
            return Command("pair-reminder", "Remind of a Pair Execution", functools.partial(self._remind, paired), advertised=False)
        return None

    async def message_route(self, session: SessionRecord) -> Command | None:
        """While the Session has a Pair Execution, its plain messages go to it instead of an ordinary model turn."""
        if (record := await self._paired(session.id)) is None:
            return None
        return Command("pair", "Pair Execution", functools.partial(self._pair_message, record), advertised=False)

    async def _pair_message(self, record: ExecutionRecord, ctx: CommandContext, message: str) -> None:
        """The user's decision at a checkpoint: ``done`` validates the work; anything else is the next increment."""
        plan = await self.plans.get(record.plan_id)
        if accepts(message):
            try:
                record = await self.executor.finish(record.id, emit=ctx.emit)
            except ExecutionError as exc:
                await ctx.say(f"{exc}.")
                return
            await self.deliver(ctx, record)
            return
        await self._increment(ctx, plan, record, self.plans.text(plan, record.revision), message)

    async def _increment(self, ctx: CommandContext, plan: PlanRecord, record: ExecutionRecord, text: str, message: str = "") -> None:
        """Run one increment and end the turn with a checkpoint report (or the interruption's choices)."""

        async def work(worktree: Path, number: int) -> None:
            await ctx.agent_turn(increment_prompt(plan, text, worktree, number, message), worktree)

        try:
            record, number = await self.executor.increment(record.id, work=work, emit=ctx.emit)
        except ExecutionError as exc:
            await ctx.say(f"{exc}.")
            return
        if record.state != "pairing":
            await self.deliver(ctx, record)
            return
        changes = await self.executor.changes(record) or "(no changes yet)"
        await ctx.say(
            f"Checkpoint {number} of “{plan.title}” (branch {record.branch}). Changes in the worktree so far:\n{changes}\n"
            "Nothing is validated yet. Reply with what to do next, or `done` to accept the work: validation then "
            "runs and its result is the outcome."
        )

    async def _remind(self, record: ExecutionRecord, ctx: CommandContext, args: str) -> None:
        plan = await self.plans.get(record.plan_id)
        await ctx.say(PAIR_REMINDER.format(title=plan.title, branch=record.branch))

    async def _paired(self, session_id: str) -> ExecutionRecord | None:
        found = await self.executor.store.executions.session_executions(session_id, "pairing")
        return next((r for r in reversed(found) if is_pair(r)), None)

    @staticmethod
    def _work(ctx: CommandContext, prompt: Callable[[Path], str]) -> Work:
        """The Agent's work for an execution round: a model turn in the worktree on the round's prompt."""

        async def work(worktree: Path) -> None:
            await ctx.agent_turn(prompt(worktree), worktree)

        return work
