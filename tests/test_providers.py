"""The openai and anthropic providers: real pydantic-ai client code against local fake servers, driven by Sessions."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from fakes.anthropic_api import AnthropicFake
from fakes.openai_api import OpenAIFake, Reply, ToolCall
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from runwield_bridge.app import App
from runwield_bridge.config import load_settings
from runwield_bridge.core.catalog import agent_profile
from runwield_bridge.core.context import stable_prefix, volatile_delta
from runwield_bridge.core.events import Event, MessageChunk, Notice, Thought, ToolProgress, TurnSettled, Usage


@pytest_asyncio.fixture
async def openai_fake() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake(model="llama3.1") as fake:
        yield fake


@pytest_asyncio.fixture
async def anthropic_fake() -> AsyncIterator[AnthropicFake]:
    async with AnthropicFake() as fake:
        yield fake


EPHEMERAL = {"type": "ephemeral", "ttl": "5m"}


def closed_port_url() -> str:
    """A local URL where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def model_entry(provider: str, model: str, base_url: str, extra: str = "") -> str:
    return (
        f'[sessions]\nmodel = "local"\n\n[models.local]\nprovider = "{provider}"\nmodel = "{model}"\n'
        f'base_url = "{base_url}"\napi_key = "x"\ncontext_window = 8192\n{extra}'
    )


class Chat:
    """A started app with one Session; ``send`` runs a prompt and returns its settlement and events."""

    def __init__(self, app: App, session_id: str) -> None:
        self.app = app
        self.session_id = session_id

    async def send(self, text: str) -> tuple[TurnSettled, list[Event]]:
        events: list[Event] = []

        async def emit(event: Event) -> None:
            events.append(event)

        settled = await self.app.session_host.prompt(self.session_id, text, emit)
        assert isinstance(settled, TurnSettled)
        return settled, events


@contextlib.asynccontextmanager
async def open_session(tmp_path: Path, config: str) -> AsyncIterator[Chat]:
    """Start the app on ``config`` (a wld.toml) with one Session in ``tmp_path``."""
    (tmp_path / "wld.toml").write_text(config)
    app = await App.start(load_settings(tmp_path / "wld.toml"))
    try:
        record = await app.session_host.create(str(tmp_path))
        yield Chat(app, record.id)
    finally:
        await app.close()


def chunks(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, MessageChunk)]


def usages(events: list[Event]) -> list[Usage]:
    return [e for e in events if isinstance(e, Usage)]


# -- openai (any OpenAI-compatible chat-completions server) -----------------------------------------------


async def test_openai_reply_streams_in_chunks_with_exact_usage(tmp_path: Path, openai_fake: OpenAIFake) -> None:
    openai_fake.model = "gpt-4o"
    openai_fake.queue(Reply(text=("Hello", " from", " the fake"), usage=(42, 7)))
    async with open_session(tmp_path, model_entry("openai", "gpt-4o", openai_fake.base_url)) as chat:
        settled, events = await chat.send("hi")
    assert settled.stop_reason == "end_turn"
    assert chunks(events) == ["Hello", " from", " the fake"]
    [usage] = usages(events)
    assert (usage.used, usage.size) == (49, 8192), "exactly the server's numbers"
    assert usage.cost_usd == 0.0, "a server at an unknown URL is not priced as OpenAI, whatever the model's name"
    call = openai_fake.last_call("chat.completions")
    assert call.headers["Authorization"] == "Bearer x"
    assert (call["model"], call["stream"], call["stream_options"]) == ("gpt-4o", True, {"include_usage": True})
    assert [m for m in call["messages"] if m["role"] == "user"] == [
        {"role": "user", "content": volatile_delta("build", None)},
        {"role": "user", "content": "hi"},
    ], "the context's delta, then the prompt"
    assert {"read_file", "list_files"} <= {t["function"]["name"] for t in call["tools"]}
    assert "reasoning_effort" not in call.params, "a model without reasoning levels gets no effort"


async def test_openai_tool_call_runs_through_our_turn_runner(tmp_path: Path, openai_fake: OpenAIFake) -> None:
    (tmp_path / "notes.txt").write_text("the blue door\n")
    openai_fake.queue(
        Reply(tool_calls=(ToolCall("call_7", "read_file", {"path": "notes.txt"}),), usage=(30, 5)),
        Reply(text=("It says", " the blue door."), usage=(60, 6)),
    )
    async with open_session(tmp_path, model_entry("openai", "llama3.1", openai_fake.base_url)) as chat:
        settled, events = await chat.send("what is in notes.txt?")
    assert settled.stop_reason == "end_turn"
    [done] = [e for e in events if isinstance(e, ToolProgress) and e.status == "completed"]
    assert (done.call_id, done.output) == ("call_7", "the blue door\n")
    assert "".join(chunks(events)) == "It says the blue door."
    assert [u.used for u in usages(events)] == [35, 66]
    first, second = openai_fake.calls_to("chat.completions")
    assistant, tool = second["messages"][-2:]
    assert assistant["tool_calls"] == [
        {"id": "call_7", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"notes.txt"}'}}
    ]
    assert tool == {"role": "tool", "tool_call_id": "call_7", "content": "the blue door\n"}
    assert second["messages"][:-2] == first["messages"]


