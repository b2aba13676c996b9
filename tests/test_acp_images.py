"""Image prompts over `wld acp`: a vision model receives the image; a text-only model with `vision_fallback` gets a
saved attachment reference and `see_image`, which asks the vision model; without a fallback, a clear error."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from acp_wire import WireClient
from fakes.openai_api import OpenAIFake, Reply, ToolCall
from runwield_bridge.app import App
from runwield_bridge.config import ConfigError, load_settings
from test_acp_server import INIT, WLD, text_prompt, updates

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
IMAGE_BLOCK = {"type": "image", "mimeType": "image/png", "data": base64.b64encode(PNG).decode()}


@pytest_asyncio.fixture
async def fakes() -> AsyncIterator[tuple[OpenAIFake, OpenAIFake]]:
    """A vision model's server and a text-only model's server."""
    async with OpenAIFake(model="eyes-1") as eyes, OpenAIFake(model="words-1") as words:
        yield eyes, words


@pytest.fixture
def eyes(fakes: tuple[OpenAIFake, OpenAIFake]) -> OpenAIFake:
    return fakes[0]


@pytest.fixture
def words(fakes: tuple[OpenAIFake, OpenAIFake]) -> OpenAIFake:
    return fakes[1]


def config(default: str, eyes: OpenAIFake, words: OpenAIFake, fallback: str | None) -> str:
    sessions = f'[sessions]\nmodel = "{default}"\n' + (f'vision_fallback = "{fallback}"\n' if fallback else "")
    models = [
        f'[models.{name}]\nprovider = "openai"\nmodel = "{fake.model}"\nbase_url = "{fake.base_url}"\napi_key = "x"\n{extra}'
        for name, fake, extra in (("eyes", eyes, "vision = true\n"), ("words", words, ""))
    ]
    return "\n".join([sessions, *models])


@contextlib.asynccontextmanager
async def wld_acp(tmp_path: Path, toml: str) -> AsyncIterator[tuple[WireClient, dict, str]]:
    """`wld acp` with this wld.toml: its initialize answer and a new Session."""
    (tmp_path / "wld.toml").write_text(toml)
    env = {"WLD_CONFIG": str(tmp_path / "wld.toml"), "WLD_HOME": str(tmp_path / "home")}
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env=env) as client:
        init = await client.call("initialize", INIT)
        session = await client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        yield client, init, session["sessionId"]


def image_prompt(session_id: str, text: str) -> dict:
    return {**text_prompt(session_id, text), "prompt": [{"type": "text", "text": text}, IMAGE_BLOCK]}


def sent_images(call: dict) -> list[str]:
    """The image URLs in a chat-completions request's messages."""
    return [
        part["image_url"]["url"]
        for message in call["messages"]
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


async def test_a_vision_model_receives_the_image(tmp_path: Path, eyes: OpenAIFake, words: OpenAIFake) -> None:
    eyes.queue(Reply(text=("A single pixel.",)))
    async with wld_acp(tmp_path, config("eyes", eyes, words, None)) as (client, init, session_id):
        assert init["agentCapabilities"]["promptCapabilities"]["image"] is True
        assert await client.call("session/prompt", image_prompt(session_id, "what is this?")) == {"stopReason": "end_turn"}
    [call] = eyes.calls_to("chat.completions")
    assert sent_images(call) == [f"data:image/png;base64,{IMAGE_BLOCK['data']}"]
    assert words.calls == []


async def test_a_text_only_model_asks_the_fallback_through_see_image(tmp_path: Path, eyes: OpenAIFake, words: OpenAIFake) -> None:
    async with wld_acp(tmp_path, config("words", eyes, words, "eyes")) as (client, init, session_id):
        assert init["agentCapabilities"]["promptCapabilities"]["image"] is True
        [saved] = list((tmp_path / "home").rglob("img-*.png")) or [None]
        assert saved is None  # nothing is saved before a prompt brings an image
        words.queue(Reply(text=("Let me look.",)))
        await client.call("session/prompt", image_prompt(session_id, "what is this?"))
        [saved] = list((tmp_path / "home").rglob("img-*.png"))
        assert saved.read_bytes() == PNG and session_id in str(saved)
        first = words.calls_to("chat.completions")[0]
        assert sent_images(first) == []
        assert saved.name in first["messages"][-1]["content"]
        assert "see_image" in [tool["function"]["name"] for tool in first["tools"]]
        words.queue(
            Reply(tool_calls=(ToolCall("call_1", "see_image", {"image": saved.name, "question": "What colour?"}),)),
            Reply(text=("It is a tiny pixel.",)),
        )
        eyes.queue(Reply(text=("One transparent pixel.",)))
        await client.call("session/prompt", text_prompt(session_id, "look at it"))
        [asked] = eyes.calls_to("chat.completions")
        assert sent_images(asked) == [f"data:image/png;base64,{IMAGE_BLOCK['data']}"]
        assert "What colour?" in json.dumps(asked["messages"])
        tool_result = words.calls_to("chat.completions")[-1]["messages"][-1]
        assert tool_result["role"] == "tool" and tool_result["content"] == "One transparent pixel."


async def test_without_a_fallback_a_text_only_model_refuses_images_clearly(tmp_path: Path, eyes: OpenAIFake, words: OpenAIFake) -> None:
    async with wld_acp(tmp_path, config("words", eyes, words, None)) as (client, _, session_id):
        response = await client.request("session/prompt", image_prompt(session_id, "what is this?"))
        assert response["error"]["code"] == -32602
        assert "cannot see images" in response["error"]["data"]["details"]
        assert "vision_fallback" in response["error"]["data"]["details"]
        assert updates(client, session_id, "user_message_chunk") == []
        assert list((tmp_path / "home").rglob("img-*")) == []
        words.queue(Reply(text=("Fine.",)))
        assert await client.call("session/prompt", text_prompt(session_id, "then just talk")) == {"stopReason": "end_turn"}
    assert words.calls_to("chat.completions") and eyes.calls == []


async def test_no_vision_model_means_no_image_capability(tmp_path: Path) -> None:
    async with wld_acp(tmp_path, "") as (client, init, session_id):
        assert init["agentCapabilities"]["promptCapabilities"]["image"] is False


@pytest.mark.parametrize(
    ("fallback", "problem"), [("nope", "unknown model 'nope'"), ("words", "the model 'words' cannot see images")]
)
async def test_a_fallback_that_cannot_see_is_a_configuration_error(
    tmp_path: Path, eyes: OpenAIFake, words: OpenAIFake, fallback: str, problem: str
) -> None:
    (tmp_path / "wld.toml").write_text(f'home = "{tmp_path / "home"}"\n' + config("words", eyes, words, fallback))
    with pytest.raises(ConfigError, match=f"sessions.vision_fallback: {problem}"):
        await App.start(load_settings(tmp_path / "wld.toml"))
    assert not (tmp_path / "home").exists()  # nothing was created
