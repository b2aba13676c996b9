"""The interaction layer's core: the broker settles exactly once, steering joins a turn once, the command registry."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from runwield_bridge.core.builtin_commands import BUILTIN_COMMANDS
from runwield_bridge.core.catalog import ModelCatalog
from runwield_bridge.core.commands import Command, CommandRegistry, parse_invocation
from runwield_bridge.core.events import Event, MessageChunk, UserMessage
from runwield_bridge.core.interactions import InteractionBroker, Outcome, PendingQuestion, text
from runwield_bridge.core.models import ModelEvent, ModelInfo, ModelRequest, TextDelta
from runwield_bridge.core.sessions import SessionHost
from runwield_bridge.core.steering import INJECTED, NO_RUNNING_TURN
from runwield_bridge.core.store import Store
from runwield_bridge.runtimes.native import NativeRuntime

QUESTION = text("Name?")


class Later:
    """A presenter whose answers come later (a chat menu)."""

    def __init__(self) -> None:
        self.shown: list[PendingQuestion] = []

    async def present(self, pending: PendingQuestion) -> Outcome | None:
        self.shown.append(pending)
        return None


class Broken:
    async def present(self, pending: PendingQuestion) -> Outcome | None:
        raise ConnectionError("client went away")


async def test_a_question_settles_exactly_once() -> None:
    broker, later = InteractionBroker(), Later()
    asking = asyncio.create_task(broker.ask("s1", QUESTION, later))
    await asyncio.sleep(0)
    [pending] = later.shown
    assert broker.pending("s1") is pending
    assert pending.settle(Outcome.answer("Ann")) is True
    assert pending.settle(Outcome.cancelled()) is False
    assert await asking == Outcome.answer("Ann")
    assert broker.pending("s1") is None


async def test_expiry_failure_and_cancellation_settle_without_an_answer() -> None:
    assert await InteractionBroker(timeout=0.05).ask("s1", QUESTION, Later()) == Outcome.expired()
    failed = await InteractionBroker().ask("s1", QUESTION, Broken())
    assert failed.status == "failed" and "client went away" in failed.reason
    broker, later = InteractionBroker(), Later()
    asking = asyncio.create_task(broker.ask("s1", QUESTION, later))
    await asyncio.sleep(0)
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    assert later.shown[0].settled == Outcome.cancelled("the turn was cancelled")


async def test_one_question_at_a_time_per_session() -> None:
    broker = InteractionBroker()
    first = asyncio.create_task(broker.ask("s1", QUESTION, Later()))
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError):
        await broker.ask("s1", QUESTION, Later())
    other = asyncio.create_task(broker.ask("s2", QUESTION, Later()))
    await asyncio.sleep(0)
    for session_id in ("s1", "s2"):
        broker.pending(session_id).settle(Outcome.declined())
    assert (await first, await other) == (Outcome.declined(), Outcome.declined())


class Recording:
    """A model that records its requests; the first reply streams slowly, later ones say `ok`."""

    info = ModelInfo("recording", "Recording", context_window=1000)

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        words = ["one ", "two ", "three ", "four "] if len(self.requests) == 1 else ["ok"]
        for word in words:
            await asyncio.sleep(0.05)
            yield TextDelta(word)


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[tuple[SessionHost, Recording]]:
    model = Recording()
    catalog = ModelCatalog()
    catalog.add(model.info, lambda: model)
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'wld.db'}")
    session_host = SessionHost(store, catalog, [], tmp_path, default_model="recording", runtime=NativeRuntime(catalog, store.summaries))
    yield session_host, model
    await session_host.shutdown()
    await store.close()


def user_texts(request: ModelRequest) -> list[str]:
    return [m.text for m in request.messages if m.role == "user"]


async def test_steered_input_reaches_the_next_model_request_once(host, tmp_path: Path) -> None:
    session_host, model = host
    record = await session_host.create(str(tmp_path))
    events: list[Event] = []
    first_chunk = asyncio.Event()

    async def emit(event: Event) -> None:
        events.append(event)
        first_chunk.set()

    turn = asyncio.create_task(session_host.prompt(record.id, "go", emit))
    await first_chunk.wait()
    assert await session_host.steer(record.id, "turn left") == INJECTED
    assert (await turn).stop_reason == "end_turn"
    assert [user_texts(r) for r in model.requests] == [["go"], ["go", "turn left"]]
    assert [e.text for e in events if isinstance(e, UserMessage)] == ["turn left"]
    chunks = [e for e in events if isinstance(e, MessageChunk)]
    assert chunks[-1].text == "ok" and chunks[-1].message_id != chunks[0].message_id, "the reply is a new message"

    assert await session_host.steer(record.id, "too late") == NO_RUNNING_TURN
    await session_host.prompt(record.id, "again", emit)
    assert user_texts(model.requests[-1]) == ["go", "turn left", "again"], "once, in order, and nothing queued"
    history = await session_host.history(record.id)
    assert [type(e) for e in history] == [UserMessage, MessageChunk] * 3
    assert [e.text for e in history[::2]] == ["go", "turn left", "again"] and history[3].text == "ok"


def test_slash_commands_are_parsed_by_name_and_arguments() -> None:
    assert parse_invocation("/agent") == ("agent", "")
    assert parse_invocation("  /Model  scripted-fast \n") == ("model", "scripted-fast")
    assert parse_invocation("/review two\nlines") == ("review", "two\nlines")
    for not_a_command in ("/usr/bin/python is broken", "hello /agent", "/", "/ agent"):
        assert parse_invocation(not_a_command) is None


async def test_built_ins_win_over_plugins_and_plugins_over_project_files(tmp_path: Path) -> None:
    async def noop(ctx, args: str) -> None:
        return None

    (tmp_path / ".runwield" / "commands").mkdir(parents=True)
    (tmp_path / ".runwield" / "commands" / "deploy.md").write_text("Deploy $ARGUMENTS")
    (tmp_path / ".runwield" / "commands" / "models.md").write_text("an alias of a built-in")
    (tmp_path / ".runwield" / "commands" / "Bad Name.md").write_text("not a command name")
    skill = tmp_path / ".runwield" / "skills" / "folder"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: polish\n---\nPolish it.\n")
    plugins = [Command("help", "mine", noop, source="p"), Command("ship", "Ship", noop, aliases=("deploy",), source="p")]
    registry = CommandRegistry(BUILTIN_COMMANDS, plugins)
    names = [c.name for c in registry.commands(tmp_path)]
    assert names.count("help") == 1 and "ship" in names and "polish" in names
    assert "deploy" not in names and "models" not in names and "bad name" not in names
    assert registry.resolve(tmp_path, "/help").command.description == "List the commands"
    assert registry.resolve(tmp_path, "/deploy x").command.name == "ship"
    unknown = registry.resolve(tmp_path, "/nothing here")
    assert unknown.command is None and (unknown.name, unknown.args) == ("nothing", "here")
