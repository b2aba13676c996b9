"""Runs one shell command so that nothing it starts outlives it: ``python -I -S command_supervisor.py COMMAND PARENT``.

The supervisor makes itself the child subreaper (Linux), so every process the command starts stays its descendant,
also one that left the command's session with ``setsid``. When the shell exits, or when the supervisor is told to
stop (SIGTERM, SIGINT, SIGHUP; SIGTERM also when ``PARENT`` dies), it kills and reaps every descendant, says on
stderr which background processes it stopped, and exits with the shell's status. Elsewhere it kills the shell's
process group. Only the standard library: it runs without site-packages.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Iterable
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
KILL_SECONDS = 5.0  # how long stopping waits for killed processes to exit
REAP_POLL = 0.01  # seconds between two checks while killed processes exit
SHOWN_NAME = 80  # characters of a stopped process's command line in the note


class Stopped(Exception):
    """The supervisor was told to stop."""


def prctl(option: int, value: int) -> bool:
    """Linux's prctl(2); False where it is missing or refused."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (AttributeError, OSError):
        return False


def process_table() -> dict[int, tuple[str, int, int]]:
    """Every process in /proc: pid -> (state, parent, process group); empty without /proc."""
    table: dict[int, tuple[str, int, int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            table[int(entry.name)] = (fields[0], int(fields[1]), int(fields[2]))
    return table


def living_descendants(roots: Iterable[int] = ()) -> dict[int, str]:
    """The descendants of ``roots`` (default: this process) that have not exited (pid: command line), from /proc;
    empty without /proc."""
    table = process_table()
    tops = set(roots) or {os.getpid()}
    family, found = set(tops), True
    while found:
        found = False
        for pid, (_, parent, _) in table.items():
            if parent in family and pid not in family:
                family.add(pid)
                found = True
    return {pid: command_line(pid) for pid in family - tops if table.get(pid, ("Z",))[0] != "Z"}


def living_members(group: int) -> set[int]:
    """The processes of process group ``group`` that have not exited, from /proc."""
    return {pid for pid, (state, _, pgrp) in process_table().items() if pgrp == group and state != "Z"}


def command_line(pid: int) -> str:
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return "?"
    line = b" ".join(words).decode(errors="replace")
    return line if len(line) <= SHOWN_NAME else line[: SHOWN_NAME - 1] + "…"


def reap() -> bool:
    """Reap every exited child; True while children remain."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def stop_everything(shell: int) -> list[str]:
    """Kill the shell's process group and every descendant, and reap them; the command lines of those left running."""
    left = living_descendants() if reap() else {}
    with contextlib.suppress(OSError):
        os.killpg(shell, signal.SIGKILL)
    deadline = time.monotonic() + KILL_SECONDS
    while reap() and time.monotonic() < deadline:
        for pid in living_descendants():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(REAP_POLL)
    return [name for pid, name in left.items() if pid != shell]


def exit_status(status: int) -> int:
    """A wait status as a shell reports it: the exit code, or 128 + the signal that ended it."""
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def supervised(command: str) -> list[str]:
    """The command line that runs the shell ``command`` under this supervisor, which follows this process to its end."""
    return [sys.executable, "-I", "-S", __file__, command, str(os.getpid())]


def supervise(command: str, parent: int) -> int:
    """Run ``command`` in ``/bin/sh`` in a new session; end everything it started; the shell's exit status."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

    def stop(signum: int, frame: object) -> None:
        for each in STOP_SIGNALS:
            signal.signal(each, signal.SIG_IGN)  # stopping is not interrupted by a second request
        raise Stopped(signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, stop)
    shell = os.posix_spawn(
        "/bin/sh", ["sh", "-c", command], os.environ, setsid=True, setsigmask=(), setsigdef=(signal.SIGPIPE, signal.SIGXFSZ)
    )
    try:
        if os.getppid() != parent:
            raise Stopped(signal.SIGTERM)  # the parent died before the supervisor could follow it
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        status = exit_status(os.waitpid(shell, 0)[1])
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    except Stopped as stopped:
        stop_everything(shell)
        return 128 + stopped.args[0]
    if left := stop_everything(shell):
        listed = "; ".join(f"`{name}`" for name in left)
        print(f"\n[the command exited; what it left running in the background was stopped: {listed}]", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(supervise(sys.argv[1], int(sys.argv[2])))
