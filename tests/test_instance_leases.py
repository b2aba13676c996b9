"""What several `wld bridge` instances share on one real PostgreSQL database: leases that one holder has at a time
and that expire when not renewed, conversation owners taken over only from a dead instance, handoffs, and
notifications between processes (each store here stands for a process) that survive a dropped connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url
from waiting import PATIENCE, until

from runwield_bridge.app import App
from runwield_bridge.bridge import instances
from runwield_bridge.bridge.instances import Instances
from runwield_bridge.config import Settings
from runwield_bridge.core.reviews import ReviewHub, static_link_base
from runwield_bridge.core.store import Store
from runwield_bridge.core.store.instances import InstanceRepository
from tests.database_kit import postgres_database

SHORT = 0.3  # seconds: a lease that expires quickly, for the tests of expiry


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with postgres_database() as found:
        yield found


@pytest.fixture
async def two(url: str) -> AsyncIterator[tuple[Store, Store]]:
    """Two stores on one database, as two processes have."""
    here, there = await Store.open(url), await Store.open(url)
    try:
        yield here, there
    finally:
        await here.close()
        await there.close()


def repositories(two: tuple[Store, Store]) -> tuple[InstanceRepository, InstanceRepository]:
    assert two[0].instances is not None and two[1].instances is not None, "PostgreSQL stores have the instances' tables"
    return two[0].instances, two[1].instances


async def expired(repo: InstanceRepository, name: str, owner: str) -> None:
    """Return once ``owner`` can take the lease ``name`` (its holder's has expired); bounded."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE
    while not await repo.take_lease(name, owner, 30):
        assert loop.time() < deadline, f"the lease {name} never expired"
        await asyncio.sleep(SHORT / 3)


async def listening(url: str, channel: str) -> None:
    """Return once a connection to the database listens on ``channel``; bounded."""
    admin = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + PATIENCE
        while not await admin.fetchval("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE query LIKE $1)", f"LISTEN%{channel}%"):
            assert loop.time() < deadline, f"nobody listens on {channel}"
            await asyncio.sleep(SHORT / 3)
    finally:
        await admin.close()


async def test_a_lease_has_one_holder_until_it_expires_or_is_ended(two: tuple[Store, Store]) -> None:
    a, b = repositories(two)
    assert await a.take_lease("listen:telegram", "A", 30)
    assert not await b.take_lease("listen:telegram", "B", 30), "held by A"
    assert await a.take_lease("listen:telegram", "A", SHORT), "its holder renews it"
    await expired(b, "listen:telegram", "B")
    assert not await a.take_lease("listen:telegram", "A", 30), "B holds it now"
    await b.end_lease("listen:telegram", "B")
    assert await a.take_lease("listen:telegram", "A", 30), "an ended lease is free at once"


async def test_a_conversation_stays_with_its_live_owner_and_moves_only_when_it_is_dead(two: tuple[Store, Store]) -> None:
    a, b = repositories(two)
    assert await a.take_lease("instance:A", "A", 30) and await b.take_lease("instance:B", "B", SHORT)
    assert await b.owner("telegram:1", "B") == "B", "the first to ask owns it"
    assert await a.owner("telegram:1", "A") == "B", "another instance is told its owner"
    assert await a.owner("telegram:2", "A") == "A"
    await expired(a, "instance:B", "probe")  # B stopped renewing
    await a.end_lease("instance:B", "probe")
    assert await a.owner("telegram:1", "A") == "A", "a dead owner's conversation is taken by the next to ask"
    assert await b.owner("telegram:2", "B") == "A", "A lives: its conversations stay"


async def test_a_dead_instance_is_taken_over_by_one_survivor_with_its_conversations_and_handoffs(two: tuple[Store, Store]) -> None:
    a, b = repositories(two)
    assert await a.take_lease("instance:A", "A", 30) and await b.take_lease("instance:B", "B", SHORT)
    assert await b.owner("slack:C1:1", "B") == "B" and await b.owner("slack:C1:2", "B") == "B"
    started = await a.hand_off("B", "A", "slack", "message", '{"n": 1}', "wld_instance_B")
    waiting = await a.hand_off("B", "A", "slack", "press", '{"n": 2}', "wld_instance_B")
    assert (await b.start_handoff(started, "B")).payload == '{"n": 1}'  # type: ignore[union-attr]
    assert await b.start_handoff(started, "B") is None, "a handoff is started once"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE
    dead: list[str] = []
    while not dead:
        assert loop.time() < deadline, "B's lease never expired"
        dead = await a.dead_instances()
    assert dead == ["B"] and await b.dead_instances() == [], "each dead instance is handed to one survivor"
    assert sorted(await a.take_conversations("B", "A")) == ["slack:C1:1", "slack:C1:2"]
    cut = await a.take_handoffs("B", "A")
    assert [h.id for h in cut] == [started], "the one B had started is given back to be reported, not run"
    assert await a.waiting_handoffs("A") == [waiting], "the one B never started is A's now"
    assert (await a.start_handoff(waiting, "A")).kind == "press"  # type: ignore[union-attr]


async def test_a_notification_reaches_another_process_and_listening_survives_a_dropped_connection(two: tuple[Store, Store], url: str) -> None:
    here, there = two
    heard: list[str | None] = []
    await here.notifier.listen("wld_test", heard.append)
    await there.notifier.notify("wld_test", "one")
    await until(lambda: "one" in heard, "the notification from the other store")
    admin = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()")
    finally:
        await admin.close()
    await until(lambda: None in heard, "the listener told that notifications may have been missed")
    await there.notifier.notify("wld_test", "two")
    await until(lambda: "two" in heard, "a notification after the reconnection")


async def test_a_review_decided_through_another_process_wakes_the_waiting_session_without_polling(url: str, tmp_path: Path) -> None:
    """The waiter would look again only after an hour: only the notification can wake it."""
    waiting_app = await App.start(Settings.model_validate({"database_url": url, "home": str(tmp_path / "a")}))
    deciding_app = await App.start(Settings.model_validate({"database_url": url, "home": str(tmp_path / "a")}))
    try:
        session = await waiting_app.session_host.create(str(tmp_path))
        plan = await waiting_app.plans.write(cwd=tmp_path, title="Add a README", body="# Add a README\n\nWrite it.\n", session_id=session.id)
        waiting_hub = ReviewHub(waiting_app.store, waiting_app.plans, static_link_base("http://a"))
        link = await waiting_hub.start(plan.id, session.id)
        waiter = asyncio.create_task(waiting_hub.wait(link.review_id, poll=3600))
        await listening(url, "wld_review_decisions")
        deciding_hub = ReviewHub(deciding_app.store, deciding_app.plans, static_link_base("http://b"))
        await deciding_hub.approve(link.url.rsplit("/", 1)[1])
        outcome = await asyncio.wait_for(waiter, PATIENCE)
        assert outcome.approved and outcome.review_id == link.review_id
    finally:
        await deciding_app.close()
        await waiting_app.close()


async def test_a_listener_only_one_instance_runs_moves_at_once_when_its_holder_lets_go(two: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch) -> None:
    """With leases of an hour and no retry before then, only the release's notification can let the waiter in."""
    monkeypatch.setattr(instances, "LEASE_SECONDS", 3600.0)
    monkeypatch.setattr(instances, "RENEW_SECONDS", 3600.0)
    a, b = repositories(two)
    refused: list[str] = []

    async def take_lease(name: str, owner: str, ttl: float) -> bool:
        taken = await InstanceRepository.take_lease(b, name, owner, ttl)
        if not taken:
            refused.append(name)
        return taken

    monkeypatch.setattr(b, "take_lease", take_lease)
    here, there = Instances(a, two[0].notifier), Instances(b, two[1].notifier)
    running: list[str] = []

    async def listen(name: str) -> None:
        running.append(name)
        await asyncio.Event().wait()

    first = asyncio.create_task(here.exclusively("listen:telegram", lambda: listen("here")))
    await until(lambda: running == ["here"], "the first instance listening")
    second = asyncio.create_task(there.exclusively("listen:telegram", lambda: listen("there")))
    await until(lambda: refused == ["listen:telegram"], "the other instance refused the lease and waiting")
    assert running == ["here"], "one listener at a time"
    first.cancel()  # the holder stops
    await until(lambda: running == ["here", "there"], "the other instance listening once the lease is let go")
    second.cancel()
    await asyncio.gather(first, second, return_exceptions=True)


async def test_an_owners_answer_reaches_the_asker_even_before_it_waits_and_none_comes_for_a_silent_owner(
    two: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(instances, "ANSWER_WAIT_SECONDS", SHORT)
    (here, there), (a, b) = two, repositories(two)
    asker, owner = Instances(a, here.notifier), Instances(b, there.notifier)

    async def answer(handoff: instances.HandoffRecord) -> str | None:
        return None if handoff.payload == "silent" else f"answer to {handoff.payload}: with a colon"

    async def no_deaths(*_: object) -> None:
        pass

    await asker.start(answer, no_deaths)
    await owner.start(answer, no_deaths)
    heard: list[str | None] = []
    await here.notifier.listen(asker.channel, heard.append)  # after the asker's own listener: it hears each answer second
    try:
        assert await asker.alive(owner.id) and not await asker.alive("no-such-instance")
        first = await asker.hand_off(owner.id, "discord", "models", "one")
        assert await asker.answer_for(first) == "answer to one: with a colon"
        early = await asker.hand_off(owner.id, "discord", "models", "two")
        await until(lambda: any(h and h.startswith(f"answer:{early}:") for h in heard), "the answer, before the asker waits for it")
        assert await asker.answer_for(early) == "answer to two: with a colon"
        assert await asker.answer_for(await asker.hand_off(owner.id, "discord", "models", "silent")) is None
        await owner.stop()
        assert not await asker.alive(owner.id), "a stopped instance's lease is let go of"
    finally:
        await here.notifier.unlisten(asker.channel, heard.append)
        await owner.stop()
        await asker.stop()
