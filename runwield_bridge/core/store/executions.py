"""Executions of approved Plans and their write-ahead steps."""

from __future__ import annotations

import functools
import time
from typing import Any

from sqlalchemy import bindparam
from sqlmodel import col, select, update

from ..records import ExecutionRecord, ExecutionStep
from .base import Repository, change, frozen, link_session, row_of
from .statements import Prepared
from .tables import ExecutionRow, ExecutionStepRow, PlanRow


class ExecutionRepository(Repository):
    """Executions and their steps; an execution's changes move its Plan in the same transaction."""

    async def add_execution(self, execution: ExecutionRecord) -> ExecutionRecord:
        """Save a new execution; its Plan becomes ``executing`` and its Session is linked, in one transaction."""
        row = row_of(ExecutionRow, execution)
        async with self._db() as db:
            db.add(row)
            await change(db, PlanRow, execution.plan_id, {"state": "executing"})
            await link_session(db, execution.plan_id, execution.session_id, "executed")
            await db.commit()
            return frozen(ExecutionRecord, row)

    async def get_execution(self, execution_id: str) -> ExecutionRecord | None:
        return await self._get(ExecutionRecord, ExecutionRow, execution_id)

    async def list_executions(self, *, plan_id: str | None = None, states: tuple[str, ...] = ()) -> list[ExecutionRecord]:
        """Executions, oldest first, of one Plan and/or in the given states."""
        return await self._all(ExecutionRecord, _executions_query(plan_id is not None, bool(states)), {"plan_id": plan_id, "states": list(states)})

    async def session_executions(self, session_id: str, state: str) -> list[ExecutionRecord]:
        """The Session's executions in ``state``, oldest first (one such lookup runs on every turn)."""
        return await self._all(ExecutionRecord, SESSION_EXECUTIONS, {"session_id": session_id, "state": state})

    async def update_execution(
        self, execution_id: str, plan_changes: dict[str, Any] | None = None, **changes: Any
    ) -> ExecutionRecord:
        """Change an execution and, in the same transaction, its Plan."""
        async with self._db() as db:
            row = await change(db, ExecutionRow, execution_id, changes)
            if plan_changes:
                await change(db, PlanRow, row.plan_id, plan_changes)
            await db.commit()
            return frozen(ExecutionRecord, row)

    async def interrupt_execution(self, execution_id: str, reason: str, **changes: Any) -> ExecutionRecord:
        """Mark an execution (with ``changes``), its unfinished steps and its Plan interrupted, in one transaction."""
        async with self._db() as db:
            await db.exec(
                update(ExecutionStepRow)
                .where(col(ExecutionStepRow.execution_id) == execution_id, col(ExecutionStepRow.state) == "started")
                .values(state="interrupted", output=reason, finished_at=time.time())
            )
            row = await change(db, ExecutionRow, execution_id, {**changes, "state": "interrupted"})
            await change(db, PlanRow, row.plan_id, {"state": "interrupted"})
            await db.commit()
            return frozen(ExecutionRecord, row)

    async def begin_step(self, step: ExecutionStep) -> ExecutionStep:
        """Record that a step is about to run; committed before it does."""
        row = row_of(ExecutionStepRow, step)
        async with self._db() as db:
            db.add(row)
            await db.commit()
            return frozen(ExecutionStep, row)

    async def end_step(self, step_id: int, state: str, output: str = "", exit_code: int | None = None) -> ExecutionStep:
        async with self._db() as db:
            row = await change(db, ExecutionStepRow, step_id, {"state": state, "output": output, "exit_code": exit_code})
            await db.commit()
            return frozen(ExecutionStep, row)

    async def execution_steps(self, execution_id: str) -> list[ExecutionStep]:
        query = select(ExecutionStepRow).where(ExecutionStepRow.execution_id == execution_id).order_by(col(ExecutionStepRow.id))
        return await self._all(ExecutionStep, query)


EXECUTIONS = ExecutionRow.__table__  # type: ignore[attr-defined]
SESSION_EXECUTIONS = Prepared(
    select(*EXECUTIONS.c)
    .where(EXECUTIONS.c.session_id == bindparam("session_id"), EXECUTIONS.c.state == bindparam("state"))
    .order_by(EXECUTIONS.c.created_at)
)


@functools.cache
def _executions_query(of_plan: bool, in_states: bool) -> Any:
    """Executions oldest first, of the Plan ``plan_id`` and/or in ``states`` (parameters), built once."""
    query = select(ExecutionRow).order_by(col(ExecutionRow.created_at))
    if of_plan:
        query = query.where(ExecutionRow.plan_id == bindparam("plan_id"))
    if in_states:
        query = query.where(col(ExecutionRow.state).in_(bindparam("states", expanding=True)))
    return query
