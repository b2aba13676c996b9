"""RunWield's ACP extensions end to end: the Session Host emits each one, the Bridge's client side reads it
through the same definitions (``runwield_bridge.acp.extensions``), and a chat shows what it means."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import AgentMessageChunk, ClientCapabilities

from runwield_bridge.acp.extensions import (
    ALIASES,
    ARCHIVED,
    INCLUDE_ARCHIVED,
    NOTICE,
    PLAN_LINK,
    QUESTION,
    STEERING,
    STEERING_SUPPORT_KEY,
    TURN,
    PlanLinkMeta,
    QuestionMeta,
    SteeringAnswer,
    SteeringSupport,
    TurnMeta,
)
from runwield_bridge.app import App, InProcessAgent
from runwield_bridge.channels.types import Capabilities, Conversation
from runwield_bridge.config import Settings
from tests.bridge_kit import OWNER, RecordingChannel, bridge_world
from tests.platform_kit import discord_world, slack_world
from tests.test_bridge_agents import bridged, say
from waiting import PATIENCE, until

REQUEST = "make a plan to write README.md saying hello"
LINK = re.compile(r"(http://127\.0\.0\.1:\d+/review/[A-Za-z0-9_-]+)")
REVIEW_LABEL = PlanLinkMeta.model_fields["label"].default
FREE_PORT = {"web": {"listen": "127.0.0.1:0"}}  # review pages: the default 8787 may be taken by a test running beside this one


class Recorder:
    """An ACP client that keeps every ``session/update`` as the SDK parsed it."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.changed = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self.changed.set()

    async def elicit(self, params: Any) -> dict[str, Any]:
        return {"action": "decline"}

    async def wait_for(self, found: Callable[[Any], Any]) -> Any:
        """The first update for which ``found`` gives something, waiting for it with a bound."""

        async def seen() -> Any:
            while True:
                for update in self.updates:
                    if value := found(update):
                        return value
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(seen(), PATIENCE)


@contextlib.asynccontextmanager
async def session_host_client(tmp_path: Path) -> AsyncIterator[tuple[ClientSideConnection, Recorder, str, App]]:
    """The in-process Session Host on the Bridge's own client connection; a new Session on it."""
    app = await App.start(Settings.model_validate(FREE_PORT))
    recorder = Recorder()
    try:
        async with InProcessAgent(app.session_host).open(recorder, []) as (conn, _):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            session = await conn.new_session(cwd=str(tmp_path))
            yield conn, recorder, session.session_id, app
    finally:
        await app.close()


def _telegram_buttons(message: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(b["text"], b.get("url")) for row in message["reply_markup"]["inline_keyboard"] for b in row]


async def _telegram_review_buttons(tmp_path: Path) -> tuple[str, list[tuple[str, str | None]]]:
    async with bridge_world(tmp_path=tmp_path) as world:
        await world.exchange(OWNER, OWNER, REQUEST, "Saved Plan")
        await world.send(OWNER, OWNER, "/plan_review")
        found: list[dict[str, Any]] = []

        def shown() -> bool:
            found[:] = [m for m in world.fake.bot_messages(OWNER) if "in your browser" in (m.get("text") or "") and m.get("reply_markup")]
            return bool(found)

        await world.fake.wait_until(shown, timeout=PATIENCE)
        return found[0]["text"], _telegram_buttons(found[0])


async def _thread_review_buttons(world: Any) -> tuple[str, list[tuple[str, str | None]]]:
    thread = await world.mention(REQUEST)
    await world.reply_containing(thread, "Saved Plan", final=True)
    await world.say(thread, "/plan-review")
    message, buttons = await world.buttons(thread, "in your browser", timeout=PATIENCE)
    return world.current(message), [(world.label(b), b.get("url")) for b in buttons]


@pytest.mark.parametrize("platform", ["telegram", "discord", "slack"])
async def test_a_plan_link_becomes_a_url_button(platform: str, tmp_path: Path) -> None:
    """``planLink``: the review link the Session Host marks is a URL button, labelled as the link says."""
    if platform == "telegram":
        text, buttons = await _telegram_review_buttons(tmp_path)
    else:
        async with (discord_world if platform == "discord" else slack_world)() as world:
            text, buttons = await _thread_review_buttons(world)
    url = LINK.search(text)
    assert url, text
    assert buttons == [(REVIEW_LABEL, url.group(1))], "one URL button for the review link"


async def test_a_plan_link_reaches_the_client_as_plan_link_meta(tmp_path: Path) -> None:
    async with session_host_client(tmp_path) as (conn, recorder, sid, _):
        await conn.prompt(session_id=sid, prompt=[text_block(REQUEST)])
        await conn.prompt(session_id=sid, prompt=[text_block("/plan-review")])
        link = await recorder.wait_for(PLAN_LINK.read)
        assert isinstance(link, PlanLinkMeta) and link.revision == 1 and link.label == REVIEW_LABEL
        [chunk] = [u for u in recorder.updates if PLAN_LINK.read(u) is not None]
        assert link.url in chunk.content.text, "plain clients get the URL in the text"


