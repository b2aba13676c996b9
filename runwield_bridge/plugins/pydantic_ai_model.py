"""Our Model protocol over pydantic-ai's model classes, one request at a time: the TurnRunner keeps the tools.

Imported only when a ``[models.NAME]`` entry with ``provider = "openai"`` or ``"anthropic"`` is first used.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any, cast

from genai_prices import calc_price
from pydantic_ai import messages as pm
from pydantic_ai import models as pai_models
from pydantic_ai.direct import model_request_stream
from pydantic_ai.exceptions import AgentRunError, ModelHTTPError, ModelTimeoutError, UserError
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from ..config import ModelConfig
from .provider_keys import missing_key
from ..core.models import (
    ChatMessage,
    ContextOverflow,
    ModelError,
    ModelEvent,
    ModelInfo,
    ModelRequest,
    ModelUsage,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
    ToolSpec,
)

SettingsFor = Callable[[str | None], dict[str, Any]]
OFF = "off"
ANTHROPIC_LEVELS = ("minimal", "low", "medium", "high", "xhigh", "max")
ANTHROPIC_CACHE = {"anthropic_cache_instructions": True, "anthropic_cache_tool_definitions": True, "anthropic_cache_messages": True}
"""Cache breakpoints on the stable prefix (the instructions, the tool definitions) and after the newest message."""
LENGTH_REFUSALS = ("context_length_exceeded", "maximum context length", "context window", "prompt is too long", "too many tokens")
"""How OpenAI, OpenAI-compatible servers and Anthropic word a refusal for length."""


class PydanticAIModel:
    """A pydantic-ai model as our Model: streams text and thinking, then tool calls and the provider's usage.
    ``price_by_name`` prices responses by model name; otherwise only a server URL genai-prices knows is priced."""

    def __init__(
        self, info: ModelInfo, model: pai_models.Model, settings_for: SettingsFor, *, price_by_name: bool = True
    ) -> None:
        self.info = info
        self.model = model
        self.settings_for = settings_for
        self.price_by_name = price_by_name

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        params = pai_models.ModelRequestParameters(function_tools=[tool_definition(tool) for tool in request.tools])
        settings = cast(ModelSettings, self.settings_for(request.reasoning))
        try:
            async with self.model, model_request_stream(
                self.model, to_messages(with_delta(request), request.instructions), model_settings=settings,
                model_request_parameters=params, instrument=False,
            ) as response:  # fmt: skip
                async for event in response:
                    if (delta := stream_delta(event)) is not None:
                        yield delta
                final = response.get()
        except (AgentRunError, UserError) as exc:
            refused = isinstance(exc, ModelHTTPError) and refused_for_length(exc)
            raise (ContextOverflow if refused else ModelError)(describe_error(exc, self.model.base_url)) from exc
        for part in final.parts:
            if isinstance(part, pm.ToolCallPart):
                yield ToolCallRequest(part.tool_call_id, part.tool_name, part.args_as_dict())
        if (usage := reported_usage(final, self.price_by_name)) is not None:
            yield usage


def with_delta(request: ModelRequest) -> list[ChatMessage]:
    """The request's messages with the context's delta where it goes: a user message before the turn's prompt."""
    messages = list(request.messages)
    if request.delta:
        messages.insert(request.delta_at, ChatMessage("user", request.delta))
    return messages


def to_messages(history: Sequence[ChatMessage], instructions: str = "") -> list[pm.ModelMessage]:
    """Our conversation as pydantic-ai messages: consecutive user prompts and tool results make one request,
    which carries the stable instructions (pydantic-ai sends the latest as the system prompt)."""
    tool_names = {call.call_id: call.name for message in history for call in message.tool_calls}
    spoken = [m for m in history if m.role != "assistant" or m.text or m.tool_calls]
    messages: list[pm.ModelMessage] = []
    for is_response, group in itertools.groupby(spoken, key=lambda m: m.role == "assistant"):
        if is_response:
            messages += [pm.ModelResponse(parts=_response_parts(m)) for m in group]
        else:
            parts = [_request_part(m, tool_names) for m in group]
            messages.append(pm.ModelRequest(parts=parts, instructions=instructions or None))
    return messages


def _request_part(message: ChatMessage, tool_names: dict[str, str]) -> pm.ModelRequestPart:
    if message.role == "user" and message.images:
        images = [pm.BinaryContent(data=image.data, media_type=image.mime_type) for image in message.images]
        return pm.UserPromptPart([message.text, *images])
    if message.role == "user":
        return pm.UserPromptPart(message.text)
    call_id = message.tool_call_id or ""
    return pm.ToolReturnPart(tool_names.get(call_id, "tool"), message.text, call_id)


def _response_parts(message: ChatMessage) -> list[pm.ModelResponsePart]:
    text: list[pm.ModelResponsePart] = [pm.TextPart(message.text)] if message.text else []
    return text + [pm.ToolCallPart(call.name, call.arguments, call.call_id) for call in message.tool_calls]


def tool_definition(spec: ToolSpec) -> ToolDefinition:
    """Our tool spec as a pydantic-ai tool definition (pydantic-ai only describes it; it never runs it)."""
    return ToolDefinition(name=spec.name, parameters_json_schema=spec.parameters, description=spec.description)


