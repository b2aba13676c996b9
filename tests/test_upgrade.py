"""State directories written by releases 0.1.0 and 0.2.0 (tests/fixtures/wld-home-*) upgrade with everything in them:
a database from before migrations is recognised by its tables, stamped with its version and migrated to the newest."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from acp_wire import WireClient
from test_acp_server import INIT, WLD, text_prompt, updates
from test_store_repositories import SCHEMA, schema, version

from runwield_bridge.core.store import Store
from runwield_bridge.core.store.migrate import HEAD, describe

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Release:
    """What a release's state directory holds."""

    name: str
    version: str
    description: str
    session: str
    plan: str
    claimed_update: str | None = None


RELEASES = [
    Release("0.1.0", "0001", "The schema of release 0.1.0", "ses_6d146df335674ced8b7ed08e89346284", "plan_7ccdc1385490416c"),
    Release("0.2.0", "0002", "The schema of release 0.2.0", "ses_070a47d2e67446eba79f08bf57d82933", "plan_f5ca09df98c944d1", "41"),
]


@pytest.fixture(params=RELEASES, ids=[r.name for r in RELEASES])
def release(request: pytest.FixtureRequest) -> Release:
    return request.param


@pytest.fixture
def old_home(wld_home: Path, release: Release) -> Path:
    """A copy of the release's state directory as this test's WLD_HOME."""
    shutil.copytree(FIXTURES / f"wld-home-{release.name}", wld_home)
    return wld_home


def said(client: WireClient, session: str, kind: str) -> str:
    return "".join(u["content"]["text"] for u in updates(client, session, kind))


def wld(*args: str) -> str:
    return subprocess.run([WLD, *args], capture_output=True, text=True, check=True).stdout


async def test_the_store_opens_an_old_database_with_every_session_transcript_binding_plan_and_review(old_home: Path, release: Release) -> None:
    store = await Store.open(f"sqlite+aiosqlite:///{old_home / 'wld.db'}")
    try:
        session = await store.sessions.get_session(release.session)
        assert session is not None and session.title == "hello there"
        transcript = "".join(entry.text for entry in await store.sessions.transcript(release.session))
        assert "You said: hello there" in transcript and f"Saved Plan {release.plan} revision 1" in transcript
        binding = await store.bridge.get_binding("telegram:123456789")
        assert binding is not None and binding.acp_session_id == release.session and binding.agent == "runwield"
        plan = await store.plans.get_plan(release.plan)
        assert plan is not None and plan.title == "A greeting file" and plan.state == "in_review"
        assert [r.number for r in await store.plans.plan_revisions(release.plan)] == [1]
        assert [(r.plan_id, r.state) for r in await store.reviews.reviews_for_plan(release.plan)] == [(release.plan, "open")]
        assert {link.role for link in await store.plans.plan_sessions(release.plan)} == {"wrote", "reviewed"}
        earlier = await store.bridge.claim_update("telegram", "41", "this run")
        assert (earlier and earlier.update_id) == release.claimed_update, "claims made by 0.2.0 are kept; tables added since 0.1.0 work"
        assert await store.sessions.running_turns(release.session) == []
    finally:
        await store.close()
    assert schema(old_home / "wld.db") == SCHEMA.read_text() and version(old_home / "wld.db") == [HEAD]


def test_wld_db_status_reads_the_version_from_the_tables_and_wld_db_upgrade_records_it(old_home: Path, release: Release) -> None:
    before = wld("db", "status")
    assert f"current:  {release.version} ({release.description}), read from its tables" in before
    assert f"head:     {describe(HEAD)}" in before and "behind: `wld db upgrade`" in before
    assert wld("db", "upgrade") == f"upgraded from {release.version} ({release.description}) to {describe(HEAD)}\n"
    after = wld("db", "status")
    assert f"current:  {describe(HEAD)}\n" in after and after.endswith("up to date\n")
    assert release.session in wld("sessions")


async def test_wld_acp_loads_an_old_session_and_goes_on_with_it(old_home: Path, release: Release, tmp_path: Path) -> None:
    assert release.session in wld("sessions")
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
        await client.call("initialize", INIT)
        await client.call("session/load", {"sessionId": release.session, "cwd": str(tmp_path), "mcpServers": []})
        assert "You said: hello there" in said(client, release.session, "agent_message_chunk")
        assert "list files" in said(client, release.session, "user_message_chunk")
        assert "/review/" not in said(client, release.session, "agent_message_chunk"), "a stored review link is not shown again"
        await client.call("session/prompt", text_prompt(release.session, "and now?"))
        assert "You said: and now?" in said(client, release.session, "agent_message_chunk")
