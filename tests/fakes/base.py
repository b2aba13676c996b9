"""Shared machinery for the local platform fakes: an aiohttp server that records and waits for calls."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Self
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from waiting import PATIENCE

HOST = "127.0.0.1"

Predicate = Callable[["RecordedCall"], bool]
ResponseFactory = Callable[[], web.StreamResponse]


@dataclass
class UploadedFile:
    """A file part of a multipart request."""

    filename: str | None
    content_type: str | None
    data: bytes


@dataclass
class RecordedCall:
    """One request received by a fake (or one gateway frame for Discord)."""

    method: str
    params: dict[str, Any]
    http_method: str = "POST"
    path: str = ""
    path_params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    files: dict[str, UploadedFile] = field(default_factory=dict)
    status: int | None = None
    at: float = field(default_factory=time.monotonic)

    def __getitem__(self, key: str) -> Any:
        """Shortcut for ``call.params[key]``."""
        return self.params[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Shortcut for ``call.params.get(key, default)``."""
        return self.params.get(key, default)


@dataclass
class HttpResult:
    """Status, body and headers of a request sent by a test helper."""

    status: int
    text: str
    headers: dict[str, str]

    def json(self) -> Any:
        """Decode the body as JSON."""
        return json.loads(self.text)


CALL_KEY: web.RequestKey[RecordedCall] = web.RequestKey("call", RecordedCall)


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON response whose Content-Type is exactly ``application/json`` (discord.py compares it verbatim)."""
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers=headers, content_type="application/json"
    )


async def http_post(url: str, *, data: bytes | str, headers: dict[str, str]) -> HttpResult:
    """POST raw bytes to a local URL and return the result."""
    async with aiohttp.ClientSession() as session:
        async with session.post(url, data=data, headers=headers) as resp:
            return HttpResult(resp.status, await resp.text(), dict(resp.headers))


async def raw_post(url: str, *, header_lines: bytes, data: bytes = b"{}") -> int:
    """POST with header bytes as given (even ones no HTTP client would send, like non-UTF-8 values); returns the status."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        head = f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        writer.write(head.encode() + header_lines + b"Connection: close\r\n\r\n" + data)
        await writer.drain()
        status_line = await reader.readline()
    finally:
        writer.close()
    return int(status_line.split()[1])


async def _start_runner(app: web.Application, port: int = 0) -> tuple[web.AppRunner, int]:
    """Start ``app`` on 127.0.0.1 and return its runner and port."""
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, HOST, port)
    await site.start()
    return runner, runner.addresses[0][1]


@contextlib.asynccontextmanager
async def serve_app(app: web.Application) -> AsyncIterator[str]:
    """Serve any aiohttp app (a bot's webhook or Slack events route) on 127.0.0.1; yields its base URL."""
    runner, port = await _start_runner(app)
    try:
        yield f"http://{HOST}:{port}"
    finally:
        await runner.cleanup()


