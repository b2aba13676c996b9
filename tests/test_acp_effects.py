"""Requests answered once per ``requestId`` (``acp/effects.py``) on a real SQLite store: while the first runs,
after it was cut short, and when the id comes back with other params."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from waiting import PATIENCE

from runwield_bridge.acp.effects import EffectLedger
from runwield_bridge.acp.extensions import CONFLICT_CODE
from runwield_bridge.core.store import Store

PARAMS = {"sessionId": "ses_x", "prompt": [{"type": "text", "text": "hi"}], "_meta": {"runwield": {"requestId": "r-1"}}}


async def test_a_repeat_while_the_first_runs_or_after_it_was_cut_short_does_nothing_again(tmp_path: Path) -> None:
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'wld.db'}")
    ledger = EffectLedger(store.workspace, store.sessions)
    effects: list[str] = []
    started, release = asyncio.Event(), asyncio.Event()

    async def effect() -> dict[str, Any]:
        effects.append("ran")
        started.set()
        await release.wait()
        return {"stopReason": "end_turn"}

    try:
        first = asyncio.create_task(ledger.run("session/prompt", PARAMS, effect))
        await asyncio.wait_for(started.wait(), PATIENCE)
        with pytest.raises(RequestError) as running:
            await ledger.run("session/prompt", PARAMS, effect)
        assert (running.value.code, running.value.data["reason"]) == (CONFLICT_CODE, "inProgress")
        first.cancel()  # the connection went away mid-request
        with pytest.raises(asyncio.CancelledError):
            await first
        with pytest.raises(RequestError) as after:
            await ledger.run("session/prompt", PARAMS, effect)
        assert after.value.code == -32603 and "cut short" in after.value.data["details"]
        assert effects == ["ran"]
    finally:
        await store.close()


async def test_a_request_without_an_id_runs_each_time_and_a_bad_id_is_invalid_params(tmp_path: Path) -> None:
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'wld.db'}")
    ledger = EffectLedger(store.workspace, store.sessions)
    effects: list[str] = []

    async def effect() -> None:
        effects.append("ran")

    try:
        plain = {key: value for key, value in PARAMS.items() if key != "_meta"}
        await ledger.run("session/prompt", plain, effect)
        await ledger.run("session/prompt", plain, effect)
        with pytest.raises(RequestError) as bad:
            await ledger.run("session/prompt", {**plain, "_meta": {"runwield": {"requestId": ""}}}, effect)
        assert bad.value.code == -32602 and bad.value.data["errors"][0]["field"] == "_meta.runwield.requestId"
        assert effects == ["ran", "ran"]
    finally:
        await store.close()
