"""Compaction (ADR 0033 D5.4): when a native Session's context nears its model's window, the older part of the
conversation is replaced, for the model only, by a structured summary the model writes in a separate request.

The transcript keeps everything; the summary is stored (``Summaries``) and reused until the next compaction, which
folds it in. The budget is ``compact_at`` of the window and counts the whole request: instructions, tool definitions
and messages, estimated from their size before the request is sent (``estimated_tokens``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .context import Context, ContextState, Summary, assemble_context, bounded, bounded_message, stable_prefix
from .events import Notice
from .models import ChatMessage, Model, ModelError, ModelRequest, ModelUsage, TextDelta, ToolSpec
from .runtime import Emit, TurnResult

COMPACT_AT = 0.8
"""The share of the model's window a request may take before the conversation is compacted (``[sessions] compact_at``)."""
BYTES_PER_TOKEN = 3
"""A cautious estimate (tokenizers average nearer four bytes a token on English and code)."""
MESSAGE_TOKENS = 12
"""What a message costs besides its text (its role and framing), also cautiously."""
IMAGE_TOKENS = 1600
KEEP_SHARE = 0.5
"""The share of the room left (by the prefix, the summary and the new prompt) the newest messages keep, unfolded."""
FURTHER_SHARE = 0.0
"""What they keep when the provider refused a request that fitted by our count: nothing, all is folded."""
MESSAGE_SHARE = 0.25
"""The share of the budget one message (a pasted log, a tool's output) may take in the context."""
SUMMARY_SHARE = 0.2
"""The share of the budget the summary may take."""
UNBOUNDED_SUMMARY_WORDS = 500
"""How long the summary may be when the model's window is not known."""
SUMMARY_INSTRUCTIONS = (
    "You compact a coding session. Write a summary of the conversation you are given (and of the earlier summary, if "
    "there is one) that lets the work go on without it, under these headings: Goal, Progress, Decisions, Files, "
    "Next steps. Keep names, paths, numbers and the user's own requirements exactly. Be brief: at most {words} words."
)
COMPACTED = "🗜 Compacted {count} earlier messages into a summary"


class Summaries(Protocol):
    """Where a Session's summary is kept (the store's ``summaries``)."""

    async def latest(self, session_id: str) -> Summary | None: ...

    async def add(self, session_id: str, summary: Summary) -> None: ...


