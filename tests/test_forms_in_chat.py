"""An agent's forms, links and secret questions as people answer them in a chat, through `wld bridge` (a real process)
and the platform fakes: up to three fields in one message, selects and multi-selects as buttons, links only for
http(s), and a secret answer that reaches the agent once and is kept nowhere."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.bridge_kit import OWNER, agent_calls, asking_agent, telegram_section
from tests.fakes.discord_api import DiscordFake
from tests.fakes.slack_api import USER_TOKEN, SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.platform_kit import DiscordWorld, SlackWorld, TelegramWorld, answering_url_check, discord_section, slack_section
from tests.wld_process import free_port, start_bridge, stop_bridges, write_config
from waiting import PATIENCE, until

SECRET = "sk-live-7Qm2x9VbT4kLp8Zr"
PASSWORD = "hunter2-Vq8-correct-horse"
WARNING = "🔒 This answer is sent to the agent and not kept; your message is deleted from this chat."
SECTIONS = {"telegram": telegram_section, "discord": discord_section, "slack": slack_section}
FAKES = {"telegram": TelegramFake, "discord": lambda: DiscordFake(install=False), "slack": SlackFake}


@contextlib.asynccontextmanager
async def wld_bridge(platform: str, tmp_path: Path, home: Path, log_level: str = "INFO", **section: Any) -> AsyncIterator[tuple[Any, Path]]:
    """`wld bridge` as a real process whose channel's agent is the SDK test agent, once it listens to the platform's
    fake; the platform's world on it, and the file its output (stdout and stderr) goes to."""
    async with FAKES[platform]() as fake:
        port = free_port()
        section = SECTIONS[platform](fake) | {"agent": "asker", **section}
        config = {"log_level": log_level, "web": {"listen": f"127.0.0.1:{port}"}, "channels": {platform: section}, "agents": {"asker": asking_agent(tmp_path)}}
        output = tmp_path / "wld-bridge.log"
        process = await start_bridge(write_config(tmp_path / "wld.toml", config), home, output)
        try:
            if platform == "telegram":
                await fake.wait_for_call("deleteWebhook", timeout=PATIENCE)
                yield TelegramWorld(fake, None), output
            elif platform == "discord":
                await until(lambda: any(s.ready and not s.ws.closed for s in fake.sessions), "the bridge on the gateway")
                yield DiscordWorld(fake, None), output
            else:
                await fake.wait_for_call("auth.test", timeout=PATIENCE)
                yield SlackWorld(fake, None, await answering_url_check(fake, f"http://127.0.0.1:{port}/slack/events")), output
        finally:
            await stop_bridges([(process, output)], timeout=30)


async def exchange(world: Any, thread: Any, text: str, expect: str) -> None:
    """Say ``text`` in the conversation and wait for the bot's message showing ``expect``."""
    await world.say(thread, text)
    await world.reply_containing(thread, expect)


def labels(world: Any, buttons: list[dict[str, Any]]) -> list[str]:
    return [world.label(b) for b in buttons]


def button(world: Any, buttons: list[dict[str, Any]], label: str) -> dict[str, Any]:
    [found] = [b for b in buttons if world.label(b) == label]
    return found


