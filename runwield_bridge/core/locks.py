"""One writer per Session across processes: a lock held only during a turn, and a check that takes nothing. On SQLite
it is an advisory file lock on this host (`WriterLock`); on PostgreSQL the store hands out advisory locks in the
database instead (``core/store/locks.py``), so it holds across hosts. The Session Host sees either as a `Lock`."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

# Linux `struct flock` (l_type, l_whence, l_start, l_len, l_pid), for open-file-description locks: a zero start
# and length cover the whole file. Unlike flock(2), these can be tested (F_OFD_GETLK) without being taken.
# Elsewhere (macOS, BSD) flock(2) stands in, and a check takes the lock for a moment.
_OFD = hasattr(fcntl, "F_OFD_GETLK")
_FLOCK = struct.Struct("hhqqixxxx")
_WHOLE_FILE = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
_UNLOCK = _FLOCK.pack(fcntl.F_UNLCK, os.SEEK_SET, 0, 0, 0)


class Lock(Protocol):
    """A writer lock as the Session Host uses it; the holder's death releases it."""

    @property
    def held(self) -> bool: ...

    async def try_acquire(self) -> bool:
        """Take the lock without waiting; False if another writer holds it."""
        ...

    async def release(self) -> None: ...

    async def taken(self) -> bool:
        """Whether any writer holds it, checked without taking it."""
        ...

    async def released(self) -> None:
        """Return once no other writer holds it (without taking it)."""
        ...


Locks = Callable[[str], Lock]
"""The lock of a name (a Session id, ``plan-<id>``)."""


class FileLock:
    """`WriterLock` as a `Lock`: the same file lock, the same behaviour."""

    def __init__(self, directory: Path, name: str) -> None:
        self.file = WriterLock(directory, name)

    @property
    def held(self) -> bool:
        return self.file.held

    async def try_acquire(self) -> bool:
        return self.file.try_acquire()

    async def release(self) -> None:
        self.file.release()

    async def taken(self) -> bool:
        return self.file.taken()

    async def released(self) -> None:
        await self.file.released()


def file_locks(directory: Path) -> Locks:
    """Locks that are files in ``directory`` (one host)."""
    return lambda name: FileLock(directory, name)


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
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:  # no lock directory yet: made once, not on every turn
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _lock(fd)
        except (BlockingIOError, PermissionError):
            os.close(fd)
            return False
        os.pwrite(fd, f"{os.getpid():>10}\n".encode(), 0)  # who holds it, for a person looking
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is None:
            return
        os.close(self._fd)  # closing the only descriptor of the open file releases its lock
        self._fd = None

    def taken(self) -> bool:
        """Whether any writer, in any process (this one too), holds the lock. Takes nothing, so checking
        never makes another process's turn find the Session busy."""
        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            return _locked(fd)
        finally:
            os.close(fd)

    async def released(self) -> None:
        """Return once no other writer holds the lock. The OS wakes a waiting thread when the holder lets go (or
        its process dies): nothing polls. The thread takes the lock only for a moment; call `try_acquire` next."""
        loop = asyncio.get_running_loop()
        freed: asyncio.Future[None] = loop.create_future()

        def wait() -> None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                _wait_and_unlock(fd)
            finally:
                os.close(fd)
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
                loop.call_soon_threadsafe(lambda: freed.done() or freed.set_result(None))

        # A daemon thread, not the loop's executor: a holder that never lets go must not keep the process alive.
        threading.Thread(target=wait, name=f"writer-wait:{self.path.stem}", daemon=True).start()
        await freed


def _wait_and_unlock(fd: int) -> None:
    """Block until the whole-file lock on ``fd`` is ours, then let it go at once."""
    if _OFD:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, _WHOLE_FILE)
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _UNLOCK)
    else:
        fcntl.flock(fd, fcntl.LOCK_EX)
        fcntl.flock(fd, fcntl.LOCK_UN)


def _lock(fd: int) -> None:
    """Take the whole-file lock on ``fd`` without waiting (BlockingIOError when another holds it)."""
    if _OFD:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _WHOLE_FILE)
    else:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _locked(fd: int) -> bool:
    """Whether another open file holds the lock on ``fd``'s file."""
    if _OFD:
        return _FLOCK.unpack(fcntl.fcntl(fd, fcntl.F_OFD_GETLK, _WHOLE_FILE))[0] != fcntl.F_UNLCK
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False
