"""Providers for ``[models.NAME]``: ``openai`` (any OpenAI-compatible server) and ``anthropic``, via pydantic-ai.

pydantic-ai takes seconds to import, so it is imported in a worker thread when such a model is first used:
``wld`` starts fast, other Sessions keep streaming, and a missing extra is a turn error that says what to install.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from ..config import ModelConfig
from ..core.catalog import model_info
from ..core.models import Model, ModelError, ModelEvent, ModelInfo, ModelRequest
from ..hookspecs import hookimpl
from .provider_keys import KEY_ENV, missing_key

if TYPE_CHECKING:
    from .pydantic_ai_model import PydanticAIModel

PROVIDERS = ("openai", "anthropic")
INSTALL_HINT = "pip install 'runwield-bridge[providers]'"


def build_model(provider: str, info: ModelInfo, entry: ModelConfig) -> PydanticAIModel:
    """Import the pydantic-ai bridge and build the model (blocking: run it in a thread)."""
    try:
        from .pydantic_ai_model import BUILDERS

        return BUILDERS[provider](info, entry)
    except ImportError as exc:
        raise ModelError(f"models.{info.id}: provider {provider!r} needs pydantic-ai ({exc}); {INSTALL_HINT}") from None


class DeferredModel:
    """A provider model that is built on its first request, off the event loop."""

    def __init__(self, provider: str, info: ModelInfo, entry: ModelConfig) -> None:
        self.provider = provider
        self.info = info
        self.entry = entry
        self._model: PydanticAIModel | None = None

    def unusable(self) -> str | None:
        """A missing API key (an OpenAI-compatible server at ``base_url`` may need none)."""
        if self.provider == "openai" and self.entry.base_url:
            return None
        return missing_key(self.info.id, self.entry, KEY_ENV[self.provider])

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if self._model is None:
            self._model = await asyncio.to_thread(build_model, self.provider, self.info, self.entry)
        async with contextlib.aclosing(self._model.stream(request)) as events:
            async for event in events:
                yield event


def provider_factory(provider: str) -> Callable[[str, ModelConfig], Model]:
    """The ``(name, entry) -> Model`` factory for one provider."""

    def build(name: str, entry: ModelConfig) -> Model:
        return DeferredModel(provider, model_info(name, entry, default_window=None), entry)

    return build


@hookimpl
def register_providers(register) -> None:
    """``provider = "openai"`` and ``provider = "anthropic"`` in ``[models.NAME]``."""
    for provider in PROVIDERS:
        register(provider, provider_factory(provider))
