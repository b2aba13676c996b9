"""Turns survive crashes: `wld acp` killed with SIGKILL at random points of streamed turns, then reloaded."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_wire import WireClient
from test_acp_server import INIT, WLD, text_prompt, updates

from runwield_bridge.core.catalog import ModelCatalog
from runwield_bridge.core.events import Event, MessageChunk, Notice, ToolProgress, UserMessage
from runwield_bridge.core.models import ModelEvent, ModelInfo, ModelRequest, TextDelta
from runwield_bridge.core.sessions import SessionHost
from runwield_bridge.core.store import Store
from runwield_bridge.runtimes.native import NativeRuntime
from runwield_bridge.core.transcript import INTERRUPTED, TurnJournal

SEED = 7
ROUNDS = 4  # processes killed
SESSIONS = 3  # slow turns running in each when it is killed
STAGGER = 8  # at most this many updates of one slow turn come before the next starts
SLOW_UPDATES = 19  # a slow turn's updates: a thought, two reply chunks, 15 numbers, usage


@dataclass
class Turn:
    """A turn as a load replays it: the prompt, the reply text, and the notices after it."""

    prompt: str
    reply: str = ""
    notices: tuple[str, ...] = ()


def replayed_turns(replay: list[dict[str, Any]]) -> list[Turn]:
    """The turns of a load's replay: each starts at a user message; notices are kept apart from the reply."""
    turns: list[Turn] = []
    for update in replay:
        kind = update["sessionUpdate"]
        if kind == "user_message_chunk":
            turns.append(Turn(update["content"]["text"]))
        elif kind == "agent_message_chunk" and "notice" in update.get("_meta", {}).get("runwield", {}):
            turns[-1].notices += (update["content"]["text"].strip(),)
        elif kind == "agent_message_chunk":
            turns[-1].reply += update["content"]["text"]
    return turns


def reply_seen(shown: list[dict[str, Any]]) -> str:
    """The reply text among updates the client was shown (notices left out)."""
    return "".join(turn.reply for turn in replayed_turns([{"sessionUpdate": "user_message_chunk", "content": {"text": ""}}, *shown]))


def full_reply(prompt: str) -> str:
    """What the scripted model says to a ``slow`` prompt, all of it (docs/scripted-model.md)."""
    return f"You said: {prompt}" + "".join(f" {n}" for n in range(1, 16))


async def open_sessions(client: WireClient, cwd: Path, session_ids: list[str]) -> list[list[Turn]]:
    """Initialize, then create the Sessions (first time) or load them: the turns each load replayed."""
    await client.call("initialize", INIT)
    params = {"cwd": str(cwd), "mcpServers": []}
    if not session_ids:
        session_ids.extend([(await client.call("session/new", params))["sessionId"] for _ in range(SESSIONS)])
        return [[] for _ in session_ids]
    for session_id in session_ids:
        await client.call("session/load", {**params, "sessionId": session_id})
    return [replayed_turns(updates(client, session_id)) for session_id in session_ids]


async def wait_for_updates(client: WireClient, session_id: str, count: int, turn: asyncio.Task[Any]) -> None:
    """Wait until the client has seen ``count`` updates of the Session, or the turn's answer."""
    await client.wait_message(lambda _: turn.done() or len(updates(client, session_id)) >= count, timeout=60)


async def answered(turn: asyncio.Task[dict[str, Any]]) -> bool:
    """Whether the client got the turn's answer before the agent died: then the turn had settled."""
    try:
        return "result" in await turn
    except ConnectionError:
        return False


async def test_turns_killed_at_random_points_replay_what_was_said_and_no_settled_turn_is_lost(tmp_path: Path) -> None:
    """Each round, one process runs a slow turn on each of three Sessions, each started after a random number of
    updates of the one before, and is killed with SIGKILL once the first has shown a random number of updates (all
    of them: it has settled); the next process loads every Session. The random numbers come from a seeded RNG."""
    rng = random.Random(SEED)
    session_ids: list[str] = []
    known: list[list[Turn]] = [[] for _ in range(SESSIONS)]  # every turn a load must replay, exactly
    killed: list[tuple[str, bool, str | None]] = []  # per Session: the killed turn's prompt, whether it settled, the reply it showed (None: nothing)
    async with contextlib.AsyncExitStack() as processes:
        spawn = functools.partial(WireClient.spawn, [WLD, "acp"], cwd=tmp_path)
        client = await processes.enter_async_context(spawn())
        for round_ in range(ROUNDS + 1):
            if round_ < ROUNDS:  # the next process starts now (as a supervisor would restart it), to save time
                restarted = await processes.enter_async_context(spawn())
            loaded = await open_sessions(client, tmp_path, session_ids)
            for turns, earlier, session_killed in zip(loaded, known, killed or [None] * SESSIONS):
                assert turns[: len(earlier)] == earlier, "a load replays every earlier turn unchanged; settled ones in full"
                if session_killed is not None:
                    earlier.extend(check_killed_turn(turns[len(earlier) :], *session_killed))
                assert len(turns) == len(earlier)
            if round_ == ROUNDS:
                break
            for session_id, turns in zip(session_ids, known):
                prompt = f"settled {round_}"
                assert (await client.call("session/prompt", text_prompt(session_id, prompt)))["stopReason"] == "end_turn"
                turns.append(Turn(prompt, f"You said: {prompt}"))
            before = [len(updates(client, session_id)) for session_id in session_ids]
            prompts = [f"slow {round_}.{n}" for n in range(SESSIONS)]
            running: list[asyncio.Task[dict[str, Any]]] = []
            for session_id, prompt, seen in zip(session_ids, prompts, before):
                running.append(asyncio.create_task(client.request("session/prompt", text_prompt(session_id, prompt), timeout=60)))
                await wait_for_updates(client, session_id, seen + rng.randint(0, STAGGER), running[-1])
            # the kill: once the first turn has shown a random number of updates (it may have shown them already)
            await wait_for_updates(client, session_ids[0], before[0] + rng.randint(0, SLOW_UPDATES + 1), running[0])
            client.proc.send_signal(signal.SIGKILL)
            await client.proc.wait()
            settled = [await answered(turn) for turn in running]
            shown = [reply_seen(updates(client, session_id)[seen:]) if len(updates(client, session_id)) > seen else None for session_id, seen in zip(session_ids, before)]
            killed = list(zip(prompts, settled, shown))
            client = restarted


