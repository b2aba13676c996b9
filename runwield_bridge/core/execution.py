"""Executing an approved Plan in a RunWield-owned git worktree: write-ahead steps, validation, publication, recovery."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .events import Event, Notice, ToolProgress
from .git import GitError, git, identity_env, remove_stale_locks, snapshot_tree
from .locks import Lock
from .plans import PlanBook
from .records import ExecutionRecord, ExecutionStep, PlanRecord
from .validation import CommandResult, ValidationReport, run_command, tail

if TYPE_CHECKING:
    from .store import Store

ExecutionState = Literal[
    "running", "pairing", "interrupted", "held", "validated", "validation_failed", "unvalidated", "published",
    "abandoned", "reopened",
]
RecoveryChoice = Literal["continue", "reopen", "hold", "abandon"]
RECOVERY_CHOICES: tuple[RecoveryChoice, ...] = ("continue", "reopen", "hold", "abandon")
AWAITING_CHOICE = ("interrupted", "held", "validated", "validation_failed", "unvalidated")
PUBLISHABLE = ("validated", "unvalidated")
BRANCH_PREFIX = "runwield/"
FINISHED_STEP = "done"
UNCERTAIN_STEPS = ("started", "interrupted")
PAIR = "pair"  # the ``mode`` in an execution's outcome: the Agent works in increments, each a user's turn

Emit = Callable[[Event], Awaitable[None]]
Work = Callable[[Path], Awaitable[None]]
IncrementWork = Callable[[Path, int], Awaitable[None]]  # the worktree and the increment's number


class StepOutput(NamedTuple):
    """What a step produced; ``ok`` False marks it failed in progress events (a failing validation command)."""

    output: str = ""
    exit_code: int | None = None
    ok: bool = True


StepAction = Callable[[], Awaitable[StepOutput]]


class ExecutionError(RuntimeError):
    """The execution cannot do what was asked; nothing was changed."""


class StepFailed(Exception):
    """A step raised; it is recorded as an error and the execution stops, interrupted."""


@dataclass(frozen=True, slots=True)
class Publication:
    """A confirmed delivery: the branch, its commit (exactly the validated tree) and the validation summary."""

    branch: str
    commit: str
    worktree: str
    summary: str


@dataclass(frozen=True, slots=True)
class Interruption:
    """What reopening shows about an execution that stopped part-way, and the choices it offers."""

    execution: ExecutionRecord
    plan_title: str
    finished: tuple[ExecutionStep, ...]
    uncertain: tuple[ExecutionStep, ...]
    changes: str
    repaired: tuple[str, ...]
    choices: tuple[RecoveryChoice, ...] = RECOVERY_CHOICES

    def describe(self) -> str:
        """The report for the user, in plain text."""
        record = self.execution
        verb = "is on hold" if record.state == "held" else "was interrupted"
        lines = [f"Work on Plan “{self.plan_title}” {verb} (branch {record.branch})."]
        if self.finished:
            lines.append("Finished: " + "; ".join(step_label(s) for s in self.finished) + ".")
        for step in self.uncertain:
            lines.append(f"Uncertain: {step_label(step)} was running when it stopped; its result is unknown and it has not been repeated.")
        lines.append(f"The worktree {record.worktree} is preserved" + (f" with these changes:\n{self.changes}" if self.changes else " (no uncommitted changes)."))
        lines.extend(f"Repaired: {what}." for what in self.repaired)
        rerun = f" (runs {step_label(self.uncertain[0])} again, then the rest)" if self.uncertain else ""
        lines.append(f"Choose: continue{rerun}, reopen for review, hold, or abandon (nothing is deleted).")
        return "\n".join(lines)


def is_pair(record: ExecutionRecord) -> bool:
    return json.loads(record.outcome).get("mode") == PAIR


def commit_message(plan: PlanRecord, record: ExecutionRecord, summary: str) -> str:
    """The message Publish commits the validated work with."""
    return f"{plan.title}\n\nRunWield Plan {plan.id}, revision {record.revision}.\n{summary}\n"


def step_label(step: ExecutionStep) -> str:
    return {
        "worktree": f"creating the worktree and branch {step.detail}",
        "agent": f"the Agent's work on the Plan{f' ({step.detail})' if step.detail else ''}",
        "snapshot": "recording the worktree for validation",
        "validate": f"validation `{step.detail}`" + ("" if step.exit_code is None else f" (exit {step.exit_code})"),
        "publish": f"publishing {step.detail}",
    }.get(step.name, step.name)


class Executor:
    """Starts, continues, publishes and recovers executions; one process at a time per Plan (a writer lock)."""

    def __init__(self, store: Store, plans: PlanBook, state_dir: Path, commands: Sequence[str], timeout: float) -> None:
        self.store = store
        self.plans = plans
        self.locks = store.writer_locks(state_dir / "locks")
        self.worktrees = state_dir / "worktrees"
        self.commands = tuple(commands)
        self.timeout = timeout

    async def start(
        self, plan_id: str, *, work: Work | None, emit: Emit, session_id: str | None = None
    ) -> ExecutionRecord:
        """Execute the Plan's approved current revision in a new worktree and branch; returns once validated (or stopped).
        Without ``work`` it starts a Pair Execution: the worktree only, then `increment` per user turn and `finish`."""
        async with self._locked(plan_id):  # the checks, the new record and its steps all happen under the Plan's lock
            plan = await self.plans.get(plan_id)
            if plan.state != "approved" or plan.approved_revision != plan.current_revision:
                raise ExecutionError(f"Plan “{plan.title}” is {plan.state.replace('_', ' ')}: only an approved current revision can be executed")
            try:
                base = await git(Path(plan.project_dir), "rev-parse", "--verify", "HEAD")
            except GitError:
                raise ExecutionError(f"{plan.project_dir} is not a git repository with a commit to branch from") from None
            number = len(await self.store.executions.list_executions(plan_id=plan.id)) + 1
            while await self._name_taken(plan.project_dir, plan.project, f"{plan.slug}-{number}"):
                number += 1
            name = f"{plan.slug}-{number}"
            record = ExecutionRecord(
                id=f"exe_{uuid.uuid4().hex[:16]}", plan_id=plan.id, revision=plan.current_revision, number=number,
                session_id=session_id, worktree=str(self.worktrees / plan.project / name), branch=BRANCH_PREFIX + name,
                base_commit=base, commands=json.dumps(self.commands),
                outcome=json.dumps({} if work else {"mode": PAIR}),
            )
            await self.store.executions.add_execution(record)
            if work is not None:
                return await self._run_round(record, work, emit)
            try:
                await self._step(record, "worktree", record.branch, emit, lambda: self._add_worktree(record))
            except StepFailed as failed:
                return await self._stopped(record, failed, emit)
            return await self.store.executions.update_execution(record.id, state="pairing")

    async def increment(self, execution_id: str, *, work: IncrementWork, emit: Emit) -> tuple[ExecutionRecord, int]:
        """One Pair Execution increment: the Agent's work, recorded write-ahead; the execution then waits for the
        user again. Returns the execution and the increment's number."""
        async with self._locked((await self._get(execution_id)).plan_id):
            record = await self._pairing(execution_id)
            steps = await self.store.executions.execution_steps(record.id)
            if any(s.name == "snapshot" and s.round == record.round for s in steps):  # validated before: a new round
                record = await self.store.executions.update_execution(record.id, round=record.round + 1)
            number = 1 + sum(s.name == "agent" for s in steps)
            record = await self.store.executions.update_execution(record.id, state="running")
            try:
                await self._step(record, "agent", f"increment {number}", None, lambda: _no_output(work(Path(record.worktree), number)))
            except StepFailed as failed:
                return await self._stopped(record, failed, emit), number
            except asyncio.CancelledError:
                await self.store.executions.interrupt_execution(record.id, "cancelled", outcome=_outcome(record, reason="cancelled"))
                raise
            return await self.store.executions.update_execution(record.id, state="pairing"), number

    async def finish(self, execution_id: str, *, emit: Emit) -> ExecutionRecord:
        """The user accepted a Pair Execution's work: validate it (the validation result is the outcome)."""
        async with self._locked((await self._get(execution_id)).plan_id):
            record = await self._pairing(execution_id)
            record = await self.store.executions.update_execution(record.id, state="running")
            return await self._run_round(record, None, emit)

    async def changes(self, record: ExecutionRecord) -> str:
        """The worktree's uncommitted changes (``git status --short``)."""
        worktree = Path(record.worktree)
        return await git(worktree, "status", "--short", check=False) if worktree.is_dir() else "(the worktree is missing)"

    async def _pairing(self, execution_id: str) -> ExecutionRecord:
        record = await self._get(execution_id)
        if record.state != "pairing":
            raise ExecutionError(f"this execution is {record.state.replace('_', ' ')}, not a Pair Execution waiting for you")
        return record

    async def choose(self, execution_id: str, choice: RecoveryChoice, *, work: Work | None = None, emit: Emit) -> ExecutionRecord:
        """Act on a choice for an execution awaiting one: continue (needs ``work``), reopen for review, hold, or abandon."""
        async with self._locked((await self._get(execution_id)).plan_id):
            record = await self._get(execution_id)  # as it is now that no other process can change it
            if record.state not in AWAITING_CHOICE:
                raise ExecutionError(f"this execution is {record.state}; there is nothing to choose")
            if choice == "continue":
                if work is None:
                    raise ExecutionError("continuing needs the Agent's work to run")
                return await self._continue(record, work, emit)
            if choice == "reopen":
                record = await self.store.executions.update_execution(
                    record.id, {"state": "draft", "approved_revision": None}, state="reopened"
                )
                await emit(Notice(f"The Plan is open for review again; the worktree {record.worktree} is kept."))
            elif choice == "hold":
                record = await self.store.executions.update_execution(record.id, {"state": "held"}, state="held")
                await emit(Notice(f"The execution is on hold; nothing runs until you choose. The worktree {record.worktree} is kept."))
            elif choice == "abandon":
                record = await self.store.executions.update_execution(record.id, {"state": "abandoned"}, state="abandoned")
                await emit(Notice(f"The execution is abandoned. Nothing was deleted: branch {record.branch}, worktree {record.worktree}."))
            else:
                raise ExecutionError(f"unknown choice {choice!r}; choose one of {', '.join(RECOVERY_CHOICES)}")
            return record

    async def publish(self, execution_id: str, *, emit: Emit) -> Publication:
        """Commit exactly the validated tree on the execution's branch and confirm it; only a validated execution publishes."""
        async with self._locked((await self._get(execution_id)).plan_id):
            record = await self._get(execution_id)
            if record.state not in PUBLISHABLE:
                raise ExecutionError(f"this execution is {record.state.replace('_', ' ')}; only a validated one can be published")
            return await self._publish(record, emit)

    async def recover(self, session_id: str | None = None) -> list[Interruption]:
        """Executions that stopped part-way (of the Session's Plans, if given): a dead process's state and git locks are repaired."""
        records = await self.store.executions.list_executions(states=("running", "interrupted", "held"))
        if session_id is not None:
            mine = {plan.id for plan in await self.store.plans.plans_for_session(session_id)}
            records = [r for r in records if r.plan_id in mine]
        found = []
        for record in records:
            lock = self.locks(f"plan-{record.plan_id}")
            if not await lock.try_acquire():
                continue  # a live process is working on it
            try:
                found.append(await self._interruption(record))
            finally:
                await lock.release()
        return found

    async def _interruption(self, record: ExecutionRecord) -> Interruption:
        repaired = []
        if record.state == "running":
            record = await self.store.executions.interrupt_execution(record.id, "the process running this step stopped")
            repaired.append("the execution and its Plan are marked interrupted (the process running them had stopped)")
        repaired.extend(remove_stale_locks(Path(record.worktree)))
        steps = await self.store.executions.execution_steps(record.id)
        plan = await self.plans.get(record.plan_id)
        return Interruption(record, plan.title, _finished(steps), _uncertain(steps), await self.changes(record), tuple(repaired))

    async def _continue(self, record: ExecutionRecord, work: Work, emit: Emit) -> ExecutionRecord:
        steps = await self.store.executions.execution_steps(record.id)
        uncertain = _uncertain(steps)
        if uncertain and uncertain[-1].name == "publish":
            await self._publish(record, emit)
            return await self._get(record.id)
        if is_pair(record):
            if not any(s.name in ("snapshot", "validate") for s in uncertain):
                await emit(Notice("The Pair Execution goes on: your next message is the Agent's next increment."))
                return await self.store.executions.update_execution(record.id, {"state": "executing"}, state="pairing")
            record = await self.store.executions.update_execution(record.id, {"state": "executing"}, state="running")
            return await self._run_round(record, None, emit)  # the interrupted validation, again
        if _round_complete(record, steps):
            record = await self.store.executions.update_execution(record.id, round=record.round + 1)
        record = await self.store.executions.update_execution(record.id, {"state": "executing"}, state="running")
        return await self._run_round(record, work, emit)

    async def _run_round(self, record: ExecutionRecord, work: Work | None, emit: Emit) -> ExecutionRecord:
        """Run what is left of the current round: worktree (once), the Agent's work (unless a Pair Execution's
        increments did it), snapshot, each validation command."""
        steps = await self.store.executions.execution_steps(record.id)
        done = {(s.name, s.detail): s for s in steps if s.state == FINISHED_STEP and s.round == record.round}
        worktree = Path(record.worktree)
        try:
            if not any(s.name == "worktree" and s.state == FINISHED_STEP for s in steps):
                await self._step(record, "worktree", record.branch, emit, lambda: self._add_worktree(record))
            if work is not None and ("agent", "") not in done:
                await self._step(record, "agent", "", None, lambda: _no_output(work(worktree)))
            snapshot = done.get(("snapshot", "")) or await self._step(
                record, "snapshot", "", None, lambda: _tree_output(worktree)
            )
            results = []
            for command in json.loads(record.commands):
                step = done.get(("validate", command)) or await self._step(
                    record, "validate", command, emit, lambda command=command: self._validate(command, worktree)
                )
                results.append(_result_of(step, self.timeout))
        except StepFailed as failed:
            return await self._stopped(record, failed, emit)
        except asyncio.CancelledError:
            await self.store.executions.interrupt_execution(record.id, "cancelled", outcome=_outcome(record, reason="cancelled"))
            raise
        report = ValidationReport(tuple(results))
        state = {"passed": "validated", "failed": "validation_failed", "unvalidated": "unvalidated"}[report.state]
        outcome = _outcome(record, validation=report.summary(), state=report.state, tree=snapshot.output)
        record = await self.store.executions.update_execution(record.id, {"state": "executing"}, state=state, outcome=outcome)
        await emit(Notice(report.summary(), {"passed": "success", "failed": "error", "unvalidated": "warning"}[report.state]))
        return record

    async def _stopped(self, record: ExecutionRecord, failed: StepFailed, emit: Emit) -> ExecutionRecord:
        record = await self.store.executions.interrupt_execution(record.id, str(failed), outcome=_outcome(record, reason=str(failed)))
        await emit(Notice(f"The execution stopped: {failed} Choose: continue, reopen for review, hold, or abandon.", "error"))
        return record

    async def _step(self, record: ExecutionRecord, name: str, detail: str, emit: Emit | None, action: StepAction) -> ExecutionStep:
        """Run one step write-ahead: recorded as started (committed) before it runs, and as done or error after."""
        step = await self.store.executions.begin_step(ExecutionStep(execution_id=record.id, round=record.round, name=name, detail=detail))
        call_id, title = f"{record.id}-{step.id}", step_label(step)[:1].upper() + step_label(step)[1:]
        if emit:
            raw_input = {"step": name, "detail": detail, "cwd": record.worktree}
            await emit(ToolProgress(call_id, title, "execute", "in_progress", raw_input, started=True))
        try:
            result = await action()
        except asyncio.CancelledError:
            await self.store.executions.end_step(step.id, "interrupted", "cancelled")
            raise
        except Exception as exc:
            await self.store.executions.end_step(step.id, "error", f"{type(exc).__name__}: {exc}")
            if emit:
                await emit(ToolProgress(call_id, title, "execute", "failed", output=str(exc)))
            raise StepFailed(f"{step_label(step)} failed: {exc}") from exc
        step = await self.store.executions.end_step(step.id, FINISHED_STEP, result.output, result.exit_code)
        if emit:
            await emit(ToolProgress(call_id, title, "execute", "completed" if result.ok else "failed", output=result.output))
        return step

    async def _name_taken(self, project_dir: str, project: str, name: str) -> bool:
        """True when a branch or worktree of that name already exists (another Plan may share the title)."""
        if (self.worktrees / project / name).exists():
            return True
        return bool(await git(Path(project_dir), "branch", "--list", BRANCH_PREFIX + name))

    async def _add_worktree(self, record: ExecutionRecord) -> StepOutput:
        plan = await self.plans.get(record.plan_id)
        Path(record.worktree).parent.mkdir(parents=True, exist_ok=True)
        args = ("worktree", "add", "-b", record.branch, record.worktree, record.base_commit)
        return StepOutput(await git(Path(plan.project_dir), *args))

    async def _validate(self, command: str, worktree: Path) -> StepOutput:
        """Run one validation command; a timed-out command is recorded with no exit code."""
        result = await run_command(command, worktree, self.timeout)
        status = result.describe() + f" in {result.seconds:.1f}s"
        return StepOutput(tail(f"{result.output}\n{status}".lstrip()), result.exit_code, result.passed)

    async def _publish(self, record: ExecutionRecord, emit: Emit) -> Publication:
        outcome = json.loads(record.outcome)
        tree, summary, worktree = outcome["tree"], outcome["validation"], Path(record.worktree)
        plan = await self.plans.get(record.plan_id)
        message = commit_message(plan, record, summary)

        async def commit() -> StepOutput:
            head = await git(worktree, "rev-parse", f"refs/heads/{record.branch}")
            if head != record.base_commit and await git(worktree, "rev-parse", f"{head}^{{tree}}") == tree:
                return StepOutput(head)  # an interrupted publication had already moved the branch
            env = await identity_env(worktree)
            made = await git(worktree, "commit-tree", tree, "-p", head, "-m", message, env=env)
            await git(worktree, "update-ref", f"refs/heads/{record.branch}", made, head)
            await git(worktree, "reset", "--quiet")  # the index follows the branch; files in the worktree are untouched
            return StepOutput(made)

        try:
            step = await self._step(record, "publish", record.branch, emit, commit)
        except StepFailed as failed:
            await self.store.executions.interrupt_execution(record.id, str(failed))
            raise ExecutionError(f"publication was not confirmed: {failed}") from None
        made = step.output
        if (await git(worktree, "rev-parse", f"refs/heads/{record.branch}"), await git(worktree, "rev-parse", f"{made}^{{tree}}")) != (made, tree):
            raise ExecutionError(f"publication was not confirmed: branch {record.branch} does not hold the validated tree")
        publication = Publication(record.branch, made, record.worktree, summary)
        await self.store.executions.update_execution(
            record.id, {"state": "published"}, state="published", outcome=_outcome(record, publication=asdict(publication))
        )
        await emit(Notice(f"Published branch {record.branch} at commit {made[:12]}. {summary}", "success"))
        return publication

    async def _get(self, execution_id: str) -> ExecutionRecord:
        record = await self.store.executions.get_execution(execution_id)
        if record is None:
            raise ExecutionError(f"no execution with id {execution_id!r}")
        return record

    def _locked(self, plan_id: str) -> _PlanLock:
        return _PlanLock(self.locks(f"plan-{plan_id}"))


