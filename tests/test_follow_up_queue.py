"""Messages sent while a turn runs are never dropped: steered into the running turn, or queued and sent after it,
in each queue mode, on Telegram, Discord and Slack (the real libraries against the fakes); a full queue refuses
plainly; an open question still takes the next message as its answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runwield_bridge.bridge import prompts
from runwield_bridge.core.store import Store
from tests.bridge_kit import OWNER, agent_calls, asking_agent, bridge_world
from tests.platform_kit import discord_world, slack_world
from tests.test_interview_in_chat import ELSE, LANGUAGE, TESTS, Messages, Person, ThreadPerson, shown

STEERED = "↪ added to the running turn"
MAX_WAITING = 20


class TelegramChat(Messages):
    """The owner in a chat of its own (a group: one conversation per case)."""

    def __init__(self, world: Any, chat: int) -> None:
        self.world, self.fake, self.chat = world, world.fake, chat

    async def say(self, text: str) -> None:
        await self.world.send(self.chat, OWNER, text)

    async def press(self, prompt: str, label: str) -> list[str]:
        message_id, buttons = await self.world.keyboard(self.chat, prompt)
        [data] = [b["callback_data"] for b in buttons if b["text"] == label]
        await self.world.press(self.chat, OWNER, data, message_id)
        return [b["text"] for b in buttons]

    def texts(self) -> list[str]:
        return self.world.texts(self.chat)


async def streaming(person: Person, text: str) -> None:
    """Wait until the bot's reply shows ``text``, finished or not (a slow turn is running)."""
    try:
        await person.wait_until(lambda: any(text in said for said in person.texts()))  # type: ignore[attr-defined]
    except AssertionError:
        raise AssertionError(f"never shown: {text!r}; the chat shows {person.texts()}") from None  # type: ignore[attr-defined]


async def slow_turn(person: Person, prompt: str, mode: str | None = None) -> None:
    """Start a slow turn, and once its reply shows, set the queue mode (a bridge command acts at once, mid-turn)."""
    await person.say(prompt)
    await streaming(person, f"You said: {prompt}")
    if mode is not None:
        await person.say(f"/queue {mode}")
        await shown(person, f"Queue mode: {mode}")


async def prompts_of(store: Store, first: str) -> list[str]:
    """What reached the agent, in order, in the session whose first prompt was ``first``: prompts and steered input."""
    for session in await store.sessions.list_sessions():
        users = [e.text for e in await store.sessions.transcript(session.id) if e.kind == "user"]
        if users and users[0] == first:
            return users
    raise AssertionError(f"no session began with {first!r}")


async def steer(person: Person, store: Store) -> None:
    await slow_turn(person, "slow steer case")
    await person.say("and keep the public API")
    await shown(person, STEERED)
    await shown(person, "You said: and keep the public API")
    assert await prompts_of(store, "slow steer case") == ["slow steer case", "and keep the public API"], "steered into the turn, once"
    assert "Queued" not in person.said()


async def collect(person: Person, store: Store) -> None:
    await slow_turn(person, "slow collect case", "collect")
    await person.say("also run the linter")
    await shown(person, "📥 Queued (1 message waiting)")
    await person.say("and the tests")
    await shown(person, "📥 Queued (2 messages waiting)")
    await person.say("/cancel")
    await shown(person, "2 queued messages go next")
    await shown(person, "📨 Sending the 2 messages queued meanwhile to the agent, as one prompt.")
    await shown(person, "You said: also run the linter\nand the tests")
    assert await prompts_of(store, "slow collect case") == ["slow collect case", "also run the linter\nand the tests"]


async def followup(person: Person, store: Store) -> None:
    await slow_turn(person, "slow followup case", "followup")
    await person.say("first after")
    await person.say("second after")
    await shown(person, "📥 Queued (2 messages waiting)")
    await person.say("/cancel")
    await shown(person, "📨 Sending the message queued meanwhile to the agent (1 more waiting).")
    await shown(person, "You said: second after")
    assert person.count("You said: first after") == 1
    assert await prompts_of(store, "slow followup case") == ["slow followup case", "first after", "second after"], "each its own turn, in order"


async def interrupt(person: Person, store: Store) -> None:
    await slow_turn(person, "slow interrupt case", "interrupt")
    await person.say("do this instead")
    await shown(person, "⏹ Stopping the running turn")
    await shown(person, "You said: do this instead")
    assert await prompts_of(store, "slow interrupt case") == ["slow interrupt case", "do this instead"]
    assert "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15" not in person.said(), "the slow turn was cut short"


