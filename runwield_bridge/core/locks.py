"""One writer per Session across processes: a lock held only during a turn, and a check that takes nothing. On SQLite
it is an advisory lock on this host (`FileLocks`); on PostgreSQL the store hands out advisory locks in the database
instead (``core/store/locks.py``), so it holds across hosts. The Session Host sees either as a `Lock`."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol


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


class Holders(Protocol):
    """Every lock a process holds in one place, by key, each given to one holder at a time (`NamedLock`)."""

    def holds(self, key: int) -> bool: ...

    async def try_lock(self, key: int) -> bool: ...

    async def unlock(self, key: int) -> None: ...

    async def taken(self, key: int) -> bool:
        """Whether any writer (here or in another process) holds ``key``, checked without taking it."""
        ...

    async def released(self, key: int) -> None:
        """Return once no other process holds ``key`` (without taking it)."""
        ...


def lock_key(name: str) -> int:
    """A lock's key for a name: 63 bits of its hash (a non-negative bigint, and a byte offset in a lock file)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big") >> 1


SHARDS = 64
"""Lock files per directory. The kernel walks every lock on a file to take one, so the locks of many turns are
spread over a few files, each opened once by each `FileLocks` (docs/benchmarks.md)."""

OFD_LOCKS = hasattr(fcntl, "F_OFD_SETLK")
"""Whether the OS has open-file-description locks (Linux 3.15 or later)."""

# Linux `struct flock` (l_type, l_whence, l_start, l_len, l_pid) for open-file-description locks on one byte.
_FLOCK = struct.Struct("hhqqixxxx")


class ByteLocks:
    """The OS side on Linux: the key's byte in one of `SHARDS` files, locked by open file description (``F_OFD_SETLK``):
    a lock costs no descriptor of its own, and another file description (another process) can test it without
    taking it. Locks on one description never conflict, so `FileLocks` keeps this process's holders apart."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._files: dict[int, int] = {}  # shard -> the descriptor every lock on it goes through

    def take(self, key: int) -> bool:
        try:
            fcntl.fcntl(self._file(key), fcntl.F_OFD_SETLK, _byte(fcntl.F_WRLCK, key))
        except (BlockingIOError, PermissionError):
            return False
        return True

    def let_go(self, key: int) -> None:
        fcntl.fcntl(self._file(key), fcntl.F_OFD_SETLK, _byte(fcntl.F_UNLCK, key))

    def other_holds(self, key: int) -> bool:
        found = fcntl.fcntl(self._file(key), fcntl.F_OFD_GETLK, _byte(fcntl.F_WRLCK, key))
        return _FLOCK.unpack(found)[0] != fcntl.F_UNLCK

    def wait(self, key: int) -> None:
        """Block until no other file description holds the byte; a descriptor of its own only while waiting."""
        with _opened(self._path(key)) as fd:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, _byte(fcntl.F_WRLCK, key))
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _byte(fcntl.F_UNLCK, key))

    def close(self) -> None:
        _close_all(self._files)

    def _path(self, key: int) -> Path:
        return self.directory / f"writers-{key % SHARDS:02}.lock"

    def _file(self, key: int) -> int:
        shard = key % SHARDS
        if (fd := self._files.get(shard)) is None:
            fd = self._files[shard] = _open(self._path(key))
        return fd


class NameFiles:
    """The OS side elsewhere (macOS, BSD: no open-file-description locks): ``flock(2)`` on a file per name, so a held
    lock keeps a descriptor there, and a check holds the lock for a moment."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._held: dict[int, int] = {}

    def take(self, key: int) -> bool:
        fd = _open(self._path(key))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._held[key] = fd
        return True

    def let_go(self, key: int) -> None:
        os.close(self._held.pop(key))

    def other_holds(self, key: int) -> bool:
        if not self.take(key):
            return True
        self.let_go(key)
        return False

    def wait(self, key: int) -> None:
        with _opened(self._path(key)) as fd:
            fcntl.flock(fd, fcntl.LOCK_EX)

    def close(self) -> None:
        _close_all(self._held)

    def _path(self, key: int) -> Path:
        return self.directory / f"{key:016x}.lock"


class FileLocks:
    """The writer locks of one directory on this host, as `Locks`. This process's holders are kept apart here (a
    name has one holder at a time, in the process as across processes); other processes, and another `FileLocks`
    on the same directory, are kept apart by the OS, which drops a dead process's locks."""

    def __init__(self, directory: Path) -> None:
        self.os = ByteLocks(directory) if OFD_LOCKS else NameFiles(directory)
        self._held: set[int] = set()

    def __call__(self, name: str) -> NamedLock:
        return NamedLock(self, name)

    def holds(self, key: int) -> bool:
        return key in self._held

    async def try_lock(self, key: int) -> bool:
        if key in self._held or not self.os.take(key):
            return False
        self._held.add(key)
        return True

    async def unlock(self, key: int) -> None:
        if key in self._held:
            self._held.discard(key)
            self.os.let_go(key)

    async def taken(self, key: int) -> bool:
        return key in self._held or self.os.other_holds(key)

    async def released(self, key: int) -> None:
        """The OS wakes a waiting thread when the holder lets go (or its
        process dies): nothing polls. The thread takes the lock only for a moment; take it next."""
        loop = asyncio.get_running_loop()
        freed: asyncio.Future[None] = loop.create_future()

        def wait() -> None:
            self.os.wait(key)
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
                loop.call_soon_threadsafe(lambda: freed.done() or freed.set_result(None))

        # A daemon thread, not the loop's executor: a holder that never lets go must not keep the process alive.
        threading.Thread(target=wait, name=f"writer-wait:{key:016x}", daemon=True).start()
        await freed

    def close(self) -> None:
        """Let go of every lock held through this object."""
        self._held.clear()
        self.os.close()


class NamedLock:
    """One name's lock among the locks a process holds (`FileLocks`, the store's advisory locks); see `Lock`."""

    def __init__(self, holders: Holders, name: str) -> None:
        self.holders = holders
        self.key = lock_key(name)
        self._mine = False

    @property
    def held(self) -> bool:
        return self._mine and self.holders.holds(self.key)

    async def try_acquire(self) -> bool:
        if not self.held:
            self._mine = await self.holders.try_lock(self.key)
        return self._mine

    async def release(self) -> None:
        if self._mine:
            self._mine = False
            await asyncio.shield(self.holders.unlock(self.key))

    async def taken(self) -> bool:
        return await self.holders.taken(self.key)

    async def released(self) -> None:
        await self.holders.released(self.key)


def _byte(kind: int, key: int) -> bytes:
    return _FLOCK.pack(kind, os.SEEK_SET, key, 1, 0)


def _open(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except FileNotFoundError:  # no lock directory yet: made once, not on every turn
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[int]:
    fd = _open(path)
    try:
        yield fd
    finally:
        os.close(fd)


def _close_all(descriptors: dict[int, int]) -> None:
    while descriptors:
        os.close(descriptors.popitem()[1])