def estimated_tokens(instructions: str, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> int:
    """The tokens a request is estimated to take, from the size of everything it sends."""
    size = len(instructions.encode())
    for message in messages:
        size += len(message.text.encode()) + sum(len(json.dumps(call.arguments)) + len(call.name) for call in message.tool_calls)
    size += sum(tool.definition_size for tool in tools)
    images = sum(len(message.images) for message in messages)
    return math.ceil(size / BYTES_PER_TOKEN) + MESSAGE_TOKENS * (len(messages) + len(tools)) + IMAGE_TOKENS * images


@dataclass(frozen=True, slots=True)
class Budget:
    """How much of a model's window (tokens) a request may take: ``compact_at`` of it; None when the window is unknown."""

    window: int | None
    compact_at: float

    @property
    def tokens(self) -> int | None:
        return None if self.window is None else int(self.window * self.compact_at)

    @property
    def message_limit(self) -> int | None:
        """The characters one message may keep in the context."""
        return None if self.tokens is None else int(self.tokens * MESSAGE_SHARE) * BYTES_PER_TOKEN

    def overflow(self) -> str:
        """Why a request does not fit, naming the settings that decide it."""
        if self.window is None:
            return (
                "the conversation does not fit the model's context window even after compaction; set the model's "
                f"context_window to what it takes, and requests are kept to [sessions] compact_at (now {self.compact_at}) of it"
            )
        return (
            f"the conversation does not fit the model's context window ({self.window:,} tokens) even after compaction; "
            f"lower [sessions] compact_at (now {self.compact_at}) or set the model's context_window to what it really takes"
        )


@dataclass
class Compactor:
    """Fits a native Session's context to its model's budget, compacting (one model request each time) when needed."""

    model: Model
    session_id: str
    summaries: Summaries
    budget: Budget
    emit: Emit
    result: TurnResult

    def size(self, context: Context, pending: Sequence[ChatMessage]) -> int:
        """The estimated tokens of a request with ``context`` and then the ``pending`` messages."""
        prefix = context.stable_prefix
        return estimated_tokens(prefix.instructions, [*context.conversation, *pending], prefix.tools)

    def fits(self, context: Context, pending: Sequence[ChatMessage], measured: int = 0) -> bool:
        """Whether the request fits the budget by our count (or by the model's, ``measured``, when that is larger)."""
        limit = self.budget.tokens
        return limit is None or max(self.size(context, pending), measured) <= limit

    async def fit(self, state: ContextState, pending: Sequence[ChatMessage], measured: int = 0) -> ContextState:
        """``state`` compacted until its request fits the budget, or as far as it can be: then the request is sent as
        it is (our count is cautious; the provider decides)."""
        compacted = False
        if not self._room(state, pending):  # the prefix and the prompt alone take the budget: compacting cannot help
            return state
        while not self.fits(assemble_context(state), pending, 0 if compacted else measured):
            folded = await self.compact(state, KEEP_SHARE, pending)
            if folded is None:
                return state
            state, compacted = folded, True
        return state

    async def compact(
        self, state: ContextState, keep_share: float, pending: Sequence[ChatMessage] = ()
    ) -> ContextState | None:
        """Fold the older messages into the summary (one model request), keeping the newest within ``keep_share`` of
        the room the request has beside the stable prefix, the summary and the ``pending`` messages; None when there is
        nothing to fold."""
        start = state.summary.folded if state.summary else 0
        messages = [bounded_message(message, state.message_limit) for message in state.history]
        end = self._fold_end(messages, start, int(self._room(state, pending) * keep_share))
        if end <= start:
            return None
        text = await self._summarize(state.summary, messages[start:end])
        summary = Summary(text, end)
        await self.summaries.add(self.session_id, summary)
        await self.emit(Notice(COMPACTED.format(count=end - start)))
        return ContextState(state.agent, state.reasoning, state.tools, state.history, summary, state.message_limit)

    def _room(self, state: ContextState, pending: Sequence[ChatMessage]) -> int:
        """The tokens the conversation may take in a request beside the prefix, the summary and ``pending``."""
        prefix = stable_prefix(state.tools)
        fixed = estimated_tokens(prefix.instructions, pending, prefix.tools) + self._summary_tokens
        return max(0, (self.budget.tokens or 0) - fixed)

    @property
    def _summary_tokens(self) -> int:
        return int((self.budget.tokens or 0) * SUMMARY_SHARE)

    def _fold_end(self, messages: Sequence[ChatMessage], start: int, keep: int) -> int:
        """Where the kept messages start: the newest that fit ``keep`` tokens, from a user message on."""
        end, kept = len(messages), 0
        for index in range(len(messages) - 1, start - 1, -1):
            kept += estimated_tokens("", [messages[index]], ())
            if kept > keep:
                break
            if messages[index].role == "user":
                end = index
        room = None if self.budget.tokens is None else self.budget.tokens - 2 * self._summary_tokens
        while room is not None and end > start and estimated_tokens("", messages[start:end], ()) > room:
            end = max((i for i in range(start, end) if messages[i].role == "user"), default=start)
        return end  # the summary request (the earlier summary, these messages, the new summary) fits the budget too

    async def _summarize(self, earlier: Summary | None, messages: Sequence[ChatMessage]) -> str:
        """The model's summary of ``earlier`` and ``messages``, written in a request of its own (no tools)."""
        words = int(self._summary_tokens * 0.6) or UNBOUNDED_SUMMARY_WORDS
        told = [f"{'User' if m.role == 'user' else 'Assistant'}: {m.text}" for m in messages if m.text]
        before = [f"The earlier summary:\n{earlier.text}"] if earlier else []
        request = ModelRequest((ChatMessage("user", "\n\n".join([*before, *told])),), (), None, ".", SUMMARY_INSTRUCTIONS.format(words=words))
        text: list[str] = []
        async for event in self.model.stream(request):
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, ModelUsage):  # its cost counts; its size is not the Session's context
                self.result.cost_usd += event.cost_usd
        summary = "".join(text).strip()
        if not summary:
            raise ModelError("the model wrote an empty summary when asked to compact the conversation")
        return bounded(summary, self._summary_tokens * BYTES_PER_TOKEN or None)
