"""Property-based fuzzing of `wld acp` on the wire: one real process takes well over a thousand hostile
frames (garbage bytes, deep nesting, bad ids, schema-breaking params, lone surrogates, notifications
and responses nobody asked for). After each batch it must still answer a probe, every request with a
usable id must get exactly one answer with the right JSON-RPC code (-32600 for a malformed request,
-32601 for an unknown method, -32602 for params the official schema rejects), and every message it
sends must be valid against the official ACP schema (the harness checks each one)."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections import Counter
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from acp_wire import Message, WireClient, load_schema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_acp_server import INIT, WLD

EXAMPLES = 300  # batches of up to 12 frames each, one probe after each batch
ANSWER_TIMEOUT = 60.0
METHODS = (
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/prompt",
    "session/set_config_option",
    "session/cancel",
    "session/close",
    "session/delete",
    "_session/steering",
    "session/list",
    "session/resume",
    "no/such_method",
)
ROUTED = set(METHODS) - {"session/cancel", "no/such_method"}  # the requests `wld acp` serves
INVALID_IDS = (True, False, 0.5, 1.0, -2.5, {}, {"id": 1}, [], [1], 2**63, -(2**63) - 1, "\ud800", "a\udfffb")

text = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)  # lone surrogates included
scalars = st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63) | st.floats(allow_nan=False, allow_infinity=False) | text
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=8)


def templates(session_id: str, cwd: str) -> dict[str, dict[str, Any]]:
    """Valid params per method, for the fuzzer to break one field at a time."""
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
    return {
        "initialize": {"protocolVersion": 1, "clientCapabilities": {}},
        "authenticate": {"methodId": "agent-login"},
        "session/new": {"cwd": cwd, "mcpServers": []},
        "session/load": {"sessionId": session_id, "cwd": cwd, "mcpServers": []},
        "session/resume": {"sessionId": session_id, "cwd": cwd},
        "session/list": {"cwd": cwd},
        "session/prompt": prompt,
        "session/set_config_option": {"sessionId": session_id, "configId": "thought_level", "value": "low"},
        "session/cancel": {"sessionId": session_id},
        "session/close": {"sessionId": session_id},
        "session/delete": {"sessionId": session_id},
        "_session/steering": prompt,
    }


@st.composite
def params_for(draw: st.DrawFn, method: str, valid: dict[str, dict[str, Any]]) -> Any:
    """Params that are valid, one field broken, a field missing, a hostile ``_meta``, or any value at all."""
    base = dict(valid.get(method, {}))
    how = draw(st.sampled_from(("valid", "valid", "break", "break", "drop", "meta", "any", "absent")))
    if how == "break" and base:
        base[draw(st.sampled_from(sorted(base)))] = draw(values)
    elif how == "drop" and base:
        del base[draw(st.sampled_from(sorted(base)))]
    elif how == "meta":
        base["_meta"] = draw(values)
    elif how == "any":
        return draw(values)
    elif how == "absent":
        return ...
    return base


@st.composite
def envelopes(draw: st.DrawFn, valid: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A JSON-RPC-shaped object: requests and notifications (id ``...`` = a fresh valid id), or responses."""
    message: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        message["jsonrpc"] = "2.0"
    elif draw(st.booleans()):
        message["jsonrpc"] = draw(values)
    kind = draw(st.sampled_from(("request", "request", "request", "notification", "response")))
    if kind == "response":
        message["id"] = draw(st.sampled_from((..., *INVALID_IDS)) | st.integers(-1000, -1))
        message[draw(st.sampled_from(("result", "error")))] = draw(values | st.fixed_dictionaries({"code": values, "message": values}))
        return message
    method = draw(st.sampled_from(METHODS)) if draw(st.integers(0, 4)) else draw(text | values)
    message["method"] = method
    if kind == "request":
        message["id"] = draw(st.sampled_from(INVALID_IDS)) if draw(st.integers(0, 4)) == 0 else ...
    params = draw(params_for(method if isinstance(method, str) else "", valid))
    if params is not ...:
        message["params"] = params
    return message


@st.composite
def frames(draw: st.DrawFn, valid: dict[str, dict[str, Any]]) -> dict[str, Any] | bytes:
    """Mostly JSON-RPC-shaped objects, one in five a raw line."""
    return draw(raw_lines()) if draw(st.integers(0, 4)) == 0 else draw(envelopes(valid))


