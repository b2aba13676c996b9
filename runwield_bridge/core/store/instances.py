"""What several ``wld bridge`` instances on one PostgreSQL database share: leases that expire unless renewed (on the
database's clock, so hosts' clocks need not agree), the instance each conversation is handled on, and events handed
from the instance that received them to the one that owns their conversation. PostgreSQL only: on SQLite one
instance runs and none of this is used."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from ..records import Handoff
from .notifier import NOTIFY

NOW = "EXTRACT(EPOCH FROM clock_timestamp())"
INSTANCE = "instance:"
"""The prefix of an instance's own lease: ``instance:ID``, held while it lives."""

TAKE_LEASE = text(
    "INSERT INTO leases (name, owner, expires_at) VALUES (:name, :owner, " + NOW + " + :ttl) "
    "ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at "
    "WHERE leases.owner = EXCLUDED.owner OR leases.expires_at < " + NOW + " RETURNING owner"
)
LEASE_HELD = text("SELECT 1 FROM leases WHERE name = :name AND expires_at >= " + NOW)
END_LEASE = text("UPDATE leases SET expires_at = 0 WHERE name = :name AND owner = :owner")
DEAD_INSTANCES = text(
    "DELETE FROM leases WHERE name LIKE '" + INSTANCE + "%' AND expires_at < " + NOW + " RETURNING owner"
)
OWNER = text(
    "INSERT INTO conversation_owners (conversation, instance) VALUES (:conversation, :me) "
    "ON CONFLICT (conversation) DO UPDATE SET instance = EXCLUDED.instance "
    "WHERE NOT EXISTS (SELECT 1 FROM leases WHERE leases.name = '" + INSTANCE + "' || conversation_owners.instance "
    "AND leases.expires_at >= " + NOW + ") RETURNING instance"
)
CURRENT_OWNER = text("SELECT instance FROM conversation_owners WHERE conversation = :conversation")
TAKE_CONVERSATIONS = text("UPDATE conversation_owners SET instance = :me WHERE instance = :dead RETURNING conversation")
ADD_HANDOFF = text(
    "INSERT INTO handoffs (instance, origin, channel, kind, payload, started, created_at) "
    "VALUES (:instance, :origin, :channel, :kind, :payload, false, " + NOW + ") RETURNING id"
)
START_HANDOFF = text("UPDATE handoffs SET started = true WHERE id = :id AND instance = :me AND NOT started RETURNING *")
DROP_HANDOFF = text("DELETE FROM handoffs WHERE id = :id")
WAITING_HANDOFFS = text("SELECT id FROM handoffs WHERE instance = :me AND NOT started ORDER BY id")
MOVE_HANDOFFS = text("UPDATE handoffs SET instance = :me WHERE instance = :dead AND NOT started")
CUT_HANDOFFS = text("DELETE FROM handoffs WHERE instance = :dead AND started RETURNING *")


class InstanceRepository:
    """Leases, conversation owners and handoffs; each method is one statement in a transaction of its own."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def take_lease(self, name: str, owner: str, ttl: float) -> bool:
        """Take or renew the lease for ``ttl`` seconds; False while another owner's lease has not expired."""
        async with self.engine.begin() as conn:
            return (await conn.execute(TAKE_LEASE, {"name": name, "owner": owner, "ttl": ttl})).first() is not None

    async def lease_held(self, name: str) -> bool:
        """Whether someone holds the lease ``name`` now (it is not expired, nor let go of)."""
        async with self.engine.begin() as conn:
            return (await conn.execute(LEASE_HELD, {"name": name})).first() is not None

    async def end_lease(self, name: str, owner: str) -> None:
        """Let the lease expire now (an instance's: a survivor takes over what it left, as after a death)."""
        async with self.engine.begin() as conn:
            await conn.execute(END_LEASE, {"name": name, "owner": owner})

    async def dead_instances(self) -> list[str]:
        """The instances whose leases expired, each handed to one caller only (their lease rows are deleted)."""
        async with self.engine.begin() as conn:
            return [row[0] for row in await conn.execute(DEAD_INSTANCES)]

    async def owner(self, conversation: str, me: str) -> str:
        """The instance that handles the conversation: its owner while that one's lease lives, else ``me`` (atomically)."""
        async with self.engine.begin() as conn:
            taken = (await conn.execute(OWNER, {"conversation": conversation, "me": me})).scalar()
            if taken is not None:
                return str(taken)
            return str((await conn.execute(CURRENT_OWNER, {"conversation": conversation})).scalar())

    async def take_conversations(self, dead: str, me: str) -> list[str]:
        """Move a dead instance's conversations to ``me``; the keys of those moved."""
        async with self.engine.begin() as conn:
            return [row[0] for row in await conn.execute(TAKE_CONVERSATIONS, {"dead": dead, "me": me})]

    async def hand_off(self, instance: str, origin: str, channel: str, kind: str, payload: str, wake: str) -> int:
        """Store an event for ``instance`` and send ``handoff:ID`` on its notification channel ``wake`` (when committed)."""
        values = {"instance": instance, "origin": origin, "channel": channel, "kind": kind, "payload": payload}
        async with self.engine.begin() as conn:
            handoff_id = int((await conn.execute(ADD_HANDOFF, values)).scalar_one())
            await conn.execute(NOTIFY, {"channel": wake, "payload": f"handoff:{handoff_id}"})
            return handoff_id

    async def start_handoff(self, handoff_id: int, me: str) -> Handoff | None:
        """Mark a handoff for ``me`` started and return it; None if it is not (or no longer) waiting for ``me``."""
        async with self.engine.begin() as conn:
            row = (await conn.execute(START_HANDOFF, {"id": handoff_id, "me": me})).mappings().first()
            return None if row is None else Handoff(**row)

    async def finish_handoff(self, handoff_id: int) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(DROP_HANDOFF, {"id": handoff_id})

    async def waiting_handoffs(self, me: str) -> list[int]:
        """The handoffs for ``me`` not started yet, oldest first."""
        async with self.engine.begin() as conn:
            return [row[0] for row in await conn.execute(WAITING_HANDOFFS, {"me": me})]

    async def take_handoffs(self, dead: str, me: str) -> list[Handoff]:
        """Move a dead instance's handoffs that it never started to ``me``; return (and drop) those it had started."""
        async with self.engine.begin() as conn:
            await conn.execute(MOVE_HANDOFFS, {"dead": dead, "me": me})
            return [Handoff(**row) for row in (await conn.execute(CUT_HANDOFFS, {"dead": dead})).mappings()]

