"""The external plugin package under plugins/: installed through its entry point, it works end to end in `wld`,
and it imports nothing from runwield_bridge but the public API."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

import runwield_bridge
from tests.test_chat_cli import Chat, no_chat_left_running  # noqa: F401  (autouse: kills a chat a failed test left running)
from tests.wld_process import run_wld

REPO = Path(__file__).resolve().parent.parent
PLUGINS = REPO / "plugins"
INSTALL = "pip install -e ./plugins/wld-tiny-model (as .ci/run and README.md's test command do)"


def installed_entry_point() -> importlib.metadata.EntryPoint:
    """The tiny model's entry point; the test fails (never skips) when the package is not installed."""
    found = [ep for ep in importlib.metadata.entry_points(group="runwield_bridge") if ep.dist and ep.dist.name == "wld-tiny-model"]
    if not found:
        pytest.fail(f"the wld-tiny-model plugin is not installed; {INSTALL}")
    return found[0]


async def test_wld_plugins_finds_the_installed_package_through_its_entry_point() -> None:
    entry_point = installed_entry_point()
    listed = await run_wld("plugins")
    assert listed.returncode == 0, listed.stderr
    assert f"{entry_point.name}  (entry point wld_tiny_model (wld-tiny-model 0.1.0))  hooks: register_models, register_providers" in listed.stdout


async def test_the_plugins_model_and_a_model_of_its_provider_answer_in_wld_chat(tmp_path: Path) -> None:
    installed_entry_point()
    config = tmp_path / "wld.toml"
    config.write_text('[sessions]\nmodel = "backwards"\n[models.backwards]\nprovider = "tiny"\nmodel = "Backwards"\n')
    chat = await Chat.start("--config", str(config), cwd=tmp_path)
    await chat.send("one two three")
    await chat.expect(r"Backwards says: three two one")
    await chat.send("/model tiny")
    await chat.expect(r"Model: tiny\.")
    await chat.send("red green blue")
    await chat.expect(r"Tiny says: blue green red")
    assert await chat.finish() == 0


def plugin_modules() -> list[Path]:
    return sorted(p for p in PLUGINS.rglob("*.py") if ".egg-info" not in str(p))


def declared_imports(package: Path) -> set[str]:
    """The import names a plugin package may use: its own modules and its declared dependencies (but runwield_bridge)."""
    project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
    dependencies = {re.match(r"[A-Za-z0-9._-]+", req).group() for req in project.get("dependencies", [])}  # type: ignore[union-attr]
    own = {p.stem for p in package.glob("*.py")} | {p.parent.name for p in package.glob("*/__init__.py")}
    return own | {d.replace("-", "_").lower() for d in dependencies} - {"runwield_bridge"}


def private_uses(source: str, allowed: set[str]) -> list[str]:
    """What a module imports that is neither runwield_bridge's public API, the standard library nor in ``allowed``."""
    public = set(runwield_bridge.__all__)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "runwield_bridge":
            found += [f"runwield_bridge.{a.name}" for a in node.names if a.name not in public]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found += [] if (node.module or "").split(".")[0] in sys.stdlib_module_names | allowed else [str(node.module)]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name != "runwield_bridge" and a.name.split(".")[0] not in sys.stdlib_module_names | allowed]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "runwield_bridge":
            found += [] if node.attr in public else [f"runwield_bridge.{node.attr}"]
    return found


@pytest.mark.parametrize(
    "source",
    [
        "from runwield_bridge.hookspecs import hookimpl",
        "from runwield_bridge import PluginHost",
        "import runwield_bridge.core.models",
        "import runwield_bridge\nrunwield_bridge.plugin_host.load_plugins()",
        "import pydantic_ai",
    ],
)
def test_the_import_check_catches_internal_and_undeclared_imports(source: str) -> None:
    assert private_uses(source, {"wld_tiny_model"}), f"not caught: {source!r}"


@pytest.mark.parametrize("module", plugin_modules(), ids=lambda p: str(p.relative_to(PLUGINS)))
def test_plugin_packages_import_only_the_public_api(module: Path) -> None:
    package = PLUGINS / module.relative_to(PLUGINS).parts[0]
    assert private_uses(module.read_text(), declared_imports(package)) == []


def test_there_is_a_plugin_package_to_check() -> None:
    assert plugin_modules(), "plugins/ holds no plugin package"


def test_every_name_of_the_public_api_is_there_and_only_those() -> None:
    """``runwield_bridge.__all__`` and ``plugin_api``, where its names are loaded from on first use, agree."""
    from runwield_bridge import plugin_api

    defined = {name for name in vars(plugin_api) if not name.startswith("_")}
    assert set(runwield_bridge.__all__) == defined
    assert all(getattr(runwield_bridge, name) is getattr(plugin_api, name) for name in runwield_bridge.__all__)
    with pytest.raises(AttributeError, match="has no attribute 'internal_thing'"):
        runwield_bridge.internal_thing  # noqa: B018