class FakeServer:
    """An aiohttp server on 127.0.0.1:0 that records every call and can inject errors per method."""

    def __init__(self) -> None:
        self.calls: list[RecordedCall] = []
        self._injected: dict[str, deque[ResponseFactory]] = {}
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self.closing = False

    # -- lifecycle -------------------------------------------------------

    @property
    def port(self) -> int:
        """TCP port the fake listens on."""
        if self._port is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return self._port

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:12345``."""
        return f"http://{HOST}:{self.port}"

    async def start(self) -> Self:
        """Start listening on a free local port."""
        app = web.Application(middlewares=[self._middleware], client_max_size=64 * 1024 * 1024)
        self._setup_routes(app)
        self._runner, self._port = await _start_runner(app)
        return self

    async def stop(self) -> None:
        """Wake pending long requests and shut the server down."""
        self.closing = True
        self._notify()
        await self._before_stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- recorded calls --------------------------------------------------

    def calls_to(self, method: str) -> list[RecordedCall]:
        """All recorded calls of one method, oldest first."""
        return [c for c in self.calls if c.method == method]

    def last_call(self, method: str) -> RecordedCall:
        """The most recent call of ``method`` (AssertionError if none)."""
        found = self.calls_to(method)
        assert found, f"no {method} call recorded; got {self.method_names()}"
        return found[-1]

    def method_names(self) -> list[str]:
        """Method names of all recorded calls, in order."""
        return [c.method for c in self.calls]

    def mark(self) -> int:
        """Current number of recorded calls; pass as ``since=`` to only wait for newer calls."""
        return len(self.calls)

    def clear_calls(self) -> None:
        """Forget all recorded calls."""
        self.calls.clear()

    async def wait_for_call(
        self,
        method: str | None = None,
        predicate: Predicate | None = None,
        *,
        timeout: float = PATIENCE,
        since: int = 0,
    ) -> RecordedCall:
        """Return the first call (index >= ``since``) matching ``method`` and ``predicate``, waiting if needed."""
        return (await self.wait_for_calls(method, 1, predicate, timeout=timeout, since=since))[0]

    async def wait_for_calls(
        self,
        method: str | None,
        count: int,
        predicate: Predicate | None = None,
        *,
        timeout: float = PATIENCE,
        since: int = 0,
    ) -> list[RecordedCall]:
        """Wait until ``count`` matching calls were recorded; AssertionError on timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            found = [
                c
                for c in self.calls[since:]
                if (method is None or c.method == method) and (predicate is None or predicate(c))
            ]
            if len(found) >= count:
                return found[:count]
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(
                    f"timed out after {timeout}s waiting for {count} x {method or 'any call'}; "
                    f"matched {len(found)}; recorded: {self.method_names()[since:]}"
                )
            event = self._changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)

    async def wait_until(self, condition: Callable[[], bool], *, timeout: float = PATIENCE) -> None:
        """Wait until ``condition()`` is true, re-checking whenever the fake records something."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not condition():
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"timed out after {timeout}s waiting for condition")
            event = self._changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), min(remaining, 0.05))

    def record(self, call: RecordedCall) -> RecordedCall:
        """Append a call and wake waiters (also used for non-HTTP events such as gateway frames)."""
        self.calls.append(call)
        self._notify()
        return call

    def _notify(self) -> None:
        """Wake everything waiting on the fake's state."""
        self._changed.set()
        self._changed = asyncio.Event()

    # -- error injection -------------------------------------------------

    def inject_rate_limit(self, method: str, retry_after: float = 1.0, count: int = 1) -> None:
        """Answer the next ``count`` calls of ``method`` with HTTP 429 and ``retry_after`` seconds."""
        self._inject(method, lambda: self._rate_limit_response(retry_after), count)

    def inject_error(
        self, method: str, status: int = 500, message: str = "Internal Server Error", count: int = 1
    ) -> None:
        """Answer the next ``count`` calls of ``method`` with a platform-shaped error."""
        self._inject(method, lambda: self._error_response(status, message), count)

    def inject_response(self, method: str, factory: ResponseFactory, count: int = 1) -> None:
        """Answer the next ``count`` calls of ``method`` with ``factory()``."""
        self._inject(method, factory, count)

    def _inject(self, method: str, factory: ResponseFactory, count: int) -> None:
        self._injected.setdefault(method, deque()).extend([factory] * count)

    def _take_injected(self, method: str) -> ResponseFactory | None:
        queue = self._injected.get(method)
        return queue.popleft() if queue else None

    # -- HTTP plumbing ---------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        """Parse and record the request, apply injected errors, then run the route handler."""
        method = self._method_name(request)
        if method is None:
            return await handler(request)
        params, files = await _parse_request(request)
        call = RecordedCall(
            method=method,
            params=self._decode_params(method, params, request.content_type),
            http_method=request.method,
            path=request.path,
            path_params=dict(request.match_info),
            headers=dict(request.headers),
            files=files,
        )
        request[CALL_KEY] = call
        injected = self._take_injected(method)
        try:
            response = injected() if injected is not None else await handler(request)
            call.status = response.status
            return response
        except web.HTTPException as exc:
            call.status = exc.status
            raise
        except Exception:
            call.status = 500
            raise
        finally:
            self.record(call)

    def _method_name(self, request: web.Request) -> str | None:
        """Logical method name of a request (default: the route name); None means "don't record"."""
        return request.match_info.route.name

    def _decode_params(self, method: str, params: dict[str, Any], content_type: str) -> dict[str, Any]:
        """Hook to post-process parsed parameters."""
        return params

    def _setup_routes(self, app: web.Application) -> None:
        """Register the platform's routes."""
        raise NotImplementedError

    def _rate_limit_response(self, retry_after: float) -> web.StreamResponse:
        """The platform's HTTP 429 response."""
        raise NotImplementedError

    def _error_response(self, status: int, message: str) -> web.StreamResponse:
        """The platform's error response."""
        return json_response({"message": message}, status=status)

    async def _before_stop(self) -> None:
        """Hook to close long-lived connections before the runner shuts down."""


async def _parse_request(request: web.Request) -> tuple[dict[str, Any], dict[str, UploadedFile]]:
    """Merge query string and body (JSON, urlencoded or multipart) into one dict; collect file parts."""
    params: dict[str, Any] = dict(request.query)
    files: dict[str, UploadedFile] = {}
    if not request.can_read_body:
        return params, files
    ctype = request.content_type
    if ctype == "multipart/form-data":
        form = await request.post()
        for name, value in form.items():
            if isinstance(value, web.FileField):
                files[name] = UploadedFile(value.filename, value.content_type, value.file.read())
            else:
                params[name] = value
    elif ctype == "application/x-www-form-urlencoded":
        params.update((await request.post()).items())
    else:
        raw = await request.read()
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                params["_body"] = raw.decode(errors="replace")
            else:
                if isinstance(body, dict):
                    params.update(body)
                else:
                    params["_json"] = body
    return params, files