async def test_openai_second_turn_sends_the_instructions_and_history(tmp_path: Path, openai_fake: OpenAIFake) -> None:
    openai_fake.queue(Reply(text=("Nice", " to meet you")), Reply(text=("Ada",)))
    async with open_session(tmp_path, model_entry("openai", "llama3.1", openai_fake.base_url)) as chat:
        await chat.send("my name is Ada")
        settled, events = await chat.send("what is my name?")
    assert settled.stop_reason == "end_turn" and chunks(events) == ["Ada"]
    system, *conversation = openai_fake.last_call("chat.completions")["messages"]
    assert system == {"role": "system", "content": stable_prefix().instructions}, "the stable prefix's instructions"
    assert agent_profile("build").instructions in system["content"]
    assert conversation == [
        {"role": "user", "content": "my name is Ada"},
        {"role": "assistant", "content": "Nice to meet you"},
        {"role": "user", "content": volatile_delta("build", None)},
        {"role": "user", "content": "what is my name?"},
    ], "the history as it was, the delta only before the newest prompt"


async def test_openai_thinking_streams_and_the_level_is_the_reasoning_effort(
    tmp_path: Path, openai_fake: OpenAIFake
) -> None:
    openai_fake.queue(Reply(thinking=("weighing", " options"), text=("done",)))
    levels = 'reasoning_levels = ["low", "medium", "high"]\n'
    async with open_session(tmp_path, model_entry("openai", "llama3.1", openai_fake.base_url, levels)) as chat:
        settled, events = await chat.send("think")
    assert settled.stop_reason == "end_turn"
    assert "".join(e.text for e in events if isinstance(e, Thought)) == "weighing options"
    assert openai_fake.last_call("chat.completions")["reasoning_effort"] == "medium"


async def test_cancel_mid_stream_settles_and_keeps_the_partial_reply(tmp_path: Path, openai_fake: OpenAIFake) -> None:
    openai_fake.queue(Reply(text=("first", " second", " third"), pause=0.3))
    events: list[Event] = []
    streaming = asyncio.Event()

    async def emit(event: Event) -> None:
        events.append(event)
        if isinstance(event, MessageChunk):
            streaming.set()

    async with open_session(tmp_path, model_entry("openai", "llama3.1", openai_fake.base_url)) as chat:
        turn = asyncio.create_task(chat.app.session_host.prompt(chat.session_id, "go", emit))
        await asyncio.wait_for(streaming.wait(), 60)
        await chat.app.session_host.cancel(chat.session_id)
        settled = await turn
        history = await chat.app.session_host.history(chat.session_id)
    assert isinstance(settled, TurnSettled) and settled.stop_reason == "cancelled"
    assert chunks(events)[0] == "first" and " third" not in chunks(events)
    assert any(isinstance(e, MessageChunk) and e.text.startswith("first") for e in history), "partial reply kept"


async def test_openai_usage_missing_is_not_invented(tmp_path: Path, openai_fake: OpenAIFake) -> None:
    openai_fake.queue(Reply(text=("no numbers",), usage=None))
    async with open_session(tmp_path, model_entry("openai", "llama3.1", openai_fake.base_url)) as chat:
        settled, events = await chat.send("hi")
    assert settled.stop_reason == "end_turn" and chunks(events) == ["no numbers"]
    assert usages(events) == []


async def test_openai_http_error_says_status_and_message(tmp_path: Path, openai_fake: OpenAIFake) -> None:
    openai_fake.api_key = "another-key"
    async with open_session(tmp_path, model_entry("openai", "llama3.1", openai_fake.base_url)) as chat:
        settled, events = await chat.send("hi")
    assert settled.stop_reason == "error"
    assert settled.error == f"{openai_fake.base_url} answered HTTP 401: Incorrect API key provided"
    assert any(isinstance(e, Notice) and e.level == "error" for e in events)


async def test_openai_server_down_settles_with_the_reason(tmp_path: Path) -> None:
    url = closed_port_url() + "/v1"
    async with open_session(tmp_path, model_entry("openai", "llama3.1", url)) as chat:
        settled, _ = await chat.send("hi")
    assert settled.stop_reason == "error"
    assert settled.error == f"could not reach {url}: connection refused"


# -- anthropic ---------------------------------------------------------------------------------------------


