"""How long a test waits for something that should happen, and waiting for a condition within that bound.

Generous on purpose: on a busy 2-core machine a reply can take many seconds, and a wait that is too
short fails a correct program. A wait only ever ends early when the thing happens; a real hang is
caught by this bound or by pytest-timeout (pyproject.toml), with a message saying what never came.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

PATIENCE = 60.0  # seconds
POLL = 0.02  # seconds between checks of a condition nothing signals


async def until(condition: Callable[[], object], what: str, timeout: float = PATIENCE) -> None:
    """Return once ``condition()`` is true; AssertionError naming ``what`` after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(POLL)


def release(directory: Path, text: str) -> None:
    """Let a test agent or tool waiting for the file ``release`` in ``directory`` go on with ``text``: the file
    appears whole (renamed into place), so a reader that sees it never reads it empty."""
    (directory / "release.part").write_text(text)
    os.replace(directory / "release.part", directory / "release")
