"""The plugin host: built-ins, entry points, allow/block lists, failures named, hooks documented."""

from __future__ import annotations

import ast
import inspect
import re
import types
from pathlib import Path

import pytest

from runwield_bridge import Command, ModelInfo, Tool, ToolSpec, hookimpl, hookspecs
from runwield_bridge.channels import telegram
from runwield_bridge.cli import main
from runwield_bridge.core.commands import CommandRegistry
from runwield_bridge.plugin_host import CORE_PLUGIN, DEFAULT_PLUGINS, PluginHost, load_plugins
from tests.test_plugin_package import private_uses

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs" / "plugins.md"


def make_distribution(root: Path, name: str, module_source: str) -> None:
    """Install a tiny distribution with a `runwield_bridge` entry point onto a path entry."""
    (root / f"{name}.py").write_text(module_source)
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[runwield_bridge]\n{name} = {name}\n")


GOOD_PLUGIN = '''
from runwield_bridge import ModelInfo, hookimpl

@hookimpl
def register_models(register):
    register(ModelInfo(id="echo-plugin", name="Echo plugin", context_window=100), lambda: None)  # never built here
'''


def test_builtins_load_and_register_the_scripted_models() -> None:
    host = load_plugins()
    assert {p.name for p in host.loaded} >= set(DEFAULT_PLUGINS)
    ids = {info.id for info, _ in host.models()}
    assert {"scripted", "scripted-fast"} <= ids


