"""The path rule of the coding tools: every path a model names stays inside the project directory, also at the moment
it is read or written."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
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


# Opening what `confined` resolved, at the moment of use: each component of the path is opened from the directory
# before it (``openat``) without following a symlink, so a directory swapped for a symlink after the check (while
# the person is asked, say) is met and refused instead of followed out of the project.

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO opened by a race never blocks
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class PathChanged(OutsideProject):
    """A symlink met on a path that had none when it was checked: not followed (it could lead out of the project)."""


class NotRegularFile(ValueError):
    """Something the file tools do not open: a directory, a named pipe (FIFO), a device, a socket."""


def kind_of(mode: int) -> str:
    """What a file of this mode is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def _parts(root: Path, path: Path) -> tuple[str, ...]:
    return path.relative_to(root.resolve()).parts


def _symlink_now(shown: str) -> PathChanged:
    return PathChanged(
        f"{shown!r} is a symbolic link now (it was not when the path was checked), which is not followed: "
        "it could lead outside the project directory"
    )


@contextlib.contextmanager
def directory(root: Path, path: Path, create: bool = False) -> Iterator[int]:
    """A descriptor of the directory ``path`` (inside ``root``, as ``confined`` resolved it), every component opened
    without following a symlink; ``create`` makes the missing ones."""
    fd = os.open(root.resolve(), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        parts = _parts(root, path)
        for depth, part in enumerate(parts):
            inner = _subdirectory(fd, part, create, "/".join(parts[: depth + 1]))
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _subdirectory(fd: int, part: str, create: bool, shown: str) -> int:
    try:
        return os.open(part, DIRECTORY_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        mode = os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            raise _symlink_now(shown) from None
        raise NotADirectoryError(errno.ENOTDIR, f"{shown!r} is {kind_of(mode)}, not a directory") from None
    with contextlib.suppress(FileExistsError):
        os.mkdir(part, dir_fd=fd)
    return _subdirectory(fd, part, False, shown)


def open_regular(dir_fd: int, name: str, shown: str) -> tuple[int, os.stat_result]:
    """The regular file ``name`` in ``dir_fd`` opened for reading (not following a symlink), and its stat; anything
    else is refused before it is opened (opening a device or a FIFO can block or act)."""
    mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    if stat.S_ISLNK(mode):
        raise _symlink_now(shown)
    if not stat.S_ISREG(mode):
        raise NotRegularFile(f"{shown!r} is {kind_of(mode)}, not a regular file")
    try:
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _symlink_now(shown) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # swapped between the look and the open
        os.close(fd)
        raise NotRegularFile(f"{shown!r} is {kind_of(info.st_mode)}, not a regular file")
    return fd, info


def read_prefix(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from the start of ``fd``: only what is kept is read."""
    chunks: list[bytes] = []
    left = limit
    while left > 0 and (chunk := os.read(fd, min(left, 1024 * 1024))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_file(root: Path, path: Path, limit: int) -> tuple[bytes, os.stat_result]:
    """The first ``limit`` bytes of the regular file ``path`` (resolved inside ``root``), opened at this moment with
    no symlink followed on the way, and its stat."""
    parts = _parts(root, path)
    if not parts:
        raise NotRegularFile("'.' is a directory, not a regular file")
    with directory(root, path.parent) as dir_fd:
        fd, info = open_regular(dir_fd, parts[-1], "/".join(parts))
    try:
        return read_prefix(fd, limit), info
    finally:
        os.close(fd)


def replace_file(
    root: Path, path: Path, produce: Callable[[bytes | None, os.stat_result | None], bytes], read: int = 0, create: bool = False
) -> os.stat_result | None:
    """Write ``produce(old, old_stat)`` to ``path`` (resolved inside ``root``) as a new file renamed over the old one.

    Every component is opened at this moment without following a symlink (``create``: missing directories are
    made); ``old`` is the first ``read`` bytes of the file there (None when ``read`` is 0 or there is no file).
    Renaming a new file over the name leaves any other hard link of the old file as it was, so a file linked from
    outside the project is not changed through its link. The new file keeps the old one's permissions. Returns the
    old file's stat (None when there was none)."""
    parts = _parts(root, path)
    if not parts:
        raise NotRegularFile("'.' is a directory, not a regular file")
    name, shown = parts[-1], "/".join(parts)
    with directory(root, path.parent, create=create) as dir_fd:
        old, info = None, None
        try:
            fd, info = open_regular(dir_fd, name, shown)
        except FileNotFoundError:
            pass
        else:
            try:
                old = read_prefix(fd, read) if read else None
            finally:
                os.close(fd)
        data = produce(old, info)
        temporary = f".{name[:200]}.{secrets.token_hex(4)}.wld-tmp"
        fd = os.open(temporary, _CREATE, 0o666, dir_fd=dir_fd)
        try:
            try:
                if info is not None:
                    os.fchmod(fd, stat.S_IMODE(info.st_mode))
                    if (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
                        with contextlib.suppress(OSError):
                            os.fchown(fd, info.st_uid, info.st_gid)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=dir_fd)
            raise
    return info