def raw_lines() -> st.SearchStrategy[bytes]:
    """Lines no JSON-RPC peer should send: garbage, deep nesting, NaN and friends, cut-off JSON."""
    deep = st.integers(60, 1500).map(lambda n: b"[" * n + b"]" * n)
    deep_in_params = st.integers(60, 1500).map(
        lambda n: b'{"jsonrpc":"2.0","method":"session/cancel","params":{"_meta":' + b"[" * n + b"]" * n + b"}}"
    )
    constants = st.sampled_from((b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999")).map(
        lambda c: b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":' + c + b"}}"
    )
    garbage = st.binary(max_size=80).map(lambda b: b.replace(b"\n", b" "))
    cut = st.integers(1, 40).map(lambda n: json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode()[:n])
    return deep | deep_in_params | constants | garbage | cut


def has_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def expected_error(request: dict[str, Any]) -> int | None:
    """The error code a request must be answered with, or None when it may succeed."""
    method, params = request.get("method"), request.get("params")
    if request.get("jsonrpc") != "2.0" or not isinstance(method, str) or has_lone_surrogate(method):
        return -32600
    if not isinstance(params, (dict, list, type(None))):
        return -32600
    if method not in ROUTED:
        return -32601
    checked = {**request, "params": {} if params is None else params}
    if load_schema().check("client", "request", method, checked) or has_lone_surrogate(params):
        return -32602
    return None


class LoopThread:
    """An event loop in a thread, so that hypothesis (synchronous) can drive one long-lived process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, work: Coroutine[Any, Any, Any], timeout: float = ANSWER_TIMEOUT * 3) -> Any:
        """Run ``work`` on the loop; the bound is above a batch's own two waits (the probe, then the answers), so a
        slow agent fails with their message saying what never came, not with this one's."""
        future: Future[Any] = asyncio.run_coroutine_threadsafe(work, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise AssertionError(f"the event loop did not finish {work.__qualname__} within {timeout}s") from None

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


class Fuzzer:
    """Sends frames to one `wld acp` and checks what comes back."""

    def __init__(self, client: WireClient) -> None:
        self.client = client
        self._ids: Iterator[str] = (f"fuzz-{n}" for n in itertools.count())
        self.frames = 0
        self.expected: Counter[int | None] = Counter()  # answered requests by the code they had to get

    async def send(self, frames: list[dict[str, Any] | bytes]) -> None:
        """Send a batch, then a probe; every request with a valid id must get its one answer, with the right code."""
        answers: list[tuple[asyncio.Future[Message], int | None, dict[str, Any]]] = []
        for frame in frames:
            if isinstance(frame, dict):
                frame = dict(frame)
                if frame.get("id", None) is ...:
                    frame["id"] = next(self._ids)
                    if "method" in frame:
                        method = frame["method"] if isinstance(frame["method"], str) else ""
                        answers.append((self.client.expect_response(frame["id"], method), expected_error(frame), frame))
                line = json.dumps(frame).encode()
            else:
                line = frame
            await self.client.send_raw(line + b"\n")
            self.frames += 1
        assert (await self.client.call("initialize", INIT, timeout=ANSWER_TIMEOUT))["protocolVersion"] == 1
        if answers:
            await asyncio.wait_for(asyncio.gather(*(answer for answer, _, _ in answers)), ANSWER_TIMEOUT)
        self.client.raise_violations()
        for answer, code, request in answers:
            self.expected[code] += 1
            if code is not None:
                assert answer.result().get("error", {}).get("code") == code, (request, answer.result())
        assert self.client.proc.returncode is None, "wld acp died"


@pytest.fixture
def live_agent(tmp_path: Path) -> Iterator[tuple[LoopThread, Fuzzer, dict[str, dict[str, Any]]]]:
    """One `wld acp` with a Session, driven from a loop in another thread."""
    loop = LoopThread()
    spawned = WireClient.spawn([WLD, "acp"], cwd=tmp_path)
    client: WireClient = loop.run(spawned.__aenter__())
    try:
        loop.run(client.call("initialize", INIT))
        session = loop.run(client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        yield loop, Fuzzer(client), templates(session["sessionId"], str(tmp_path))
    finally:
        loop.run(spawned.__aexit__(None, None, None))  # raises any violation recorded since the last check
        loop.stop()


def test_hostile_frames_never_kill_the_server_and_every_answer_is_schema_valid(live_agent) -> None:
    loop, fuzzer, valid = live_agent

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.lists(frames(valid), min_size=1, max_size=12))
    def batch(frames: list[dict[str, Any] | bytes]) -> None:
        loop.run(fuzzer.send(frames))

    batch()
    assert fuzzer.frames > 1000
    assert all(fuzzer.expected[code] >= 20 for code in (-32600, -32601, -32602, None)), fuzzer.expected
