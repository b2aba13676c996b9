"""The contract between the turn executor and a model provider."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Union, runtime_checkable


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What a model is and what it can do."""

    id: str
    name: str
    description: str = ""
    reasoning_levels: tuple[str, ...] = ()
    default_reasoning: str | None = None
    context_window: int | None = None
    vision: bool = False  # takes images in prompts

    @property
    def reasons(self) -> bool:
        return bool(self.reasoning_levels)


@dataclass(frozen=True, slots=True)
class Image:
    """An image in a prompt: its bytes and media type (``image/png``)."""

    data: bytes
    mime_type: str


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of the conversation as the model sees it; a user message may carry images (vision models)."""

    role: Literal["user", "assistant", "tool"]
    text: str
    tool_call_id: str | None = None
    tool_calls: tuple["ToolCallRequest", ...] = ()
    images: tuple[Image, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call."""

    name: str
    description: str
    parameters: dict[str, Any]
    definition_size: int = field(init=False, repr=False, compare=False)
    """The characters of its definition as JSON (the token estimate counts them on every request: measured once)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "definition_size", len(json.dumps([self.name, self.description, self.parameters])))


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything a model needs for one request: ``instructions`` (a system prompt) and ``tools`` are the context's
    stable prefix; ``delta`` is its volatile delta, which a provider sends as a user message just before
    ``messages[delta_at]`` (the turn's prompt), after the conversation (``core/context.py``)."""

    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...] = ()
    reasoning: str | None = None
    cwd: str = "."
    instructions: str = ""
    delta: str = ""
    delta_at: int = 0


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """The model asks for a tool to be run."""

    call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """Tokens in context after this response, and what the response cost."""

    context_tokens: int
    cost_usd: float = 0.0


ModelEvent = Union[TextDelta, ThinkingDelta, ToolCallRequest, ModelUsage]


class Model(Protocol):
    """A model provider: streams events for a request."""

    info: ModelInfo

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...


@runtime_checkable
class Checkable(Protocol):
    """A model that can tell, without a request, why it cannot be used (a missing API key, say)."""

    def unusable(self) -> str | None: ...


class ModelError(Exception):
    """A model request failed in a way the user should be told about."""


class ContextOverflow(ModelError):
    """The provider refused a request as longer than the model's context window."""
