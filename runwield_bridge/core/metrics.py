"""Workflow metrics: ordered command and execution observations, recorded locally and never sent anywhere."""

from __future__ import annotations

import itertools
import json
import os
import time
from pathlib import Path
from typing import Any

METRICS_FILE = "workflow-metrics.jsonl"


class WorkflowMetrics:
    """Appends one JSON line per observation to ``<state dir>/workflow-metrics.jsonl``; off when path is None."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._seq = itertools.count(1)

    @classmethod
    def in_state_dir(cls, state_dir: Path, enabled: bool) -> WorkflowMetrics:
        return cls(state_dir / METRICS_FILE if enabled else None)

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def record(self, session_id: str, observation: str, **data: Any) -> None:
        """Append an observation; ``seq`` orders them within this process, ``pid`` tells processes apart."""
        if self.path is None:
            return
        line = {"seq": next(self._seq), "pid": os.getpid(), "at": time.time(), "session": session_id, "observation": observation, **data}
        try:
            out = self.path.open("a", encoding="utf-8")
        except FileNotFoundError:  # the first observation (or its directory was removed): made once, not on every turn
            self.path.parent.mkdir(parents=True, exist_ok=True)
            out = self.path.open("a", encoding="utf-8")
        with out:
            out.write(json.dumps(line) + "\n")