def check_killed_turn(rest: list[Turn], prompt: str, settled: bool, shown: str | None) -> list[Turn]:
    """What a load replays of a killed turn: all of it if it had settled; else nothing if it showed nothing, or the
    prompt, a prefix of the reply at least as long as the part shown before the kill, and the interrupted notice
    (or all of it, had it settled just before the kill)."""
    if settled:
        assert rest == [Turn(prompt, full_reply(prompt))]
    elif rest or shown is not None:
        [turn] = rest  # a turn that showed anything was recorded before it did
        assert turn.prompt == prompt
        assert full_reply(prompt).startswith(turn.reply), "the part said before the kill, nothing else"
        assert turn.reply.startswith(shown or ""), f"all the client was shown comes back: {shown!r}, replayed {turn.reply!r}"
        completed = turn.reply == full_reply(prompt) and not turn.notices
        assert completed or (len(turn.notices) == 1 and turn.notices[0] == f"⚠️ {INTERRUPTED}")
    return rest


class Gated:
    """A model whose first reply stops after its first words until the test lets it go on."""

    info = ModelInfo("gated", "Gated", context_window=1000)

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []
        self.go_on = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        if len(self.requests) > 1:
            yield TextDelta("ok")
            return
        yield TextDelta("first words")
        await self.go_on.wait()
        yield TextDelta(", then the rest")


async def test_a_reply_is_saved_while_it_streams_and_the_model_later_sees_it_whole(database_url: str, tmp_path: Path) -> None:
    model = Gated()
    catalog = ModelCatalog()
    catalog.add(model.info, lambda: model)
    store = await Store.open(database_url)
    host = SessionHost(store, catalog, [], tmp_path, default_model="gated", runtime=NativeRuntime(catalog))
    record = await host.create(str(tmp_path))

    async def ignore(event: Event) -> None:
        pass

    turn = asyncio.create_task(host.prompt(record.id, "go", ignore))

    async def saved() -> list[str]:
        return [e.text for e in await store.sessions.transcript(record.id) if e.kind == "agent"]

    deadline = time.monotonic() + 30
    while await saved() != ["first words"]:  # written while the turn still runs, within about half a second
        assert time.monotonic() < deadline and not turn.done(), "the streamed words were not saved during the turn"
        await asyncio.sleep(0.05)
    model.go_on.set()
    assert (await turn).stop_reason == "end_turn"
    assert await saved() == ["first words", ", then the rest"], "the rest is written when the turn ends"
    await host.prompt(record.id, "again", ignore)
    assert [(m.role, m.text) for m in model.requests[-1].messages] == [
        ("user", "go"),
        ("assistant", "first words, then the rest"),
        ("user", "again"),
    ], "the model sees the reply as one message"
    assert [type(e) for e in await host.history(record.id)] == [UserMessage, MessageChunk] * 2
    await host.shutdown()
    await store.close()


async def test_processes_opening_a_new_database_together_do_not_fail_on_each_other(tmp_path: Path) -> None:
    for attempt in range(5):
        url = f"sqlite+aiosqlite:///{tmp_path / f'new-{attempt}.db'}"
        stores = await asyncio.gather(*(Store.open(url) for _ in range(4)))
        for store in stores:
            await store.close()


async def test_a_turn_whose_process_ended_is_marked_interrupted_once_by_the_next_prompt(database_url: str, tmp_path: Path) -> None:
    """A turn left running with an open tool call (its process ended: nobody holds the writer) is marked by the next
    prompt, before it: its tool call fails, then the notice; a later load marks nothing again."""
    model = Gated()
    model.go_on.set()
    catalog = ModelCatalog()
    catalog.add(model.info, lambda: model)
    store = await Store.open(database_url)
    host = SessionHost(store, catalog, [], tmp_path, default_model="gated", runtime=NativeRuntime(catalog))
    record = await host.create(str(tmp_path))
    ended = TurnJournal(store.sessions, record.id)  # what a killed process left behind
    await ended.begin([("user", "list files", {})])
    await ended.record(ToolProgress("call-1", "list_files .", "search", "pending", started=True))

    async def ignore(event: Event) -> None:
        pass

    await host.prompt(record.id, "again", ignore)
    expected = [
        UserMessage("list files"),
        ToolProgress("call-1", "list_files .", "search", "pending", started=True),
        ToolProgress("call-1", "list_files .", "search", "failed", output="interrupted"),
        Notice(INTERRUPTED, "warning"),
        UserMessage("again"),
    ]
    for _ in range(2):
        history = await host.history(record.id)
        assert history[:5] == expected and [type(e) for e in history[5:]] == [MessageChunk]
    await host.shutdown()
    await store.close()
