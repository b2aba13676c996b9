"""The Session Host core, on a real SQLite file: durable Sessions, settling cancellation, selection."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from runwield_bridge.app import App
from runwield_bridge.config import load_settings
from runwield_bridge.core.catalog import UnknownChoice
from runwield_bridge.core.events import Event, MessageChunk, Thought, ToolProgress, TurnSettled, Usage, UserMessage
from runwield_bridge.core import locks
from runwield_bridge.core.locks import FileLocks, lock_key
from runwield_bridge.core.models import ModelInfo, ModelUsage, TextDelta, ToolCallRequest
from runwield_bridge.core.sessions import SessionBusy
from runwield_bridge.core.tools import Tool, ToolSpec
from runwield_bridge.hookspecs import hookimpl
from runwield_bridge.plugin_host import load_plugins
from waiting import until


class Recorder:
    """Collects a turn's events."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)

    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, MessageChunk))


async def start(tmp_path: Path, config: str = "") -> App:
    path = tmp_path / "wld.toml"
    path.write_text(config)
    return await App.start(load_settings(path))


async def test_a_session_and_its_transcript_survive_a_restart(tmp_path: Path) -> None:
    app = await start(tmp_path)
    record = await app.session_host.create(str(tmp_path))
    events = Recorder()
    settled = await app.session_host.prompt(record.id, "remember the blue door", events)
    assert settled.stop_reason == "end_turn"
    assert "remember the blue door" in events.text()
    assert sum(isinstance(e, MessageChunk) for e in events.events) >= 2, "the reply is streamed in chunks"
    await app.close()

    again = await start(tmp_path)
    history = await again.session_host.history(record.id)
    assert [type(e) for e in history] == [UserMessage, Thought, MessageChunk]
    assert history[0].text == "remember the blue door"
    assert history[1].text == "Thinking (medium) about: remember the blue door"
    assert history[2].text == events.text()
    stored = await again.session_host.get(record.id)
    assert stored.title == "remember the blue door"
    assert stored.cost_usd > 0
    await again.close()


async def test_usage_is_exact_and_cost_cumulative(tmp_path: Path) -> None:
    app = await start(tmp_path)
    record = await app.session_host.create(str(tmp_path))
    first, second = Recorder(), Recorder()
    await app.session_host.prompt(record.id, "one two three", first)
    await app.session_host.prompt(record.id, "four", second)
    [u1] = [e for e in first.events if isinstance(e, Usage)]
    [u2] = [e for e in second.events if isinstance(e, Usage)]
    # scripted tokens are words: "one two three" (3) + reply "You said: one two three" (5)
    assert (u1.used, u1.size) == (8, 32768)
    assert u1.cost_usd == pytest.approx(3e-6 + 5 * 2e-6)
    assert u2.used == 8 + 1 + 3  # history, the prompt, the reply "You said: four"
    assert u2.cost_usd == pytest.approx(u1.cost_usd + 9e-6 + 3 * 2e-6)
    assert (await app.session_host.get(record.id)).cost_usd == pytest.approx(u2.cost_usd)
    await app.close()


async def test_cancel_settles_before_the_next_turn_and_keeps_partial_work(tmp_path: Path) -> None:
    app = await start(tmp_path)
    record = await app.session_host.create(str(tmp_path))
    slow = Recorder()
    turn = asyncio.create_task(app.session_host.prompt(record.id, "a slow one", slow))
    await until(slow.text, "the slow reply to start")
    with pytest.raises(SessionBusy):
        await app.session_host.prompt(record.id, "too early", Recorder())
    await app.session_host.cancel(record.id)
    assert turn.done(), "cancel returns only once the turn has settled"
    assert (await turn).stop_reason == "cancelled"
    assert isinstance(slow.events[-1], TurnSettled)
    after = Recorder()
    assert (await app.session_host.prompt(record.id, "next", after)).stop_reason == "end_turn"
    history = await app.session_host.history(record.id)
    assert [e.text for e in history if isinstance(e, UserMessage)] == ["a slow one", "next"]
    assert isinstance(history[2], MessageChunk) and history[2].text == slow.text(), "the partial reply is kept"
    await app.close()