async def test_forms_links_and_choices_in_a_telegram_chat(tmp_path: Path, wld_home: Path) -> None:
    async with wld_bridge("telegram", tmp_path, wld_home) as (world, _):
        chat = await world.mention("details please")
        form = await world.reply_containing(chat, "A few details", final=True)
        assert all(line in form["text"] for line in ("1/3. Your name", "2/3. Age", "3/3. City")), form["text"]
        assert "one answer per line" in form["text"]
        await exchange(world, chat, "Ann\n41\nParis", 'form: accept {"age": 41, "city": "Paris", "name": "Ann"}')
        assert sum("A few details" in text for text in world.texts(chat)) == 1, "the three fields were one message"

        await world.say(chat, "details again")
        await until(lambda: sum("A few details" in text for text in world.texts(chat)) == 2, "the form asked again")
        await exchange(world, chat, "Bo", "Noted. Next: 2. Age")
        await exchange(world, chat, "forty\nRome", "2. Age: Please reply with a whole number. Nothing in that message was taken.")
        await exchange(world, chat, "7\nRome", 'form: accept {"age": 7, "city": "Rome", "name": "Bo"}')

        await world.say(chat, "toppings please")
        question, buttons = await world.buttons(chat, "Which toppings?")
        assert labels(world, buttons) == ["☐ Cheese", "☐ Olives", "☐ Basil", "☐ Ham", "Done", "Cancel"]
        await world.click(question, button(world, buttons, "☐ Cheese"))
        await world.click(question, button(world, buttons, "☐ Basil"))
        await until(lambda: labels(world, world_buttons(world, question))[:4] == ["☑ Cheese", "☐ Olives", "☑ Basil", "☐ Ham"], "both toppings shown as chosen")
        await world.click(question, button(world, buttons, "Done"))
        await world.reply_containing(chat, 'form: accept {"toppings": ["cheese", "basil"]}')
        assert "→ Cheese, Basil (by" in world.current(question)

        await world.say(chat, "choose please")
        question, buttons = await world.buttons(chat, "Pick a colour")
        assert labels(world, buttons) == ["red", "green", "blue", "Cancel"]
        await world.click(question, button(world, buttons, "green"))
        await world.reply_containing(chat, 'form: accept {"colour": "green"}')

        for scheme, word in (("javascript:", "javascript"), ("file:", "file")):
            await world.say(chat, f"visit {word}")
            told = await world.reply_containing(chat, f"its link has the scheme {scheme}")
            assert "only http and https" in told["text"] and "It was declined." in told["text"]
            await world.reply_containing(chat, "url: decline")
        assert not any("alert(" in text or "/etc/passwd" in text for text in world.texts(chat)), "such a link is never shown"

        await world.say(chat, "visit the page")
        question, buttons = await world.buttons(chat, "https://auth.example.com/login?state=xyz")
        assert labels(world, buttons) == ["Continue", "Decline"]
        await world.click(question, button(world, buttons, "Decline"))
        await world.reply_containing(chat, "url: decline", final=True)
        assert len(agent_calls(tmp_path, "session/prompt")) == 7, "every answer went to a form, none to the agent as a prompt"


@pytest.mark.parametrize("platform", ["discord", "slack"])
async def test_on_discord_and_slack_three_fields_are_one_message_and_a_multi_select_takes_two_choices(platform: str, tmp_path: Path, wld_home: Path) -> None:
    async with wld_bridge(platform, tmp_path, wld_home) as (world, _):
        thread = await world.mention("details please")
        form = await world.reply_containing(thread, "A few details", final=True)
        assert all(line in world.current(form) for line in ("1/3. Your name", "2/3. Age", "3/3. City"))
        await exchange(world, thread, "Ann\n41\nParis", 'form: accept {"age": 41, "city": "Paris", "name": "Ann"}')
        assert sum("A few details" in text for text in world.texts(thread)) == 1

        await world.say(thread, "toppings please")
        question, buttons = await world.buttons(thread, "Which toppings?")
        assert labels(world, buttons) == ["☐ Cheese", "☐ Olives", "☐ Basil", "☐ Ham", "Done", "Cancel"]
        await world.click(question, button(world, buttons, "☐ Olives"))
        await until(lambda: "☑ Olives" in labels(world, world_buttons(world, question)), "Olives shown as chosen")
        await world.click(question, button(world, world_buttons(world, question), "☐ Ham"))
        await until(lambda: "☑ Ham" in labels(world, world_buttons(world, question)), "Ham shown as chosen")
        await world.click(question, button(world, world_buttons(world, question), "Done"))
        await world.reply_containing(thread, 'form: accept {"toppings": ["olives", "ham"]}')


def world_buttons(world: Any, message: dict[str, Any]) -> list[dict[str, Any]]:
    """The buttons a message of the bot's shows now."""
    if isinstance(world, TelegramWorld):
        current = world.fake.messages[(OWNER, message["message_id"])]
        return [b for row in (current.get("reply_markup") or {}).get("inline_keyboard", []) for b in row]
    if isinstance(world, DiscordWorld):
        current = world.fake.messages[int(message["id"])]
        return [c for row in current.get("components") or () for c in row.get("components") or ()]
    current = world.fake.messages[(message["channel"], message["ts"])]
    return [e for block in current.get("blocks") or () if block["type"] == "actions" for e in block["elements"]]


