"""The Bridge as an ACP client: third-party agents, plugin channels, sessions that cannot be reopened."""

from __future__ import annotations

import asyncio
import logging
import contextlib
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from runwield_bridge.acp.client import CommandAgent
from runwield_bridge.app import App, InProcessAgent, agent_endpoints
from runwield_bridge.bridge.bindings import MemoryBindings
from runwield_bridge.bridge.bridge import Bridge
from runwield_bridge.bridge.inbox import ChannelInbox
from runwield_bridge.channels.types import Capabilities, Conversation, IncomingMessage, Sender
from runwield_bridge.bridge.runner import BridgeService
from runwield_bridge.config import AgentConfig, Settings
from runwield_bridge.hookspecs import hookimpl
from runwield_bridge.plugin_host import load_plugins
from tests.bridge_kit import FAST_BACKOFF, RecordingChannel
from waiting import PATIENCE, until

REPO = Path(__file__).resolve().parent.parent
ECHO_AGENT = REPO / "bench" / "echo_agent.mjs"
HERE = Conversation("memory", "1")
ME = Sender("me", "me")


def typescript_echo_agent() -> CommandAgent:
    node = shutil.which("node")
    if node is None or not (REPO / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        pytest.skip("node and the npm package @agentclientprotocol/sdk are needed (npm ci)")
    return CommandAgent(AgentConfig(command=[node, str(ECHO_AGENT)], cwd=str(REPO)))


@contextlib.asynccontextmanager
async def bridged(channel: RecordingChannel, agents: dict[str, Any], bindings: MemoryBindings | None = None) -> AsyncIterator[Bridge]:
    """A Bridge to ``agents`` with ``channel`` added (its inbox set), closed afterwards."""
    bridge = Bridge(agents, bindings or MemoryBindings(), start_timeout=PATIENCE, backoff=FAST_BACKOFF)
    channel.inbox = ChannelInbox(bridge, channel)
    try:
        yield bridge
    finally:
        await bridge.close()


async def say(channel: RecordingChannel, text: str) -> None:
    turn = await channel.inbox.receive_message(IncomingMessage(HERE, ME, text))
    if turn is not None:
        await asyncio.wait_for(turn, PATIENCE)


async def test_the_bridge_drives_the_official_typescript_sdk_agent() -> None:
    bindings = MemoryBindings()
    channel = RecordingChannel(agent="echo")
    async with bridged(channel, {"echo": typescript_echo_agent()}, bindings):
        await say(channel, "hello from the bridge")
        assert await channel.wait_for("hello from the bridge") == "hello from the bridge"
        session = (await bindings.get_binding(HERE.key)).acp_session_id
        await say(channel, "/status")
        assert f"Session: {session}" in await channel.wait_for("Agent: echo (connected)")

    channel = RecordingChannel(agent="echo")
    async with bridged(channel, {"echo": typescript_echo_agent()}, bindings):
        await say(channel, "are you there")
        told = await channel.wait_for("cannot reopen sessions")
        assert session in told and "Nothing was sent" in told
        assert (await bindings.get_binding(HERE.key)).acp_session_id == session, "no new session was started silently"
        await say(channel, "/new")
        await channel.wait_for("New session")
        await say(channel, "fresh start")
        await channel.wait_for("fresh start")


async def test_a_channel_registered_through_register_channels_is_run_by_wld_bridge(tmp_path: Path) -> None:
    class MemoryChannelPlugin:
        @hookimpl
        def register_channels(self, register) -> None:
            register("memory", lambda section, context: RecordingChannel(Capabilities(max_message_length=4000), **section))

    plugins = load_plugins()
    plugins.register(MemoryChannelPlugin(), "memory-channel")
    settings = Settings.model_validate({"channels": {"memory": {"sender_context": "always"}}})
    app = await App.start(settings, plugins)
    try:
        async with BridgeService(settings, plugins, app.store.bridge, agent_endpoints(settings, app.session_host)) as service:
            [channel] = service.channels
            await asyncio.wait_for(channel.changed.wait(), PATIENCE)
            await say(channel, "hi from a plugin channel")
            reply = await channel.wait_for("You said:")
            assert "<sender_context>" in reply and "hi from a plugin channel" in reply
    finally:
        await app.close()


async def test_an_agent_that_cannot_start_is_reported_and_nothing_is_sent() -> None:
    missing = CommandAgent(AgentConfig(command=["/nonexistent/agent-binary"]))
    channel = RecordingChannel(agent="ghost")
    async with bridged(channel, {"ghost": missing}):
        await say(channel, "anyone?")
        told = await channel.wait_for("Agent ghost is not available")
        assert "No such file" in told and "Nothing was sent" in told


async def test_a_failing_channel_listener_is_restarted_and_waiting_conversations_told() -> None:
    class FlakyChannel(RecordingChannel):
        def __init__(self) -> None:
            super().__init__(Capabilities(max_message_length=4000))
            self.runs = 0
            self.fail = asyncio.Event()

        async def run(self, inbox) -> None:
            self.runs += 1
            self.inbox = inbox
            self.changed.set()
            await self.fail.wait()
            self.fail.clear()
            raise ConnectionError("socket closed")

    class FlakyPlugin:
        @hookimpl
        def register_channels(self, register) -> None:
            register("flaky", lambda section, context: FlakyChannel())

    plugins = load_plugins()
    plugins.register(FlakyPlugin(), "flaky-channel")
    settings = Settings.model_validate({"channels": {"flaky": {}}})
    app = await App.start(settings, plugins)
    try:
        async with BridgeService(settings, plugins, app.store.bridge, agent_endpoints(settings, app.session_host)) as service:
            [channel] = service.channels
            await asyncio.wait_for(channel.changed.wait(), PATIENCE)
            turn = await channel.inbox.receive_message(IncomingMessage(HERE, ME, "something slow"))
            channel.fail.set()
            told = await channel.wait_for("connection failed (socket closed)")
            assert "reconnecting" in told
            await until(lambda: channel.runs == 2, "the channel to run again")
            await channel.inbox.cancel(HERE)
            await asyncio.wait_for(turn, PATIENCE)
    finally:
        await app.close()


async def test_an_agent_that_exits_at_start_is_reported_with_what_it_said(caplog: pytest.LogCaptureFixture) -> None:
    script = "import sys; print('no API key set', file=sys.stderr); sys.exit(2)"
    quitter = CommandAgent(AgentConfig(command=[sys.executable, "-c", script]))
    channel = RecordingChannel(Capabilities(max_message_length=1000), agent="quitter")
    async with bridged(channel, {"quitter": quitter}):
        await say(channel, "hello?")
        told = await channel.wait_for("Agent quitter is not available")
        assert "exit code 2" in told and "no API key set" in told
    restarts = [r for r in caplog.records if r.getMessage().startswith("agent quitter")]
    assert restarts and all(r.levelno == logging.WARNING and not r.exc_info and "exit code 2" in r.getMessage() for r in restarts), [
        (r.levelname, r.getMessage()) for r in restarts
    ]  # an agent that stops is restarted with one warning line, like any failure that may pass


async def test_a_question_the_agent_withdraws_is_withdrawn_in_the_chat(caplog: pytest.LogCaptureFixture) -> None:
    """The Session Host closes an expired form with ``$/cancel_request``: the chat is told, the form answers cancel."""
    settings = Settings.model_validate({"sessions": {"question_timeout": 0.5}})
    app = await App.start(settings)
    channel = RecordingChannel(Capabilities(max_message_length=4000, buttons=False, edits=False))
    try:
        async with bridged(channel, {"runwield": InProcessAgent(app.session_host)}):
            await say(channel, "/agent")
            await channel.wait_for("Choose the Agent")
            await channel.wait_for("⏹ Cancelled.")
            assert not channel.inbox.awaiting_answer(HERE), "a withdrawn question claims no more messages"
            await say(channel, "hello after")
            await channel.wait_for("You said: hello after")
            assert not [r for r in caplog.records if "cancel_request" in r.getMessage()], "no error for $/cancel_request"
    finally:
        await app.close()
