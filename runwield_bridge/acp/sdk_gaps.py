"""What the ACP SDK (``agent-client-protocol`` 0.12.x) lacks or keeps private, filled in here and only here.

Each gap, and what covers it (``tests/test_acp_sdk_gaps.py`` fails when the SDK changes under one):

1. **Message transports are private** (``acp._transport``: ``Transport``, ``NdjsonTransport``,
   ``memory_transport_pair``). The public ``acp.connection.Connection`` takes any object with
   ``send``/``receive``/``close``, so ``MessageTransport``, ``LineTransport`` and ``memory_pair``
   here are our own.
2. **Malformed lines are dropped silently** by the SDK's newline-delimited transport (no -32700 or
   -32600 answer): ``transport.CheckedNdjsonTransport`` answers them, built on ``LineTransport``.
3. **stdio needs pipes**: ``acp.stdio_streams`` connects stdin and stdout as pipes; its fallbacks
   for files are private. ``stdin_reader`` and ``output_sink`` here take files and /dev/null too.
4. **The agent router** (``AgentSideConnection``) merges ``_meta`` into handler arguments (where it
   can override real parameters), has no route for ``session/delete``, and validates with lenient
   models. The server dispatches on the public ``Connection`` itself (``server.AcpAgentServer``),
   with extension methods through its own ``ext_method``, as the SDK's agent interface has them.
5. **Request ids are hidden**: ``Connection.send_request`` never tells its caller the id, which
   ``$/cancel_request`` needs to withdraw a request: ``RequestIdNoting`` and
   ``request_withdrawn_on_cancel``.
6. **Client-side ``elicitation/create``**: the client router validates it with its models (a
   malformed request is bounced with -32602 instead of being explained and declined) and has no
   route for ``$/cancel_request``: ``ClientRoute`` answers both before the SDK's
   ``ClientSideConnection`` sees them.
7. **Client methods a client does not implement are answered as if done**: the client router answers
   ``terminal/create`` and ``terminal/output`` with ``result: null`` (and ``terminal/release`` and
   ``terminal/kill`` with ``{}``) when the client has no handler, so an agent fails on a result it
   cannot read: ``ClientRoute`` answers them -32601 (method not found), as the capability we do not
   advertise implies.
8. **A tracing span for every message, recorded or not**: the SDK's ``Connection`` opens an OpenTelemetry span
   around each request and notification it handles whenever that package is importable (it comes with other
   dependencies), even when no tracer provider is set and the span records nothing: about a tenth of the time a
   prompt takes through the in-process pipe (docs/benchmarks.md). ``span_when_recorded`` (put in the SDK's place)
   opens the SDK's span only once a tracer provider is set, or when logfire is installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import os
import stat
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import IO, Any, Protocol

import acp.connection
from acp import RequestError, telemetry
from acp.connection import Connection, StreamDirection, StreamEvent
from acp.meta import CLIENT_METHODS

log = logging.getLogger(__name__)

CANCEL_REQUEST = "$/cancel_request"
ELICITATION_CREATE = CLIENT_METHODS["elicitation_create"]
NOT_OFFERED = frozenset(method for name, method in CLIENT_METHODS.items() if name.startswith("terminal_"))
"""Client methods the Bridge does not implement (it advertises no ``terminal`` capability), answered -32601."""


def span_when_recorded(name: str, *, attributes: Mapping[str, Any] | None = None) -> contextlib.AbstractContextManager[None]:
    """The SDK's span around a message when something records it (a tracer provider is set, or logfire is there);
    else none (gap 8)."""
    if telemetry.logfire_span is None and not _tracer_provider_set():
        return contextlib.nullcontext()
    return telemetry.span_context(name, attributes=attributes)


def _tracer_provider_set() -> bool:
    try:
        from opentelemetry import trace
    except ModuleNotFoundError:  # without it the SDK opens no span either
        return False
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


acp.connection.span_context = span_when_recorded  # type: ignore[attr-defined]


class MessageTransport(Protocol):
    """What ``acp.connection.Connection`` reads and writes: JSON-RPC messages as dicts (None: end of input)."""

    async def send(self, message: dict[str, Any]) -> None: ...

    async def receive(self) -> dict[str, Any] | None: ...

    async def close(self) -> None: ...


class ByteSink(Protocol):
    """Where a line transport writes: an ``asyncio.StreamWriter``, or ``FileSink``."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


