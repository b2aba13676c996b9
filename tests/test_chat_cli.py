"""`wld chat` as a person uses it: streamed replies, Ctrl-C cancels the turn, --session continues."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from pathlib import Path

from waiting import PATIENCE

WLD = str(Path(sys.executable).parent / "wld")


class Chat:
    """A `wld chat` process driven through its stdin and stdout."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.output = ""

    @classmethod
    async def start(cls, *args: str, cwd: Path) -> Chat:
        proc = await asyncio.create_subprocess_exec(
            WLD, "chat", *args, cwd=cwd,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )
        return cls(proc)

    async def send(self, line: str) -> None:
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
        rest = await asyncio.wait_for(self.proc.stdout.read(), PATIENCE)
        self.output += rest.decode()
        return await self.proc.wait()


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
