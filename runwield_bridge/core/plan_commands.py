"""The Plan commands: ``/load-plan`` (aliases ``/load-plans``, ``/load_plan``) and ``/plan-review`` (``/plan_review``, for
command menus that cannot show dashes); a review's outcome resumes the Session."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

from ..ages import age
from .builtin_commands import choose
from .commands import Command, CommandContext
from .events import PlanLink
from .interactions import Choice
from .plan_execution import ChatExecution
from .plans import PlanBook, PlanNotFound
from .reviews import LINK_NOT_KEPT, ReviewHub, ReviewLink, ReviewUnavailable
from .records import PlanRecord

ACTIONS = (
    Choice("resume", "Resume planning", "Continue working on the Plan with the Agent"),
    Choice("details", "View plan details", "Show the Plan's summary, then this menu again"),
    Choice("review", "Review", "Open a review of the current revision in the browser"),
    Choice("execute", "Execute", "Carry out the approved Plan in its own git worktree"),
    Choice("cancel", "Cancel", "Leave the Plan as it is"),
)
REVIEWABLE = ("draft", "in_review", "changes_requested")
HOW_TO_REVIEW = "To start a review, choose Review for the Plan in /load-plan."
WHY_NOT = {
    "approved": "is already approved (revision {approved}); choose Execute for it in /load-plan",
    "executing": "is busy: its execution is under way",
    "interrupted": "has an interrupted execution waiting for a choice (continue, reopen for review, hold or abandon)",
    "held": "has an execution on hold waiting for a choice (continue, reopen for review, hold or abandon)",
    "published": "is already published",
    "abandoned": "was abandoned",
}


STANDING = {"in_review": "in review", "held": "on hold", "interrupted": "interrupted (waiting for your choice)"}
HEADING = re.compile(r"^#{1,6}\s+(.+)$", re.MULTILINE)

REVIEW_FIRST = (
    Choice("review", "Review", "Open a review of the current revision in the browser"),
    Choice("later", "Not now", "Leave the Plan as it is"),
)
EXECUTE_NOW = (
    Choice("execute", "Execute", "Carry out the approved Plan in its own git worktree now"),
    Choice("later", "Not now", "Leave it approved; choose Execute for it in /load-plan later"),
)


def link_text(plan: PlanRecord, link: ReviewLink, url: str) -> str:
    """A review link as plain text: works in any client."""
    until = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(link.expires_at))
    return f"Review revision {link.revision} of “{plan.title}” in your browser: {url}\n(The link works until {until}.)"


def plan_link(plan: PlanRecord, link: ReviewLink, prefix: str = "") -> PlanLink:
    """The review link as an event: plain text with the URL for the live client, the same text without it to keep."""
    live, kept = (prefix + link_text(plan, link, url) for url in (link.url, LINK_NOT_KEPT))
    return PlanLink(live, kept, link.url, plan.id, link.revision, link.expires_at)


def revise_prompt(plan: PlanRecord, revision: int, feedback: str) -> str:
    """What the Agent is asked when a review sends the Plan back: the feedback comes last, as written."""
    return (
        f"Revise Plan “{plan.title}” (plan_id {plan.id}): save a new revision with revise_plan that addresses "
        f"this feedback from the review of revision {revision}:\n{feedback}"
    )


def standing(plan: PlanRecord) -> str:
    """Where a Plan stands, in words: draft, in review, approved, executing, published, on hold..."""
    return STANDING.get(plan.state, plan.state.replace("_", " "))


def readable(markdown: str) -> str:
    """A Plan's markdown for a chat: headings as bold lines instead of ``## Heading``."""
    return HEADING.sub(lambda m: f"**{m.group(1).strip()}**", markdown)


def why_not_reviewable(plan: PlanRecord) -> str:
    return f"Plan “{plan.title}” " + WHY_NOT.get(plan.state, f"is {plan.state}").format(approved=plan.approved_revision) + "."


