"""The coding tools over `wld acp` (a real subprocess, every message checked against the official schema): the
permission question is the client's form, with Allow once / Always for this Session / Reject; a command's output
streams as tool_call_update content; a search or a read never stalls the process. The offline scripted model calls
the tools."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from acp_session import FORMS_INIT, menus, say, since, text_since, wld_session
from acp_wire import WireClient
from test_acp_server import INIT, WLD


def answering(*answers: str) -> tuple[list[dict[str, Any]], Any]:
    """The forms shown, and a handler that answers them with ``answers`` in order."""
    shown: list[dict[str, Any]] = []
    queue = list(answers)

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        shown.append(params)
        return {"action": "accept", "content": {"answer": queue.pop(0)}}

    return shown, answer


def tool_updates(client: Any, start: int, sid: str) -> list[dict[str, Any]]:
    return since(client, start, sid, "tool_call_update")


async def test_a_write_over_acp_is_asked_with_a_form_rejected_then_allowed(tmp_path: Path) -> None:
    async with wld_session(tmp_path, init=FORMS_INIT) as (client, sid):
        shown, answer = answering("reject", "once")
        client.on_request("elicitation/create", answer)
        start = len(client.messages)
        assert (await say(client, sid, "write notes.txt saying hello there"))["result"] == {"stopReason": "end_turn"}
        assert not (tmp_path / "notes.txt").exists(), "Reject: nothing written"
        [failed] = [u for u in tool_updates(client, start, sid) if u["status"] == "failed"]
        assert "notes.txt was not changed: refused: the user rejected it" in json.dumps(failed["content"])

        assert (await say(client, sid, "write notes.txt saying hello there"))["result"] == {"stopReason": "end_turn"}
        assert (tmp_path / "notes.txt").read_text() == "hello there\n"
    form = shown[0]
    assert form["message"] == "Change the file `notes.txt`?" and form["toolCallId"].startswith("call-")
    options = form["requestedSchema"]["properties"]["answer"]["oneOf"]
    assert [(o["const"], o["title"]) for o in options] == [("once", "Allow once"), ("always", "Always for this Session"), ("reject", "Reject")]
    assert "default" not in json.dumps(form), "nothing is allowed by default"


async def test_a_command_over_acp_streams_its_output_and_always_is_not_asked_again(tmp_path: Path) -> None:
    async with wld_session(tmp_path, init=FORMS_INIT) as (client, sid):
        shown, answer = answering("always")
        client.on_request("elicitation/create", answer)
        start = len(client.messages)
        await say(client, sid, "run `echo streamed output`")
        updates = tool_updates(client, start, sid)
        await say(client, sid, "run `echo streamed output`")
    assert len(shown) == 1, "Always for this Session: the second run is not asked"
    [started] = [u for u in since(client, start, sid, "tool_call") if u["title"] == "run_command echo streamed output"][:1]
    assert started["kind"] == "execute"
    texts = [(u["status"], u.get("content", [{}])[0].get("content", {}).get("text")) for u in updates]
    assert ("in_progress", "streamed output\n") in texts, "the output arrived as a tool_call_update while running"
    assert texts[-1] == ("completed", "streamed output\n\n(exit code 0)")


async def test_a_client_without_forms_gets_the_permission_as_a_numbered_menu(tmp_path: Path) -> None:
    async with wld_session(tmp_path) as (client, sid):
        start = len(client.messages)
        assert (await say(client, sid, "write notes.txt saying hi"))["result"] == {"stopReason": "end_turn"}
        [menu] = menus(client, start, sid, "asked")
        assert "Change the file `notes.txt`?" in menu
        assert "1. Allow once" in menu and "2. Always for this Session" in menu and "3. Reject" in menu
        assert not (tmp_path / "notes.txt").exists(), "nothing happens while the question waits"
        before = len(client.messages)
        assert (await say(client, sid, "3"))["result"] == {"stopReason": "end_turn"}
        assert "notes.txt was not changed: refused: the user rejected it" in text_since(client, before, sid)
    assert not (tmp_path / "notes.txt").exists()


@contextlib.asynccontextmanager
async def wld_in(project: Path) -> AsyncIterator[tuple[WireClient, str]]:
    """`wld acp` with a Session in ``project`` (a directory of its own, apart from WLD_HOME)."""
    project.mkdir(exist_ok=True)
    async with WireClient.spawn([WLD, "acp"], cwd=project) as client:
        await client.call("initialize", INIT)
        session = await client.call("session/new", {"cwd": str(project), "mcpServers": []})
        yield client, session["sessionId"]


async def test_a_search_with_a_fifo_and_a_catastrophic_regex_never_stalls_the_process(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    os.mkfifo(project / "pipe")  # size 0: a search that opened it would wait for a writer
    (project / "line.txt").write_text("a" * 28 + "b\n")  # (a+)+$ backtracks 2^28 times here
    (project / "match.txt").write_text("aaa\n")
    async with wld_in(project) as (client, sid):
        start = len(client.messages)
        prompt = asyncio.ensure_future(say(client, sid, "search for regex `(a+)+$`"))
        answered = []
        for _ in range(3):
            await asyncio.sleep(0.2)
            began = time.monotonic()
            await client.call("session/list", {}, timeout=1.0)  # the process answers while the search runs
            answered.append(time.monotonic() - began)
        assert (await prompt)["result"] == {"stopReason": "end_turn"}
        [done] = [u for u in tool_updates(client, start, sid) if u["status"] in ("completed", "failed")]
    assert len(answered) == 3 and max(answered) < 1.0
    assert done["status"] == "completed" and done["content"][0]["content"]["text"] == "match.txt:1: aaa"
    assert "pipe" not in json.dumps(done)


def peak_memory(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in bytes."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmHWM:\s+(\d+) kB$", status, re.MULTILINE).group(1)) * 1024  # type: ignore[union-attr]


async def test_reading_a_1_gib_sparse_file_keeps_only_what_it_reads_in_memory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with (project / "big.log").open("wb") as big:
        big.write(b"hello from the start\n")
        big.truncate(1 << 30)  # sparse: 1 GiB of zeros that take no disk
    async with wld_in(project) as (client, sid):
        await say(client, sid, "warm up")  # a first turn loads what every turn needs
        before = peak_memory(client.proc.pid)
        start = len(client.messages)
        assert (await say(client, sid, "read big.log"))["result"] == {"stopReason": "end_turn"}
        grown = peak_memory(client.proc.pid) - before
        [done] = [u for u in tool_updates(client, start, sid) if u["status"] == "completed"]
    assert grown < 100 * 1024 * 1024, f"the peak memory grew by {grown / 2**20:.0f} MiB"
    text = done["content"][0]["content"]["text"]
    assert text.startswith("hello from the start\n") and text.endswith(f"(read_file shows the first 64 KiB of this file's {1 << 30} bytes)")
