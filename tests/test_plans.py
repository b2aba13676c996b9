"""Plans on a real SQLite file under WLD_HOME: files per revision, metadata, Session links, planning tools."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from runwield_bridge.app import App
from runwield_bridge.cli import main
from runwield_bridge.config import load_settings
from runwield_bridge.core.events import Event, ToolProgress
from runwield_bridge.core.plans import PlanNotFound, project_key, project_root
from runwield_bridge.core.records import PlanRevisionRecord
from runwield_bridge.core.store import Conflict
from runwield_bridge.core.tools import ToolContext, ToolError


async def start(tmp_path: Path) -> App:
    path = tmp_path / "wld.toml"
    path.write_text("")
    return await App.start(load_settings(path))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


async def test_a_plan_is_a_markdown_file_per_revision_with_metadata_that_survives_a_restart(
    tmp_path: Path, wld_home: Path, project: Path
) -> None:
    app = await start(tmp_path)
    session = await app.session_host.create(str(project / "src"))
    plan = await app.plans.write(cwd=project / "src", title="  Add a   README ", body="1. Write it.", session_id=session.id)
    assert (plan.title, plan.current_revision, plan.state, plan.slug) == ("Add a README", 1, "draft", "add-a-readme")
    assert plan.project_dir == str(project.resolve()), "the project is the enclosing git checkout"
    first = wld_home / "plans" / project_key(project.resolve()) / plan.id / "rev-1.md"
    assert first.read_text() == "# Add a README\n\n1. Write it.\n"

    revised = await app.plans.revise(plan.id, "# Add a README\n\n1. Write it.\n2. Link it.", session_id=session.id)
    assert (revised.current_revision, revised.state) == (2, "draft")
    assert app.plans.text(revised) == "# Add a README\n\n1. Write it.\n2. Link it.\n"
    assert app.plans.text(revised, 1) == first.read_text(), "earlier revisions stay readable"
    await app.close()

    again = await start(tmp_path)
    [listed] = await again.plans.for_project(project)
    assert (listed.id, listed.current_revision) == (plan.id, 2)
    assert [r.number for r in await again.store.plans.plan_revisions(plan.id)] == [1, 2]
    assert [p.id for p in await again.plans.for_session(session.id)] == [plan.id]
    await again.close()
    with sqlite3.connect(wld_home / "wld.db") as db:
        assert db.execute("SELECT count(*) FROM plan_revisions").fetchone()[0] == 2


async def test_the_session_link_survives_archive(tmp_path: Path, project: Path) -> None:
    app = await start(tmp_path)
    session = await app.session_host.create(str(project))
    plan = await app.plans.write(cwd=project, title="Plan", body="text", session_id=session.id)
    await app.session_host.archive(session.id)
    assert [p.id for p in await app.plans.for_session(session.id)] == [plan.id]
    assert [(link.session_id, link.role) for link in await app.store.plans.plan_sessions(plan.id)] == [(session.id, "wrote")]
    await app.close()


async def test_bad_plans_and_stale_revisions_change_nothing(tmp_path: Path, project: Path) -> None:
    app = await start(tmp_path)
    with pytest.raises(ValueError, match="title"):
        await app.plans.write(cwd=project, title=" ", body="text")
    with pytest.raises(ValueError, match="text"):
        await app.plans.write(cwd=project, title="T", body="\n")
    assert await app.store.plans.list_plans() == []
    with pytest.raises(PlanNotFound):
        await app.plans.revise("plan_missing", "text")
    plan = await app.plans.write(cwd=project, title="T", body="one")
    await app.plans.revise(plan.id, "two")
    stale = PlanRevisionRecord(plan_id=plan.id, number=2, title="T", path="elsewhere")
    with pytest.raises(Conflict):
        await app.store.plans.add_plan_revision(stale)
    assert (await app.plans.get(plan.id)).current_revision == 2
    assert [r.path for r in await app.store.plans.plan_revisions(plan.id)].count("elsewhere") == 0
    await app.close()


async def test_planning_tools_write_and_revise_the_sessions_plan(tmp_path: Path, project: Path) -> None:
    app = await start(tmp_path)
    session = await app.session_host.create(str(project))
    tools = {tool.spec.name: tool for tool in app.session_host.tools}
    ctx = ToolContext(session.id, project)
    written = await tools["write_plan"].run({"title": "Cache", "body": "1. Add a cache."}, ctx)
    [plan] = await app.plans.for_session(session.id)
    assert written == f"Saved Plan {plan.id} revision 1: Cache"
    revised = await tools["revise_plan"].run({"body": "1. Add an LRU cache."}, ctx)
    assert revised == f"Saved Plan {plan.id} revision 2: Cache"
    assert "LRU" in app.plans.text(await app.plans.get(plan.id))
    with pytest.raises(ToolError, match="title"):
        await tools["write_plan"].run({"body": "x"}, ctx)
    other = await app.session_host.create(str(project))
    with pytest.raises(ToolError, match="no Plan to revise"):
        await tools["revise_plan"].run({"body": "x"}, ToolContext(other.id, project))
    await app.close()


async def test_the_scripted_model_writes_a_plan_titled_from_the_prompt(tmp_path: Path, project: Path) -> None:
    app = await start(tmp_path)
    session = await app.session_host.create(str(project))
    events: list[Event] = []

    async def record(event: Event) -> None:
        events.append(event)

    settled = await app.session_host.prompt(session.id, "Please make a plan to add a README.", record)
    assert settled.stop_reason == "end_turn"
    [plan] = await app.plans.for_session(session.id)
    assert plan.title == "Add a README"
    assert app.plans.text(plan).startswith("# Add a README\n\n## Goal\n")
    finished = [e for e in events if isinstance(e, ToolProgress) and e.status == "completed"]
    assert [e.title for e in finished] == ["write_plan"]
    assert finished[0].output == f"Saved Plan {plan.id} revision 1: Add a README"
    await app.close()


def test_a_project_is_the_enclosing_git_checkout_or_the_directory(tmp_path: Path, project: Path) -> None:
    assert project_root(project / "src") == project.resolve()
    loose = tmp_path / "loose"
    loose.mkdir()
    assert project_root(loose) == loose.resolve()
    assert project_key(project.resolve()) != project_key(loose.resolve())



def test_wld_plans_lists_plans_with_their_state(tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def write() -> tuple[str, str]:
        app = await start(tmp_path)
        session = await app.session_host.create(str(project))
        draft = await app.plans.write(cwd=project, title="Add a README", body="1. Write it", session_id=session.id)
        other = await app.plans.write(cwd=tmp_path, title="Elsewhere", body="text")
        await app.store.plans.update_plan(other.id, state="approved", approved_revision=1)
        await app.close()
        return draft.id, other.id

    draft, other = asyncio.run(write())
    config = str(tmp_path / "wld.toml")
    assert main(["plans", "--config", config]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == [other, draft], "most recently changed first"
    assert "approved          rev 1 (approved rev 1)  Elsewhere" in listed[0]
    assert "draft             rev 1  Add a README" in listed[1] and str(project) in listed[1]
    assert main(["plans", "--config", config, "--project", str(project / "src")]) == 0
    assert capsys.readouterr().out.split()[0] == draft
    empty = tmp_path / "no-plans-here"
    empty.mkdir()
    assert main(["plans", "--config", config, "--project", str(empty)]) == 0
    assert capsys.readouterr().out.strip() == f"no Plans for the project of {empty}", "not 'no Plans yet': there are Plans elsewhere"