def test_entry_point_plugin_loads_and_a_broken_one_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_distribution(tmp_path, "wld_good_plugin", GOOD_PLUGIN)
    make_distribution(tmp_path, "wld_broken_plugin", "raise RuntimeError('boom at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    host = load_plugins()
    assert "echo-plugin" in {info.id for info, _ in host.models()}
    [failed] = [f for f in host.failed if f.name == "wld_broken_plugin"]
    assert "boom at import" in failed.error
    assert "scripted" in {info.id for info, _ in host.models()}


def test_wld_plugins_lists_sources_and_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    make_distribution(tmp_path, "wld_good_plugin", GOOD_PLUGIN)
    make_distribution(tmp_path, "wld_broken_plugin", "raise RuntimeError('boom at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["plugins"]) == 1
    out = capsys.readouterr().out
    assert "runwield_bridge.plugins.scripted  (built-in)  hooks: register_models" in out
    assert "wld_good_plugin  (entry point wld_good_plugin (wld_good_plugin 1.0))" in out
    assert "wld_broken_plugin" in out and "FAILED: RuntimeError: boom at import" in out


def test_block_list_and_allow_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_distribution(tmp_path, "wld_good_plugin", GOOD_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    blocked = load_plugins(block=["wld_good_plugin"])
    assert "wld_good_plugin" in blocked.blocked
    assert "echo-plugin" not in {info.id for info, _ in blocked.models()}
    allowed = load_plugins(allow=["scripted"], block=["builtins"])
    assert [p.name for p in allowed.loaded] == [CORE_PLUGIN, "runwield_bridge.plugins.scripted"], "the core's own plugin always loads"
    assert {"read_file", "user_interview"} <= {tool.spec.name for tool in allowed.tools()}


def hook_names() -> list[str]:
    return [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(fn, "runwield_bridge_spec")]


def doc_sections() -> dict[str, str]:
    """docs/plugins.md's sections by heading (backticks dropped), each with its text up to the next heading."""
    sections: dict[str, str] = {}
    current, fenced = "", False
    for line in DOCS.read_text().splitlines():
        fenced ^= line.startswith("```")
        if not fenced and (heading := re.match(r"#+\s+(.+)", line)):
            current = heading.group(1).strip().strip("`")
            sections[current] = ""
        elif current:
            sections[current] += line + "\n"
    return sections


def python_examples(section: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def callers_of(method: str) -> list[str]:
    """Test functions that call ``host.METHOD()`` on a PluginHost they made with ``load_plugins`` or ``PluginHost``."""
    found = []
    for path in sorted((REPO / "tests").glob("test_*.py")):
        for test in ast.walk(ast.parse(path.read_text())):
            if not isinstance(test, (ast.FunctionDef, ast.AsyncFunctionDef)) or not test.name.startswith("test_"):
                continue
            hosts = {
                target.id
                for node in ast.walk(test)
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) in {"load_plugins", "PluginHost"}
                for target in node.targets
                if isinstance(target, ast.Name)
            }
            calls = (n.func for n in ast.walk(test) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute))
            if any(call.attr == method and isinstance(call.value, ast.Name) and call.value.id in hosts for call in calls):
                found.append(f"{path.name}::{test.name}")
    return found


@pytest.mark.parametrize("hook", hook_names())
def test_every_hook_has_a_manager_method_its_own_documented_entry_and_a_test_that_calls_it(hook: str) -> None:
    method = hook.removeprefix("register_")
    assert callable(getattr(PluginHost, method, None)), f"PluginHost has no typed method {method}() for {hook}"
    section = doc_sections().get(hook)
    assert section is not None, f"docs/plugins.md has no heading for {hook}"
    assert any(f"def {hook}(" in example for example in python_examples(section)), f"docs/plugins.md shows no example of {hook}"
    assert callers_of(method), f"no test calls {hook} (through a PluginHost's {method}())"


DOCUMENTED = {"register_models": "echo", "register_providers": "echo", "register_tools": "count_lines", "register_commands": "deploy", "register_channels": "matrix"}


@pytest.mark.parametrize("hook", hook_names())
def test_each_documented_example_registers_through_the_public_api(hook: str) -> None:
    sections = doc_sections()
    examples = [code for name in hook_names() for code in python_examples(sections[name])]
    for code in examples:
        assert private_uses(code, set()) == [], code
    plugin = types.ModuleType("docs_examples")
    for code in examples:
        exec(compile(code, "docs/plugins.md", "exec"), plugin.__dict__)
    host = load_plugins()
    host.register(plugin, "docs_examples")
    registered = getattr(host, hook.removeprefix("register_"))()
    names = {registered_name(item) for item in registered}
    assert DOCUMENTED[hook] in names


def registered_name(item: object) -> str:
    """The name a registration goes by: a model's id, a tool's or command's name, or a provider's or channel's key."""
    match item:
        case (info, _):
            return info.id
        case Tool():
            return item.spec.name
        case Command():
            return item.name
        case str():
            return item
    raise AssertionError(f"unexpected registration {item!r}")


async def noop(ctx: object, args: str) -> None:
    return None


class ClashingPlugin:
    """Registers one new thing and one built-in name through every hook."""

    @hookimpl
    def register_models(self, register) -> None:
        for model_id in ("scripted", "mine"):
            register(ModelInfo(id=model_id, name=f"Plugin's {model_id}"), lambda: None)

    @hookimpl
    def register_providers(self, register) -> None:
        for name in ("openai", "mine"):
            register(name, lambda name, entry: None)

    @hookimpl
    def register_tools(self, register) -> None:
        for name in ("read_file", "mine"):
            register(Tool(ToolSpec(name, "the plugin's", {"type": "object"}), "other", noop))

    @hookimpl
    def register_commands(self, register) -> None:
        for name in ("help", "mine"):
            register(Command(name, "the plugin's", noop))

    @hookimpl
    def register_channels(self, register) -> None:
        for name in ("telegram", "mine"):
            register(name, lambda section, context: None)


def test_built_ins_keep_their_names_and_plugin_registrations_are_named_after_their_plugin(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    host = load_plugins()
    host.register(ClashingPlugin(), "clashing")
    models = {info.id: info for info, _ in host.models()}
    assert models["scripted"].name == "Scripted" and "mine" in models
    providers = host.providers()
    assert providers["openai"].__module__ == "runwield_bridge.plugins.providers" and "mine" in providers
    tools = {tool.spec.name: tool for tool in host.tools()}
    assert tools["read_file"].spec.description != "the plugin's" and "mine" in tools
    commands = {command.name: command for command in CommandRegistry(host.commands()).commands(tmp_path)}
    assert commands["help"].description == "List the commands"
    assert (commands["mine"].source, commands["help"].source) == ("plugin clashing", "built-in")
    channels = host.channels()
    assert channels["telegram"] is telegram.build and "mine" in channels
    assert "provider 'openai' from plugin clashing ignored: plugin runwield_bridge.plugins.providers registered it first" in caplog.text
    assert "channel 'telegram' from plugin clashing ignored: plugin runwield_bridge.channels.telegram registered it first" in caplog.text