@dataclass(frozen=True)
class PlanCommands:
    """The commands, bound to the Plan, review and execution services."""

    plans: PlanBook
    reviews: ReviewHub
    execution: ChatExecution

    def commands(self) -> tuple[Command, Command]:
        return (
            Command(
                "load-plan", "List saved Plans and act on one", self.load_plan,
                aliases=("load-plans", "load_plan"), hint="Plan id and action (optional)",
            ),
            Command("plan-review", "Review this Session's Plan in the browser (or show its live review link)", self.plan_review, aliases=("plan_review",)),
        )

    async def load_plan(self, ctx: CommandContext, args: str) -> str | None:
        """Pick a Plan, then an action (either can be named: ``/load-plan PLAN_ID review``, as a saved Plan's buttons
        send); View plan details shows the menu again; Cancel changes nothing."""
        args, _, wanted = args.strip().partition(" ")
        saved = await self.plans.for_project(ctx.session.cwd)
        if not saved and not args:
            await ctx.say("There are no saved Plans for this project yet. Ask the Agent to make a plan.")
            return None
        now = time.time()
        choices = [Choice(p.id, f"{p.title} ({standing(p)}, {age(now - p.updated_at)})", f"revision {p.current_revision}") for p in saved]
        plan_id = await choose(ctx, args, "Choose a Plan", choices, "Plan")
        if plan_id is None:
            return None
        try:
            plan = await self.plans.get(plan_id)
        except PlanNotFound as exc:
            await ctx.say(f"{exc}. Nothing changed.")
            return None
        while True:
            action = await choose(ctx, wanted.strip(), f"Plan “{plan.title}” (revision {plan.current_revision}): what next?", list(ACTIONS), "action")
            wanted = ""
            if action == "details":
                await ctx.say(await self._details(plan))
                plan = await self.plans.get(plan.id)
                continue
            if action == "resume":
                await self.plans.store.plans.link_plan_session(plan.id, ctx.session.id, "planned")
                return self._resume_prompt(plan)
            if action == "review":
                await self._review(ctx, plan)
            elif action == "execute":
                await self._execute(ctx, plan)
            elif action == "cancel":
                await ctx.say(f"Cancelled; Plan “{plan.title}” is unchanged.")
            elif action is not None:
                await ctx.say(f"There is no action {action!r} for a Plan (choose from: {', '.join(a.value for a in ACTIONS)}). Nothing changed.")
            return None

    async def plan_review(self, ctx: CommandContext, args: str) -> None:
        """The Session's newest Plan (else the one it reviewed): its live review's link, or a new review if it is eligible;
        a Plan never reviewed starts its first review."""
        newest = next(iter(await self.plans.for_session(ctx.session.id)), None)
        earlier = await self.plans.store.reviews.reviews_for_session(ctx.session.id)
        plan = newest or (await self.plans.store.plans.get_plan(earlier[0].plan_id) if earlier else None)
        if plan is None:
            await ctx.say(f"This Session has no Plan to review yet: ask the Agent to make a plan. {HOW_TO_REVIEW}")
            return
        await self._review(ctx, plan)

    async def _review(self, ctx: CommandContext, plan: PlanRecord) -> None:
        """Say the live review's link, else open a review of the current revision; never approves anything."""
        if plan.state not in REVIEWABLE:
            await ctx.say(f"{why_not_reviewable(plan)} No review was started.")
            return
        live = await self.reviews.live_link(plan.id)
        if live is not None and live.revision == plan.current_revision:
            await ctx.show_link(plan_link(plan, live, "A review is already open. "))
            return
        try:
            link = await self.reviews.start(plan.id, ctx.session.id)
        except ReviewUnavailable as exc:
            await ctx.say(f"{exc}. No review was started.")
            return
        await ctx.show_link(plan_link(plan, link))
        outcome = Command("review-outcome", "A review's outcome", self._review_outcome, advertised=False)
        ctx.follow_up(self.reviews.wait(link.review_id), outcome, link.review_id)

    async def _review_outcome(self, ctx: CommandContext, review_id: str) -> str | None:
        """The Session takes up a decided review: feedback starts a planning turn, approval offers Execute."""
        outcome = await self.reviews.wait(review_id)  # stored by now: returns at once
        plan = await self.plans.get(outcome.plan_id)
        where = f"revision {outcome.revision} of “{plan.title}”"
        if outcome.state == "changes_requested":
            feedback = outcome.feedback.as_text()
            await ctx.say(f"The review sent {where} back with feedback:\n{feedback}")
            await self.plans.store.plans.link_plan_session(plan.id, ctx.session.id, "revised")
            return revise_prompt(plan, outcome.revision, feedback)
        if outcome.state == "expired":
            await ctx.say(f"The review link for {where} expired without a decision. {HOW_TO_REVIEW}")
        elif outcome.state == "approved":
            notes = outcome.feedback.as_text()
            await ctx.say(f"The review approved {where}." + (f" Notes:\n{notes}" if notes else ""))
            if plan.state == "approved" and plan.approved_revision == plan.current_revision:
                if await choose(ctx, "", f"Execute “{plan.title}” now?", list(EXECUTE_NOW), "choice") == "execute":
                    await self.execution.execute(ctx, plan)
        return None

    async def _execute(self, ctx: CommandContext, plan: PlanRecord) -> None:
        """Start an approved Plan; an execution awaiting a choice shows its report and the choices; else say why not."""
        if plan.state in ("interrupted", "held", "executing"):
            waiting = await self.execution.waiting(plan_id=plan.id)
            if waiting:
                await self.execution.take_up(waiting, ctx, "")
            else:
                await ctx.say(f"{why_not_reviewable(plan)} Nothing was started.")
            return
        if plan.state in REVIEWABLE:
            question = f"Plan “{plan.title}” executes once a review approves it. Start its review now?"
            choice = await choose(ctx, "", question, list(REVIEW_FIRST), "choice")
            if choice == "review":
                await self._review(ctx, plan)
            elif choice is not None:
                await ctx.say(f"Plan “{plan.title}” stays as it is ({standing(plan)}).")
            return
        if plan.state != "approved" or plan.approved_revision != plan.current_revision:
            reason = why_not_reviewable(plan) if plan.state in WHY_NOT else f"Plan “{plan.title}” is not approved."
            await ctx.say(f"{reason} Only an approved Plan executes. {HOW_TO_REVIEW}")
            return
        await self.execution.execute(ctx, plan)

    async def _details(self, plan: PlanRecord) -> str:
        """The Plan as a person reads it in chat: where it stands (a published one: its branch and commit), then its text."""
        revisions = await self.plans.store.plans.plan_revisions(plan.id)
        approved = f", approved revision {plan.approved_revision}" if plan.approved_revision else ""
        published = ""
        if plan.state == "published":
            done = await self.plans.store.executions.list_executions(plan_id=plan.id, states=("published",))
            if done and (publication := json.loads(done[-1].outcome).get("publication")):
                published = f"\nPublished on branch {publication['branch']} at commit {publication['commit'][:12]}."
        return (
            f"Plan “{plan.title}”: revision {plan.current_revision} of {len(revisions)}, {standing(plan)}{approved}.{published}"
            f"\n\n{readable(self.plans.text(plan))}"
        )

    def _resume_prompt(self, plan: PlanRecord) -> str:
        return (
            f"Resume planning Plan “{plan.title}” (id {plan.id}, revision {plan.current_revision}). "
            f"Its current text:\n\n{self.plans.text(plan)}\n"
            f"Ask me what you need to know, then save changes with revise_plan (plan_id {plan.id})."
        )