async def test_a_chat_menu_carries_its_question_and_state(tmp_path: Path) -> None:
    """``question``: the menu asked, and asked again after a reply that matches nothing."""
    async with session_host_client(tmp_path) as (conn, recorder, sid, _):
        await conn.prompt(session_id=sid, prompt=[text_block("/agent")])
        asked = await recorder.wait_for(QUESTION.read)
        assert isinstance(asked, QuestionMeta) and asked.state == "asked"
        await conn.prompt(session_id=sid, prompt=[text_block("banana")])
        again = await recorder.wait_for(lambda u: (q := QUESTION.read(u)) and q.state == "unmatched" and q)
        assert again.id == asked.id, "the same question, asked again"


async def test_every_turn_end_is_announced_with_turn_meta(tmp_path: Path) -> None:
    """``turn``: a ``session_info_update`` says the turn settled and why."""
    async with session_host_client(tmp_path) as (conn, recorder, sid, _):
        await conn.prompt(session_id=sid, prompt=[text_block("hello")])
        assert await recorder.wait_for(TURN.read) == TurnMeta(stop_reason="end_turn")


async def test_an_error_notice_is_marked_and_the_chat_shows_the_error_once(tmp_path: Path) -> None:
    """``notice``: the agent's own error words are marked, so the Bridge does not repeat them in its footer."""
    app = await App.start(Settings.model_validate(FREE_PORT))
    channel = RecordingChannel(Capabilities(max_message_length=4000))
    try:
        async with bridged(channel, {"runwield": InProcessAgent(app.session_host)}):
            await say(channel, "please fail")
            shown = await channel.wait_for("could not be completed")
            assert shown.count("asked to fail") == 1, shown
    finally:
        await app.close()
    async with session_host_client(tmp_path) as (conn, recorder, sid, _):
        with pytest.raises(RequestError):
            await conn.prompt(session_id=sid, prompt=[text_block("please fail")])
        assert await recorder.wait_for(NOTICE.read) == "error"


async def test_command_aliases_reach_the_chat_menu() -> None:
    """``aliases``: an available command's other names go to the channel's command menu."""
    menus: list[Any] = []

    class MenuChannel(RecordingChannel):
        async def set_commands(self, conversation: Conversation, commands: Any) -> None:
            menus.append(tuple(commands))
            await super().set_commands(conversation, commands)

    app = await App.start(Settings.model_validate(FREE_PORT))
    channel = MenuChannel(Capabilities(max_message_length=4000, command_menu=True))
    try:
        async with bridged(channel, {"runwield": InProcessAgent(app.session_host)}):
            await say(channel, "hello")
            await channel.wait_for("You said: hello")
            await until(lambda: menus, "the command menu")
    finally:
        await app.close()
    model = next(c for c in menus[-1] if c.name == "model")
    assert model.aliases == ("models",)


async def test_command_aliases_reach_the_client_as_aliases_meta(tmp_path: Path) -> None:
    async with session_host_client(tmp_path) as (_, recorder, _sid, _app):
        update = await recorder.wait_for(lambda u: getattr(u, "session_update", None) == "available_commands_update" and u)
    model = next(c for c in update.available_commands if c.name == "model")
    assert ALIASES.read(model) == ["models"]


async def test_archived_sessions_are_listed_only_when_asked_and_marked(tmp_path: Path) -> None:
    """``includeArchived`` on ``session/list`` params, ``archived`` on each archived ``SessionInfo``."""
    async with session_host_client(tmp_path) as (conn, _, sid, app):
        await app.session_host.archive(sid)
        assert [s.session_id for s in (await conn.list_sessions()).sessions] == []
        listed = (await conn.list_sessions(**INCLUDE_ARCHIVED.meta(True))).sessions
        assert [(s.session_id, ARCHIVED.read(s)) for s in listed] == [(sid, True)]


async def test_steering_is_advertised_and_answered_through_ext_method(tmp_path: Path) -> None:
    """``_session/steering``: advertised in ``initialize``; sent with the SDK's ``ext_method``; the answer is typed."""
    app = await App.start(Settings.model_validate(FREE_PORT))
    try:
        async with InProcessAgent(app.session_host).open(Recorder(), []) as (conn, _):
            info = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            assert SteeringSupport.model_validate(info.field_meta[STEERING_SUPPORT_KEY]).supported
            sid = (await conn.new_session(cwd=str(tmp_path))).session_id
            params = STEERING.params(session_id=sid, prompt=[text_block("and also this")])
            answer = await conn.ext_method(STEERING.name, params.model_dump(mode="json", by_alias=True, exclude_none=True))
    finally:
        await app.close()
    assert STEERING.result.model_validate(answer) == SteeringAnswer(outcome="promptRequired", reason="noRunningTurn")


def test_an_agent_message_chunk_without_meta_has_no_extension() -> None:
    """Clients and agents that know nothing of RunWield: every key reads as absent, never as an error."""
    plain = AgentMessageChunk(session_update="agent_message_chunk", content=text_block("hi"))
    assert [key.read(plain) for key in (PLAN_LINK, QUESTION, TURN, NOTICE, ALIASES, ARCHIVED)] == [None] * 6
    broken = AgentMessageChunk(session_update="agent_message_chunk", content=text_block("hi"), field_meta={"runwield": {"planLink": {"url": 1}}})
    assert PLAN_LINK.read(broken) is None, "a malformed link is ignored: the text still has the URL"
