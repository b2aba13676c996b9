"""Workflow metrics: off by default; when on, ordered observations in a local file, never on the wire."""

from __future__ import annotations

import json
from pathlib import Path

from acp_session import say, wld_session

from runwield_bridge.core.metrics import METRICS_FILE


async def test_observations_are_recorded_locally_in_order_and_never_sent_over_acp(tmp_path: Path, wld_home: Path) -> None:
    async with wld_session(tmp_path, config="workflow_metrics = true\n") as (client, sid):
        await say(client, sid, "/agent")
        await say(client, sid, "2")
        await say(client, sid, "list files")
    lines = [json.loads(line) for line in (wld_home / METRICS_FILE).read_text().splitlines()]
    assert [(line["observation"], line["session"]) for line in lines] == [
        (name, sid)
        for name in (
            "turn_started", "command", "question_asked", "question_settled", "selection", "turn_settled",
            "turn_started", "tool", "turn_settled",
        )
    ]
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    by_name = {line["observation"]: line for line in lines}
    assert by_name["command"]["name"] == "agent" and by_name["question_settled"]["status"] == "answered"
    assert by_name["selection"]["agent"] == "guide" and by_name["tool"]["status"] == "completed"
    wire = json.dumps(client.messages)
    assert "observation" not in wire and METRICS_FILE not in wire


async def test_metrics_are_off_by_default(tmp_path: Path, wld_home: Path) -> None:
    async with wld_session(tmp_path) as (client, sid):
        await say(client, sid, "/help")
        await say(client, sid, "hello")
    assert not (wld_home / METRICS_FILE).exists()
