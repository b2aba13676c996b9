"""The few git operations executions need, run as ``git`` subprocesses."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "RunWield",
    "GIT_AUTHOR_EMAIL": "runwield@localhost",
    "GIT_COMMITTER_NAME": "RunWield",
    "GIT_COMMITTER_EMAIL": "runwield@localhost",
}
STALE_LOCK_NAMES = ("index.lock", "HEAD.lock")


class GitError(RuntimeError):
    """A git command failed; the message has its output."""


async def git(cwd: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    """Run ``git args`` in ``cwd`` and return its stripped stdout."""
    proc = await asyncio.create_subprocess_exec(
        "git", *args, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed: {(err or out).decode(errors='replace').strip()}")
    return out.decode(errors="replace").strip()


async def snapshot_tree(worktree: Path) -> str:
    """The tree id of the worktree as it is now (untracked files included, ignored ones not); the real index is untouched."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        await git(worktree, "read-tree", "HEAD", env=env)
        await git(worktree, "add", "-A", env=env)
        return await git(worktree, "write-tree", env=env)


async def identity_env(cwd: Path) -> dict[str, str]:
    """The environment for making a commit: the configured identity, else RunWield's."""
    configured = await git(cwd, "config", "user.email", check=False)
    return dict(os.environ) if configured else {**os.environ, **FALLBACK_IDENTITY}


def worktree_gitdir(worktree: Path) -> Path | None:
    """The worktree's private git directory (``.git`` in a linked worktree is a file naming it)."""
    marker = worktree / ".git"
    if not marker.is_file():
        return None
    text = marker.read_text(encoding="utf-8").strip()
    return (worktree / text.removeprefix("gitdir:").strip()).resolve() if text.startswith("gitdir:") else None


def remove_stale_locks(worktree: Path) -> list[str]:
    """Remove git lock files a killed git process left in the worktree's git directory; say what was removed."""
    gitdir = worktree_gitdir(worktree)
    removed = []
    for name in STALE_LOCK_NAMES if gitdir else ():
        lock = gitdir / name
        if lock.exists():
            lock.unlink()
            removed.append(f"removed the stale git lock {lock}")
    return removed