class LineTransport:
    """Newline-delimited JSON-RPC over a byte stream; a line that holds no message is logged and skipped. The lines
    sent while the event loop runs one round go out together, in the order sent, in one write when the round ends
    (a turn's updates and the answer after them cost one system call, not one each)."""

    def __init__(self, reader: asyncio.StreamReader, sink: ByteSink) -> None:
        self.reader = reader
        self.sink = sink
        self.closed = False
        self.ended = asyncio.Event()
        """Set at the end of the input: the other side closed the connection."""
        self._outgoing: list[bytes] = []

    async def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            raise ConnectionError("Transport closed")
        if not self._outgoing:
            asyncio.get_running_loop().call_soon(self._flush)
        self._outgoing.append((json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8"))
        await self.sink.drain()  # a reader that has fallen behind slows the sender down; a lost one raises

    def _flush(self) -> None:
        data, self._outgoing = b"".join(self._outgoing), []
        if data:
            self.sink.write(data)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self.read_line()
            if not line:
                self.ended.set()
                return None
            line = line.strip()
            if line and (message := await self.parse(line)) is not None:
                return message

    async def parse(self, line: bytes) -> dict[str, Any] | None:
        """The message a line holds, or None to skip it."""
        try:
            message = json.loads(line)
        except ValueError:
            log.warning("skipped a line that is not JSON")
            return None
        return message if isinstance(message, dict) else None

    async def close(self) -> None:
        """Stop sending (what was sent goes out first); the owner of the streams closes them."""
        self._flush()
        self.closed = True

    async def read_line(self) -> bytes:
        """One line, however long (b"" at end of input)."""
        chunks: list[bytes] = []
        try:
            while True:
                try:
                    chunks.append(await self.reader.readuntil(b"\n"))
                    return b"".join(chunks)
                except asyncio.LimitOverrunError as exc:
                    chunks.append(await self.reader.readexactly(exc.consumed))
        except asyncio.IncompleteReadError as exc:
            chunks.append(exc.partial)
            return b"".join(chunks)


class MemoryEnd:
    """One end of an in-process pipe of messages (``memory_pair``)."""

    def __init__(self, outbox: asyncio.Queue[dict[str, Any] | None], inbox: asyncio.Queue[dict[str, Any] | None]) -> None:
        self.outbox = outbox
        self.inbox = inbox
        self.closed = False

    async def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            raise ConnectionError("Transport closed")
        await self.outbox.put(dict(message))

    async def receive(self) -> dict[str, Any] | None:
        return await self.inbox.get()

    async def close(self) -> None:
        """Say end of input to the other end."""
        if not self.closed:
            self.closed = True
            self.outbox.put_nowait(None)


def memory_pair() -> tuple[MemoryEnd, MemoryEnd]:
    """Two linked ends: what one sends, the other receives."""
    there: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
    back: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
    return MemoryEnd(there, back), MemoryEnd(back, there)


def pollable(fd: int) -> bool:
    """Pipes, sockets and terminals can be watched by the event loop; files and /dev/null cannot."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


async def stdin_reader(limit: int) -> asyncio.StreamReader:
    """stdin as a stream: watched by the loop when it can be, else read by a thread (a file, /dev/null)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    if pollable(sys.stdin.fileno()):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        return reader

    def feed() -> None:
        try:
            while data := sys.stdin.buffer.readline():
                loop.call_soon_threadsafe(reader.feed_data, data)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=feed, name="stdin", daemon=True).start()
    return reader


class FileSink:
    """Writes protocol bytes straight to a file that is not a pipe."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file

    def write(self, data: bytes) -> None:
        self.file.write(data)
        self.file.flush()

    async def drain(self) -> None:
        return None


async def output_sink(file: IO[bytes]) -> ByteSink:
    """A sink for ``file``: a stream writer with flow control for a pipe, plain writes for a file."""
    if not pollable(file.fileno()):
        return FileSink(file)
    loop = asyncio.get_running_loop()
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())  # public, and gives the writer its flow control
    transport, _ = await loop.connect_write_pipe(lambda: protocol, file)
    return asyncio.StreamWriter(transport, protocol, None, loop)


_SENT_REQUEST_ID: contextvars.ContextVar[Any] = contextvars.ContextVar("runwield_sent_request_id", default=None)


class RequestIdNoting:
    """A transport that lets ``request_withdrawn_on_cancel`` learn its request's id: ``Connection.send_request``
    hands the request to its transport in the sending task, before it waits for the answer. (An observer of the
    connection would see it too, but the SDK deep-copies every message, both ways, for its observers.)"""

    def __init__(self, inner: MessageTransport) -> None:
        self.inner = inner

    async def send(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            _SENT_REQUEST_ID.set(message["id"])
        await self.inner.send(message)

    async def receive(self) -> dict[str, Any] | None:
        return await self.inner.receive()

    async def close(self) -> None:
        await self.inner.close()


class Observed:
    """A transport that shows every message to ``observers`` as the SDK's ``Connection`` would (what it received,
    before it is handled; what was sent, once sent), without the deep copy of each message the SDK makes for its
    observers, both ways: an observer here must not change what it is shown."""

    def __init__(self, inner: MessageTransport, observers: list[Callable[[StreamEvent], None]]) -> None:
        self.inner = inner
        self.observers = observers

    async def send(self, message: dict[str, Any]) -> None:
        await self.inner.send(message)
        self._show(StreamDirection.OUTGOING, message)

    async def receive(self) -> dict[str, Any] | None:
        message = await self.inner.receive()
        if message is not None:
            self._show(StreamDirection.INCOMING, message)
        return message

    async def close(self) -> None:
        await self.inner.close()

    def _show(self, direction: StreamDirection, message: dict[str, Any]) -> None:
        event = StreamEvent(direction, message)
        for observer in self.observers:
            try:
                observer(event)
            except Exception:
                log.exception("a stream observer failed")


async def request_withdrawn_on_cancel(conn: Connection, method: str, params: Any) -> Any:
    """``conn.send_request``; when cancelled, the request is withdrawn with ``$/cancel_request`` too."""
    _SENT_REQUEST_ID.set(None)
    try:
        return await conn.send_request(method, params)
    except asyncio.CancelledError:
        if (request_id := _SENT_REQUEST_ID.get()) is not None:
            await asyncio.shield(_withdraw(conn, request_id))
        raise


async def _withdraw(conn: Connection, request_id: Any) -> None:
    try:
        await conn.send_notification(CANCEL_REQUEST, {"requestId": request_id})
    except ConnectionError:
        pass


Elicit = Callable[[Any], Awaitable[dict[str, Any]]]


class ClientRoute:
    """A transport that answers ``elicitation/create`` from its raw params with ``elicit``, lets
    ``$/cancel_request`` withdraw one (answered ``cancel``), and answers the methods ``NOT_OFFERED`` -32601;
    every other message passes through."""

    def __init__(self, inner: MessageTransport, elicit: Elicit) -> None:
        self.inner = inner
        self.elicit = elicit
        self.running: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self.answering: set[asyncio.Task[None]] = set()

    async def send(self, message: dict[str, Any]) -> None:
        await self.inner.send(message)

    async def receive(self) -> dict[str, Any] | None:
        while (message := await self.inner.receive()) is not None:
            method = message.get("method")
            if method == ELICITATION_CREATE and "id" in message:
                self._start(message["id"], message.get("params"))
            elif method == CANCEL_REQUEST and "id" not in message:
                self._withdraw(message.get("params"))
            elif method in NOT_OFFERED and "id" in message:
                await self._send({"jsonrpc": "2.0", "id": message["id"], "error": RequestError.method_not_found(method).to_error_obj()})
            else:
                return message
        return None

    async def close(self) -> None:
        for task in list(self.answering):
            task.cancel()
        await asyncio.gather(*self.answering, return_exceptions=True)
        await self.inner.close()

    def _start(self, request_id: Any, params: Any) -> None:
        work = asyncio.ensure_future(self.elicit(params))
        self.running[request_id] = work
        task = asyncio.create_task(self._answer(request_id, work), name=f"elicitation:{request_id}")
        self.answering.add(task)
        task.add_done_callback(self.answering.discard)

    def _withdraw(self, params: Any) -> None:
        work = self.running.get(params.get("requestId")) if isinstance(params, dict) else None
        if work is not None:
            work.cancel()

    async def _answer(self, request_id: Any, work: asyncio.Future[dict[str, Any]]) -> None:
        try:
            await asyncio.wait({work})
        except asyncio.CancelledError:
            work.cancel()
            raise
        finally:
            if self.running.get(request_id) is work:
                del self.running[request_id]
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if work.cancelled():
            reply["result"] = {"action": "cancel"}  # withdrawn by the agent
        elif isinstance(error := work.exception(), RequestError):
            reply["error"] = error.to_error_obj()
        elif error is not None:
            log.error("answering elicitation/create failed: %s", error, exc_info=error)
            reply["error"] = RequestError.internal_error({"details": str(error)}).to_error_obj()
        else:
            reply["result"] = work.result()
        await self._send(reply)

    async def _send(self, reply: dict[str, Any]) -> None:
        """Answer a request this route took; an agent already gone gets nothing."""
        try:
            await self.inner.send(reply)
        except ConnectionError as exc:
            log.debug("answer to the agent dropped: %s", exc)
