"""The runtime context contract (ADR 0033 D4/D5): what a turn's model or agent is given, as a stable prefix that stays
byte-identical for the life of a Session and a volatile delta that always comes after it.

Every runtime satisfies it: ``assemble_context(state)`` gives the ``Context`` of a turn, and the runtime calls
``after_turn`` on what it keeps between turns (``ContextLedger``) once the turn is done. The native runtime sends the
prefix first in every request (the instructions and the tool manifest: what a provider caches), then the Session's
conversation (a summary of its older part once it has been compacted), then the delta with the new prompt; the acp
runtime sends the prefix once, in the agent session's first prompt, and a delta only when it changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .catalog import BUILTIN_AGENTS, agent_profile
from .models import ChatMessage, ToolSpec

HOUSE_INSTRUCTIONS = (
    "You work in a RunWield Session as one of these Agents. The <runwield-context> note before the newest user "
    "message says which one you are now, and anything else about the Session that has changed."
)
CUT_NOTE = "\n[cut by RunWield: {total:,} characters, of which the first {kept:,} are shown{how}]"


@dataclass(frozen=True, slots=True)
class StablePrefix:
    """What never changes during a Session: the instructions (with every Agent's persona) and the tool manifest."""

    instructions: str
    tools: tuple[ToolSpec, ...] = ()


@dataclass(frozen=True, slots=True)
class Summary:
    """A model-written summary that stands in, for the model only, for the first ``folded`` messages of a Session."""

    text: str
    folded: int


@dataclass(frozen=True, slots=True)
class ContextState:
    """What a turn's context is assembled from: the selection, the tools, the conversation and its summary, if any.
    ``message_limit`` (characters) bounds each message of the conversation as the model sees it."""

    agent: str
    reasoning: str | None
    tools: tuple[ToolSpec, ...] = ()
    history: Sequence[ChatMessage] = ()
    summary: Summary | None = None
    message_limit: int | None = None


@dataclass(frozen=True, slots=True)
class Context:
    """A turn's context: the stable prefix, the conversation after it, and the delta that comes last (with the prompt)."""

    stable_prefix: StablePrefix
    volatile_delta: str
    conversation: tuple[ChatMessage, ...] = field(default=())


def assemble_context(state: ContextState) -> Context:
    """The turn's context for ``state``; the same prefix, byte for byte, whatever the selection."""
    earlier = state.summary.folded if state.summary else 0
    told = [bounded_message(message, state.message_limit) for message in state.history[earlier:]]
    summary = [summary_message(state.summary)] if state.summary else []
    return Context(stable_prefix(state.tools), volatile_delta(state.agent, state.reasoning), (*summary, *told))


def stable_prefix(tools: Sequence[ToolSpec] = ()) -> StablePrefix:
    """The house instructions, every Agent's persona and the tools: nothing a Session can change while it lives."""
    personas = "\n".join(f"- {agent.name}: {agent.description}. {agent.instructions}" for agent in BUILTIN_AGENTS)
    return StablePrefix(f"{HOUSE_INSTRUCTIONS}\n{personas}", tuple(tools))


def volatile_delta(agent: str, reasoning: str | None) -> str:
    """What the model is told about the Session now: its Agent and reasoning level."""
    profile = agent_profile(agent)
    lines = [f"Agent: {profile.name} ({profile.instructions})"]
    if reasoning:
        lines.append(f"Reasoning level: {reasoning}")
    return "<runwield-context>\n" + "\n".join(lines) + "\n</runwield-context>"


def summary_message(summary: Summary) -> ChatMessage:
    """The summary as the first message of the conversation the model sees."""
    return ChatMessage("user", f"<runwield-summary of the earlier conversation>\n{summary.text}\n</runwield-summary>")


def bounded(text: str, limit: int | None, how: str = "") -> str:
    """``text`` cut to ``limit`` characters with a note saying so (``how``: how to see the rest); as it is when shorter."""
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + CUT_NOTE.format(total=len(text), kept=limit, how=how)


def bounded_message(message: ChatMessage, limit: int | None) -> ChatMessage:
    """A message of the conversation with its text bounded (a pasted log, say, enters the context cut)."""
    if limit is None or len(message.text) <= limit:
        return message
    return ChatMessage(message.role, bounded(message.text, limit), message.tool_call_id, message.tool_calls, message.images)


class ContextLedger:
    """What a runtime keeps between a Session's turns (``after_turn``): the delta each session was last told, and the
    context size its model last measured (None after a compaction, until the model measures again)."""

    def __init__(self) -> None:
        self.told: dict[str, str] = {}
        self.measured: dict[str, int] = {}

    def news(self, key: str, context: Context) -> str | None:
        """The delta, when ``key`` (a Session, an agent's session) has not been told it yet."""
        return None if self.told.get(key) == context.volatile_delta else context.volatile_delta

    def after_turn(self, key: str, context: Context, measured: int | None) -> None:
        """The turn on ``key`` is done: it was told ``context``'s delta, and its model measured ``measured`` tokens."""
        self.told[key] = context.volatile_delta
        if measured is None:
            self.measured.pop(key, None)
        else:
            self.measured[key] = measured
