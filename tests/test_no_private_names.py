"""No module of runwield_bridge uses another module's private names (the ACP SDK's included): the next
release of a dependency may change them without notice. Gaps in the SDK go to acp/sdk_gaps.py instead."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "runwield_bridge"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(source: str) -> Iterator[tuple[int, str]]:
    """Each private name a module takes from elsewhere: imported, or read as an attribute of anything but ``self``/``cls``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            parts = (node.module or "").split(".")
            for alias in node.names:
                if any(_private(part) for part in parts) or _private(alias.name):
                    yield node.lineno, f"from {'.' * node.level}{node.module or ''} import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if any(_private(part) for part in alias.name.split(".")):
                    yield node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                yield node.lineno, ast.unparse(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr", "setattr"):
            name = node.args[1] if len(node.args) > 1 else None
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and _private(name.value):
                yield node.lineno, ast.unparse(node)


def test_no_module_uses_private_names_from_elsewhere() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {use}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, use in private_uses(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "private names of other modules:\n" + "\n".join(found)


def test_the_check_sees_each_kind_of_private_use() -> None:
    source = (
        "from acp._transport import Transport\n"
        "from acp.stdio import _start_stdin_feeder\n"
        "import acp._transport\n"
        "x = conn._next_request_id\n"
        "y = getattr(conn, '_conn')\n"
        "z = self._mine\n"
        "from __future__ import annotations\n"
    )
    assert [line for line, _ in private_uses(source)] == [1, 2, 3, 4, 5]
