"""The chat bridge's own state: conversation bindings, and the platform updates it claimed (so each is handled once)."""

from __future__ import annotations

import time

from dataclasses import asdict

from sqlalchemy import Connection, bindparam, delete, insert
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import col, select, update

from ..records import Binding, SeenUpdate, UnfinishedMessage
from .base import Connect, Repository, by_key, frozen
from .database import Database
from .follow_ups import FollowUpRepository
from .statements import Prepared
from .tables import BindingRow, SeenUpdateRow, UnfinishedMessageRow

BINDINGS = BindingRow.__table__  # type: ignore[attr-defined]
BINDING_OF = by_key(Binding, BindingRow)
BIND = Prepared(insert(BINDINGS).values({name: bindparam(name) for name in BINDINGS.c.keys()}))
REBIND = Prepared(
    update(BINDINGS)
    .where(BINDINGS.c.conversation == bindparam("key"))  # a column's own name is reserved in an UPDATE (PostgreSQL)
    .values({name: bindparam(name) for name in ("agent", "acp_session_id", "cwd", "updated_at")})
)


class BridgeStateRepository(Repository):
    """Bindings and update claims: what ``wld bridge`` keeps across restarts; ``follow_ups`` holds its queues."""

    def __init__(self, connect: Connect, database: Database) -> None:
        super().__init__(connect, database)
        self.follow_ups = FollowUpRepository(connect, database)

    async def get_binding(self, conversation: str) -> Binding | None:
        return await self._get(Binding, BindingRow, conversation)

    async def bound_conversations(self, prefix: str, agent: str) -> list[str]:
        """The conversations (keys starting with ``prefix``) bound to a session on ``agent``."""
        query = select(BindingRow.conversation).where(col(BindingRow.conversation).startswith(prefix), BindingRow.agent == agent)
        async with self._db() as db:
            return list((await db.exec(query)).all())

    async def set_binding(self, conversation: str, agent: str, acp_session_id: str, cwd: str | None = None) -> Binding:
        """Bind (or rebind) a conversation, in one transaction of plain statements (each new conversation writes two)."""
        binding = Binding(conversation=conversation, agent=agent, acp_session_id=acp_session_id, cwd=cwd, updated_at=time.time())
        values = asdict(binding)

        def write(conn: Connection) -> None:
            if BINDING_OF.first(conn, {"key0": conversation}):
                REBIND.run(conn, {**values, "key": conversation})
            else:
                BIND.run(conn, values)

        await self._database.write(write)
        return binding

    async def claim_update(self, channel: str, update_id: str, owner: str) -> SeenUpdate | None:
        """Claim an update for ``owner``; None if this is the first claim, else the earlier claim (unchanged)."""
        if await self._insert_new(SeenUpdateRow(channel=channel, update_id=update_id, owner=owner)):
            return None
        return await self._get(SeenUpdate, SeenUpdateRow, (channel, update_id))

    async def take_over_update(self, channel: str, update_id: str, earlier_owner: str, owner: str) -> bool:
        """Move an unfinished claim from ``earlier_owner`` to ``owner``; False if another took it first."""
        query = update(SeenUpdateRow).where(
            col(SeenUpdateRow.channel) == channel, col(SeenUpdateRow.update_id) == update_id, col(SeenUpdateRow.owner) == earlier_owner
        )
        async with self._db() as db:
            result = await db.exec(query.values(owner=owner))
            await db.commit()
            return bool(result.rowcount)

    async def finish_update(self, channel: str, update_id: str) -> None:
        async with self._db() as db:
            await db.exec(update(SeenUpdateRow).where(col(SeenUpdateRow.channel) == channel, col(SeenUpdateRow.update_id) == update_id).values(finished=True))
            await db.commit()

    async def forget_updates(self, claimed_before: float) -> None:
        """Drop claims older than ``claimed_before`` (platforms stop redelivering long before)."""
        async with self._db() as db:
            await db.exec(delete(SeenUpdateRow).where(col(SeenUpdateRow.claimed_at) < claimed_before))
            await db.commit()

    async def keep_message(self, channel: str, message_id: str, conversation: str, text: str, kind: str, instance: str | None = None) -> None:
        """Note (or update) a message that is not finished yet, shown by ``instance`` (None on SQLite)."""
        values = {"channel": channel, "message_id": message_id, "conversation": conversation, "text": text, "kind": kind, "instance": instance}
        async with self._db() as db:
            insert = postgresql_insert if (await db.connection()).dialect.name == "postgresql" else sqlite_insert
            statement = insert(UnfinishedMessageRow).values(**values, updated_at=time.time())
            changed = {name: statement.excluded[name] for name in ("text", "kind", "instance", "updated_at")}
            # one statement, so two notes of one message at once (a streaming reply's edits) never collide
            await db.exec(statement.on_conflict_do_update(index_elements=["channel", "message_id", "conversation"], set_=changed))
            await db.commit()

    async def drop_message(self, channel: str, message_id: str, conversation: str) -> None:
        """The message is finished."""
        query = delete(UnfinishedMessageRow).where(
            col(UnfinishedMessageRow.channel) == channel,
            col(UnfinishedMessageRow.message_id) == message_id,
            col(UnfinishedMessageRow.conversation) == conversation,
        )
        async with self._db() as db:
            await db.exec(query)
            await db.commit()

    async def unfinished_messages(self, channel: str, instance: str | None = None) -> list[UnfinishedMessage]:
        """A channel's messages that ``instance`` (None: no instance, as on SQLite) did not finish, oldest first."""
        shown_by = col(UnfinishedMessageRow.instance).is_(None) if instance is None else col(UnfinishedMessageRow.instance) == instance
        query = select(UnfinishedMessageRow).where(col(UnfinishedMessageRow.channel) == channel, shown_by).order_by(col(UnfinishedMessageRow.updated_at))
        async with self._db() as db:
            return [frozen(UnfinishedMessage, row) for row in (await db.exec(query)).all()]
