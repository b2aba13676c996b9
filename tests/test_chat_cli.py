"""`wld chat` and `wld bridge` with a console channel as a person uses them: streamed replies, Ctrl-C
cancels the turn (and leaves at the prompt), --session continues, questions take the lines typed next."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import re
import signal
import sys
import termios
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.bridge_kit import NOT_OFFERED, agent_calls, asking_agent
from waiting import PATIENCE

WLD = str(Path(sys.executable).parent / "wld")


@pytest.fixture(autouse=True)
async def no_chat_left_running() -> AsyncIterator[None]:
    """A chat a failed test left running is killed with its process group."""
    yield
    for chat in Chat.started:
        if chat.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(chat.proc.pid, signal.SIGKILL)
            await chat.proc.wait()
        if chat.keyboard is not None:
            os.close(chat.keyboard)
    Chat.started.clear()


class Chat:
    """A `wld chat` (or `wld bridge`) process driven through its stdin and stdout, in a process group of its own.
    Its stdin is a pipe (a script), or with ``terminal=True`` a terminal (a pty without echo) that a person types into."""

    started: list[Chat] = []

    def __init__(self, proc: asyncio.subprocess.Process, keyboard: int | None = None) -> None:
        self.proc = proc
        self.keyboard = keyboard
        """The terminal's other end, where typed lines go; None when stdin is a pipe."""
        self.output = ""
        Chat.started.append(self)

    @classmethod
    async def start(cls, *args: str, cwd: Path, command: str = "chat", terminal: bool = False) -> Chat:
        keyboard, stdin = pty.openpty() if terminal else (None, asyncio.subprocess.PIPE)
        if terminal:
            attributes = termios.tcgetattr(stdin)
            attributes[3] &= ~termios.ECHO
            termios.tcsetattr(stdin, termios.TCSANOW, attributes)
        proc = await asyncio.create_subprocess_exec(
            WLD, command, *args, cwd=cwd, start_new_session=True,
            stdin=stdin, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )
        if terminal:
            os.close(stdin)
        return cls(proc, keyboard)

    @classmethod
    async def bridge(cls, tmp_path: Path) -> Chat:
        """`wld bridge` whose only channel is the console, talking to the SDK test agent (an external process)."""
        config = tmp_path / "wld.toml"
        agent = asking_agent(tmp_path)
        config.write_text(
            '[web]\nlisten = "127.0.0.1:0"\n[channels.console]\nagent = "asker"\n'
            f"[agents.asker]\ncommand = {json.dumps(agent['command'])}\nenv = {{ AGENT_LOG = {json.dumps(agent['env']['AGENT_LOG'])}, "
            f"AGENT_STATE = {json.dumps(agent['env']['AGENT_STATE'])} }}\n"
        )
        return await cls.start("--config", str(config), cwd=tmp_path, command="bridge")

    def ctrl_c(self) -> None:
        """What a terminal does on Ctrl-C: SIGINT to every process of the foreground process group."""
        os.killpg(self.proc.pid, signal.SIGINT)

    async def exit_code(self, timeout: float = PATIENCE) -> int:
        """The exit code once the process ends by itself (within ``timeout``), its remaining output read."""
        rest = await asyncio.wait_for(self.proc.stdout.read(), timeout)
        self.output += rest.decode()
        return await asyncio.wait_for(self.proc.wait(), timeout)

    async def send(self, line: str) -> None:
        if self.keyboard is not None:
            os.write(self.keyboard, line.encode() + b"\n")
            return
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()

    async def expect(self, pattern: str, timeout: float = PATIENCE) -> re.Match[str]:
        async def read() -> re.Match[str]:
            while not (match := re.search(pattern, self.output)):
                chunk = await self.proc.stdout.read(1024)
                assert chunk, f"chat ended before {pattern!r}; output:\n{self.output}"
                self.output += chunk.decode()
            return match

        return await asyncio.wait_for(read(), timeout)

    async def finish(self) -> int:
        await self.send("/quit")
        return await self.exit_code()


async def test_chat_streams_and_ctrl_c_cancels_only_the_turn(tmp_path: Path) -> None:
    chat = await Chat.start(cwd=tmp_path)
    await chat.send("hello chat")
    session = (await chat.expect(r"Session (ses_\w+)")).group(1)
    await chat.expect(r"You said: hello chat")
    await chat.expect(r"\[\d+/32768 tokens")
    await chat.send("a slow answer please")
    await chat.expect(r"You said: a slow")
    chat.proc.send_signal(signal.SIGINT)
    await chat.expect(r"\[cancelled\]")
    await chat.send("still here?")
    await chat.expect(r"You said: still here\?")
    assert await chat.finish() == 0

    again = await Chat.start("--session", session, cwd=tmp_path)
    await again.expect(r"you> hello chat")
    await again.expect(r"you> still here\?")
    await again.send("welcome back")
    await again.expect(r"You said: welcome back")
    assert await again.finish() == 0


async def test_chat_with_an_unknown_session_says_so(tmp_path: Path) -> None:
    chat = await Chat.start("--session", "ses_missing", cwd=tmp_path)
    assert await asyncio.wait_for(chat.proc.wait(), PATIENCE) == 1
    output = (await chat.proc.stdout.read()).decode()
    assert "ses_missing" in output and "not found" in output
    assert "/new" not in output and "/resume" not in output, "no chat commands to a shell that has already left"
    assert "wld sessions" in output, "says where the saved Sessions are listed"


