"""Plans: markdown files with a title and numbered revisions, stored per project under the state directory."""

from __future__ import annotations

import hashlib
import re
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .events import PlanAction, PlanSaved
from .models import ToolSpec
from .records import PlanRecord, PlanRevisionRecord
from .tools import Tool, ToolContext, ToolError

if TYPE_CHECKING:
    from .store import Store

PlanState = Literal[
    "draft", "in_review", "changes_requested", "approved", "executing", "interrupted", "held", "published", "abandoned"
]
MAX_TITLE_LENGTH = 120
MAX_SLUG_LENGTH = 40
MAX_SUMMARY_LENGTH = 300
NEXT_STEPS = (("Review", "review"), ("Execute", "execute"))
"""What a saved Plan offers next: a label, and the action of ``/load-plan PLAN_ID ACTION`` that takes it."""


class PlanNotFound(LookupError):
    """No Plan has this id."""


def slugify(text: str, limit: int = MAX_SLUG_LENGTH) -> str:
    """Lowercase ASCII words joined by hyphens, for branch and directory names."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words)[:limit].strip("-") or "plan"


def project_root(cwd: str | Path) -> Path:
    """The project a directory belongs to: the nearest enclosing git checkout, else the directory itself."""
    start = Path(cwd).resolve()
    return next((d for d in (start, *start.parents) if (d / ".git").exists()), start)


def project_key(root: Path) -> str:
    """A readable, collision-free directory name for a project: its name and a hash of its path."""
    return f"{slugify(root.name, 24)}-{hashlib.sha256(str(root).encode()).hexdigest()[:10]}"


def plan_document(title: str, body: str) -> str:
    """The markdown saved for a revision: the body, under a ``# title`` heading unless it starts with one."""
    text = body.strip()
    if not text.startswith("# "):
        text = f"# {title}\n\n{text}"
    return text + "\n"


def summary_of(body: str) -> str:
    """A Plan's first paragraph of prose (headings skipped), shortened for a chat message."""
    paragraphs = (" ".join(p.split()) for p in re.split(r"\n\s*\n", body) if not p.lstrip().startswith("#"))
    text = next((p for p in paragraphs if p), "")
    return text if len(text) <= MAX_SUMMARY_LENGTH else text[: MAX_SUMMARY_LENGTH - 1].rstrip() + "…"


def plan_saved(plan: PlanRecord, body: str) -> PlanSaved:
    """The message that shows a saved revision: the Plan's title and summary, and its next steps as commands."""
    actions = tuple(PlanAction(label, f"/load-plan {plan.id} {action}") for label, action in NEXT_STEPS)
    summary = summary_of(body)
    steps = " · ".join(f"{a.label} ({a.command})" for a in actions)
    text = f"📋 Plan “{plan.title}” (revision {plan.current_revision})" + (f"\n{summary}" if summary else "") + f"\nNext: {steps}"
    return PlanSaved(text, plan.id, plan.current_revision, plan.title, summary, actions, uuid.uuid4().hex)


def _checked(title: str, body: str) -> tuple[str, str]:
    title = " ".join(title.split())
    if not title:
        raise ValueError("a Plan needs a title")
    if len(title) > MAX_TITLE_LENGTH:
        raise ValueError(f"a Plan title has at most {MAX_TITLE_LENGTH} characters")
    if not body.strip():
        raise ValueError("a Plan needs some text")
    return title, body