async def test_a_prompt_during_cancellation_waits_for_the_settle(tmp_path: Path) -> None:
    app = await start(tmp_path)
    record = await app.session_host.create(str(tmp_path))
    slow = Recorder()
    turn = asyncio.create_task(app.session_host.prompt(record.id, "slow", slow))
    await until(slow.text, "the slow reply to start")
    cancel = asyncio.create_task(app.session_host.cancel(record.id))
    await asyncio.sleep(0)  # the cancel is delivered first, as a client sends it
    follow = Recorder()
    result = await app.session_host.prompt(record.id, "follow-up", follow)
    assert result.stop_reason == "end_turn"
    assert (await turn).stop_reason == "cancelled"
    await cancel
    await app.close()


async def test_tool_progress_for_the_tools_it_calls(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    app = await start(tmp_path)
    record = await app.session_host.create(str(tmp_path))
    events = Recorder()
    await app.session_host.prompt(record.id, "read notes.txt", events)
    tools = [e for e in events.events if isinstance(e, ToolProgress)]
    assert [t.status for t in tools] == ["pending", "in_progress", "completed"]
    assert tools[0].started and tools[0].title == "read_file notes.txt"
    assert "alpha" in tools[-1].output
    assert "The tool returned 2 lines" in events.text()
    await app.close()


async def test_a_tool_cannot_leave_the_project(tmp_path: Path) -> None:
    app = await start(tmp_path)
    record = await app.session_host.create(str(tmp_path / "project"))
    events = Recorder()
    await app.session_host.prompt(record.id, "read ../../etc/passwd", events)
    final = [e for e in events.events if isinstance(e, ToolProgress)][-1]
    assert final.status == "failed" and "outside the project" in final.output
    await app.close()


async def test_a_failing_model_ends_the_turn_with_an_error_that_says_so(tmp_path: Path) -> None:
    app = await start(tmp_path)
    record = await app.session_host.create(str(tmp_path))
    events = Recorder()
    settled = await app.session_host.prompt(record.id, "please fail now", events)
    assert settled.stop_reason == "error" and "asked to fail" in settled.error
    assert (await app.session_host.prompt(record.id, "and now?", Recorder())).stop_reason == "end_turn"
    await app.close()


async def test_selection_changes_validate_and_change_nothing_on_error(tmp_path: Path) -> None:
    app = await start(tmp_path)
    record = await app.session_host.create(str(tmp_path))
    assert (record.model, record.reasoning) == ("scripted", "medium")
    record = await app.session_host.select(record.id, reasoning="high")
    assert record.reasoning == "high"
    with pytest.raises(UnknownChoice):
        await app.session_host.select(record.id, reasoning="extreme")
    with pytest.raises(UnknownChoice):
        await app.session_host.select(record.id, model="no-such-model")
    assert (await app.session_host.get(record.id)).reasoning == "high"
    record = await app.session_host.select(record.id, model="scripted-fast")
    assert record.reasoning is None, "a model that does not reason has no reasoning level"
    with pytest.raises(UnknownChoice):
        await app.session_host.select(record.id, reasoning="low")
    await app.close()


async def test_archive_is_reversible_and_keeps_the_transcript(tmp_path: Path) -> None:
    app = await start(tmp_path)
    record = await app.session_host.create(str(tmp_path))
    await app.session_host.prompt(record.id, "keep me", Recorder())
    await app.session_host.archive(record.id)
    assert [r.id for r in await app.store.sessions.list_sessions()] == []
    assert [type(e) for e in await app.session_host.history(record.id)] == [UserMessage, Thought, MessageChunk]
    await app.session_host.archive(record.id, archived=False)
    assert [r.id for r in await app.store.sessions.list_sessions()] == [record.id]
    await app.close()


async def test_register_providers_builds_a_configured_scripted_model(tmp_path: Path) -> None:
    config = '[models.tiny]\nprovider = "scripted"\ncontext_window = 50\nreasoning_levels = ["off", "on"]\n[sessions]\nmodel = "tiny"\n'
    app = await start(tmp_path, config)
    record = await app.session_host.create(str(tmp_path))
    assert (record.model, record.reasoning) == ("tiny", "on")
    events = Recorder()
    await app.session_host.prompt(record.id, "hello", events)
    assert [e.size for e in events.events if isinstance(e, Usage)] == [50]
    await app.close()


async def test_a_provider_that_no_plugin_offers_is_a_config_error(tmp_path: Path) -> None:
    from runwield_bridge.config import ConfigError

    with pytest.raises(ConfigError, match="models.cloud.provider: no plugin provides 'anthropic'"):
        await start(tmp_path, '[plugins]\nblock = ["providers"]\n[models.cloud]\nprovider = "anthropic"\n')


class ShoutPlugin:
    """A plugin adding a tool and a model that calls it."""

    @staticmethod
    async def shout(arguments: dict[str, Any], _ctx: Any) -> str:
        return str(arguments["text"]).upper()

    @hookimpl
    def register_tools(self, register) -> None:
        register(Tool(ToolSpec("shout", "Upper-case text", {"type": "object"}), "other", self.shout))

    @hookimpl
    def register_models(self, register) -> None:
        info = ModelInfo(id="shouter", name="Shouter", context_window=1000)

        class Shouter:
            def __init__(self) -> None:
                self.info = info

            async def stream(self, request):
                last = request.messages[-1]
                if last.role == "user":
                    yield ToolCallRequest("c1", "shout", {"text": last.text})
                else:
                    yield TextDelta(f"shouted: {last.text}")
                yield ModelUsage(context_tokens=1)

        register(info, Shouter)


async def test_plugin_tools_and_models_are_used_by_turns(tmp_path: Path) -> None:
    plugins = load_plugins()
    plugins.register(ShoutPlugin(), "shout")
    path = tmp_path / "wld.toml"
    path.write_text('[sessions]\nmodel = "shouter"\n')
    app = await App.start(load_settings(path), plugins)
    record = await app.session_host.create(str(tmp_path))
    events = Recorder()
    await app.session_host.prompt(record.id, "quiet words", events)
    assert events.text() == "shouted: QUIET WORDS"
    await app.close()


async def test_the_store_is_a_sqlite_file_in_wal_mode(tmp_path: Path, wld_home: Path) -> None:
    import sqlite3

    app = await start(tmp_path)
    await app.session_host.create(str(tmp_path))
    await app.close()
    with sqlite3.connect(wld_home / "wld.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


CHECKER = """
import asyncio, sys
from pathlib import Path
from runwield_bridge.core.locks import FileLocks, lock_key

async def main():
    locks, key = FileLocks(Path(sys.argv[1])), lock_key("ses_checked")
    print("ready", flush=True)
    print(sum([await locks.taken(key) for _ in range(int(sys.argv[2]))]), flush=True)

asyncio.run(main())
"""


async def test_checking_a_writer_from_another_process_never_refuses_it(tmp_path: Path) -> None:
    """Another process checks a Session's writer as fast as it can while this one takes and releases it: every
    take succeeds, and the checks saw it taken. Checking is not holding."""
    lock, key = FileLocks(tmp_path), lock_key("ses_checked")
    checker = subprocess.Popen([sys.executable, "-c", CHECKER, str(tmp_path), "200000"], stdout=subprocess.PIPE, text=True)
    assert checker.stdout is not None and checker.stdout.readline() == "ready\n"
    takes, deadline = 0, time.monotonic() + 120
    while checker.poll() is None and time.monotonic() < deadline:
        assert await lock.try_lock(key), f"take {takes + 1} was refused while another process only checked"
        await lock.unlock(key)
        takes += 1
    seen_taken = int(checker.stdout.read())
    assert checker.wait() == 0 and takes > 1000 and seen_taken > 0, "the checks overlapped the takes"


@pytest.mark.parametrize("ofd", [True, False], ids=["ofd-locks", "flock"])
async def test_a_writer_excludes_another_until_released_with_either_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ofd: bool) -> None:
    """Linux's open-file-description locks, and flock(2) where they are missing (macOS): one writer at a time."""
    monkeypatch.setattr(locks, "OFD_LOCKS", ofd)
    first, second = FileLocks(tmp_path)("ses_one"), FileLocks(tmp_path)("ses_one")
    assert not await second.taken() and await first.try_acquire()
    assert await second.taken() and not await second.try_acquire(), "a second writer is refused while the first holds it"
    await first.release()
    assert not await second.taken() and await second.try_acquire() and await first.taken()
    await second.release()
