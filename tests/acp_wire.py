"""Schema-validating JSON-RPC 2.0 stdio client for ACP v1 wire-conformance tests.

Every message in both directions is checked against the official ACP schema shipped in the
npm package @agentclientprotocol/sdk (installed by `npm ci`); see AcpSchema for how methods map
to schema types. Violations by the agent are recorded and raised as WireViolation at the next
request/wait and at the latest when the `async with WireClient.spawn(...)` block exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, relevance
from waiting import PATIENCE

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = REPO_ROOT / "node_modules" / "@agentclientprotocol" / "sdk" / "schema" / "v1"
# Methods outside the schema that pass untyped: `_` extensions and `$/` protocol notifications.
EXTENSION_PREFIXES = ("_", "$/")
MAX_LINE = 64 * 1024 * 1024
KINDS = ("request", "response", "notification")

Message = dict[str, Any]
Handler = Callable[[Any], Any | Awaitable[Any]]


class WireViolation(AssertionError):
    """A message on the wire broke JSON-RPC 2.0 framing or the official ACP schema."""


class RpcError(Exception):
    """A JSON-RPC error: raised by WireClient.call, and raised by handlers to answer with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"JSON-RPC error {code}: {message}" + ("" if data is None else f" {data!r}"))
        self.code, self.message, self.data = code, message, data

    def to_json(self) -> dict[str, Any]:
        """The JSON-RPC error object."""
        error = {"code": self.code, "message": self.message}
        return error if self.data is None else {**error, "data": self.data}


def schema_path(unstable: bool = False) -> Path:
    """Path of the official ACP v1 schema (dir overridable by ACP_SCHEMA_DIR); fails loudly when missing."""
    directory = Path(os.environ.get("ACP_SCHEMA_DIR") or SCHEMA_DIR)
    path = directory / ("schema.unstable.json" if unstable else "schema.json")
    if not path.is_file():
        raise FileNotFoundError(f"official ACP schema missing at {path}: run `npm ci` in {REPO_ROOT}")
    return path


def load_schema(unstable: bool = False) -> AcpSchema:
    """The parsed stable (or unstable) ACP v1 schema, cached per file."""
    return _load(schema_path(unstable))


@lru_cache
def _load(path: Path) -> AcpSchema:
    """Parse and index one schema file."""
    return AcpSchema(path)