class PlanBook:
    """Writes, revises and reads Plans: files under ``<state>/plans/<project>/<plan>/rev-<n>.md``, metadata in the store."""

    def __init__(self, store: Store, state_dir: Path) -> None:
        self.store = store
        self.root = state_dir / "plans"

    async def write(self, *, cwd: str | Path, title: str, body: str, session_id: str | None = None) -> PlanRecord:
        """Save a new Plan for the project that ``cwd`` belongs to, as revision 1."""
        title, body = _checked(title, body)
        root = project_root(cwd)
        plan = PlanRecord(
            id=f"plan_{uuid.uuid4().hex[:16]}", project=project_key(root), project_dir=str(root),
            title=title, slug=slugify(title), current_revision=1,
        )
        path = self._save(plan, 1, plan_document(title, body))
        revision = PlanRevisionRecord(plan_id=plan.id, number=1, title=title, path=str(path), session_id=session_id)
        return await self.store.plans.create_plan(plan, revision)

    async def revise(self, plan_id: str, body: str, *, title: str | None = None, session_id: str | None = None) -> PlanRecord:
        """Save the next revision; it becomes current, back in draft, and open reviews of the Plan are superseded."""
        plan = await self.get(plan_id)
        title, body = _checked(title or plan.title, body)
        number = plan.current_revision + 1
        path = self._save(plan, number, plan_document(title, body))
        revision = PlanRevisionRecord(plan_id=plan.id, number=number, title=title, path=str(path), session_id=session_id)
        return await self.store.plans.add_plan_revision(revision)

    async def get(self, plan_id: str) -> PlanRecord:
        plan = await self.store.plans.get_plan(plan_id)
        if plan is None:
            raise PlanNotFound(f"no Plan with id {plan_id!r}")
        return plan

    def text(self, plan: PlanRecord, revision: int | None = None) -> str:
        """The markdown of a revision (the current one by default)."""
        return self.path(plan, revision or plan.current_revision).read_text(encoding="utf-8")

    async def for_project(self, cwd: str | Path) -> list[PlanRecord]:
        return await self.store.plans.list_plans(project_key(project_root(cwd)))

    async def for_session(self, session_id: str) -> list[PlanRecord]:
        return await self.store.plans.plans_for_session(session_id)

    def path(self, plan: PlanRecord, revision: int) -> Path:
        return self.root / plan.project / plan.id / f"rev-{revision}.md"

    def _save(self, plan: PlanRecord, revision: int, text: str) -> Path:
        path = self.path(plan, revision)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".md.partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
        return path


def plan_tools(plans: PlanBook) -> tuple[Tool, Tool]:
    """The planning tools a runtime offers: ``write_plan`` and ``revise_plan``."""

    async def write_plan(arguments: dict[str, Any], ctx: ToolContext) -> str:
        try:
            plan = await plans.write(
                cwd=ctx.cwd, title=str(arguments.get("title", "")), body=str(arguments.get("body", "")), session_id=ctx.session_id
            )
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        ctx.shown.append(plan_saved(plan, str(arguments.get("body", ""))))
        return f"Saved Plan {plan.id} revision 1: {plan.title}"

    async def revise_plan(arguments: dict[str, Any], ctx: ToolContext) -> str:
        plan_id = arguments.get("plan_id") or next((p.id for p in await plans.for_session(ctx.session_id)), None)
        if not plan_id:
            raise ToolError("this Session has no Plan to revise; write one with write_plan")
        try:
            plan = await plans.revise(
                str(plan_id), str(arguments.get("body", "")), title=arguments.get("title"), session_id=ctx.session_id
            )
        except (ValueError, PlanNotFound) as exc:
            raise ToolError(str(exc)) from None
        ctx.shown.append(plan_saved(plan, str(arguments.get("body", ""))))
        return f"Saved Plan {plan.id} revision {plan.current_revision}: {plan.title}"

    text = {"type": "string"}
    write_spec = ToolSpec(
        "write_plan",
        "Save a new Plan (markdown) for this project",
        {"type": "object", "properties": {"title": text, "body": text}, "required": ["title", "body"]},
    )
    revise_spec = ToolSpec(
        "revise_plan",
        "Save a new revision of a Plan (default: this Session's latest); it replaces any review in progress",
        {"type": "object", "properties": {"plan_id": text, "title": text, "body": text}, "required": ["body"]},
    )
    return Tool(write_spec, "edit", write_plan), Tool(revise_spec, "edit", revise_plan)
