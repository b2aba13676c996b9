"""The scripted interview as a person answers it on Telegram, Discord, Slack and the terminal.

The Session Host sends each choice as a form (a choice with Other); the bridge asks it as one
question, and the tool gets ordered, typed answers: Session Host form -> bridge -> answer -> tool.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

import pytest

from runwield_bridge.config import Settings
from runwield_bridge.core.store import Store
from tests.bridge_kit import OWNER, asking_agent, bridge_world
from tests.platform_kit import discord_world, slack_world
from tests.test_chat_cli import Chat
from waiting import PATIENCE

LANGUAGE, TESTS, ELSE = "Which language should the example use?", "Should it include tests?", "Anything else I should know?"
OTHER_TEXT = f"Type your own answer to: {LANGUAGE}"


class Person(Protocol):
    """A person in one chat with the bridge."""

    async def say(self, text: str) -> None: ...

    async def press(self, prompt: str, label: str) -> list[str]:
        """Choose ``label`` under the newest question showing ``prompt`` (its button, or its number on a terminal);
        returns every button that question had."""

    def count(self, text: str) -> int:
        """How many of the bot's finished messages show ``text``."""

    async def wait_until(self, condition: Callable[[], bool]) -> None: ...

    def said(self) -> str:
        """Everything the bot said."""


async def shown(person: Person, text: str, times: int = 1) -> None:
    await person.wait_until(lambda: person.count(text) >= times)


async def interview_twice(person: Person) -> None:
    """A button, a sentence and text; then a bare Other (asked once) and a typed label."""
    await person.say("please interview me")
    assert await person.press(LANGUAGE, "Rust") in ([], ["Python", "Rust", "Go", "Other", "Cancel"])
    await shown(person, TESTS)
    await person.say("only on CI")
    await shown(person, ELSE)
    await person.say("cancel")
    await shown(person, "Your answers, in order: 1. Rust; 2. only on CI; 3. cancel.")
    assert "Other answer" not in person.said() and "2/2" not in person.said(), "no question about the Other text"

    await person.say("interview me again")
    await shown(person, LANGUAGE, 2)
    await person.press(LANGUAGE, "Other")
    await shown(person, OTHER_TEXT)
    await person.say("2")
    await shown(person, TESTS, 2)
    await person.say("yes")
    await shown(person, ELSE, 2)
    await person.say("fine")
    await shown(person, "Your answers, in order: 1. 2; 2. Yes; 3. fine.")
    assert person.count(OTHER_TEXT) == 1, "a bare Other asks for its text once"


async def typed_answers(store: Store) -> list[list[tuple[str, str]]]:
    """The answers each ``user_interview`` call returned to the model, with their types."""
    [session] = await store.sessions.list_sessions()
    tools = [
        e for e in await store.sessions.transcript(session.id)
        if e.kind == "tool" and e.payload.get("title") == "user_interview" and e.payload.get("status") == "completed"
    ]
    return [[(a["type"], a["answer"]) for a in json.loads(e.text)["answers"]] for e in tools]


EXPECTED = [
    [("choice", "Rust"), ("other", "only on CI"), ("text", "cancel")],
    [("other", "2"), ("choice", "Yes"), ("text", "fine")],
]


# -- the platforms -------------------------------------------------------------


class Messages:
    """What the platforms share: a fake that records the bot's messages and wakes waiters."""

    fake: Any

    def texts(self) -> list[str]:
        raise NotImplementedError

    def count(self, text: str) -> int:
        return sum(text in said and not said.endswith("…") for said in self.texts())

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        await self.fake.wait_until(condition, timeout=PATIENCE)

    def said(self) -> str:
        return "\n".join(self.texts())


class TelegramPerson(Messages):
    def __init__(self, world: Any) -> None:
        self.world, self.fake = world, world.fake

    async def say(self, text: str) -> None:
        await self.world.send(OWNER, OWNER, text)

    async def press(self, prompt: str, label: str) -> list[str]:
        message_id, buttons = await self.world.keyboard(OWNER, prompt, timeout=PATIENCE)
        [data] = [b["callback_data"] for b in buttons if b["text"] == label]
        await self.world.press(OWNER, OWNER, data, message_id)
        return [b["text"] for b in buttons]

    def texts(self) -> list[str]:
        return self.world.texts(OWNER)


