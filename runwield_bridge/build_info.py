"""Which commit wld runs from, when it runs from a git checkout: read from ``.git`` itself, no git command."""

from __future__ import annotations

from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
SHORT = 12
"""Hex digits of the commit shown."""


def source_commit(checkout: Path = CHECKOUT) -> str | None:
    """The short hash of the commit checked out at ``checkout`` (a worktree too); None outside a git checkout."""
    dotgit = checkout / ".git"
    try:
        gitdir = (checkout / dotgit.read_text().removeprefix("gitdir:").strip()) if dotgit.is_file() else dotgit
        common = gitdir / (gitdir / "commondir").read_text().strip() if (gitdir / "commondir").is_file() else gitdir
        head = (gitdir / "HEAD").read_text().strip()
    except OSError:
        return None
    commit = _ref(head.removeprefix("ref:").strip(), gitdir, common) if head.startswith("ref:") else head
    return commit[:SHORT] if commit and all(c in "0123456789abcdef" for c in commit) else None


def _ref(name: str, gitdir: Path, common: Path) -> str | None:
    """The commit a ref names: its loose file (in the worktree's git directory or the common one), else packed-refs."""
    for base in (gitdir, common):
        if (base / name).is_file():
            return (base / name).read_text().strip()
    try:
        packed = (common / "packed-refs").read_text().splitlines()
    except OSError:
        return None
    return next((line.split()[0] for line in packed if line.endswith(f" {name}") and not line.startswith(("#", "^"))), None)
