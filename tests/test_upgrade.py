"""A state directory written by release 0.1.0 (tests/fixtures/wld-home-0.1.0) opens with everything in it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from acp_wire import WireClient
from test_acp_server import INIT, WLD, text_prompt, updates

from runwield_bridge.core.store import Store

FIXTURE = Path(__file__).parent / "fixtures" / "wld-home-0.1.0"
SESSION = "ses_6d146df335674ced8b7ed08e89346284"
PLAN = "plan_7ccdc1385490416c"


@pytest.fixture
def old_home(wld_home: Path) -> Path:
    """A copy of the 0.1.0 state directory as this test's WLD_HOME."""
    shutil.copytree(FIXTURE, wld_home)
    return wld_home


def said(client: WireClient, kind: str) -> str:
    return "".join(u["content"]["text"] for u in updates(client, SESSION, kind))


async def test_the_store_opens_a_0_1_0_database_with_every_session_transcript_binding_plan_and_review(old_home: Path) -> None:
    store = await Store.open(f"sqlite+aiosqlite:///{old_home / 'wld.db'}")
    try:
        session = await store.sessions.get_session(SESSION)
        assert session is not None and session.title == "hello there"
        transcript = "".join(entry.text for entry in await store.sessions.transcript(SESSION))
        assert "You said: hello there" in transcript and "Saved Plan plan_7ccdc1385490416c revision 1" in transcript
        binding = await store.bridge.get_binding("telegram:123456789")
        assert binding is not None and binding.acp_session_id == SESSION and binding.agent == "runwield"
        plan = await store.plans.get_plan(PLAN)
        assert plan is not None and plan.title == "A greeting file"
        assert [r.number for r in await store.plans.plan_revisions(PLAN)] == [1]
        assert [r.plan_id for r in await store.reviews.reviews_for_plan(PLAN)] == [PLAN]
        assert await store.bridge.claim_update("telegram", "1", "this run") is None, "tables added since 0.1.0 work too"
    finally:
        await store.close()


async def test_wld_acp_loads_a_0_1_0_session_and_goes_on_with_it(old_home: Path, tmp_path: Path) -> None:
    listing = subprocess.run([WLD, "sessions"], capture_output=True, text=True, check=True).stdout
    assert SESSION in listing
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        await client.call("initialize", INIT)
        await client.call("session/load", {"sessionId": SESSION, "cwd": str(tmp_path), "mcpServers": []})
        assert "You said: hello there" in said(client, "agent_message_chunk")
        assert "list files" in said(client, "user_message_chunk")
        assert "/review/" not in said(client, "agent_message_chunk"), "a stored review link is not shown again"
        await client.call("session/prompt", text_prompt(SESSION, "and now?"))
        assert "You said: and now?" in said(client, "agent_message_chunk")
