"""The real coding agents from node_modules (pinned in package.json), each against a local fake of its provider."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakes.anthropic_api import AnthropicFake
from fakes.gemini_api import GeminiFake
from fakes.openai_api import OpenAIFake, ScriptedLLMFake, ToolCall
from fakes.openai_responses import OpenAIResponsesFake

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / "node_modules" / ".bin"
KEY = "sk-test"


def suggestion(body: dict[str, Any]) -> bool:
    """Whether a request asks the model for the person's next prompt (Qwen Code and Claude send one after a turn)."""
    return "Reply with ONLY the suggestion" in json.dumps(body["messages"][-1])


def qwen_main_request(body: dict[str, Any]) -> bool:
    """Whether a request is Qwen Code's own turn (it offers its ``agent`` tool), not its memory agent's or its
    next-prompt suggestion (side requests that get the fake's default answer)."""
    tools = {tool["function"]["name"] for tool in body.get("tools") or ()}
    return "agent" in tools and not suggestion(body)


@dataclass(frozen=True)
class RealAgent:
    """One real agent: how it is started, its provider's fake, and how it writes a file when told to."""

    id: str
    name: str
    goes_on_after_reject: bool = False
    """Whether a rejected tool call goes back to the model (Qwen Code 0.15, Claude, Gemini) rather than ending the turn."""

    def command(self, fake: ScriptedLLMFake) -> list[str]:
        raise NotImplementedError

    def fake(self) -> ScriptedLLMFake:
        raise NotImplementedError

    def env(self, home: Path, fake: ScriptedLLMFake) -> dict[str, str]:
        return {"HOME": str(home), "OPENAI_API_KEY": KEY}

    def write(self, call_id: str, cwd: Path, name: str, text: str) -> ToolCall:
        raise NotImplementedError

    def bus_call(self, call_id: str, tool: str, arguments: dict[str, Any]) -> ToolCall:
        """A call of RunWield's ``tool`` on the MCP bus (server ``runwield``), named as the agent offers it to its model."""
        return ToolCall(call_id, f"mcp__runwield__{tool}", arguments)

    def bus_ready(self, home: Path) -> dict[str, str]:
        """What else the agent needs (in ``home``, and in its environment, returned) for RunWield's tools on the MCP bus
        to be declared to its model from the first prompt on."""
        return {}

    def section(self, home: Path, fake: ScriptedLLMFake, tools: tuple[str, ...] | list[str] = ()) -> dict[str, Any]:
        """``[agents.NAME]`` as a dict (for ``wld_process.write_config``; its HOME made here), with RunWield's
        ``tools`` on its MCP bus when any are named."""
        home.mkdir(exist_ok=True)
        if not tools:
            return {"command": self.command(fake), "env": self.env(home, fake)}
        return {"command": self.command(fake), "env": {**self.env(home, fake), **self.bus_ready(home)}, "tools": list(tools)}

    def shown_id(self, call_id: str) -> str:
        """The id under which the agent shows the model's tool call ``call_id``."""
        return call_id

    def other_model(self, home: Path, fake: ScriptedLLMFake) -> str:
        """A model the agent offers besides the fake's (set up in ``home`` if need be), named as its provider gets it."""
        raise NotImplementedError

    def config(self, home: Path, fake: ScriptedLLMFake, extra: str = "") -> str:
        """wld.toml with this agent as the runtime of new Sessions."""
        section = self.section(home, fake)
        env = ", ".join(f"{key} = {json.dumps(value)}" for key, value in section["env"].items())
        return (
            f'[sessions]\nruntime = "acp:{self.name}"\n\n[agents.{self.name}]\n'
            f"command = {json.dumps(section['command'])}\nenv = {{ {env} }}\n{extra}"
        )


@dataclass(frozen=True)
class Qwen(RealAgent):
    """Qwen Code over OpenAI chat completions (``OPENAI_BASE_URL``)."""

    start: tuple[str, ...] = ()
    """The command that starts it, before ``--acp``."""

    def command(self, fake: ScriptedLLMFake) -> list[str]:
        return [*self.start, "--acp"]

    def fake(self) -> ScriptedLLMFake:
        return OpenAIFake(api_key=KEY, scripted=qwen_main_request)

    def env(self, home: Path, fake: ScriptedLLMFake) -> dict[str, str]:
        assert isinstance(fake, OpenAIFake)
        return {**super().env(home, fake), "OPENAI_BASE_URL": fake.base_url, "OPENAI_MODEL": fake.model}

    def write(self, call_id: str, cwd: Path, name: str, text: str) -> ToolCall:
        return ToolCall(call_id, "write_file", {"file_path": str(cwd / name), "content": text})

    def bus_ready(self, home: Path) -> dict[str, str]:
        """MCP tools declared to the model, not found through its tool search; session/new waits for the servers
        (Qwen Code otherwise discovers them in the background, after the first prompt may have gone out)."""
        qwen_settings(home, tools={"toolSearch": {"enabled": False}})
        return {"QWEN_CODE_LEGACY_MCP_BLOCKING": "1"}

    def other_model(self, home: Path, fake: ScriptedLLMFake) -> str:
        models = [{"id": model, "name": model, "baseUrl": fake.base_url, "envKey": "OPENAI_API_KEY"} for model in (fake.model, "other-model")]
        qwen_settings(home, modelProviders={"openai": models})  # its choices are then "MODEL(openai)"
        return "other-model"


def qwen_settings(home: Path, **entries: Any) -> None:
    """Add ``entries`` to Qwen Code's ``settings.json`` in ``home``."""
    path = home / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    path.write_text(json.dumps({**settings, **entries}), encoding="utf-8")