async def question_first(person: Person, store: Store) -> None:
    await person.say("interview me")
    await person.press(LANGUAGE, "Rust")
    await shown(person, TESTS)
    await person.say("Yes")
    await shown(person, ELSE)
    await person.say("only on CI")
    await shown(person, "Your answers, in order: 1. Rust; 2. Yes; 3. only on CI.")
    assert STEERED not in person.said() and "Queued" not in person.said(), "the open question took each message as its answer"
    assert await prompts_of(store, "interview me") == ["interview me"]


async def fill_the_queue(person: Person, store: Store, prompt: str, texts: list[str], accepted: int) -> None:
    """Queue ``texts`` while a slow turn runs: the first ``accepted`` are queued, the next is refused and changes
    nothing; then ``/queue clear`` drops them and the turn is cancelled, so nothing but ``prompt`` reached the agent."""
    await slow_turn(person, prompt, "collect")
    for text in texts:
        await person.say(text)
    await shown(person, f"📥 Queued ({accepted} messages waiting)")
    await shown(person, f"🚫 The queue is full ({accepted} messages waiting; at most 20 messages or 32 KiB)")
    await person.say("/queue")
    await shown(person, f"Waiting ({accepted}):")
    assert f"\n{accepted + 1}. " not in person.said(), "the refused one changed nothing"
    await person.say("/queue clear")
    await shown(person, f"🗑 Dropped {accepted} queued messages.")
    await person.say("/cancel")
    await shown(person, "⏹ Cancelled.")
    await person.say("/status")
    await shown(person, "State: idle")
    assert await prompts_of(store, prompt) == [prompt]


async def full_queue(person: Person, store: Store) -> None:
    await fill_the_queue(person, store, "slow full case", [f"item {n}" for n in range(1, MAX_WAITING + 2)], MAX_WAITING)


async def full_of_text(person: Person, store: Store) -> None:
    """32 KiB of text fills the queue too: eight messages of 4,000 characters (Telegram's longest are 4,096) fit, a ninth does not."""
    await fill_the_queue(person, store, "slow text case", [f"{n} " + "word " * 799 for n in range(1, 10)], 8)


CASES: list[Callable[[Person, Store], Any]] = [steer, collect, followup, interrupt, question_first]


async def run_cases(people: list[Person], store: Store, cases: list[Callable[[Person, Store], Any]]) -> None:
    """Each case in a conversation of its own, all at once (one bridge, one slow turn's time)."""
    await asyncio.gather(*(case(person, store) for case, person in zip(cases, people, strict=True)))


async def test_telegram_steers_and_queues_in_each_mode(tmp_path: Path) -> None:
    cases = [*CASES, full_queue, full_of_text]
    async with bridge_world(tmp_path=tmp_path, telegram={"sender_context": "never"}) as world:
        await run_cases([TelegramChat(world, 9001 + i) for i in range(len(cases))], world.app.store, cases)


@pytest.mark.parametrize("platform", ["discord", "slack"])
async def test_discord_and_slack_steer_and_queue_in_each_mode(platform: str) -> None:
    async with (discord_world() if platform == "discord" else slack_world()) as world:
        await run_cases([ThreadPerson(world) for _ in CASES], world.app.store, CASES)


async def test_a_bad_queue_mode_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path) as world:
        await world.exchange(OWNER, OWNER, "/queue sideways", "There is no queue mode 'sideways'; nothing was changed.")
        status = await world.exchange(OWNER, OWNER, "/queue", "Queue mode:")
        assert status["text"].startswith("Queue mode: steer:") and "Nothing is waiting." in status["text"]


async def test_steering_an_agent_that_never_answers_it_queues_the_message_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An agent that says it takes steering and then never answers ``_session/steering``: after ``STEER_TIMEOUT``
    the message is queued (as in ``collect``), and the next turn sends it."""
    monkeypatch.setattr(prompts, "STEER_TIMEOUT", 0.5)
    agent = asking_agent(tmp_path)
    agent["env"]["AGENT_STEERING"] = "silent"
    async with bridge_world(tmp_path=tmp_path, telegram={"agent": "asker", "sender_context": "never"}, agents={"asker": agent}) as world:
        await world.send(OWNER, OWNER, "slow please")
        await world.fake.wait_until(lambda: any("0 " in text for text in world.texts(OWNER)))
        await world.send(OWNER, OWNER, "and the tests too")
        await world.reply_containing(OWNER, "📥 Queued (1 message waiting)")
        assert any(c["method"].endswith("session/steering") for c in agent_calls(tmp_path)), "steering was tried first"
        assert "steering in telegram:4242 got no answer within 0.5s; the message is queued" in caplog.text
        await world.send(OWNER, OWNER, "/cancel")
        await world.reply_containing(OWNER, "📨 Sending the message queued meanwhile")
        await world.reply_containing(OWNER, "echo: and the tests too")
        assert not any(STEERED in text for text in world.texts(OWNER))
