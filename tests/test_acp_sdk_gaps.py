"""The ACP SDK's gaps that ``runwield_bridge/acp/sdk_gaps.py`` fills: each test fails loudly when the SDK
changes under one (then use the SDK's own way and shrink the adapter), and proves the adapter still works."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
from pathlib import Path
from typing import Any

import acp
import acp.connection
import acp.stdio
import acp.telemetry
import acp.transports
import opentelemetry.trace
import pytest
from acp import RequestError
from acp.agent.router import build_agent_router
from acp.client.router import build_client_router
from acp.connection import Connection
from pydantic import ValidationError

from runwield_bridge.acp.sdk_gaps import (
    CANCEL_REQUEST,
    ClientRoute,
    RequestIdNoting,
    memory_pair,
    request_withdrawn_on_cancel,
    span_when_recorded,
)
from waiting import PATIENCE

SDK_GAPS = "runwield_bridge/acp/sdk_gaps.py"


def test_gap_1_the_sdk_keeps_its_message_transports_private() -> None:
    public = set(acp.__all__) | set(acp.connection.__all__) | set(acp.transports.__all__) | set(acp.stdio.__all__)
    made_public = {"Transport", "NdjsonTransport", "memory_transport_pair"} & public
    assert not made_public, f"the SDK now exports {made_public}: use them instead of {SDK_GAPS} (gap 1)"


async def _sdk_answers_on_a_socket(lines: list[bytes], expected: int) -> list[dict[str, Any]]:
    """Feed ``lines`` to the SDK's own byte-stream ``Connection``; the first ``expected`` lines it writes back."""

    async def handler(method: str, params: Any, is_notification: bool) -> Any:
        return {"echo": method}

    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=ours)
    peer_reader, peer_writer = await asyncio.open_connection(sock=theirs)
    conn = Connection(handler, writer, reader)
    try:
        peer_writer.write(b"".join(lines))
        await peer_writer.drain()
        return [json.loads(await asyncio.wait_for(peer_reader.readline(), PATIENCE)) for _ in range(expected)]
    finally:
        await conn.close()
        peer_writer.close()


async def test_gap_2_the_sdk_drops_malformed_lines_without_an_answer() -> None:
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    answers = await _sdk_answers_on_a_socket([b"this is not json\n", request + b"\n"], expected=1)  # an answer to the bad line would come first
    assert answers == [{"jsonrpc": "2.0", "id": 1, "result": {"echo": "ping"}}], (
        f"the SDK now answers malformed lines: transport.CheckedNdjsonTransport may be redundant (gap 2 of {SDK_GAPS})"
    )


async def test_gap_3_the_sdks_stdio_needs_pipes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stdin = tmp_path / "stdin.jsonl"
    stdin.write_text("")
    with stdin.open() as file:
        monkeypatch.setattr(sys, "stdin", file)
        with pytest.raises(ValueError, match="[Pp]ipe"):
            await acp.stdio_streams()


async def test_gap_4_the_sdks_agent_router_merges_meta_into_arguments_and_has_no_session_delete() -> None:
    seen: list[str] = []

    class Agent:
        async def cancel(self, session_id: str, **kwargs: Any) -> None:
            seen.append(session_id)

    router = build_agent_router(Agent(), use_unstable_protocol=True)  # type: ignore[arg-type]
    await router("session/cancel", {"sessionId": "ses_mine", "_meta": {"session_id": "ses_other"}}, True)
    assert seen == ["ses_other"], f"the SDK no longer lets _meta override parameters: its agent router may do (gap 4 of {SDK_GAPS})"
    with pytest.raises(RequestError) as err:
        await router("session/delete", {"sessionId": "ses_mine"}, False)
    assert err.value.code == -32601, f"the SDK routes session/delete now (gap 4 of {SDK_GAPS})"


