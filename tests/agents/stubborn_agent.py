"""The asking agent made stubborn, as a leaky agent wrapper may be: it ignores SIGTERM, outlives the end of its
input, and starts a grandchild in a session of its own (``setsid sleep``). It writes its pid and the grandchild's,
one a line, to $AGENT_PIDS. Only SIGKILL, to both, stops what it started."""

from __future__ import annotations

import contextlib
import os
import runpy
import signal
import subprocess
import time
from pathlib import Path

signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen(["setsid", "sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
Path(os.environ["AGENT_PIDS"]).write_text(f"{os.getpid()}\n{grandchild.pid}\n")
with contextlib.suppress(SystemExit):
    runpy.run_path(str(Path(__file__).with_name("asking_agent.py")), run_name="__main__")
while True:  # its input ended: it lingers anyway
    time.sleep(60)
