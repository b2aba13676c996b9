"""The ``console`` channel: a terminal chat (``wld chat`` is the Bridge with only this channel).

Replies stream as they arrive; Ctrl-C (or /cancel) cancels the running turn, and at the prompt Ctrl-C,
Ctrl-D or /quit leaves. ``--session ID`` resumes a saved session (its history is printed), and bridge
commands (/new, /resume, /status, /cancel, /queue) work here too. A line typed while a turn runs answers its
question if one is open, and is otherwise steered into the turn or queued, as in any chat (`[channels.console]
queue`). Piped input (stdin is not a terminal) is a script: each line runs once the turn before it has settled (or
answers its question), /quit included.
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

from ..background import Background
from ..contract import Inbox
from ..types import BridgeError, Button, Capabilities, Conversation, IncomingMessage, MenuCommand, MessageRef, Sender
from ..settings import ChannelSettings, Id

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
        if isinstance(update, ToolCallProgress) and update.title:  # a tool named only in its permission request
            self.tool_titles[update.tool_call_id] = update.title
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

    async def pause(self) -> None:
        """A question follows: end the line, so it starts on its own."""
        self.terminal.newline()

    async def finish(self, stop_reason: str | None = None, error: str | None = None) -> None:
        self.terminal.newline()
        if error:
            self.terminal.write(f"  [error: {error}]\n")
        elif stop_reason and stop_reason != "end_turn":
            self.terminal.write(f"  [{stop_reason}]\n")


class ConsoleChannel:
    """The terminal as a channel: no buttons and no edits, so questions are numbered prompts."""

    name = "console"
    capabilities = Capabilities(max_message_length=1_000_000, edits=False, buttons=False, full_history=True, local=True)

    def __init__(self, settings: ConsoleSettings, session_id: str | None = None, out: TextIO = sys.stdout) -> None:
        self.settings = settings
        self.session_id = session_id
        self.terminal = Terminal(out)
        self.background = Background("console")
        self.shown = asyncio.Event()
        """Set whenever the Bridge shows something (a question, say), so lines typed ahead can answer it."""

    async def run(self, inbox: Inbox) -> None:
        """Chat until end of input, /quit or Ctrl-C at the prompt; raises BridgeError if the session cannot be opened."""
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
        chat = _Chat(inbox, lines, self.background, typed=sys.stdin.isatty())
        # Kept until the event loop closes: a Ctrl-C while the chat shuts down is not a KeyboardInterrupt.
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, chat.interrupt)
        while not chat.leaving.is_set():
            self.terminal.write("you> ")
            line = await chat.next_line()
            if line is None or line.strip() in EXIT_WORDS:
                break
            if not line.strip():
                continue
            if session_id is None and not line.lstrip().startswith("/") and not await inbox.is_bound(CONVERSATION):
                session_id = await inbox.new_session(CONVERSATION)
                self.terminal.write(f"Session {session_id}\n")
            chat.turn = await inbox.receive_message(IncomingMessage(CONVERSATION, PERSON, line.rstrip("\n")))
            if chat.turn is not None:
                await chat.follow(self.shown)
        self.terminal.newline()

    async def send(self, conversation: Conversation, text: str, buttons: Sequence[Button] = ()) -> MessageRef:
        self.terminal.newline()
        self.terminal.write(f"{text}\n")
        self.shown.set()
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


class _Chat:
    """The terminal's input during one chat: lines typed (or piped), Ctrl-C, and the turn they act on."""

    def __init__(self, inbox: Inbox, lines: asyncio.Queue[str | None], background: Background, *, typed: bool) -> None:
        self.inbox = inbox
        self.lines = lines
        self.background = background
        self.typed = typed
        """The lines come from a person at a terminal: a line typed during a turn goes to the Bridge at once (an
        answer, a command, or a message it steers into the turn or queues). Piped lines are a script: each waits for
        the turn before it to settle, unless it answers that turn's question."""
        self.held: deque[str | None] = deque()
        """Lines read while a turn runs that were not for it: the next prompts (None: end of input)."""
        self.turn: asyncio.Task[None] | None = None
        self.leaving = asyncio.Event()

    def interrupt(self) -> None:
        """Ctrl-C: cancel the running turn, or leave at the prompt."""
        if self.turn is not None and not self.turn.done():
            self.background.spawn(self.inbox.cancel(CONVERSATION), "cancel")
        else:
            self.leaving.set()

    async def next_line(self) -> str | None:
        """The next line to act on; None at end of input or when leaving."""
        if self.held:
            return self.held.popleft()
        reading = asyncio.ensure_future(self.lines.get())
        leaving = asyncio.ensure_future(self.leaving.wait())
        await asyncio.wait({reading, leaving}, return_when=asyncio.FIRST_COMPLETED)
        leaving.cancel()
        if reading.done():
            return reading.result()
        reading.cancel()
        return None

    async def follow(self, shown: asyncio.Event) -> None:
        """Until the turn ends, lines answer its questions; typed lines (commands, /quit, more words) act now."""
        turn = self.turn
        assert turn is not None
        while not turn.done():
            if self.held and self.inbox.awaiting_answer(CONVERSATION):
                await self._take(self.held.popleft())  # typed (or piped) ahead of the question
                continue
            shown.clear()
            reading = asyncio.ensure_future(self.lines.get())
            showing = asyncio.ensure_future(shown.wait())
            await asyncio.wait({turn, reading, showing}, return_when=asyncio.FIRST_COMPLETED)
            showing.cancel()
            if not reading.done():
                reading.cancel()
                continue
            line = reading.result()
            if line is not None and (self.typed or self.inbox.awaiting_answer(CONVERSATION)):
                await self._take(line)
            else:
                self.held.append(line)  # the next prompt, or end of input: the turn finishes, then the chat ends
        self.turn = None

    async def _take(self, line: str | None) -> None:
        """A line for the running turn: an answer or a command; /quit, or end of input at a question, cancels and leaves."""
        if line is None or line.strip() in EXIT_WORDS:
            self.leaving.set()
            await self.inbox.cancel(CONVERSATION)
            return
        await self.inbox.receive_message(IncomingMessage(CONVERSATION, PERSON, line.rstrip("\n")))


def _start_line_reader(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None]) -> None:
    """Read stdin lines on a daemon thread so Ctrl-C and streaming never wait on input()."""

    def read() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=read, name="wld-chat-stdin", daemon=True).start()
