"""Long native Sessions on a model with a small window (ADR 0033 D4/D5): compaction into a stored summary, requests
that always fit, a prefix that stays byte-identical between compactions, and a transcript that keeps everything."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fakes.openai_api import OpenAIFake, Reply, ToolCall
from fakes.small_window import SmallWindowFake, is_summary_request, tokens
from acp_wire import WireClient
from test_acp_server import INIT, WLD
from test_providers import Chat, chunks, open_session, usages

from runwield_bridge.core.events import Notice, ToolProgress

WINDOW = 4096
DELTA_START = b'{"role":"user","content":"<runwield-context>'
COMPACTED_LINE = re.compile(r"🗜 Compacted \d+ earlier messages into a summary")


def small_model(base_url: str, window: int = WINDOW) -> str:
    return (
        f'[sessions]\nmodel = "small"\n\n[models.small]\nprovider = "openai"\nmodel = "small"\n'
        f'base_url = "{base_url}"\napi_key = "x"\ncontext_window = {window}\n'
    )


def note(n: int) -> str:
    return f"note {n}: " + " ".join(f"item{n}-{i}" for i in range(80))


async def send_ok(chat: Chat, text: str) -> list[object]:
    settled, events = await chat.send(text)
    assert settled.stop_reason == "end_turn", (text[:20], settled.error)
    return events


async def test_three_hundred_turns_on_a_small_window_compact_fit_and_replay(tmp_path: Path) -> None:
    async with SmallWindowFake(WINDOW) as fake:
        async with open_session(tmp_path, small_model(fake.base_url)) as chat:
            used: list[int] = []
            shown: list[str] = []
            for n in range(300):
                if n == 150:
                    before = len(fake.bodies)
                    events = await send_ok(chat, "/compact")
                    [compacting] = fake.bodies[before:]
                    assert is_summary_request(compacting), "/compact compacts at once: one summary request, no turn"
                    [line] = [e.text for e in events if isinstance(e, Notice)]
                    assert COMPACTED_LINE.fullmatch(line)
                events = await send_ok(chat, note(n))
                used += [u.used for u in usages(events)]
                shown += [e.text for e in events if isinstance(e, Notice)]
            session_id = chat.session_id

    assert shown and all(COMPACTED_LINE.fullmatch(text) for text in shown), "the chat shows one line per compaction"
    turn_sizes = {tokens(body) + 2 for body in fake.bodies if not is_summary_request(body)}
    assert set(used) <= turn_sizes, "usage_update carries the turns' exact numbers, never the summary request's"

    assert fake.refused == 0 and all(tokens(body) <= WINDOW for body in fake.bodies), "every request fits"
    kinds = [is_summary_request(body) for body in fake.bodies]
    assert kinds.count(False) == 300 and kinds.count(True) >= 10
    for earlier, later in zip(fake.bodies, fake.bodies[1:]):
        if not is_summary_request(earlier) and not is_summary_request(later):
            shared = earlier.rindex(DELTA_START)
            assert later[:shared] == earlier[:shared], "between compactions, each request starts with the one before"
    summaries = [i for i, summary in enumerate(kinds) if summary]
    for index in summaries:
        written = f"Progress: summary {summaries.index(index) + 1}.".encode()
        assert written in fake.bodies[index + 1], "the summary stands in for the older messages in the next request"
        assert not kinds[index + 1], "each compaction is one extra request"
    second = fake.bodies[summaries[1]]
    assert b"Progress: summary 1." in second, "a second compaction folds the earlier summary in"

    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")}) as client:
        await client.call("initialize", INIT)
        start = len(client.messages)
        await client.call("session/load", {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []})
        replayed = [
            m["params"]["update"]["content"]["text"] for m in client.messages[start:]
            if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "user_message_chunk"
        ]  # fmt: skip
    assert [text for text in replayed if text.startswith("note ")] == [note(n) for n in range(300)], "all 300 turns replayed"


async def test_a_prompt_longer_than_the_window_is_cut_and_later_turns_go_on(tmp_path: Path) -> None:
    pasted = "log line\n" * 5000
    async with SmallWindowFake(WINDOW) as fake:
        async with open_session(tmp_path, small_model(fake.base_url)) as chat:
            await send_ok(chat, pasted)
            for n in range(3):
                await send_ok(chat, note(n))
    assert fake.refused == 0
    first = json.loads(fake.bodies[0])["messages"][-1]["content"]
    assert first.startswith("log line\n") and "[cut by RunWield: 45,000 characters, of which the first" in first


async def test_a_refusal_for_length_compacts_further_and_retries_once(tmp_path: Path) -> None:
    async with SmallWindowFake(2200) as fake:  # the model takes less than its entry says: its count differs from ours
        async with open_session(tmp_path, small_model(fake.base_url)) as chat:
            for n in range(20):
                await send_ok(chat, note(n))
    assert fake.refused >= 1, "the provider refused a request that fitted by our count"
    assert all(tokens(body) <= 2200 for body in fake.bodies)


async def test_a_request_that_never_fits_fails_naming_the_settings(tmp_path: Path) -> None:
    async with SmallWindowFake(800) as fake:  # not even the tool definitions fit
        async with open_session(tmp_path, small_model(fake.base_url)) as chat:
            settled, _ = await chat.send("hello")
            again, _ = await chat.send("hello again")
    assert settled.stop_reason == "error" and settled.error is not None
    assert "compact_at (now 0.8)" in settled.error and f"({WINDOW:,} tokens)" in settled.error
    assert again.stop_reason == "error"


async def test_a_long_tool_output_enters_the_context_cut_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {i} " + "x" * 30 + "\n" for i in range(1000)))
    async with OpenAIFake(model="llama3.1") as fake:
        fake.queue(Reply(tool_calls=(ToolCall("call_1", "read_file", {"path": "big.txt"}),)), Reply(text=("read",)))
        config = small_model(fake.base_url, 200_000).replace('model = "small"\nbase', 'model = "llama3.1"\nbase')
        async with open_session(tmp_path, config) as chat:
            events = await send_ok(chat, "read big.txt")
    [done] = [e for e in events if isinstance(e, ToolProgress) and e.status == "completed"]
    assert "line 999" in (done.output or ""), "the user sees all of it"
    told = fake.calls_to("chat.completions")[1]["messages"][-1]["content"]
    assert told.startswith("line 0 x") and "line 999" not in told
    assert "[cut by RunWield: " in told and "read_file with offset and limit" in told
    assert chunks(events) == ["read"]



async def test_an_agent_switch_travels_in_the_delta_and_leaves_the_prefix_byte_identical(tmp_path: Path) -> None:
    async with SmallWindowFake(WINDOW) as fake:
        async with open_session(tmp_path, small_model(fake.base_url, 100_000)) as chat:
            await send_ok(chat, "hello")
            await send_ok(chat, "/agent guide")
            await send_ok(chat, "explain")
    before, after = (json.loads(body) for body in fake.bodies)
    assert (before["messages"][0], before["tools"]) == (after["messages"][0], after["tools"]), "the stable prefix"
    assert after["messages"][: len(before["messages"]) - 2] == before["messages"][:-2]
    delta, prompt = after["messages"][-2:]
    assert prompt == {"role": "user", "content": "explain"}
    assert delta["content"].startswith("<runwield-context>\nAgent: Guide"), "the switch comes after the conversation"
    assert before["messages"][-2]["content"].startswith("<runwield-context>\nAgent: Build")
