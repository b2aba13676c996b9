"""Interop with a third-party ACP client: acpx (npm ``acpx``, pinned in package.json) drives ``wld acp``.

acpx is a headless ACP client. Two of its modes are exercised end to end over real stdio:

* ``acpx --agent CMD exec PROMPT``: one process, initialize -> session/new -> session/prompt;
* named persistent sessions: ``sessions new --name work``, then ``prompt -s work PROMPT`` from two
  separate acpx processes. The second one starts a fresh ``wld acp`` (the first one's queue owner
  has exited) and continues the Session with ``session/resume`` (acpx prefers it to ``session/load``
  when advertised); the scripted model's context usage and our own store show that the second turn
  saw the first one's history;
* ``sessions list``: acpx asks the agent with ``session/list`` and prints what it answers.

acpx keeps per-session state under ``$HOME/.acpx`` and a detached "queue owner" process per
session that outlives the CLI call for ``--ttl`` seconds (0 means forever). Each test gets its own
HOME, a small TTL, and a marker variable in the environment of everything it starts, so leftovers
are found by that marker and killed (by pid) even when an assertion fails.

acpx 0.19 declares node >= 22.13 in package.json "engines": it runs on the Node that `npm ci` installs
into node_modules/.bin (the npm package ``node``, pinned in package.json), whatever Node runs npm.
Most of each test's time is `wld acp` starting (one process per acpx call that talks to the agent).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
NODE_BIN = REPO_ROOT / "node_modules" / ".bin"  # acpx and the pinned Node its `#!/usr/bin/env node` finds
ACPX = NODE_BIN / "acpx"
WLD = Path(sys.executable).parent / "wld"
AGENT = shlex.join([str(WLD), "acp"])
MARKER = "RUNWIELD_ACPX_INTEROP"
TTL_SECONDS = "1"
CALL_TIMEOUT = 120  # one acpx call; `wld acp` alone takes 2-10 s to start on a busy 2-vCPU machine


@dataclass
class Run:
    """One finished acpx invocation."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def messages(self) -> list[dict[str, Any]]:
        """``--format json`` output: one JSON-RPC message (or acpx event) per line."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def describe(self) -> str:
        return f"$ {shlex.join(self.args)}\nexit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


class Acpx:
    """Runs acpx against ``wld acp`` with an isolated HOME, project directory and process marker."""

    def __init__(self, tmp_path: Path, wld_home: Path) -> None:
        self.home = tmp_path / "acpx-home"
        self.project = tmp_path / "project"
        self.home.mkdir()
        self.project.mkdir()
        self.wld_home = wld_home
        self.marker = f"{tmp_path}"
        path = f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
        self.env = {**os.environ, "PATH": path, "HOME": str(self.home), "WLD_HOME": str(wld_home), MARKER: self.marker}
        self.env.pop("WLD_CONFIG", None)

    def run(self, *args: str) -> Run:
        """``acpx --agent "wld acp" --cwd PROJECT --ttl 1 --format json ARGS...``"""
        argv = [str(ACPX), "--agent", AGENT, "--cwd", str(self.project), "--ttl", TTL_SECONDS, "--format", "json", *args]
        done = subprocess.run(argv, cwd=self.project, env=self.env, capture_output=True, text=True, timeout=CALL_TIMEOUT)
        return Run(argv, done.returncode, done.stdout, done.stderr)

    def processes(self) -> dict[int, str]:
        """Live processes started by this test (acpx, its queue owner, `wld acp`): pid -> command line."""
        found: dict[int, str] = {}
        needle = f"{MARKER}={self.marker}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                    if cmdline:  # zombies have no command line and are not running
                        found[int(entry.name)] = cmdline
            except OSError:  # gone meanwhile, or not ours to read
                continue
        return found

    def wait_until_no_processes(self, timeout: float) -> dict[int, str]:
        """Wait for every process of this test to exit; return those still running at the deadline."""
        deadline = time.monotonic() + timeout
        while (left := self.processes()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return left

    def kill_leftovers(self) -> None:
        for pid in self.processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        # acpx puts queue sockets in /tmp/acpx-<sha256(HOME)[:10]>, outside HOME
        socket_dir = Path("/tmp") / f"acpx-{hashlib.sha256(str(self.home).encode()).hexdigest()[:10]}"
        shutil.rmtree(socket_dir, ignore_errors=True)

    def transcript(self, session_id: str) -> list[tuple[str, str]]:
        """(kind, text) of the messages in a Session's transcript, read straight from our SQLite file: a reply is
        written piece by piece as it is shown, so the pieces of one message are joined."""
        query = "SELECT kind, text, json_extract(data, '$.message_id') FROM transcript WHERE session_id = ? AND kind IN ('user', 'agent') ORDER BY id"
        with sqlite3.connect(self.wld_home / "wld.db") as db:
            rows = db.execute(query, (session_id,)).fetchall()
        messages: list[tuple[str, str]] = []
        last_message = None
        for kind, text, message_id in rows:
            if kind == "agent" and message_id and message_id == last_message:
                messages[-1] = (kind, messages[-1][1] + text)
            else:
                messages.append((kind, text))
            last_message = message_id if kind == "agent" else None
        return messages

    def session_ids(self) -> list[str]:
        with sqlite3.connect(self.wld_home / "wld.db") as db:
            return [row[0] for row in db.execute("SELECT id FROM sessions ORDER BY created_at")]


@pytest.fixture
def acpx(tmp_path: Path, wld_home: Path):
    assert ACPX.exists(), f"{ACPX} is missing: run `npm ci` in {REPO_ROOT} (acpx is pinned in package.json)"
    assert WLD.exists(), f"{WLD} is missing: install the project into this interpreter's environment"
    client = Acpx(tmp_path, wld_home)
    try:
        yield client
    finally:
        client.kill_leftovers()


def requests(messages: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("method") == method and "id" in m]


def result_of(messages: list[dict[str, Any]], request: dict[str, Any]) -> dict[str, Any]:
    """The response to a request; fails on an error response."""
    (response,) = [m for m in messages if m.get("id") == request["id"] and "method" not in m]
    assert "error" not in response, response
    return response["result"]


def updates(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        m["params"]["update"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == kind
    ]


def reply_text(messages: list[dict[str, Any]]) -> str:
    return "".join(u["content"]["text"] for u in updates(messages, "agent_message_chunk"))


def prompt_turn(run: Run) -> tuple[str, str, int]:
    """(session id, reply, context tokens used) of the one prompt turn in a ``--format json`` run."""
    assert run.returncode == 0, run.describe()
    messages = run.messages()
    (prompt,) = requests(messages, "session/prompt")
    assert result_of(messages, prompt) == {"stopReason": "end_turn"}, run.describe()
    usage = updates(messages, "usage_update")
    assert usage, f"no usage_update in the turn\n{run.describe()}"
    return prompt["params"]["sessionId"], reply_text(messages), usage[-1]["used"]


def test_acpx_runs_on_a_node_it_supports(acpx: Acpx) -> None:
    declared = json.loads((REPO_ROOT / "node_modules" / "acpx" / "package.json").read_text())["engines"]["node"]
    assert declared.startswith(">="), declared
    minimum = tuple(int(part) for part in declared.removeprefix(">=").split("."))
    # acpx starts with `#!/usr/bin/env node`: the node its environment finds is the one that runs it
    found = subprocess.run(["/usr/bin/env", "node", "--version"], env=acpx.env, capture_output=True, text=True, timeout=CALL_TIMEOUT)
    running = tuple(int(part) for part in found.stdout.strip().removeprefix("v").split("."))
    assert running >= minimum, f"acpx needs node {declared} but would run on {found.stdout.strip()}"


def test_acpx_exec_one_shot_prompt(acpx: Acpx) -> None:
    run = acpx.run("exec", "hello from acpx")

    assert run.returncode == 0, run.describe()
    messages = run.messages()
    (initialize,) = requests(messages, "initialize")
    assert initialize["params"]["clientInfo"]["name"] == "acpx"
    assert result_of(messages, initialize)["agentInfo"]["name"] == "runwield"
    (new,) = requests(messages, "session/new")
    assert new["params"]["cwd"] == str(acpx.project)
    session_id = result_of(messages, new)["sessionId"]
    assert prompt_turn(run)[:2] == (session_id, "You said: hello from acpx")

    assert acpx.session_ids() == [session_id]
    assert acpx.transcript(session_id) == [("user", "hello from acpx"), ("agent", "You said: hello from acpx")]
    assert acpx.wait_until_no_processes(10) == {}, "acpx exec left processes behind"


def test_acpx_named_session_continues_across_processes(acpx: Acpx, capsys: pytest.CaptureFixture[str]) -> None:
    first_prompt = "remember the word pineapple"
    second_prompt = "what word did I ask you to remember"

    created = acpx.run("sessions", "new", "--name", "work")
    assert created.returncode == 0, created.describe()
    (event,) = created.messages()
    assert event["action"] == "session_ensured" and event["created"] is True and event["name"] == "work", event
    session_id = event["acpxSessionId"]
    assert acpx.session_ids() == [session_id]

    first = acpx.run("prompt", "-s", "work", first_prompt)
    prompted, reply, used_first = prompt_turn(first)
    assert (prompted, reply) == (session_id, f"You said: {first_prompt}")

    # The first prompt's queue owner (and its `wld acp`) stays up for --ttl seconds when idle; once it
    # is gone, the next acpx process has to start a new `wld acp` and load the Session into it.
    left = acpx.wait_until_no_processes(30)
    assert left == {}, f"the queue owner did not exit after --ttl {TTL_SECONDS}: {left}"

    second = acpx.run("prompt", "-s", "work", second_prompt)
    assert second.returncode == 0, second.describe()
    messages = second.messages()
    (resume,) = requests(messages, "session/resume")
    assert resume["params"]["sessionId"] == session_id
    result_of(messages, resume)
    assert not requests(messages, "session/load")
    assert not [u for u in updates(messages, "user_message_chunk")], "resuming replays no history"
    assert not requests(messages, "session/new"), "acpx made a new Session instead of continuing 'work'"
    prompted, reply, used_second = prompt_turn(second)
    assert (prompted, reply) == (session_id, f"You said: {second_prompt}")
    # The scripted model counts one token per word of every message it is sent: the second turn's
    # context is the whole first exchange plus the new prompt and reply.
    assert used_second > used_first
    assert used_second == used_first + len(second_prompt.split()) + len(reply.split())

    assert acpx.transcript(session_id) == [
        ("user", first_prompt),
        ("agent", f"You said: {first_prompt}"),
        ("user", second_prompt),
        ("agent", f"You said: {second_prompt}"),
    ]
    from runwield_bridge.cli import main as wld_main

    assert wld_main(["sessions"]) == 0  # our CLI, in-process: one Session, titled by its first prompt
    _header, line = capsys.readouterr().out.splitlines()
    assert line.startswith(session_id) and line.endswith(first_prompt), line

    closed = acpx.run("sessions", "close", "work")
    assert closed.returncode == 0, closed.describe()
    assert closed.messages()[-1]["action"] == "session_closed"
    assert acpx.wait_until_no_processes(30) == {}, "processes left after `acpx sessions close`"


def test_acpx_lists_our_sessions_with_session_list(acpx: Acpx) -> None:
    prompt_turn(acpx.run("exec", "tidy the changelog"))
    (session_id,) = acpx.session_ids()

    listed = acpx.run("sessions", "list")
    assert listed.returncode == 0, listed.describe()
    (result,) = listed.messages()
    assert result["source"] == "agent", "acpx fell back to its local records instead of session/list"
    (info,) = result["sessions"]
    assert (info["sessionId"], info["cwd"], info["title"]) == (session_id, str(acpx.project), "tidy the changelog")
    assert "nextCursor" not in result or result["nextCursor"] is None

    elsewhere = acpx.run("sessions", "list", "--filter-cwd", str(acpx.home))
    assert elsewhere.returncode == 0, elsewhere.describe()
    assert elsewhere.messages()[0]["sessions"] == []
    assert acpx.wait_until_no_processes(10) == {}, "acpx sessions list left processes behind"
