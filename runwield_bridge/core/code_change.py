"""An execution's change as a reviewer reads it: the files changed against the commit it started from, each file's
diff with unchanged context collapsed, the validation commands with their output, and the commit message."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .execution import commit_message
from .git import git
from .plans import PlanBook
from .records import ExecutionRecord, ExecutionStep

if TYPE_CHECKING:
    from .store import Store

CONTEXT_LINES = 3
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
LineKind = Literal["added", "removed", "context", "gap"]


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a file's diff; a ``gap`` stands for unchanged lines left out (``text`` says how many)."""

    kind: LineKind
    text: str
    number: int | None = None  # the line's number in the new file (in the old one for a removed line)


@dataclass(frozen=True, slots=True)
class FileChange:
    """One changed file: its path, its counts and its diff lines (none for a binary file)."""

    path: str
    added: int
    removed: int
    lines: tuple[DiffLine, ...]
    binary: bool = False


@dataclass(frozen=True, slots=True)
class CheckRun:
    """One validation command of the reviewed round, with how it ended and its output."""

    command: str
    passed: bool
    status: str
    output: str


@dataclass(frozen=True, slots=True)
class CodeChange:
    """What a Code Review page shows."""

    branch: str
    base_commit: str
    files: tuple[FileChange, ...]
    checks: tuple[CheckRun, ...]
    summary: str
    commit_message: str

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)


async def code_change(store: Store, plans: PlanBook, record: ExecutionRecord) -> CodeChange:
    """The execution's validated snapshot against the commit its branch started from."""
    outcome = json.loads(record.outcome)
    worktree, tree = Path(record.worktree), outcome.get("tree", "")
    counts = await git(worktree, "diff", "--no-renames", "--numstat", record.base_commit, tree)
    patch = await git(worktree, "diff", "--no-renames", "--no-color", "--no-ext-diff", f"-U{CONTEXT_LINES}", record.base_commit, tree)
    patches = split_patches(patch)
    files = []
    for line in counts.splitlines():
        added, removed, path = line.split("\t", 2)
        binary = added == "-"
        lines = () if binary else diff_lines(patches.get(path, ""))
        files.append(FileChange(path, 0 if binary else int(added), 0 if binary else int(removed), lines, binary))
    steps = await store.executions.execution_steps(record.id)
    checks = tuple(check_run(s) for s in steps if s.name == "validate" and s.round == record.round and s.state == "done")
    plan = await plans.get(record.plan_id)
    summary = outcome.get("validation", "")
    return CodeChange(record.branch, record.base_commit, tuple(files), checks, summary, commit_message(plan, record, summary))


def check_run(step: ExecutionStep) -> CheckRun:
    passed = step.exit_code == 0
    status = "timed out" if step.exit_code is None else ("passed" if passed else f"failed (exit {step.exit_code})")
    return CheckRun(step.detail, passed, status, step.output)


def split_patches(patch: str) -> dict[str, str]:
    """``git diff`` output per file, by the file's path (``b/`` side, or ``a/`` for a deleted file)."""
    found: dict[str, str] = {}
    for part in re.split(r"^(?=diff --git )", patch, flags=re.MULTILINE):
        header = re.search(r"^\+\+\+ b/(.*)$", part, re.MULTILINE) or re.search(r"^--- a/(.*)$", part, re.MULTILINE)
        if header:
            found[header.group(1)] = part
    return found


def diff_lines(patch: str) -> tuple[DiffLine, ...]:
    """A file's hunks as lines; the unchanged lines between (and before) hunks become one ``gap`` each."""
    lines: list[DiffLine] = []
    old = new = 0
    in_hunk = False
    for raw in patch.splitlines():
        if match := HUNK.match(raw):
            start_old, start_new = int(match.group(1)), int(match.group(3))
            skipped = start_new - 1 - new if start_new else 0
            if skipped > 0:
                lines.append(DiffLine("gap", f"{skipped} unchanged line{'s' if skipped != 1 else ''}"))
            old, new, in_hunk = start_old - 1, max(start_new - 1, 0), True
        elif in_hunk and raw.startswith("+"):
            new += 1
            lines.append(DiffLine("added", raw[1:], new))
        elif in_hunk and raw.startswith("-"):
            old += 1
            lines.append(DiffLine("removed", raw[1:], old))
        elif in_hunk and raw.startswith(" "):
            old, new = old + 1, new + 1
            lines.append(DiffLine("context", raw[1:], new))
    return tuple(lines)
