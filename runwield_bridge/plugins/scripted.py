"""The built-in offline model: deterministic replies, real tool calls, exact usage."""

from __future__ import annotations

import asyncio
import functools
import json
import operator
import re
from collections.abc import AsyncIterator

from ..core.models import (
    ChatMessage,
    ModelError,
    ModelEvent,
    ModelInfo,
    ModelRequest,
    ModelUsage,
    TextDelta,
    ThinkingDelta,
    ToolCallRequest,
)
from ..config import ModelConfig
from ..core.catalog import model_info
from ..hookspecs import hookimpl

CONTEXT_WINDOW = 32_768
USD_PER_INPUT_TOKEN = 1e-6
USD_PER_OUTPUT_TOKEN = 2e-6
SLOW_CHUNK_DELAY = 1.0  # 15 s in all: time to cancel, overlap or steer even on a busy machine
SLOW_CHUNKS = 15
MESSAGE_TEXT = operator.attrgetter("text")
_REVIEW_ARTIFACT = re.compile(r"\breview the file\s+([\w./-]+)(?:\s+asking\s+(.+))?", re.IGNORECASE | re.DOTALL)
_READ = re.compile(r"\bread\s+(\S+)", re.IGNORECASE)
_MAKE_A_PLAN = re.compile(r"\bmake a plan\b(?:\s+(?:to|for|about)\b)?[\s:,-]*(.*)", re.IGNORECASE | re.DOTALL)
_DELEGATE = re.compile(r"\bdelegate to\s+([\w.-]+)(?:\s+again in\s+([\w-]+))?:\s*(.+)", re.IGNORECASE | re.DOTALL)
_TELL = re.compile(r"\btell session\s+([\w-]+):\s*(.+)", re.IGNORECASE | re.DOTALL)
_CHILD_RESULT = re.compile(r"^The child session \S+ on (\S+) (finished|failed): (.*)", re.DOTALL)
_INTERVIEW = re.compile(r"\binterview\b", re.IGNORECASE)
_REVISE_PLAN = re.compile(r"\brevise plan\b.*?\(plan_id (plan_\w+)\).*?feedback\b[^\n]*:\n(.+)", re.IGNORECASE | re.DOTALL)
_RUN = re.compile(r"\brun\s+`([^`]+)`", re.IGNORECASE)
_SEARCH = re.compile(r"\bsearch\s+for\s+(regex\s+)?`([^`]+)`", re.IGNORECASE)
_WRITE = re.compile(r"\bwrite\s+([\w./-]+)\s+saying\s+([^.”\"\n]+)", re.IGNORECASE)
INTERVIEW_QUESTIONS = [
    {"question": "Which language should the example use?", "options": ["Python", "Rust", "Go"]},
    {"question": "Should it include tests?", "options": ["Yes", "No"]},
    {"question": "Anything else I should know?"},
]


@functools.lru_cache(maxsize=4096)
def count_tokens(text: str) -> int:
    """The scripted model's tokenizer: one token per whitespace-separated word (remembered: every turn counts the
    whole conversation again)."""
    return len(text.split())


def chunks(text: str) -> list[str]:
    """Split text into streaming chunks of up to three words, keeping every character."""
    words = re.findall(r"\s*\S+\s*", text) or [text]
    return ["".join(words[i : i + 3]) for i in range(0, len(words), 3)]


class ScriptedModel:
    """A model whose behaviour is a small documented script (see docs/scripted-model.md)."""

    def __init__(self, info: ModelInfo) -> None:
        self.info = info

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        last = request.messages[-1]
        prompt = _last_user_text(request.messages)
        if "fail" in prompt.lower().split():
            raise ModelError("the scripted model was asked to fail")
        if request.reasoning and request.reasoning != "off" and last.role == "user":
            yield ThinkingDelta(f"Thinking ({request.reasoning}) about: {prompt}")
        if last.role == "user" and (call := _tool_call_for(prompt, len(request.messages))):
            yield call
            yield self._usage(request, "")
            return
        reply = _reply(prompt, last, request.messages)
        slow = "slow" in prompt.lower().split()
        pieces = chunks(reply)
        if slow:
            pieces = pieces + [f" {n}" for n in range(1, SLOW_CHUNKS + 1)]
        for piece in pieces:
            if slow:
                await asyncio.sleep(SLOW_CHUNK_DELAY)
            yield TextDelta(piece)
        yield self._usage(request, "".join(pieces))

    def _usage(self, request: ModelRequest, reply: str) -> ModelUsage:
        context = sum(map(count_tokens, map(MESSAGE_TEXT, request.messages)))  # no Python frame per message
        output = count_tokens(reply)
        cost = context * USD_PER_INPUT_TOKEN + output * USD_PER_OUTPUT_TOKEN
        return ModelUsage(context_tokens=context + output, cost_usd=cost)


def _last_user_text(messages: tuple[ChatMessage, ...]) -> str:
    return next((m.text for m in reversed(messages) if m.role == "user"), "")