async def test_anthropic_streams_thinking_and_text_with_exact_usage_and_price(
    tmp_path: Path, anthropic_fake: AnthropicFake
) -> None:
    anthropic_fake.queue(Reply(thinking=("hmm",), text=("Bonjour", " le monde"), usage=(1200, 300)))
    levels = 'reasoning_levels = ["low", "high"]\n'
    async with open_session(tmp_path, model_entry("anthropic", "claude-haiku-4-5", anthropic_fake.url, levels)) as chat:
        settled, events = await chat.send("salut")
    assert settled.stop_reason == "end_turn"
    assert chunks(events) == ["Bonjour", " le monde"]
    assert [e.text for e in events if isinstance(e, Thought)] == ["hmm"]
    [usage] = usages(events)
    price = calc_price(PriceUsage(input_tokens=1200, output_tokens=300), "claude-haiku-4-5", provider_id="anthropic")
    assert usage.used == 1500
    assert usage.cost_usd == pytest.approx(float(price.total_price)) and usage.cost_usd > 0
    call = anthropic_fake.last_call("messages")
    assert call["model"] == "claude-haiku-4-5"
    delta = {"type": "text", "text": volatile_delta("build", "high")}
    assert call["messages"] == [{"role": "user", "content": [delta, {"type": "text", "text": "salut", "cache_control": EPHEMERAL}]}]
    assert call["thinking"] == {"type": "enabled", "budget_tokens": 16384}, "level high is a 16384-token budget"


async def test_anthropic_tool_result_goes_back(tmp_path: Path, anthropic_fake: AnthropicFake) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    anthropic_fake.queue(
        Reply(tool_calls=(ToolCall("toolu_1", "read_file", {"path": "a.txt"}),)),
        Reply(text=("alpha it is",)),
    )
    async with open_session(tmp_path, model_entry("anthropic", "claude-haiku-4-5", anthropic_fake.url)) as chat:
        settled, events = await chat.send("read a.txt")
    assert settled.stop_reason == "end_turn" and chunks(events) == ["alpha it is"]
    second = anthropic_fake.calls_to("messages")[1]
    [result] = second["messages"][-1]["content"]
    assert (result["type"], result["tool_use_id"]) == ("tool_result", "toolu_1")
    assert "alpha" in str(result["content"])


async def test_anthropic_server_down_settles_with_the_reason(tmp_path: Path) -> None:
    url = closed_port_url()
    async with open_session(tmp_path, model_entry("anthropic", "claude-haiku-4-5", url)) as chat:
        settled, _ = await chat.send("hi")
    assert settled.stop_reason == "error"
    assert settled.error == f"could not reach {url}: connection refused"


# -- configuration and packaging ---------------------------------------------------------------------------


async def test_missing_anthropic_key_names_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = '[sessions]\nmodel = "claude"\n[models.claude]\nprovider = "anthropic"\n'
    async with open_session(tmp_path, config) as chat:
        settled, _ = await chat.send("hi")
    assert settled.stop_reason == "error"
    assert settled.error is not None and settled.error.startswith("models.claude: no API key")
    assert "ANTHROPIC_API_KEY" in settled.error


async def test_an_unknown_anthropic_reasoning_level_is_named(tmp_path: Path, anthropic_fake: AnthropicFake) -> None:
    levels = 'reasoning_levels = ["low", "turbo"]\n'
    async with open_session(tmp_path, model_entry("anthropic", "claude-haiku-4-5", anthropic_fake.url, levels)) as chat:
        settled, _ = await chat.send("hi")
    assert settled.stop_reason == "error"
    assert settled.error is not None
    assert settled.error.startswith("models.local.reasoning_levels: anthropic has no level 'turbo'")
    assert anthropic_fake.calls == []


async def test_missing_extra_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "runwield_bridge.plugins.pydantic_ai_model", raising=False)
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    async with open_session(tmp_path, model_entry("openai", "llama3.1", closed_port_url())) as chat:
        settled, _ = await chat.send("hi")
    assert settled.stop_reason == "error"
    assert settled.error is not None and "pip install 'runwield-bridge[providers]'" in settled.error


def test_loading_plugins_does_not_import_pydantic_ai() -> None:
    code = "import sys, runwield_bridge.plugin_host as h; h.load_plugins(); print('pydantic_ai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


async def test_anthropic_caches_the_stable_prefix_and_counts_cache_tokens(tmp_path: Path, anthropic_fake: AnthropicFake) -> None:
    anthropic_fake.queue(Reply(text=("first",), usage=(50, 10), cache=(0, 3000)), Reply(text=("second",), usage=(60, 10), cache=(3000, 40)))
    async with open_session(tmp_path, model_entry("anthropic", "claude-haiku-4-5", anthropic_fake.url)) as chat:
        _, first_events = await chat.send("hello")
        _, events = await chat.send("and again")
    first, second = anthropic_fake.calls_to("messages")
    for call in (first, second):
        assert call["system"] == [{"type": "text", "text": stable_prefix().instructions, "cache_control": EPHEMERAL}]
        assert call["tools"][-1]["cache_control"] == EPHEMERAL, "a breakpoint after the tool definitions"
    assert (first["system"], first["tools"]) == (second["system"], second["tools"]), "the cached prefix is byte-stable"
    [usage] = usages(events)
    assert usage.used == 60 + 3000 + 40 + 10, "cache reads and writes count in the context"
    price = calc_price(
        PriceUsage(input_tokens=3100, cache_read_tokens=3000, cache_write_tokens=40, output_tokens=10), "claude-haiku-4-5", provider_id="anthropic"
    )
    [before] = usages(first_events)
    assert usage.cost_usd == pytest.approx(before.cost_usd + float(price.total_price)), "and in the cost, at their prices"