class _PlanLock:
    """Hold a Plan's execution lock for a block; refuse at once if another process holds it."""

    def __init__(self, lock: Lock) -> None:
        self.lock = lock

    async def __aenter__(self) -> Lock:
        if not await self.lock.try_acquire():
            raise ExecutionError("another process is executing this Plan right now")
        return self.lock

    async def __aexit__(self, *exc: object) -> None:
        await self.lock.release()


async def _no_output(awaitable: Awaitable[None]) -> StepOutput:
    await awaitable
    return StepOutput()


async def _tree_output(worktree: Path) -> StepOutput:
    return StepOutput(await snapshot_tree(worktree))


def _result_of(step: ExecutionStep, timeout: float) -> CommandResult:
    """A finished validation step as a result (no exit code means it timed out)."""
    timed_out = step.exit_code is None
    return CommandResult(step.detail, step.exit_code, step.output, timeout if timed_out else 0.0, timed_out)


def _outcome(record: ExecutionRecord, **changes: Any) -> str:
    return json.dumps({**json.loads(record.outcome), **changes})


def _finished(steps: Sequence[ExecutionStep]) -> tuple[ExecutionStep, ...]:
    return tuple(s for s in steps if s.state == FINISHED_STEP)


def _uncertain(steps: Sequence[ExecutionStep]) -> tuple[ExecutionStep, ...]:
    """Steps that started and never recorded an end, unless a later run of the same step finished."""
    finished_later = {(s.round, s.name, s.detail, s.id) for s in steps if s.state == FINISHED_STEP}
    return tuple(
        s for s in steps
        if s.state in UNCERTAIN_STEPS
        and not any(k[:3] == (s.round, s.name, s.detail) and k[3] > s.id for k in finished_later)
    )


def _round_complete(record: ExecutionRecord, steps: Sequence[ExecutionStep]) -> bool:
    done = {(s.name, s.detail) for s in steps if s.state == FINISHED_STEP and s.round == record.round}
    needed = {("agent", ""), ("snapshot", ""), *(("validate", c) for c in json.loads(record.commands))}
    return needed <= done