class ThreadPerson(Messages):
    """Discord or Slack: the first message mentions the bot and opens a thread; the rest are said in it."""

    def __init__(self, world: Any) -> None:
        self.world, self.fake = world, world.fake
        self.thread: Any = None

    async def say(self, text: str) -> None:
        if self.thread is None:
            self.thread = await self.world.mention(text)
        else:
            await self.world.say(self.thread, text)

    async def press(self, prompt: str, label: str) -> list[str]:
        message, buttons = await self.world.buttons(self.thread, prompt, timeout=PATIENCE)
        [button] = [b for b in buttons if self.world.label(b) == label]
        await self.world.click(message, button)
        return [self.world.label(b) for b in buttons]

    def texts(self) -> list[str]:
        return self.world.texts(self.thread)


@pytest.mark.parametrize("platform", ["telegram", "discord", "slack"])
async def test_the_interview_on_chat_platforms_is_one_question_per_choice(platform: str, tmp_path: Path) -> None:
    worlds = {"telegram": lambda: bridge_world(tmp_path=tmp_path), "discord": discord_world, "slack": slack_world}
    people = {"telegram": TelegramPerson, "discord": ThreadPerson, "slack": ThreadPerson}
    async with worlds[platform]() as world:
        await interview_twice(people[platform](world))
        assert await typed_answers(world.app.store) == EXPECTED


# -- the terminal --------------------------------------------------------------


class TerminalPerson:
    """Someone at `wld chat`: no buttons, so a choice is its number in the menu."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self.decoder = codecs.getincrementaldecoder("utf-8")()

    async def say(self, text: str) -> None:
        await self.chat.send(text)

    async def press(self, prompt: str, label: str) -> list[str]:
        menu: list[re.Match[str]] = []

        def listed() -> bool:
            after = self.chat.output[self.chat.output.rindex(prompt) :] if prompt in self.chat.output else ""
            menu[:] = [m for m in re.finditer(rf"^(\d+)\. {re.escape(label)}$", after, re.MULTILINE)]
            return bool(menu) and "Send /cancel to stop." in after

        await self.wait_until(listed)
        await self.say(menu[0].group(1))
        return []

    def count(self, text: str) -> int:
        return self.chat.output.count(text)

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        async def read() -> None:
            while not condition():
                chunk = await self.chat.proc.stdout.read(1024)
                assert chunk, f"chat ended early; output:\n{self.chat.output}"
                self.chat.output += self.decoder.decode(chunk)

        await asyncio.wait_for(read(), PATIENCE)

    def said(self) -> str:
        return self.chat.output


@contextlib.asynccontextmanager
async def opened_store() -> AsyncIterator[Store]:
    store = await Store.open(Settings.model_validate({}).db_url)
    try:
        yield store
    finally:
        await store.close()


async def test_the_interview_in_wld_chat_is_a_numbered_menu_per_choice(tmp_path: Path) -> None:
    chat = await Chat.start(cwd=tmp_path)
    person = TerminalPerson(chat)
    await person.wait_until(lambda: "Ctrl-C cancels a turn" in chat.output)
    await interview_twice(person)
    assert "1. Python\n2. Rust\n3. Go\n4. Other" in chat.output
    assert await chat.finish() == 0
    async with opened_store() as store:
        assert await typed_answers(store) == EXPECTED


async def test_a_photo_does_not_answer_a_waiting_question_even_with_a_caption(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path) as world:
        person = TelegramPerson(world)
        await person.say("please interview me")
        await shown(person, LANGUAGE)
        world.fake.push_photo(OWNER, OWNER, caption="Rust")
        await shown(person, "An attachment does not answer the question above")
        await person.press(LANGUAGE, "Go")
        await shown(person, TESTS)
        [asked] = [text for text in person.texts() if LANGUAGE in text]
        assert "→ Go (by" in asked, "the press after the photo answered, not the photo's caption"


async def test_another_agents_choice_with_other_is_one_question_too(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path, telegram={"agent": "asker"}, agents={"asker": asking_agent(tmp_path)}) as world:
        person = TelegramPerson(world)
        await person.say("a drink please")
        assert await person.press("Tea or coffee?", "Coffee") == ["Tea", "Coffee", "Other", "Cancel"]
        await shown(person, 'form: accept {"drink": "Coffee"}')
        await person.say("another drink")
        await shown(person, "Tea or coffee?", 2)
        await person.say("mate, no sugar")
        await shown(person, 'form: accept {"drink": "Other", "note": "mate, no sugar"}')
        assert "Something else" not in person.said()
