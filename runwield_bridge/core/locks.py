"""One writer per Session across processes: an advisory file lock held only during a turn."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class WriterLock:
    """A non-blocking exclusive lock on ``<dir>/<session_id>.lock``; the OS drops it if the process dies."""

    def __init__(self, directory: Path, session_id: str) -> None:
        self.path = directory / f"{session_id}.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.pwrite(fd, f"{os.getpid():>10}\n".encode(), 0)  # who holds it, for a person looking
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is None:
            return
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None
