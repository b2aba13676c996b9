"""The ``console`` channel: a terminal chat, and ``wld chat`` (the Bridge with only this channel).

Replies stream as they arrive, Ctrl-C cancels the running turn, ``--session ID`` resumes a saved
session (its history is printed), and bridge commands (/new, /resume, /status, /cancel) work here too.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections import deque
from collections.abc import Sequence
from typing import Any, Literal, TextIO

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)

from ..acp.client import InProcessAgent
from ..hookspecs import hookimpl
from .background import Background
from .bindings import MemoryBindings
from .bridge import BUILTIN_AGENT, Bridge
from .conversations import BridgeError
from .contract import (
    Button,
    Capabilities,
    ChannelContext,
    Conversation,
    IncomingMessage,
    Inbox,
    MenuCommand,
    MessageRef,
    Sender,
)
from .settings import ChannelSettings, Id, parse_section

EXIT_WORDS = {"/quit", "/exit"}
CONVERSATION = Conversation("console", "local")
PERSON = Sender("local", "you")


class ConsoleSettings(ChannelSettings):
    """``[channels.console]``: the person at the terminal is allowed; prompts carry no sender context."""

    allowed_users: list[Id] = ["local"]
    sender_context: Literal["groups", "always", "never"] = "never"


class Terminal:
    """Writes to the terminal and knows whether the cursor is at the start of a line."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.at_line_start = True

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
        if text:
            self.at_line_start = text.endswith("\n")

    def newline(self) -> None:
        if not self.at_line_start:
            self.write("\n")


class ConsoleReply:
    """A turn (or a replayed history) printed as it streams."""

    def __init__(self, terminal: Terminal) -> None:
        self.terminal = terminal
        self.tool_titles: dict[str, str] = {}

    def update(self, update: Any) -> None:
        term = self.terminal
        if isinstance(update, UserMessageChunk):
            term.newline()
            term.write(f"you> {getattr(update.content, 'text', '')}\n")
        elif isinstance(update, AgentMessageChunk):
            term.write(getattr(update.content, "text", ""))
        elif isinstance(update, AgentThoughtChunk):
            term.newline()
            term.write(f"  (thinking: {getattr(update.content, 'text', '')})\n")
        elif isinstance(update, ToolCallStart):
            term.newline()
            self.tool_titles[update.tool_call_id] = update.title
            term.write(f"  ⚙ {update.title} …\n")
        elif isinstance(update, ToolCallProgress) and update.status in ("completed", "failed"):
            term.newline()
            title = update.title or self.tool_titles.get(update.tool_call_id, update.tool_call_id)
            term.write(f"  {'✅' if update.status == 'completed' else '❌'} {title}\n")
        elif isinstance(update, UsageUpdate):
            cost = f" · ${update.cost.amount:.6f}" if update.cost else ""
            term.newline()
            term.write(f"  [{update.used}/{update.size} tokens{cost}]\n")

    async def finish(self, stop_reason: str | None = None, error: str | None = None) -> None:
        self.terminal.newline()
        if error:
            self.terminal.write(f"  [error: {error}]\n")
        elif stop_reason and stop_reason != "end_turn":
            self.terminal.write(f"  [{stop_reason}]\n")