async def test_gap_5_a_cancelled_request_is_withdrawn_with_its_id() -> None:
    """``Connection.send_request`` hides its id; its transport still sees it in the sending task, so the adapter can withdraw it."""
    ours, theirs = memory_pair()

    async def never(method: str, params: Any, is_notification: bool) -> Any:
        return None

    conn = Connection(never, RequestIdNoting(ours))
    try:
        asking = asyncio.create_task(request_withdrawn_on_cancel(conn, "elicitation/create", {"message": "?"}))
        request = await asyncio.wait_for(theirs.receive(), PATIENCE)
        asking.cancel()
        withdrawal = await asyncio.wait_for(theirs.receive(), PATIENCE)
    finally:
        await conn.close()
    assert withdrawal == {"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": {"requestId": request["id"]}}, (
        f"the SDK changed how it tells observers of sent requests (gap 5 of {SDK_GAPS})"
    )


async def test_gap_6_the_sdks_client_router_bounces_odd_elicitations_and_knows_no_cancel_request() -> None:
    class Client:
        async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
            raise AssertionError("a malformed request never gets here")

    router = build_client_router(Client(), use_unstable_protocol=True)  # type: ignore[arg-type]
    with pytest.raises((ValidationError, RequestError)):
        await router("elicitation/create", {"mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": 1}}, False)
    with pytest.raises(RequestError) as err:
        await router(CANCEL_REQUEST, {"requestId": 1}, True)
    assert err.value.code == -32601, f"the SDK routes $/cancel_request now (gap 6 of {SDK_GAPS})"


async def test_gap_7_the_sdks_client_router_answers_terminal_methods_a_client_lacks_as_if_done() -> None:
    router = build_client_router(object(), use_unstable_protocol=True)  # type: ignore[arg-type]
    answer = await router("terminal/create", {"sessionId": "s", "command": "echo"}, False)
    assert answer is None, f"the SDK answers a missing terminal/create otherwise now (gap 7 of {SDK_GAPS})"


def test_gap_8_the_sdk_opens_a_span_for_every_message_even_when_nothing_records_it() -> None:
    untraced = acp.telemetry.span_context("acp.request", attributes={"method": "session/prompt"})
    assert not isinstance(untraced, contextlib.nullcontext), f"the SDK opens no span now when nothing records it: drop gap 8 of {SDK_GAPS}"
    assert acp.connection.span_context is span_when_recorded, f"the SDK's connection no longer opens its spans this way (gap 8 of {SDK_GAPS})"
    assert isinstance(span_when_recorded("acp.request"), contextlib.nullcontext)


def test_the_sdks_spans_are_opened_once_a_tracer_provider_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opentelemetry.trace, "get_tracer_provider", opentelemetry.trace.NoOpTracerProvider)
    span = span_when_recorded("acp.request", attributes={"method": "session/prompt"})
    assert not isinstance(span, contextlib.nullcontext), "a set tracer provider gets the SDK's span"
    with span:
        pass


async def test_the_elicitation_route_answers_raw_requests_and_withdrawals() -> None:
    """What gap 6 needs: an odd request reaches our handler as it is; a withdrawn one is answered ``cancel``."""
    agent_end, client_end = memory_pair()
    started = asyncio.Event()

    async def elicit(params: Any) -> dict[str, Any]:
        if params.get("message") == "wait":
            started.set()
            await asyncio.Event().wait()
        return {"action": "decline", "_meta": {"saw": params["requestedSchema"]["properties"]}}

    route = ClientRoute(client_end, elicit)
    receiving = asyncio.create_task(route.receive())
    try:
        odd = {"mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": 1}}
        await agent_end.send({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create", "params": odd})
        assert await asyncio.wait_for(agent_end.receive(), PATIENCE) == {"jsonrpc": "2.0", "id": 7, "result": {"action": "decline", "_meta": {"saw": 1}}}
        await agent_end.send({"jsonrpc": "2.0", "id": 8, "method": "elicitation/create", "params": {"message": "wait"}})
        await asyncio.wait_for(started.wait(), PATIENCE)
        await agent_end.send({"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": {"requestId": 8}})
        assert await asyncio.wait_for(agent_end.receive(), PATIENCE) == {"jsonrpc": "2.0", "id": 8, "result": {"action": "cancel"}}
        await agent_end.send({"jsonrpc": "2.0", "method": "session/update", "params": {}})
        assert (await asyncio.wait_for(receiving, PATIENCE))["method"] == "session/update", "everything else passes through"
    finally:
        receiving.cancel()
        await route.close()
