"""A tiny offline model for RunWield Bridge: it answers every prompt with its words in reverse order.

It registers the model ``tiny`` and the provider ``tiny``, so ``[models.NAME] provider = "tiny"`` in
wld.toml adds more of them (``model`` names what the reply says it is). It uses nothing but
``runwield_bridge``'s public API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from runwield_bridge import (
    ModelConfig,
    ModelEvent,
    ModelFactory,
    ModelInfo,
    ModelRequest,
    ModelUsage,
    ProviderFactory,
    TextDelta,
    hookimpl,
)

TINY = ModelInfo(id="tiny", name="Tiny", description="Answers with your words in reverse order", context_window=1000)


class TinyModel:
    """Streams the last user message's words back in reverse order, then the words in context."""

    def __init__(self, info: ModelInfo) -> None:
        self.info = info

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        prompt = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
        reply = f"{self.info.name} says: {' '.join(reversed(prompt.split()))}"
        yield TextDelta(reply)
        yield ModelUsage(context_tokens=sum(len(m.text.split()) for m in request.messages) + len(reply.split()))


def from_config(name: str, entry: ModelConfig) -> TinyModel:
    """The model of a ``[models.NAME]`` entry with ``provider = "tiny"``."""
    return TinyModel(ModelInfo(id=name, name=entry.model or name, context_window=entry.context_window or TINY.context_window))


@hookimpl
def register_models(register: Callable[[ModelInfo, ModelFactory], None]) -> None:
    register(TINY, lambda: TinyModel(TINY))


@hookimpl
def register_providers(register: Callable[[str, ProviderFactory], None]) -> None:
    register("tiny", from_config)