class AcpSchema:
    """The official ACP schema indexed by (sender, kind) -> method -> $defs type name.

    The mapping is read from the schema itself: the unions AgentRequest, AgentResponse,
    AgentNotification (sent by the agent) and ClientRequest, ClientResponse, ClientNotification
    (sent by the client) list their member types by $ref, and each member type carries its JSON-RPC
    method name in `x-method`. The root branch titled ProtocolLevel adds notifications either side
    may send ($/cancel_request). A response is typed by the method of the request it answers, an
    error response by $defs/Error, and every id by $defs/RequestId. The root envelope adds nothing
    beyond JSON-RPC framing (checked by _kind) and would double the cost, so it is not re-checked.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        document = json.loads(path.read_text())
        self._defs: dict[str, Any] = document["$defs"]
        branches = {branch["title"]: branch for branch in document["anyOf"]}
        protocol = self._method_types(branches["ProtocolLevel"])
        self.types: dict[tuple[str, str], dict[str, str]] = {}
        for sender in ("Agent", "Client"):
            for kind in KINDS:
                types = self._method_types(self._defs[sender + kind.capitalize()])
                self.types[sender.lower(), kind] = types | protocol if kind == "notification" else types

    def _method_types(self, node: Any) -> dict[str, str]:
        """Map x-method -> type name for every $ref under node whose target declares an x-method."""
        found: dict[str, str] = {}
        if isinstance(node, dict):
            target = self._defs.get(node.get("$ref", "").removeprefix("#/$defs/"), {})
            if "x-method" in target:
                found[target["x-method"]] = node["$ref"].removeprefix("#/$defs/")
            children = node.values()
        else:
            children = node if isinstance(node, list) else []
        for child in children:
            found |= self._method_types(child)
        return found

    @lru_cache(maxsize=None)
    def _validator(self, name: str) -> Draft202012Validator:
        """The cached validator for $defs[name]."""
        return Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": self._defs})

    def check(self, sender: str, kind: str, method: str, message: Message) -> str | None:
        """Why message (of kind, sent by sender, invoking or answering method) breaks the schema, or None."""
        if kind == "response" and "error" in message:
            name, instance = "Error", message["error"]
        else:
            name = self.types[sender, kind].get(method)
            instance = message.get("result") if kind == "response" else message.get("params")
        if name is None and not method.startswith(EXTENSION_PREFIXES):
            return self._unknown(sender, kind, method)
        if name and (problem := _first_error(self._validator(name), instance)):
            return f"violates {self.path.name}#/$defs/{name}: {problem}"
        if "id" in message and (problem := _first_error(self._validator("RequestId"), message["id"])):
            return f"id violates {self.path.name}#/$defs/RequestId: {problem}"
        return None

    def _unknown(self, sender: str, kind: str, method: str) -> str:
        """Explain a method this schema lacks, pointing at the unstable schema when it has it."""
        hint = ""
        if self.path.name == "schema.json" and method in load_schema(unstable=True).types[sender, kind]:
            hint = " (it is only in schema.unstable.json: spawn with unstable=True)"
        return f"method {method!r} is not an ACP {sender} {kind} in {self.path.name}{hint}"


def _first_error(validator: Draft202012Validator, instance: Any) -> str | None:
    """The most specific schema error for instance, or None when it is valid."""
    error = max(validator.iter_errors(instance), key=relevance, default=None)
    if error is None:
        return None
    while error.context:  # descend into the one anyOf/oneOf branch whose tag (a const) matched
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        tagged = [errors for errors in branches.values() if all(e.validator != "const" for e in errors)]
        if len(tagged) != 1:
            break
        error = max(tagged[0], key=relevance)
    return f"{error.message} (at {error.json_path})"


def _kind(message: Any) -> str | None:
    """JSON-RPC 2.0 kind of message ("request", "notification", "response"), None if it is none."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    has_id = "id" in message
    if has_id and not _is_id(message["id"]):
        return None
    if "method" in message:
        if not isinstance(message["method"], str) or "result" in message or "error" in message:
            return None
        return "request" if has_id else "notification"
    return "response" if has_id and ("result" in message) != ("error" in message) else None


def _is_id(value: Any) -> bool:
    """Whether value is a JSON-RPC id: a string, a number or null."""
    return value is None or isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _dump(message: Any) -> str:
    """A message for error output, shortened."""
    text = json.dumps(message)
    return text if len(text) <= 2000 else text[:2000] + "..."