SLACK_WARNING = (
    "🔒 This answer is sent to the agent and not kept. Slack lets a bot delete only its own messages: delete your reply yourself once it is sent."
)
REFUSED = " Delete your message yourself: it holds the answer."
CASES = {
    "telegram": ("deleteMessage", WARNING),
    "discord": ("delete_message", WARNING),
    "discord-dm": (
        "delete_message",
        "⚠️ Discord did not let the bot delete your message (Cannot execute action on a DM channel): in a DM it may delete only its own messages." + REFUSED,
    ),
    "discord-no-rights": (
        "delete_message",
        "⚠️ Discord did not let the bot delete your message (Missing Permissions): in a server it needs the Manage Messages permission." + REFUSED,
    ),
    "slack": (None, SLACK_WARNING),
    "slack-user-token": ("chat.delete", WARNING),
    "slack-user-token-refused": (
        "chat.delete",
        "⚠️ Slack did not let the bridge delete your message (cant_delete_message): the user_token must be of someone allowed "
        "to delete others' messages (a workspace admin or owner), with the chat:write scope." + REFUSED,
    ),
}
"""Per case: the platform call that deletes the reply (None: none is tried), and what the chat says about it (the
warning, or the platform's refusal). On Slack, only with a ``user_token`` (a workspace admin's in the fake, whose
right to delete others' messages is taken away for ``slack-user-token-refused``)."""
SETTINGS = {"discord-dm": {"allow_dms": True}, "slack-user-token": {"user_token": USER_TOKEN}, "slack-user-token-refused": {"user_token": USER_TOKEN}}


async def first_words(world: Any, case: str, text: str) -> Any:
    """Start the conversation: in a Discord DM for ``discord-dm``, else where the platform's world starts one."""
    if case != "discord-dm":
        return await world.mention(text)
    dm = int(world.fake.dm_channel(world.fake.user_id)["id"])
    await world.say(dm, text)
    return dm


def nowhere(secret: str, home: Path, output: Path) -> list[str]:
    """Where the secret is found: any file under WLD_HOME (the SQLite database, its WAL), and the bridge's output."""
    return [str(path) for path in [*sorted(home.rglob("*")), output] if path.is_file() and secret.encode() in path.read_bytes()]


@pytest.mark.parametrize("case", list(CASES))
async def test_a_secret_answer_reaches_the_agent_once_is_deleted_from_the_chat_and_kept_nowhere(case: str, tmp_path: Path, wld_home: Path) -> None:
    call, told = CASES[case]
    platform = case.split("-")[0]
    async with wld_bridge(platform, tmp_path, wld_home, log_level="DEBUG", **SETTINGS.get(case, {})) as (world, output):
        fake = world.fake
        fake.manage_messages = case != "discord-no-rights"
        fake.admin_may_delete = case != "slack-user-token-refused"
        thread = await first_words(world, case, "token please")
        question = await world.reply_containing(thread, "Your API token, please", final=True)
        assert (SLACK_WARNING if case == "slack" else WARNING) in world.current(question), "the question warns first"
        mark = fake.mark()
        await exchange(world, thread, SECRET, f"token: accept, {len(SECRET)} characters")
        if call is not None:
            await fake.wait_for_call(call, since=mark)
            await world.reply_containing(thread, told)
        assert "→ 🔒 sent (by" in world.current(question), world.current(question)
        kept = [m for m in fake.messages.values() if SECRET in (m.get("text") or m.get("content") or "")]
        assert len(kept) == (0 if told == WARNING else 1), "deleted where the platform allows it, else still there"
        assert call is not None or not fake.calls_to("chat.delete"), "Slack would refuse: not even tried"
        if platform == "telegram":
            await world.say(thread, "token password please")  # "format": "password", as SDK-built agents send it
            await until(lambda: sum(WARNING in text for text in world.texts(thread)) == 2, "the second secret question")
            await exchange(world, thread, PASSWORD, f"token: accept, {len(PASSWORD)} characters")
            await fake.wait_for_calls(call, count=2, since=mark)
    typed = [SECRET, PASSWORD] if platform == "telegram" else [SECRET]
    assert [c["value"] for c in agent_calls(tmp_path, "secret")] == typed, "the agent got each answer, once"
    assert "DEBUG" in output.read_text(), "the bridge logged at DEBUG"
    for secret in typed:
        assert not [text for text in world.texts(thread) if secret in text], "no bot message shows the secret"
        assert nowhere(secret, wld_home, output) == []
