"""The path rule of the coding tools: every path a model names stays inside the project directory."""

from __future__ import annotations

import functools
import re
from pathlib import Path, PurePosixPath


class OutsideProject(ValueError):
    """A path that would leave the project: ``..``, an absolute path elsewhere, or a symlink pointing out."""


def confined(root: Path, name: str) -> Path:
    """``name`` (relative to ``root``, or absolute inside it) resolved with symlinks followed; refused if it leaves ``root``."""
    base = root.resolve()
    raw = name.strip() or "."
    if "\x00" in raw:
        raise OutsideProject(f"{name!r} is not a valid path")
    candidate = Path(raw)
    if ".." in PurePosixPath(raw.replace("\\", "/")).parts:
        raise OutsideProject(f"{name!r} is refused: '..' may not appear in a path (it could lead outside the project directory)")
    target = (candidate if candidate.is_absolute() else base / candidate).resolve()
    if target != base and base not in target.parents:
        what = "a symlink that points" if not candidate.is_absolute() else "an absolute path"
        raise OutsideProject(f"{name!r} is refused: {what} outside the project directory {base}")
    return target


def relative(root: Path, path: Path) -> str:
    """``path`` as the model should see it: relative to the project, with forward slashes."""
    return path.relative_to(root.resolve()).as_posix() or "."


@functools.cache
def path_pattern(pattern: str) -> re.Pattern[str]:
    """A path glob as a regex: ``**`` spans directories (``src/**``, ``**/*.md``), ``*`` and ``?`` stay within one."""
    parts = re.split(r"(\*\*/|\*\*|\*|\?)", pattern)
    table = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(table.get(part, re.escape(part)) for part in parts))