class WireClient:
    """An ACP agent subprocess spoken to over newline-delimited JSON-RPC 2.0 on stdio."""

    def __init__(self, proc: asyncio.subprocess.Process, schema: AcpSchema | None) -> None:
        self.proc = proc
        self.schema = schema
        self.messages: list[Message] = []  # every parsed stdout message, in arrival order
        self.notifications: list[Message] = []
        self.requests: list[Message] = []  # agent->client requests
        self.violations: list[str] = []
        self.handlers: dict[str, Handler] = {}
        self._ids = itertools.count(1)
        self._pending: dict[Any, tuple[str, asyncio.Future[Message]]] = {}
        self._stderr = bytearray()
        self._reported = 0
        self._eof = False
        self._arrived = asyncio.Condition()
        self._answering: set[asyncio.Task[None]] = set()
        self._readers = [asyncio.create_task(self._read_stdout()), asyncio.create_task(self._read_stderr())]

    @classmethod
    @contextlib.asynccontextmanager
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        unstable: bool = False,
        validate: bool = True,
    ) -> AsyncIterator[WireClient]:
        """Run argv (env adds to os.environ) and yield its client; on exit stop it and raise violations."""
        schema = load_schema(unstable) if validate else None
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            limit=MAX_LINE,
        )
        client = cls(proc, schema)
        try:
            yield client
        finally:
            await client.close()
        client.raise_violations()

    @property
    def stderr(self) -> str:
        """Everything the agent wrote to stderr so far."""
        return self._stderr.decode(errors="replace")

    def on_request(self, method: str, handler: Handler) -> None:
        """Answer agent->client requests for method with handler(params), sync or async (raise RpcError)."""
        self.handlers[method] = handler

    async def request(
        self, method: str, params: Any = None, *, timeout: float = PATIENCE, check: bool = True
    ) -> Message:
        """Send a request and return its whole response (result or error); check=False: send unvalidated."""
        request_id = next(self._ids)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (method, future)
        try:
            await self._send(_message(method, params, request_id), check)
            response = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            self.raise_violations()
            raise TimeoutError(f"no response to {method!r} within {timeout}s{self._stderr_tail()}") from None
        except ConnectionError as error:
            self.raise_violations()
            await asyncio.wait(self._readers, timeout=1.0)  # let a dying agent's traceback reach stderr
            raise ConnectionError(f"{error}{self._stderr_tail()}") from None
        finally:
            self._pending.pop(request_id, None)
        self.raise_violations()
        return response

    def expect_response(self, request_id: Any, method: str) -> asyncio.Future[Message]:
        """Await a response to a request sent by hand (send_raw): it is matched and validated as ``method``'s."""
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (method, future)
        return future

    async def call(self, method: str, params: Any = None, *, timeout: float = PATIENCE) -> Any:
        """Send a request and return its result, raising RpcError for an error response."""
        response = await self.request(method, params, timeout=timeout)
        if "error" in response:
            error = response["error"]
            raise RpcError(error["code"], error["message"], error.get("data"))
        return response["result"]

    async def notify(self, method: str, params: Any = None, *, check: bool = True) -> None:
        """Send a notification; check=False skips outbound validation."""
        await self._send(_message(method, params), check)

    async def send_raw(self, data: bytes) -> None:
        """Write bytes to the agent's stdin as they are (for malformed-input tests)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def wait_message(self, predicate: Callable[[Message], bool], timeout: float = PATIENCE) -> Message:
        """Return the first received message matching predicate, waiting up to timeout seconds for it."""

        def found() -> Message | None:
            return next((message for message in self.messages if predicate(message)), None)

        def done() -> bool:
            return self._eof or len(self.violations) > self._reported or found() is not None

        async with self._arrived:
            try:
                await asyncio.wait_for(self._arrived.wait_for(done), timeout)
            except TimeoutError:
                raise TimeoutError(f"no matching message within {timeout}s{self._stderr_tail()}") from None
        self.raise_violations()
        if (message := found()) is None:
            raise ConnectionError(f"agent closed stdout before a matching message{self._stderr_tail()}")
        return message

    async def wait_notification(
        self, predicate: Callable[[Message], bool] = lambda _: True, timeout: float = PATIENCE
    ) -> Message:
        """Return the first received notification matching predicate, waiting up to timeout seconds."""
        return await self.wait_message(lambda m: _kind(m) == "notification" and predicate(m), timeout)

    def raise_violations(self) -> None:
        """Raise WireViolation listing the violations recorded since the last raise, if any."""
        new = self.violations[self._reported :]
        self._reported = len(self.violations)
        if new:
            listing = "\n\n".join(new)
            raise WireViolation(f"{len(new)} ACP wire violation(s):\n{listing}{self._stderr_tail()}")

    async def close(self, grace: float = 5.0) -> None:
        """Close stdin, wait for the agent to exit (then terminate, then kill) and drain its output."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        for stop in (None, self.proc.terminate, self.proc.kill):  # wait, then terminate, then kill
            if self.proc.returncode is None and stop is not None:
                stop()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), grace)
                break
        _, stuck = await asyncio.wait(self._readers, timeout=grace)  # a grandchild may hold the pipes
        for task in [*stuck, *self._answering]:
            task.cancel()

    async def _send(self, message: Message, check: bool) -> None:
        """Validate (when check) and write one client->agent message."""
        if check and (problem := self._problem("client", message)):
            raise WireViolation(f"client->agent message is invalid: {problem}\n{_dump(message)}")
        await self.send_raw(json.dumps(message).encode() + b"\n")

    def _problem(self, sender: str, message: Any, answered: str = "") -> str | None:
        """Why message breaks JSON-RPC 2.0 or the schema, or None; answered: the method a response answers."""
        kind = _kind(message)
        if kind is None:
            return "not a JSON-RPC 2.0 request, notification or response"
        if self.schema is None:
            return None
        return self.schema.check(sender, kind, answered if kind == "response" else message["method"], message)

    def _stderr_tail(self) -> str:
        """The end of the agent's stderr, formatted for error messages."""
        tail = self.stderr[-2000:]
        return f"\n--- agent stderr (tail) ---\n{tail}" if tail else ""

    async def _incoming(self) -> AsyncIterator[bytes]:
        """The agent's messages as lines (its stdout), until the end."""
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            yield line

    async def _read_stdout(self) -> None:
        """Receive stdout lines until EOF, then fail the requests still pending."""
        try:
            async for line in self._incoming():
                self._receive(line)
                async with self._arrived:
                    self._arrived.notify_all()
        except ValueError as error:  # a line longer than MAX_LINE
            self.violations.append(f"unreadable agent stdout: {error}")
        self._eof = True
        for method, future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError(f"agent closed stdout before answering {method!r}"))
        async with self._arrived:
            self._arrived.notify_all()

    async def _read_stderr(self) -> None:
        """Collect stderr so the agent never blocks on a full pipe."""
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self._stderr += chunk

    def _receive(self, line: bytes) -> None:
        """Parse, validate and dispatch one agent stdout line."""
        if not line.endswith(b"\n"):
            self.violations.append(f"agent stdout ended without a newline after {line[:500]!r}")
        try:
            message = json.loads(line)
        except ValueError:
            self.violations.append(f"agent stdout line is not JSON (logs belong on stderr): {line[:500]!r}")
            return
        self.messages.append(message)
        kind = _kind(message)
        method, future = "", None
        if kind == "response":
            method, future = self._pending.pop(message["id"], ("", None))
            if future is None and (message["id"] is not None or "result" in message):
                self.violations.append(f"agent sent a response to no pending request: {_dump(message)}")
                return
        if problem := self._problem("agent", message, method):
            self.violations.append(f"agent->client {kind or 'message'} is invalid: {problem}\n{_dump(message)}")
        if kind == "notification":
            self.notifications.append(message)
        elif kind == "request":
            self.requests.append(message)
            task = asyncio.create_task(self._answer(message))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)
        elif future is not None and not future.done():
            future.set_result(message)

    async def _answer(self, request: Message) -> None:
        """Answer an agent->client request with its handler, or -32601 when none is registered."""
        method = request["method"]
        try:
            if method not in self.handlers:
                raise RpcError(-32601, "Method not found", {"method": method})
            result = self.handlers[method](request.get("params"))
            if inspect.isawaitable(result):
                result = await result
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        except RpcError as error:
            reply = {"jsonrpc": "2.0", "id": request["id"], "error": error.to_json()}
        except Exception as error:  # a broken test handler must fail the test, not hang the agent
            self.violations.append(f"client handler for {method!r} raised {error!r}")
            internal = RpcError(-32603, "Internal error")
            reply = {"jsonrpc": "2.0", "id": request["id"], "error": internal.to_json()}
        if problem := self._problem("client", reply, method):
            self.violations.append(f"client->agent response to {method!r} is invalid: {problem}\n{_dump(reply)}")
        with contextlib.suppress(ConnectionError):
            await self.send_raw(json.dumps(reply).encode() + b"\n")


def _message(method: str, params: Any, request_id: int | None = None) -> Message:
    """A JSON-RPC request (with request_id) or notification; params omitted when None."""
    message: Message = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return message