async def test_a_typed_cancel_stops_the_streaming_turn(tmp_path: Path) -> None:
    chat = await Chat.start(cwd=tmp_path, terminal=True)
    await chat.send("a slow answer please")
    await chat.expect(r"You said: a slow")
    await chat.send("/cancel")
    await chat.expect(r"\[cancelled\]\nyou> ")
    assert " 15" not in chat.output, "the turn stopped before it finished streaming"
    assert await chat.finish() == 0


async def test_a_line_typed_during_a_turn_is_steered_into_it(tmp_path: Path) -> None:
    chat = await Chat.start(cwd=tmp_path, terminal=True)
    await chat.send("a slow answer please")
    await chat.expect(r"You said: a slow")
    await chat.send("and keep it short")
    await chat.expect(r"↪ added to the running turn")
    await chat.expect(r"You said: and keep it short\n[^\n]*tokens[^\n]*\]\nyou> ")  # the turn took it and settled
    assert "[cancelled]" not in chat.output, "a typed line joins the turn; it does not cancel it"
    assert " 15" not in chat.output, "the slow reply gave way to the steered message"
    assert await chat.finish() == 0


async def test_piped_lines_run_in_order_each_after_the_turn_before_it_and_quit_then_leaves(tmp_path: Path) -> None:
    chat = await Chat.start(cwd=tmp_path)
    chat.proc.stdin.write(b"hello\nlist files\n/quit\nnever sent\n")
    chat.proc.stdin.close()
    assert await chat.exit_code() == 0, chat.output
    assert re.search(r"You said: hello.*list_files.*The tool returned", chat.output, re.DOTALL), chat.output
    assert "[cancelled]" not in chat.output and "never sent" not in chat.output, chat.output


async def test_ctrl_c_at_the_prompt_after_a_turn_leaves_cleanly(tmp_path: Path) -> None:
    chat = await Chat.start(cwd=tmp_path)
    await chat.send("hello chat")
    await chat.expect(r"You said: hello chat[^\n]*\n[^\n]*tokens[^\n]*\]\nyou> ")
    chat.ctrl_c()
    assert await chat.exit_code() == 0, chat.output
    assert "Traceback" not in chat.output and "KeyboardInterrupt" not in chat.output


async def test_ctrl_c_cancels_an_external_agents_turn_and_leaves_the_agent_running(tmp_path: Path) -> None:
    chat = await Chat.bridge(tmp_path)
    await chat.send("something slow please")
    await chat.expect(r"0 1 2 ")
    [started] = agent_calls(tmp_path, "initialize")
    chat.ctrl_c()
    await chat.expect(r"\[cancelled\]\nyou> ")
    os.kill(started["pid"], 0)  # raises if the agent died
    await chat.send("are you there")
    await chat.expect(r"echo: are you there")
    assert len(agent_calls(tmp_path, "initialize")) == 1, "the same agent process answered"
    assert await chat.finish() == 0, chat.output


async def test_a_bridge_agent_calling_client_methods_we_do_not_advertise_gets_method_not_found(tmp_path: Path) -> None:
    chat = await Chat.bridge(tmp_path)
    await chat.send("terminal please")
    await chat.expect(re.escape(NOT_OFFERED))
    assert await chat.finish() == 0, chat.output


async def test_answers_piped_after_a_menu_answer_it(tmp_path: Path) -> None:
    chat = await Chat.bridge(tmp_path)
    chat.proc.stdin.write(b"please choose\n2\n")
    chat.proc.stdin.close()
    await chat.expect(r'form: accept \{"colour": "green"\}')
    assert await chat.exit_code() == 0, chat.output
    assert [call["texts"] for call in agent_calls(tmp_path, "session/prompt")] == [["please choose"]], "the answer went to the menu"


async def test_end_of_input_stops_a_bridge_whose_only_channel_is_the_terminal(tmp_path: Path) -> None:
    chat = await Chat.bridge(tmp_path)
    await chat.expect(r"Ctrl-C cancels a turn")
    chat.proc.stdin.close()
    assert await chat.exit_code() == 0, chat.output


async def test_quit_inside_a_menu_leaves_without_answering_it(tmp_path: Path) -> None:
    chat = await Chat.bridge(tmp_path)
    await chat.send("please choose")
    await chat.expect(r"Pick a colour")
    await chat.send("/quit")
    assert await chat.exit_code() == 0, chat.output
    assert "form: accept" not in chat.output and "Please reply with a number" not in chat.output, chat.output
    assert len(agent_calls(tmp_path, "session/cancel")) == 1, "the turn was cancelled, its question with it"


async def test_a_saved_plans_next_steps_are_a_numbered_list_whose_number_takes_the_step(tmp_path: Path) -> None:
    chat = await Chat.start(cwd=tmp_path)
    await chat.send("make a plan to write a poem")
    await chat.expect(r"📋 Plan “Write a poem” \(revision 1\)\s+Write a poem\.\s+1\. Review\s+2\. Execute\s+Reply with a number")
    await chat.send("2")
    await chat.expect(r"Start its review now\?")
    await chat.send("2")
    await chat.expect(r"Plan “Write a poem” stays as it is \(draft\)\.")
    assert await chat.finish() == 0, chat.output