@dataclass(frozen=True)
class Codex(RealAgent):
    """Codex (``codex-acp``) over the OpenAI Responses API, as a custom provider; no sandbox here (no bubblewrap)."""

    def command(self, fake: ScriptedLLMFake) -> list[str]:
        assert isinstance(fake, OpenAIResponsesFake)
        provider = f'{{name="fake", base_url="{fake.base_url}", env_key="OPENAI_API_KEY", wire_api="responses"}}'
        settings = ['sandbox_mode="danger-full-access"', 'model_provider="fake"', f"model_providers.fake={provider}", f'model="{fake.model}"']
        return [str(BIN / "codex-acp"), *(part for setting in settings for part in ("-c", setting))]

    def fake(self) -> ScriptedLLMFake:
        return OpenAIResponsesFake(api_key=KEY, model="gpt-5.4")

    def env(self, home: Path, fake: ScriptedLLMFake) -> dict[str, str]:
        return {**super().env(home, fake), "CODEX_HOME": str(home)}

    def write(self, call_id: str, cwd: Path, name: str, text: str) -> ToolCall:
        return ToolCall(call_id, "exec_command", {"cmd": f"printf {text} > {name}"})

    def other_model(self, home: Path, fake: ScriptedLLMFake) -> str:
        return "gpt-5.2"  # among the models it knows of itself

    def bus_call(self, call_id: str, tool: str, arguments: dict[str, Any]) -> ToolCall:
        return ToolCall(call_id, tool, arguments, namespace="mcp__runwield")  # an MCP server's tools are a namespace


@dataclass(frozen=True)
class Claude(RealAgent):
    """Claude Agent (``claude-agent-acp``) over Anthropic Messages (``ANTHROPIC_BASE_URL``); its side requests (a
    session title, with no tools, and at times a next-prompt suggestion) get the fake's default answer."""

    def command(self, fake: ScriptedLLMFake) -> list[str]:
        return [str(BIN / "claude-agent-acp")]

    def fake(self) -> ScriptedLLMFake:
        return AnthropicFake(api_key=KEY, scripted=lambda body: bool(body.get("tools")) and not suggestion(body))

    def env(self, home: Path, fake: ScriptedLLMFake) -> dict[str, str]:
        return {"HOME": str(home), "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.url}

    def write(self, call_id: str, cwd: Path, name: str, text: str) -> ToolCall:
        return ToolCall(call_id, "Write", {"file_path": str(cwd / name), "content": text})


@dataclass(frozen=True)
class Gemini(RealAgent):
    """Gemini CLI (``gemini --acp``, its model named so it does not route between models) over the Gemini API
    (``GOOGLE_GEMINI_BASE_URL``)."""

    def command(self, fake: ScriptedLLMFake) -> list[str]:
        return [str(BIN / "gemini"), "--acp", "--model", fake.model]

    def fake(self) -> ScriptedLLMFake:
        return GeminiFake(api_key=KEY)

    def env(self, home: Path, fake: ScriptedLLMFake) -> dict[str, str]:
        return {"HOME": str(home), "GEMINI_API_KEY": KEY, "GOOGLE_GEMINI_BASE_URL": fake.url}

    def write(self, call_id: str, cwd: Path, name: str, text: str) -> ToolCall:
        return ToolCall(call_id, "write_file", {"file_path": str(cwd / name), "content": text})

    def shown_id(self, call_id: str) -> str:
        return f"write_file__{call_id}"


@dataclass(frozen=True)
class OpenCode(RealAgent):
    """OpenCode (``opencode acp``) over OpenAI chat completions, as a custom provider in its config file (no models
    fetched, no update check); its side requests (a session title) carry no tools and get the default answer."""

    def command(self, fake: ScriptedLLMFake) -> list[str]:
        return [str(BIN / "opencode"), "acp"]

    def fake(self) -> ScriptedLLMFake:
        return OpenAIFake(api_key=KEY, scripted=lambda body: bool(body.get("tools")))

    def env(self, home: Path, fake: ScriptedLLMFake) -> dict[str, str]:
        assert isinstance(fake, OpenAIFake)
        provider = {"npm": "@ai-sdk/openai-compatible", "name": "Fake", "options": {"baseURL": fake.base_url, "apiKey": KEY},
                    "models": {fake.model: {"name": fake.model}}}  # fmt: skip
        config = {"autoupdate": False, "share": "disabled", "provider": {"fake": provider}, "model": f"fake/{fake.model}"}
        (home / "opencode.json").write_text(json.dumps(config))
        return {"HOME": str(home), "OPENCODE_CONFIG": str(home / "opencode.json"), "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_AUTOUPDATE": "1"}  # fmt: skip

    def write(self, call_id: str, cwd: Path, name: str, text: str) -> ToolCall:
        return ToolCall(call_id, "write", {"filePath": str(cwd / name), "content": text})


def node() -> str:
    found = shutil.which("node")
    assert found, "the real agents need node"
    return found


CODEX = Codex("codex", "codex")
QWEN = Qwen("qwen-0.24", "qwen", start=(str(BIN / "qwen"),))
QWEN_015 = Qwen("qwen-0.15", "qwen", True, (node(), str(REPO / "node_modules" / "qwen-code-0.15" / "cli.js")))
CLAUDE = Claude("claude", "claude", goes_on_after_reject=True)
GEMINI = Gemini("gemini", "gemini", goes_on_after_reject=True)
OPENCODE = OpenCode("opencode", "opencode")
AGENTS = [CODEX, QWEN, QWEN_015, CLAUDE, GEMINI, OPENCODE]


def menu_choice(menu: str, label: str) -> str:
    """The number of the menu line whose option is ``label`` (its description, after " — ", aside)."""
    found = re.search(rf"^\s*(\d+)\. {re.escape(label)}(?: — .*)?$", menu, re.MULTILINE)
    assert found, menu
    return found.group(1)
