"""The garbage collector's policy in a process that serves for long (``wld bridge``, ``wld acp``, ``wld workspace``).

Once the process has started, what it holds (the modules, the plugins, the store), and after each collection of the
older young generation (or a full one) what survived it, is frozen: kept out of later collections, so a full
collection walks only what was made since, and its pause stays a young collection's however many conversations and
turns the process holds (docs/benchmarks.md). Frozen objects in a cycle are not freed when the cycle is dropped, so
every ``thaw_every`` seconds the heap is thawed and the next full collection walks all of it, freeing such cycles,
before everything that survives is frozen again: a cycle lives at most that long past its last use.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

THAW_EVERY = 600.0


class _SurvivorFreezer:
    """A ``gc.callbacks`` entry: freezes survivors, and thaws the heap for one full collection every ``thaw_every`` s."""

    def __init__(self, thaw_every: float, clock: Callable[[], float]) -> None:
        self.thaw_every = thaw_every
        self.clock = clock
        self.frozen_since = clock()
        self.thawed = False

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase != "stop" or info["generation"] < 1:
            return
        if self.thawed:
            if info["generation"] == 2:  # the full collection walked the thawed heap: freeze what it kept
                self.freeze()
        elif self.clock() - self.frozen_since >= self.thaw_every:
            gc.unfreeze()
            self.thawed = True
        else:
            gc.freeze()

    def freeze(self) -> None:
        gc.freeze()
        self.thawed = False
        self.frozen_since = self.clock()


def freeze_long_lived_heap(thaw_every: float = THAW_EVERY, clock: Callable[[], float] = time.monotonic) -> None:
    """Freeze what the process holds now and what survives each later collection of generation 1 or 2."""
    gc.callbacks[:] = [callback for callback in gc.callbacks if not isinstance(callback, _SurvivorFreezer)]
    freezer = _SurvivorFreezer(thaw_every, clock)
    freezer.freeze()
    gc.callbacks.append(freezer)
