"""Each platform update is handled once: across a crash and restart (Telegram, Slack retries) and a gateway resume (Discord)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

from sqlalchemy import text

from runwield_bridge.app import App, InProcessAgent
from runwield_bridge.bridge.bindings import MemoryBindings
from runwield_bridge.bridge.bridge import BUILTIN_AGENT, Bridge
from runwield_bridge.channels.types import Conversation, IncomingMessage, Sender
from runwield_bridge.bridge.dedupe import KEEP_SECONDS, ClaimRecord, Deliveries, Delivery, MemoryUpdateLog
from runwield_bridge.bridge.inbox import INTERRUPTED, ChannelInbox
from runwield_bridge.config import Settings
from runwield_bridge.core.store import Store
from tests.bridge_kit import OWNER, RecordingChannel, agent_calls, asking_agent, bridge_world
from tests.fakes.base import http_post
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.platform_kit import discord_world, slack_world
from tests.waiting import until


def prompts(tmp_path: Path) -> list[str]:
    """What the SDK test agent was prompted with, oldest first."""
    return [call["texts"][-1] for call in agent_calls(tmp_path, "session/prompt")]


async def test_telegram_updates_redelivered_after_a_restart_are_not_answered_or_applied_again(tmp_path: Path) -> None:
    settings = {"telegram": {"agent": "asker"}, "agents": {"asker": asking_agent(tmp_path)}}
    async with TelegramFake() as fake:
        async with bridge_world(tmp_path=tmp_path, fake=fake, **settings) as world:
            await world.exchange(OWNER, OWNER, "hello", "echo: hello")
            await world.send(OWNER, OWNER, "please choose")
            message_id, buttons = await world.keyboard(OWNER, "Pick a colour")
            await world.press(OWNER, OWNER, buttons[1]["callback_data"], message_id)
            await world.reply_containing(OWNER, 'form: accept {"colour": "green"}')
            # "please choose" may have come while "hello" was settling, and gone as a queued message: the bridge
            # stops once that turn has settled (had it stopped before, saying so after the restart would be right)
            await until(lambda: not any(c.busy for c in world.service.bridge.conversations), "the last turn to settle")
        said, toasts = world.texts(OWNER), len(fake.calls_to("answerCallbackQuery"))
        assert len(fake.redeliver()) == 3, "the crashed bridge confirmed none of them"
        async with bridge_world(tmp_path=tmp_path, fake=fake, **settings) as world:
            await world.exchange(OWNER, OWNER, "after the restart", "echo: after the restart")
            assert prompts(tmp_path) == ["hello", "please choose", "after the restart"], "each message reached the agent once"
            assert world.texts(OWNER) == [*said, "echo: after the restart"], "nothing was answered twice"
            assert len(fake.calls_to("answerCallbackQuery")) == toasts, "the press was not applied again"


async def test_an_update_claimed_by_a_run_that_crashed_before_finishing_is_not_rerun_and_the_chat_is_told(tmp_path: Path) -> None:
    async with bridge_world("webhook", tmp_path=tmp_path) as world:
        store = world.app.store
        assert await store.bridge.claim_update("telegram", "9001", "a run that crashed") is None
        update = {"update_id": 9001, "message": world.fake.build_message(OWNER, OWNER, "lost in the crash")}
        assert (await world.post(update)).status == 200
        told = await world.reply_containing(OWNER, "restarted")
        assert told["text"] == INTERRUPTED and "send it again" in told["text"]
        assert (await world.post(update)).status == 200
        await world.exchange(OWNER, OWNER, "sent again", "You said: sent again")
        [session] = await store.sessions.list_sessions()
        assert [e.text for e in await store.sessions.transcript(session.id) if e.kind == "user"] == ["sent again"], "the claimed update was not re-run"
        assert world.texts(OWNER) == [INTERRUPTED, "You said: sent again"], "told once, even when delivered again"


async def test_a_slack_event_retried_to_the_restarted_bridge_is_handled_once(tmp_path: Path) -> None:
    async with SlackFake() as fake:
        body = json.dumps(fake.event_envelope(fake.app_mention_event("hello")))
        thread = json.loads(body)["event"]["ts"]
        async with slack_world(fake=fake) as world:
            assert (await fake.post_signed(world.events_url, body, "application/json")).status == 200
            await world.reply_containing(thread, "You said: hello", final=True)
        async with slack_world(fake=fake) as world:
            retry = {**fake.signed_headers(body, "application/json"), "X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
            assert (await http_post(world.events_url, data=body.encode(), headers=retry)).status == 200
            await world.say(thread, "and then")
            await world.reply_containing(thread, "You said: and then", final=True)
            [session] = await world.app.store.sessions.list_sessions()
            assert [e.text for e in await world.app.store.sessions.transcript(session.id) if e.kind == "user"] == ["hello", "and then"]
            assert world.texts(thread) == ["You said: hello", "You said: and then"]


async def test_a_discord_message_replayed_after_a_gateway_resume_is_handled_once(tmp_path: Path) -> None:
    async with discord_world() as world:
        fake = world.fake
        message = await fake.inject_message(f"<@{fake.bot_id}> hello")
        thread = int(message["id"])
        await world.reply_containing(thread, "You said: hello", final=True)
        await fake.replay_message(message)
        await world.say(thread, "and then")
        await world.reply_containing(thread, "You said: and then", final=True)
        assert len(fake.calls_to("start_thread_with_message")) == 1, "no second thread"
        [session] = await world.app.store.sessions.list_sessions()
        assert [e.text for e in await world.app.store.sessions.transcript(session.id) if e.kind == "user"] == ["hello", "and then"]
        assert world.texts(thread) == ["You said: hello", "You said: and then"]


async def test_an_update_another_live_instance_is_handling_is_a_repeat_and_one_a_dead_instance_left_is_interrupted() -> None:
    updates, living = MemoryUpdateLog(), {"a", "b"}

    async def alive(instance: str) -> bool:
        return instance in living

    a, b = Deliveries(updates, "a", alive), Deliveries(updates, "b", alive)
    assert await a.claim("discord", "1") is Delivery.FIRST
    assert await b.claim("discord", "1") is Delivery.REPEAT, "both instances got the gateway event: the other handles it"
    assert await a.claim("discord", "2") is Delivery.FIRST
    living.discard("a")
    assert await b.claim("discord", "2") is Delivery.INTERRUPTED, "its claimer died before finishing it"


async def test_claims_are_per_channel_survive_a_restart_and_are_pruned_after_days(database_url: str) -> None:
    store = await Store.open(database_url)
    try:
        first_run = Deliveries(store.bridge)
        assert await first_run.claim("telegram", "1") is Delivery.FIRST
        assert await first_run.claim("telegram", "1") is Delivery.REPEAT, "being handled: a redelivery is dropped"
        assert await first_run.claim("slack", "1") is Delivery.FIRST, "ids are per channel"
        assert await Deliveries(store.bridge).claim("telegram", "1") is Delivery.INTERRUPTED, "claimed, never finished, by a run now gone"
        await first_run.finish("telegram", "1")
        assert await Deliveries(store.bridge).claim("telegram", "1") is Delivery.REPEAT
        async with store.engine.begin() as db:
            await db.execute(text("UPDATE seen_updates SET claimed_at = claimed_at - :age"), {"age": KEEP_SECONDS + 60})
        assert await Deliveries(store.bridge).claim("telegram", "1") is Delivery.FIRST, "a new run prunes claims older than KEEP_SECONDS"
    finally:
        await store.close()



class SlowFirstClaim(MemoryUpdateLog):
    """An update log that answers the first claim late (a busy database), unless a second claim overtakes it."""

    def __init__(self) -> None:
        super().__init__()
        self.overtaken = asyncio.Event()

    async def claim_update(self, channel: str, update_id: str, owner: str) -> ClaimRecord | None:
        if update_id == "1":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.overtaken.wait(), 0.5)
        else:
            self.overtaken.set()
        return await super().claim_update(channel, update_id, owner)


async def test_updates_reach_the_bridge_in_the_order_they_came_even_when_their_claims_do_not_finish_in_order() -> None:
    app = await App.start(Settings())
    channel = RecordingChannel()
    bridge = Bridge({BUILTIN_AGENT: InProcessAgent(app.session_host)}, MemoryBindings(), updates=SlowFirstClaim())
    inbox = ChannelInbox(bridge, channel)
    here, me = Conversation("memory", "1"), Sender("me", "me")

    async def arrive(n: int) -> None:
        async with inbox.first_delivery(str(n), here, me) as first:
            if first:
                await inbox.receive_message(IncomingMessage(here, me, f"slow message {n}"))

    try:
        await asyncio.gather(arrive(1), arrive(2))
        assert "You said: slow message 1" in await channel.wait_for("You said: slow message"), "the first to arrive was the prompt"
    finally:
        await bridge.close()
        await app.close()


async def test_an_interrupted_update_delivered_twice_while_the_first_is_being_told_is_told_once(database_url: str) -> None:
    store = await Store.open(database_url)
    try:
        for log in (store.bridge, MemoryUpdateLog()):
            assert await log.claim_update("telegram", "9001", "a run that crashed") is None
            this_run = Deliveries(log)
            first = await this_run.claim("telegram", "9001")  # being told, not finished yet
            again = await this_run.claim("telegram", "9001")
            assert (first, again) == (Delivery.INTERRUPTED, Delivery.REPEAT), type(log).__name__
    finally:
        await store.close()