def scripted_plan(prompt: str) -> dict[str, str]:
    """The short Plan a prompt containing `make a plan` gets: titled from what follows the phrase."""
    match = _MAKE_A_PLAN.search(prompt)
    goal = " ".join((match.group(1) if match else "").split()).rstrip(".!?") or " ".join(prompt.split())
    title = goal[:1].upper() + goal[1:60]
    steps = f"1. Look at the code this touches.\n2. {title}.\n3. Run the project's validation commands.\n"
    return {"title": title, "body": f"## Goal\n\n{title}.\n\n## Steps\n\n{steps}"}


def _tool_call_for(prompt: str, position: int) -> ToolCallRequest | None:
    lowered = prompt.lower()
    if match := _DELEGATE.search(prompt):
        resume = {"resume_session_id": match.group(2)} if match.group(2) else {}
        return ToolCallRequest(f"call-{position}", "spawn_session", {"agent": match.group(1), "task": match.group(3).strip(), **resume})
    if match := _TELL.search(prompt):
        return ToolCallRequest(f"call-{position}", "send_session", {"session_id": match.group(1), "text": match.group(2).strip()})
    if _INTERVIEW.search(prompt):
        return ToolCallRequest(f"call-{position}", "user_interview", {"questions": INTERVIEW_QUESTIONS})
    if match := _REVIEW_ARTIFACT.search(prompt):
        question = " ".join((match.group(2) or "").split()) or f"Is {match.group(1)} what you wanted?"
        return ToolCallRequest(f"call-{position}", "request_artifact_review", {"path": match.group(1), "question": question})
    if _MAKE_A_PLAN.search(prompt):
        return ToolCallRequest(f"call-{position}", "write_plan", scripted_plan(prompt))
    if match := _REVISE_PLAN.search(prompt):
        body = f"## Changes asked for in review\n\n{match.group(2).strip()}\n"
        return ToolCallRequest(f"call-{position}", "revise_plan", {"plan_id": match.group(1), "body": body})
    if match := _RUN.search(prompt):
        return ToolCallRequest(f"call-{position}", "run_command", {"command": match.group(1)})
    if match := _SEARCH.search(prompt):
        arguments = {"query": match.group(2), **({"regex": True} if match.group(1) else {})}
        return ToolCallRequest(f"call-{position}", "search_files", arguments)
    if match := _WRITE.search(prompt):
        content = match.group(2).strip() + "\n"
        return ToolCallRequest(f"call-{position}", "write_file", {"path": match.group(1), "content": content})
    if "list files" in lowered:
        return ToolCallRequest(f"call-{position}", "list_files", {"path": "."})
    if match := _READ.search(prompt):
        return ToolCallRequest(f"call-{position}", "read_file", {"path": match.group(1)})
    return None


def _reply(prompt: str, last: ChatMessage, messages: tuple[ChatMessage, ...]) -> str:
    if last.role == "tool" and _tool_name(messages, last.tool_call_id) == "user_interview":
        return _interview_reply(last.text)
    if last.role == "tool" and _tool_name(messages, last.tool_call_id) == "write_file" and last.text.startswith("Wrote "):
        return f"{last.text}. The work is complete and every test passes."  # a claim: validation decides
    if last.role == "tool" and _tool_name(messages, last.tool_call_id) in ("write_plan", "revise_plan"):
        return f"{last.text}."  # the saved Plan has a message of its own; this is the model's word on it
    if last.role == "tool":
        lines = [line for line in last.text.splitlines() if line]
        return f"The tool returned {len(lines)} lines:\n{last.text}"
    if match := _CHILD_RESULT.match(prompt):
        return f"{match.group(1)} {match.group(2)} the task I handed over. It says: {match.group(3)}"
    return f"You said: {prompt}"


def _tool_name(messages: tuple[ChatMessage, ...], call_id: str | None) -> str:
    """The name of the tool the model called with ``call_id``."""
    calls = (call for message in messages for call in message.tool_calls)
    return next((call.name for call in calls if call.call_id == call_id), "")


def _interview_reply(output: str) -> str:
    """The answers a `user_interview` call received, in order (or how it ended without them)."""
    try:
        result = json.loads(output)
    except ValueError:
        return f"The interview could not take place: {output}"
    listed = "; ".join(f"{n}. {a['answer']}" for n, a in enumerate(result.get("answers", []), 1))
    if result.get("status") == "answered":
        return f"Your answers, in order: {listed}."
    return f"The interview ended without all answers ({result.get('status')})" + (f"; answered so far: {listed}." if listed else ".")


SCRIPTED = ModelInfo(
    id="scripted",
    name="Scripted",
    description="Offline, deterministic; reasons at three levels",
    reasoning_levels=("low", "medium", "high"),
    default_reasoning="medium",
    context_window=CONTEXT_WINDOW,
)
SCRIPTED_FAST = ModelInfo(
    id="scripted-fast",
    name="Scripted (fast)",
    description="Offline, deterministic; does not reason",
    context_window=CONTEXT_WINDOW,
)


@hookimpl
def register_models(register) -> None:
    """Register the two offline models."""
    for info in (SCRIPTED, SCRIPTED_FAST):
        register(info, lambda info=info: ScriptedModel(info))


@hookimpl
def register_providers(register) -> None:
    """``provider = "scripted"`` in ``[models.NAME]``: the scripted model under another name and limits."""

    def build(name: str, entry: ModelConfig) -> ScriptedModel:
        return ScriptedModel(model_info(name, entry, default_window=CONTEXT_WINDOW))

    register("scripted", build)
