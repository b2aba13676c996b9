"""A serving process keeps its full garbage collections short by freezing what survives them; in return, what a turn
makes must not form cycles, which frozen objects would keep for good."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from runwield_bridge.app import App
from runwield_bridge.long_lived_heap import freeze_long_lived_heap
from runwield_bridge.config import load_settings
from runwield_bridge.core.events import Event


async def ignore(event: Event) -> None:
    pass


async def test_settled_turns_leave_nothing_only_the_collector_could_free(tmp_path: Path) -> None:
    (tmp_path / "wld.toml").write_text("")
    app = await App.start(load_settings(tmp_path / "wld.toml"))
    record = await app.session_host.create(str(tmp_path))
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):  # a reply of a few chunks: the journal's flush timer runs, and is cancelled at the end
            assert (await app.session_host.prompt(record.id, "say something short", ignore)).stop_reason == "end_turn"
        await app.close()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        cycles = sorted({type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("runwield_bridge")})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert cycles == [], "objects of a settled turn were freed only by the collector"


@pytest.mark.parametrize("generation", [1, 2])
def test_what_survives_a_collection_of_the_older_young_generation_or_a_full_one_is_kept_out_of_the_next(generation: int) -> None:
    callbacks = list(gc.callbacks)
    freeze_long_lived_heap()
    try:
        frozen = gc.get_freeze_count()
        survivor = [[i] for i in range(1000)]  # lists: always tracked by the collector
        gc.collect(generation)
        assert gc.is_tracked(survivor) and all(o is not survivor for o in gc.get_objects(generation=2)), "it was frozen"
        assert gc.get_freeze_count() >= frozen + len(survivor)
    finally:
        gc.callbacks[:] = callbacks
        gc.unfreeze()


class Node:
    """An object in a cycle of its own once ``me`` points back at it."""

    me: Node | None = None


def test_a_cycle_freezing_kept_is_freed_by_the_first_full_collection_once_the_thaw_interval_has_passed() -> None:
    callbacks = list(gc.callbacks)
    now = [0.0]
    freeze_long_lived_heap(thaw_every=600.0, clock=lambda: now[0])
    try:
        node = Node()
        node.me = node
        alive = weakref.ref(node)
        gc.collect(1)  # it survives a collection of generation 1 and is frozen
        del node
        gc.collect()
        assert alive() is not None, "a frozen cycle is kept until the heap is thawed"
        now[0] = 601.0
        gc.collect(1)  # the first collection after the interval thaws the heap
        gc.collect()
        assert alive() is None, "the full collection after the thaw freed the cycle"
        survivor = [[1]]
        gc.collect(1)
        assert all(o is not survivor for o in gc.get_objects(generation=2)), "survivors are frozen again"
    finally:
        gc.callbacks[:] = callbacks
        gc.unfreeze()
