"""A streamed reply: one placeholder edited as text arrives, split when long, nothing lost to a 429."""

from __future__ import annotations

import asyncio

from acp import text_block, update_agent_message, update_agent_thought
from acp.schema import ToolCallProgress, ToolCallStart

from runwield_bridge.acp.extensions import PLAN_LINK, PlanLinkMeta
from runwield_bridge.bridge.asking.pending import ChatQuestion, ChatQuestions
from runwield_bridge.channels.types import Capabilities, Conversation
from runwield_bridge.channels.unfinished import Keeper, MemoryMessageLog, finish_left
from tests.bridge_kit import RecordingChannel
from waiting import PATIENCE

HERE = Conversation("memory", "1")


def chunk(text: str):
    return update_agent_message(text_block(text))


async def test_text_streams_into_one_edited_message_with_tool_lines_and_no_thoughts() -> None:
    channel = RecordingChannel()
    reply = channel.open_reply(HERE)
    reply.update(update_agent_thought(text_block("pondering")))
    await asyncio.sleep(0.01)
    reply.update(chunk("Looking"))
    reply.update(ToolCallStart(session_update="tool_call", tool_call_id="c1", title="list_files .", status="pending"))
    reply.update(ToolCallProgress(session_update="tool_call_update", tool_call_id="c1", status="completed"))
    reply.update(chunk("Found 3 files."))
    await reply.finish("end_turn")
    assert channel.texts() == ["Looking\n✅ list_files .\nFound 3 files."]
    assert ("typing", "") in channel.log
    assert "pondering" not in str(channel.log)


async def test_a_long_reply_becomes_several_messages_and_fences_stay_whole() -> None:
    channel = RecordingChannel()
    reply = channel.open_reply(HERE)
    reply.update(chunk("Intro\n```py\n" + "\n".join(f"x = {i}" for i in range(30)) + "\n```\nEnd"))
    await reply.finish("end_turn")
    texts = channel.texts()
    assert len(texts) > 2 and all(len(t) <= 100 for t in texts)
    assert all(t.count("```") % 2 == 0 for t in texts)
    assert texts[-1].endswith("End")


async def test_rate_limits_delay_edits_but_lose_no_text() -> None:
    channel = RecordingChannel()
    channel.refuse = [0.05, 0.05]
    reply = channel.open_reply(HERE)
    for word in ["one ", "two ", "three"]:
        reply.update(chunk(word))
    await reply.finish("end_turn")
    assert channel.texts() == ["one two three"]


async def test_stop_reasons_and_errors_are_shown() -> None:
    channel = RecordingChannel()
    cancelled = channel.open_reply(HERE)
    cancelled.update(chunk("partial"))
    await cancelled.finish("cancelled")
    failed = channel.open_reply(HERE)
    await failed.finish(error="the model is down")
    silent = channel.open_reply(HERE)
    await silent.finish("end_turn")
    assert channel.texts() == ["partial\n\n⏹ Cancelled.", "❌ the model is down", "(The agent ended its turn without a reply.)"]


async def test_without_edits_only_the_final_text_is_sent() -> None:
    channel = RecordingChannel(Capabilities(max_message_length=100, edits=False, buttons=False))
    reply = channel.open_reply(HERE)
    reply.update(chunk("a"))
    reply.update(chunk("b"))
    await reply.finish("end_turn")
    assert [kind for kind, _ in channel.log if kind != "typing"] == ["send"]
    assert channel.texts() == ["ab"]


async def test_links_marked_in_meta_become_url_buttons() -> None:
    channel = RecordingChannel(Capabilities(max_message_length=100, url_buttons=True))
    reply = channel.open_reply(HERE)
    update = chunk("Plan ready: https://wield.example.com/plans/1")
    link = PlanLinkMeta(url="https://wield.example.com/plans/1", plan_id="plan_1", revision=1, expires_at="2026-12-02T00:00:00Z", label="Review plan")
    update.field_meta = PLAN_LINK.meta(link)  # the Session Host's own definition of the key
    reply.update(update)
    await reply.finish("end_turn")
    [(text, buttons)] = channel.messages.values()
    assert "https://wield.example.com/plans/1" in text, "the link stays usable as plain text"
    assert [(b.label, b.url) for b in buttons] == [("Review plan", "https://wield.example.com/plans/1")]


async def test_after_a_pause_for_a_question_what_follows_is_a_new_message_below() -> None:
    channel = RecordingChannel(Capabilities(max_message_length=100))
    reply = channel.open_reply(HERE)
    reply.update(chunk("Before the question."))
    await reply.pause()
    assert channel.texts() == ["Before the question."], "delivered as final, without the cursor"
    reply.update(chunk("After the answer."))
    await reply.finish("cancelled")
    assert channel.texts() == ["Before the question.", "After the answer.\n\n⏹ Cancelled."]



async def test_what_a_stopped_bridge_left_unfinished_is_finished_by_the_next_start() -> None:
    """A reply cut off while streaming ends '(interrupted)'; an open question's buttons go and it says '(expired)'."""
    channel = RecordingChannel(Capabilities(max_message_length=1000))
    notes = MemoryMessageLog()
    here = Conversation("memory", "1")
    reply = channel.open_reply(here)
    reply.keeper = Keeper(notes, "memory", "reply")
    reply.update(update_agent_message(text_block("Working")))
    asking = asyncio.create_task(ChatQuestions(notes).ask(channel, here, ChatQuestion("Sure?", options=("Yes", "No")), timeout=60))
    left: list[object] = []

    async def both_noted() -> None:
        while len(left) < 2:
            left[:] = await notes.unfinished_messages("memory")
            await asyncio.sleep(0.01)

    await asyncio.wait_for(both_noted(), PATIENCE)
    restarted = RecordingChannel(Capabilities(max_message_length=1000))  # the next start (the bridge above never finished them)
    restarted.messages = channel.messages
    await finish_left(restarted, notes)
    assert sorted(text for text, _ in restarted.messages.values()) == ["Sure?\n\n(expired)", "Working (interrupted)"]
    assert all(buttons == () for _, buttons in restarted.messages.values())
    assert await notes.unfinished_messages("memory") == [], "each is finished once"
    asking.cancel()
