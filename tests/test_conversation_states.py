"""A bound conversation is one state machine: every move is in one table, any other is refused (logged, nothing
changed), and the paths a message, a question, a replay and a Plan shown take are the table's; docs/architecture.md
draws the same table."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from runwield_bridge.bridge.conversation import RESUME, TRANSITIONS, Conversation, Event, State
from runwield_bridge.bridge.follow_ups import FollowUpQueue, MemoryFollowUpLog
from runwield_bridge.channels.types import Conversation as Chat
from tests.bridge_kit import RecordingChannel

ARCHITECTURE = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"


def conversation() -> Conversation:
    chat = Chat("memory", "1")
    return Conversation(chat, RecordingChannel(), FollowUpQueue(MemoryFollowUpLog(), chat.key, "steer"))  # type: ignore[arg-type]


def walk(*events: Event, start: Conversation | None = None) -> list[State]:
    """The states a new conversation passes through on ``events``, each of which must be allowed."""
    machine = start or conversation()
    states = []
    for event in events:
        assert machine.fire(event), f"{event.value} refused in {machine.state.value}"
        states.append(machine.state)
    return states


def reach(state: State, base: State) -> Conversation:
    """A conversation in ``state``, interrupting ``base`` where ``state`` interrupts one."""
    machine = conversation()
    to_base = {State.IDLE: [], State.PROMPTING: [Event.PROMPT], State.SETTLING: [Event.PROMPT, Event.TURN_ENDED]}[base]
    into = {State.REPLAYING: Event.LOAD, State.WAITING_FOR_ANSWER: Event.ASK, State.HOLDING_FOR_PLAN: Event.HOLD}
    walk(*to_base, *([into[state]] if state in into else []), start=machine)
    assert (machine.state, machine.base) == (state, base)
    return machine


REACHABLE = [
    (State.IDLE, State.IDLE),
    (State.PROMPTING, State.PROMPTING),
    (State.SETTLING, State.SETTLING),
    *((state, base) for state in (State.REPLAYING, State.WAITING_FOR_ANSWER, State.HOLDING_FOR_PLAN) for base in (State.IDLE, State.PROMPTING, State.SETTLING)
      if (state, base) != (State.REPLAYING, State.PROMPTING)),
]  # fmt: skip
"""Every state with every state it can interrupt (nothing replays while a turn runs)."""


@pytest.mark.parametrize(("state", "base"), REACHABLE, ids=[f"{s.value}-over-{b.value}" for s, b in REACHABLE])
def test_every_move_the_table_lacks_is_refused_and_changes_nothing(state: State, base: State, caplog: pytest.LogCaptureFixture) -> None:
    for event in Event:
        machine = reach(state, base)
        caplog.clear()
        with caplog.at_level(logging.ERROR, "runwield_bridge.bridge.conversation"):
            moved = machine.fire(event)
        assert moved == ((state, event) in TRANSITIONS), (state, event)
        if not moved:
            assert (machine.state, machine.base) == (state, base)
            assert f"conversation memory:1: {event.value} refused in state {state.value} (no such transition)" in caplog.text


def test_a_message_prompts_and_the_turn_settles_into_the_next_queued_batch_or_idle() -> None:
    assert walk(Event.PROMPT, Event.TURN_ENDED, Event.PROMPT, Event.TURN_ENDED, Event.SETTLED) == [
        State.PROMPTING, State.SETTLING, State.PROMPTING, State.SETTLING, State.IDLE,
    ]  # fmt: skip


def test_a_question_interrupts_the_turn_or_the_idle_conversation_and_gives_it_back() -> None:
    machine = conversation()
    assert walk(Event.PROMPT, Event.ASK, Event.ASK, Event.ANSWERED, start=machine) == [
        State.PROMPTING, State.WAITING_FOR_ANSWER, State.WAITING_FOR_ANSWER, State.PROMPTING,
    ]  # fmt: skip
    assert walk(Event.ASK, Event.TURN_ENDED, start=machine) == [State.WAITING_FOR_ANSWER, State.SETTLING], "the turn's end ends its questions"
    assert walk(Event.ASK, Event.ANSWERED) == [State.WAITING_FOR_ANSWER, State.IDLE], "asked by a session working on its own"


def test_a_turn_runs_on_through_a_question_and_a_plan_shown() -> None:
    machine = reach(State.WAITING_FOR_ANSWER, State.PROMPTING)
    assert machine.running and machine.busy
    machine = reach(State.HOLDING_FOR_PLAN, State.IDLE)
    assert not machine.running and not machine.busy


def test_a_replay_goes_back_to_where_it_began() -> None:
    assert walk(Event.LOAD, Event.LOADED, Event.PROMPT) == [State.REPLAYING, State.IDLE, State.PROMPTING]
    settling = reach(State.SETTLING, State.SETTLING)
    assert walk(Event.LOAD, Event.LOADED, Event.PROMPT, start=settling) == [State.REPLAYING, State.SETTLING, State.PROMPTING], "a queued batch's session reopened"


def test_a_plan_shown_holds_and_gives_back_the_state_it_held() -> None:
    for base in (State.IDLE, State.PROMPTING, State.SETTLING):
        machine = reach(State.HOLDING_FOR_PLAN, base)
        assert walk(Event.RELEASE, start=machine) == [base]


def test_docs_architecture_draws_the_code_s_table() -> None:
    """The table under "## The Conversation" in docs/architecture.md: one row per move, as the code has them."""
    section = ARCHITECTURE.read_text().split("## The Conversation", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \| `(\w+)` \|", section, re.MULTILINE)
    code = {(state.value, event.value, to if to == RESUME else to.value) for (state, event), to in TRANSITIONS.items()}
    assert set(rows) == code and len(rows) == len(code)
