"""The plugin host: built-ins, entry points, allow/block lists, failures named, hooks documented."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from runwield_bridge import hookspecs
from runwield_bridge.cli import main
from runwield_bridge.host import CORE_PLUGIN, DEFAULT_PLUGINS, load_plugins

REPO = Path(__file__).resolve().parent.parent


def make_distribution(root: Path, name: str, module_source: str) -> None:
    """Install a tiny distribution with a `runwield_bridge` entry point onto a path entry."""
    (root / f"{name}.py").write_text(module_source)
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[runwield_bridge]\n{name} = {name}\n")


GOOD_PLUGIN = '''
from runwield_bridge.hookspecs import hookimpl
from runwield_bridge.core.models import ModelInfo
from runwield_bridge.plugins.scripted import ScriptedModel

@hookimpl
def register_models(register):
    info = ModelInfo(id="echo-plugin", name="Echo plugin", context_window=100)
    register(info, lambda: ScriptedModel(info))
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
    return [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("register_")]


@pytest.mark.parametrize("hook", hook_names())
def test_every_hook_is_documented_and_tested(hook: str) -> None:
    assert f"`{hook}`" in (REPO / "docs" / "plugins.md").read_text(), f"{hook} is not in docs/plugins.md"
    tests = "".join(p.read_text() for p in (REPO / "tests").glob("test_*.py") if p.name != "test_plugins.py")
    assert hook in tests or hook in GOOD_PLUGIN, f"no test exercises {hook}"
