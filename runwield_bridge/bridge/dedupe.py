"""Platforms deliver some updates again (webhook retries, gateway resumes, unconfirmed updates after a
crash); a durable claim taken before handling makes each one handled once, across restarts too.

An update is claimed before it is handled and marked finished after. A redelivery of a claimed update
is not handled again. If the bridge stopped between claim and finish (a crash while handing it on),
the update is not re-run either, since part of it may already have happened: the conversation is told
that it may not have arrived and can be sent again.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

log = logging.getLogger(__name__)

KEEP_SECONDS = 3 * 24 * 3600
"""How long a claim is kept: Telegram keeps unconfirmed updates for 24 hours, Slack and Discord far less."""
PRUNE_EVERY_SECONDS = 3600


class ClaimRecord(Protocol):
    """An earlier claim of an update."""

    owner: str
    finished: bool


class UpdateLog(Protocol):
    """Durable claims of platform updates; ``Store.bridge`` (``runwield_bridge.core.store``) is one."""

    async def claim_update(self, channel: str, update_id: str, owner: str) -> ClaimRecord | None: ...

    async def take_over_update(self, channel: str, update_id: str, earlier_owner: str, owner: str) -> bool:
        """Move an unfinished claim from ``earlier_owner`` to ``owner`` atomically; False if another took it first."""
        ...

    async def finish_update(self, channel: str, update_id: str) -> None: ...

    async def forget_updates(self, claimed_before: float) -> None: ...


@dataclass
class _Claim:
    owner: str
    finished: bool = False


class MemoryUpdateLog:
    """Claims that last as long as the process (``wld chat`` has no redeliveries to survive)."""

    def __init__(self) -> None:
        self._claims: dict[tuple[str, str], tuple[_Claim, float]] = {}

    async def claim_update(self, channel: str, update_id: str, owner: str) -> ClaimRecord | None:
        earlier = self._claims.get((channel, update_id))
        if earlier is None:
            self._claims[(channel, update_id)] = (_Claim(owner), time.time())
        return earlier[0] if earlier else None

    async def take_over_update(self, channel: str, update_id: str, earlier_owner: str, owner: str) -> bool:
        claim = self._claims.get((channel, update_id))
        if claim is None or claim[0].owner != earlier_owner:
            return False
        claim[0].owner = owner
        return True

    async def finish_update(self, channel: str, update_id: str) -> None:
        if claim := self._claims.get((channel, update_id)):
            claim[0].finished = True

    async def forget_updates(self, claimed_before: float) -> None:
        self._claims = {key: value for key, value in self._claims.items() if value[1] >= claimed_before}


class Delivery(Enum):
    """What a claim says about an update."""

    FIRST = "first"
    """Not seen before: handle it."""
    REPEAT = "repeat"
    """Handled already, or being handled now: drop it."""
    INTERRUPTED = "interrupted"
    """An earlier run claimed it and stopped before finishing: not re-run; the conversation is told (by the one
    delivery that takes the claim over, so a second redelivery meanwhile is a repeat)."""


class Deliveries:
    """One bridge run's claims on the update log; claims older than ``KEEP_SECONDS`` are pruned hourly.

    Among several instances (``owner`` an instance's id, ``alive`` whether an instance lives), an update that reaches
    them all (a Discord gateway event) is claimed by one; the others find its unfinished claim held by an instance
    that lives, which is being handled, not interrupted."""

    def __init__(self, updates: UpdateLog, owner: str | None = None, alive: Callable[[str], Awaitable[bool]] | None = None) -> None:
        self.updates = updates
        self.owner = owner or uuid.uuid4().hex
        self.alive = alive
        self._pruned_at = 0.0

    async def claim(self, channel: str, update_id: str) -> Delivery:
        """Claim the update for this run and say whether to handle it."""
        await self._prune()
        earlier = await self.updates.claim_update(channel, update_id, self.owner)
        if earlier is None:
            return Delivery.FIRST
        if earlier.finished or earlier.owner == self.owner or (self.alive is not None and await self.alive(earlier.owner)):
            log.info("%s update %s was delivered again, or to another instance too; handled there", channel, update_id)
            return Delivery.REPEAT
        if not await self.updates.take_over_update(channel, update_id, earlier.owner, self.owner):
            log.info("%s update %s was delivered again; already handled", channel, update_id)
            return Delivery.REPEAT
        log.warning("%s update %s was claimed by a bridge run that stopped before finishing it; not handled again", channel, update_id)
        return Delivery.INTERRUPTED

    async def finish(self, channel: str, update_id: str) -> None:
        await self.updates.finish_update(channel, update_id)

    async def _prune(self) -> None:
        now = time.time()
        if now - self._pruned_at >= PRUNE_EVERY_SECONDS:
            self._pruned_at = now
            await self.updates.forget_updates(now - KEEP_SECONDS)
