"""The package's import graph: no circles (TYPE_CHECKING and function-level imports included), and every
import goes the way docs/architecture.md draws it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import runwield_bridge

ROOT = Path(runwield_bridge.__file__).parent
PLATFORMS = ("console", "telegram", "discord", "slack")
COMPOSITION = {"app", "cli", "doctor"}
"""The composition root: the only modules that may wire every layer together."""

FORBIDDEN: dict[str, set[str]] = {
    "core": {"acp", "bridge", "channels", "platform", "web", "runtimes", "plugins", "plugin_host", *COMPOSITION},
    "acp": {"bridge", "channels", "platform", "web", *COMPOSITION},
    "runtimes": {"bridge", "channels", "platform", "web", *COMPOSITION},
    "plugins": {"acp", "bridge", "channels", "platform", "web", *COMPOSITION},
    "web": {"bridge", "channels", "platform", *COMPOSITION},
    "bridge": {"core", "platform", *COMPOSITION},
    "channels": {"core", "bridge", "platform", "web", *COMPOSITION},
    "platform": {"core", "acp", "bridge", "web", "runtimes", "plugins", *COMPOSITION},
}
"""Per layer, the layers it must not import. ``channels`` is the channel kit; ``platform``, its per-platform packages."""


def module_name(path: Path) -> str:
    parts = ["runwield_bridge", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in ROOT.rglob("*.py")}


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every runwield_bridge module ``name`` imports anywhere in its file (top level, TYPE_CHECKING, functions)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            target = ".".join(part for part in (base, node.module or "") if part)
            candidates = [target, *(f"{target}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        found |= {candidate for candidate in candidates if candidate in known and candidate != name}
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """The package's graph, built in a fresh interpreter: in a process where an earlier test hit a RecursionError,
    CPython 3.11's ast.parse can fail with "AST constructor recursion depth mismatch"."""
    done = subprocess.run([sys.executable, __file__], capture_output=True, text=True, check=True)
    return {name: set(targets) for name, targets in json.loads(done.stdout).items()}


def layer(name: str) -> str:
    """The layer of a module: its folder under runwield_bridge (channels split into the kit and the platforms), or its own name."""
    parts = name.split(".")[1:]
    if not parts:
        return "api"
    if parts[0] == "channels" and len(parts) > 1 and parts[1] in PLATFORMS:
        return "platform"
    return parts[0]


def platform_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if layer(name) == "platform" else None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def wrong_way(graph: dict[str, set[str]]) -> list[str]:
    """Imports against the layer directions, and platform packages reaching into each other."""
    problems = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            if layer(target) in FORBIDDEN.get(layer(source), set()):
                problems.append(f"{source} ({layer(source)}) imports {target} ({layer(target)})")
            elif platform_of(source) and platform_of(target) and platform_of(source) != platform_of(target):
                problems.append(f"{source} imports another platform's {target}")
    return problems


def test_imports_under_type_checking_and_inside_functions_count(tmp_path: Path) -> None:
    source = tmp_path / "a.py"
    source.write_text(
        "from typing import TYPE_CHECKING\nfrom . import b\nif TYPE_CHECKING:\n    from .c import C\n"
        "def f():\n    from ..top import d\n    import pkg.sub.e\n"
    )
    known = {name: source for name in ("pkg.sub.a", "pkg.sub.b", "pkg.sub.c", "pkg.top", "pkg.sub.e")}
    assert imported("pkg.sub.a", source, known) == {"pkg.sub.b", "pkg.sub.c", "pkg.top", "pkg.sub.e"}


def test_the_graph_holds_every_module_and_import(graph: dict[str, set[str]]) -> None:
    assert "runwield_bridge.channels.types" in graph["runwield_bridge.channels.contract"]
    assert "runwield_bridge.bridge.runner" in graph["runwield_bridge.cli"]  # imported inside a function
    assert graph.keys() == {module_name(path) for path in ROOT.rglob("*.py")}


def test_no_module_imports_itself_back_in_a_circle(graph: dict[str, set[str]]) -> None:
    assert cycles(graph) == []


def test_a_circle_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_import_goes_the_way_the_layers_point(graph: dict[str, set[str]]) -> None:
    assert wrong_way(graph) == []


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("runwield_bridge.core.sessions", "runwield_bridge.acp.server"),
        ("runwield_bridge.channels.telegram.channel", "runwield_bridge.core.store"),
        ("runwield_bridge.channels.telegram.channel", "runwield_bridge.channels.slack.mrkdwn"),
        ("runwield_bridge.channels.streaming", "runwield_bridge.bridge.bridge"),
        ("runwield_bridge.web.server", "runwield_bridge.channels.contract"),
        ("runwield_bridge.bridge.bridge", "runwield_bridge.app"),
    ],
)
def test_an_import_against_the_layers_is_reported(source: str, target: str) -> None:
    assert wrong_way({source: {target}, target: set()}) != []



def test_wld_loads_the_acp_sdk_and_the_bridge_only_for_commands_that_use_them() -> None:
    """The composition root wires them in the functions that need them, so ``wld sessions`` starts without them."""
    code = "import sys, runwield_bridge.cli; print([m for m in ('acp', 'aiohttp', 'runwield_bridge.bridge') if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"

if __name__ == "__main__":
    print(json.dumps({name: sorted(targets) for name, targets in import_graph().items()}))


MAX_PUBLIC_METHODS = 15
REASON = "more than 15 public methods"


def crowded_classes(source: str) -> list[str]:
    """The classes in ``source`` with more than MAX_PUBLIC_METHODS public methods that do not say why at their top."""
    crowded = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            public = [f for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and not f.name.startswith("_")]
            if len(public) > MAX_PUBLIC_METHODS and REASON not in (ast.get_docstring(node) or ""):
                crowded.append(f"{node.name} ({len(public)} public methods)")
    return crowded


def test_a_class_with_more_than_15_public_methods_says_why_at_its_top() -> None:
    found = {str(path.relative_to(ROOT)): crowded for path in ROOT.rglob("*.py") if (crowded := crowded_classes(path.read_text()))}
    assert found == {}, f"split them, or say at the top why they are one class ('{REASON}: ...')"


def test_a_crowded_class_without_a_reason_is_found() -> None:
    methods = "".join(f"    def m{i}(self): ...\n" for i in range(MAX_PUBLIC_METHODS + 1))
    assert crowded_classes(f"class Big:\n{methods}") == [f"Big ({MAX_PUBLIC_METHODS + 1} public methods)"]
    assert crowded_classes(f'class Big:\n    """Why it has {REASON}: one per protocol method."""\n{methods}') == []


MAX_BRIDGE_LINES = 150
MAX_BRIDGE_METHODS = 14


def test_the_bridge_stays_a_thin_router() -> None:
    """``Bridge`` routes channel events to Conversations; the work goes into the modules beside it (docs/architecture.md)."""
    tree = ast.parse((ROOT / "bridge" / "bridge.py").read_text())
    [bridge] = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Bridge"]
    methods = [f.name for f in bridge.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    assert bridge.end_lineno is not None and bridge.end_lineno - bridge.lineno < MAX_BRIDGE_LINES, "move the new job into a module of its own"
    assert len(methods) <= MAX_BRIDGE_METHODS, f"{len(methods)} methods: {methods}"
    assert REASON not in (ast.get_docstring(bridge) or "")