def stream_delta(event: pm.ModelResponseStreamEvent) -> TextDelta | ThinkingDelta | None:
    """The text or thinking a stream event adds, if any."""
    if isinstance(event, pm.PartStartEvent):
        item, piece = event.part, getattr(event.part, "content", None)
    elif isinstance(event, pm.PartDeltaEvent):
        item, piece = event.delta, getattr(event.delta, "content_delta", None)
    else:
        return None
    if not isinstance(piece, str) or not piece:
        return None
    if isinstance(item, pm.TextPart | pm.TextPartDelta):
        return TextDelta(piece)
    if isinstance(item, pm.ThinkingPart | pm.ThinkingPartDelta):
        return ThinkingDelta(piece)
    return None


def reported_usage(response: pm.ModelResponse, price_by_name: bool) -> ModelUsage | None:
    """Context tokens (input + output) exactly as the provider reported them; None when it reported none."""
    usage = response.usage
    if usage.unmeasured_requests or not (usage.input_tokens or usage.output_tokens):
        return None
    cost = known_cost(response, price_by_name)
    return ModelUsage(context_tokens=usage.input_tokens + usage.output_tokens, cost_usd=cost)


def known_cost(response: pm.ModelResponse, price_by_name: bool) -> float:
    """The response's price from the provider or genai-prices' bundled tables; 0 when it is not known."""
    if response.usage.cost is not None:
        return float(response.usage.cost)
    try:
        if price_by_name:
            return float(response.cost().total_price)
        by_url = calc_price(response.usage, response.model_name or "", provider_api_url=response.provider_url)
        return float(by_url.total_price)
    except (LookupError, ValueError):
        return 0.0


def refused_for_length(exc: ModelHTTPError) -> bool:
    """Whether the provider refused the request as longer than the model's context window."""
    return exc.status_code in (400, 413) and any(words in str(exc.body).lower() for words in LENGTH_REFUSALS)


def describe_error(exc: Exception, base_url: str) -> str:
    """A provider failure in words, naming the server."""
    where = base_url.rstrip("/")
    if isinstance(exc, ModelHTTPError):
        detail = _error_detail(exc.body)
        return f"{where} answered HTTP {exc.status_code}" + (f": {detail}" if detail else "")
    if isinstance(exc, ModelTimeoutError):
        return f"timed out waiting for {where}"
    root = _root_cause(exc)
    if isinstance(root, OSError):
        reason = os.strerror(root.errno).lower() if root.errno and root.errno > 0 else (root.strerror or str(root))
        return f"could not reach {where}: {reason}"
    return f"{where}: {exc}"


def _error_detail(body: object) -> str:
    """The message inside an OpenAI-, Anthropic- or Ollama-shaped error body."""
    inner: Any = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(inner, dict):
        inner = inner.get("message", inner)
    return str(inner) if inner else ""


def _root_cause(exc: BaseException) -> BaseException:
    while (cause := exc.__cause__ or exc.__context__) is not None:
        exc = cause
    return exc


def openai_settings(level: str | None) -> dict[str, Any]:
    """The reasoning level is sent as ``reasoning_effort`` as written; ``off`` as ``none``."""
    if level is None:
        return {}
    return {"openai_reasoning_effort": "none" if level == OFF else level}


def anthropic_settings(level: str | None) -> dict[str, Any]:
    """The prompt cache's breakpoints, and pydantic-ai's unified ``thinking``: a thinking budget (or adaptive effort on
    newer Claude models)."""
    if level is None:
        return dict(ANTHROPIC_CACHE)
    return {**ANTHROPIC_CACHE, "thinking": False if level == OFF else level}


def _api_key(info: ModelInfo, entry: ModelConfig, env: str) -> str:
    """``api_key``, else the provider's own environment variable; neither is a clear error."""
    if problem := missing_key(info.id, entry, env):
        raise ModelError(problem)
    return entry.api_key or os.environ[env]


def openai_model(info: ModelInfo, entry: ModelConfig) -> PydanticAIModel:
    """OpenAI itself without ``base_url``; any OpenAI-compatible chat-completions server with one."""
    from pydantic_ai.models.openai import OpenAIChatModel

    if entry.base_url:  # OPENAI_API_KEY is never sent to another server
        from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

        provider: Any = OpenAICompatibleProvider("openai-compatible", base_url=entry.base_url, api_key=entry.api_key)
    else:
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(api_key=_api_key(info, entry, "OPENAI_API_KEY"))
    model = OpenAIChatModel(entry.model or info.id, provider=provider)
    return PydanticAIModel(info, model, openai_settings, price_by_name=not entry.base_url)


def anthropic_model(info: ModelInfo, entry: ModelConfig) -> PydanticAIModel:
    """Anthropic's Messages API, or a server speaking it at ``base_url``."""
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    if unknown := [level for level in info.reasoning_levels if level not in (OFF, *ANTHROPIC_LEVELS)]:
        known = ", ".join((OFF, *ANTHROPIC_LEVELS))
        raise ModelError(f"models.{info.id}.reasoning_levels: anthropic has no level {unknown[0]!r} (use {known})")

    provider = AnthropicProvider(api_key=_api_key(info, entry, "ANTHROPIC_API_KEY"), base_url=entry.base_url)
    return PydanticAIModel(info, AnthropicModel(entry.model or info.id, provider=provider), anthropic_settings)


BUILDERS: dict[str, Callable[[ModelInfo, ModelConfig], PydanticAIModel]] = {
    "openai": openai_model,
    "anthropic": anthropic_model,
}