class ConsoleChannel:
    """The terminal as a channel: no buttons and no edits, so questions are numbered prompts."""

    name = "console"
    capabilities = Capabilities(max_message_length=1_000_000, edits=False, buttons=False, full_history=True)

    def __init__(self, settings: ConsoleSettings, session_id: str | None = None, out: TextIO = sys.stdout) -> None:
        self.settings = settings
        self.session_id = session_id
        self.terminal = Terminal(out)
        self.background = Background("console")

    async def run(self, inbox: Inbox) -> None:
        """Chat until end of input or /quit; raises BridgeError if the session cannot be opened."""
        if self.session_id:
            try:
                session_id = await inbox.resume(CONVERSATION, self.session_id)
            except BridgeError as exc:  # the chat's advice (/new, /resume) means nothing to a shell
                reason = str(exc).partition(" Nothing was sent")[0]
                raise BridgeError(f"{reason} `wld sessions` lists the saved Sessions (--all with archived ones).") from None
        else:
            session_id = None  # created by the first message: a chat left at once saves nothing
        self.terminal.newline()
        self.terminal.write(f"{f'Session {session_id}' if session_id else 'New Session'} · Ctrl-C cancels a turn · /quit or Ctrl-D leaves\n")
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        _start_line_reader(asyncio.get_running_loop(), lines)
        held: deque[str | None] = deque()
        while True:
            self.terminal.write("you> ")
            line = held.popleft() if held else await lines.get()
            if line is None or line.strip() in EXIT_WORDS:
                self.terminal.newline()
                return
            if not line.strip():
                continue
            if session_id is None and not line.lstrip().startswith("/") and not await inbox.is_bound(CONVERSATION):
                session_id = await inbox.new_session(CONVERSATION)
                self.terminal.write(f"Session {session_id}\n")
            turn = await inbox.receive_message(IncomingMessage(CONVERSATION, PERSON, line.rstrip("\n")))
            if turn is not None:
                await self._follow(inbox, turn, lines, held)

    async def _follow(self, inbox: Inbox, turn: asyncio.Task[None], lines: asyncio.Queue[str | None], held: deque[str | None]) -> None:
        """Wait for the turn: Ctrl-C cancels it; lines typed meanwhile (and end of input) answer its questions or wait."""
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, lambda: self.background.spawn(inbox.cancel(CONVERSATION), "cancel"))
        try:
            while not turn.done():
                reading = asyncio.ensure_future(lines.get())
                await asyncio.wait({turn, reading}, return_when=asyncio.FIRST_COMPLETED)
                if not reading.done():
                    reading.cancel()
                    continue
                line = reading.result()
                if line is not None and inbox.awaiting_answer(CONVERSATION):
                    await inbox.receive_message(IncomingMessage(CONVERSATION, PERSON, line.rstrip("\n")))
                    continue
                held.append(line)  # end of input too: the turn finishes, then the chat ends
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    async def send(self, conversation: Conversation, text: str, buttons: Sequence[Button] = ()) -> MessageRef:
        self.terminal.newline()
        self.terminal.write(f"{text}\n")
        return MessageRef(conversation, "")

    async def edit(self, message: MessageRef, text: str, buttons: Sequence[Button] = ()) -> None:
        await self.send(message.conversation, text)

    async def typing(self, conversation: Conversation) -> None:
        """A terminal shows thinking as text instead."""

    async def set_commands(self, conversation: Conversation, commands: Sequence[MenuCommand]) -> None:
        """A terminal has no command menu."""

    def open_reply(self, conversation: Conversation) -> ConsoleReply:
        return ConsoleReply(self.terminal)

    async def close(self) -> None:
        await self.background.close()


def _start_line_reader(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None]) -> None:
    """Read stdin lines on a daemon thread so Ctrl-C and streaming never wait on input()."""

    def read() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=read, name="wld-chat-stdin", daemon=True).start()


async def run_chat(host: Any, session_id: str | None = None, cwd: str | None = None) -> int:
    """``wld chat``: the console channel on a Bridge whose only agent is ``host``, the in-process Session Host."""
    channel = ConsoleChannel(ConsoleSettings(cwd=cwd), session_id)
    bridge = Bridge({BUILTIN_AGENT: InProcessAgent(host)}, MemoryBindings())
    try:
        await channel.run(bridge.add_channel(channel))
        return 0
    except BridgeError as exc:
        print(f"wld chat: {exc}", file=sys.stderr)
        return 1
    finally:
        await bridge.close()
        await channel.close()


@hookimpl
def register_channels(register: Any) -> None:
    """Register the terminal channel."""

    def build(section: dict[str, Any], context: ChannelContext) -> ConsoleChannel:
        return ConsoleChannel(parse_section(ConsoleSettings, section, "channels.console"))

    register("console", build)
