"""Executing an approved Plan on a temporary git repository: worktree and branch, validation decides the outcome."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plan_kit import Recorder, approved_plan, bench, git, make_project, no_work
from runwield_bridge.core.events import MessageChunk
from runwield_bridge.core.execution import ExecutionError
from runwield_bridge.core.git import snapshot_tree
from waiting import until


async def test_a_passing_validation_is_the_reported_outcome_and_publishes_exactly_the_validated_tree(database_url: str, tmp_path: Path) -> None:
    b = await bench(tmp_path, ["test -f README.md", "echo checked > validation.log"], database_url=database_url)
    project, app, session_id, plan = b.project, b.app, b.session_id, b.plan
    events = Recorder()

    async def work(worktree: Path) -> None:
        (worktree / "README.md").write_text("# Hello\n")
        await events(MessageChunk("Done!"))

    record = await app.executor.start(plan.id, work=work, emit=events, session_id=session_id)
    worktree = Path(record.worktree)
    assert record.state == "validated"
    assert record.branch == "runwield/add-a-readme-1"
    assert worktree.is_relative_to(app.settings.state_dir / "worktrees")
    assert git(worktree, "branch", "--show-current") == "runwield/add-a-readme-1"
    assert not (project / "README.md").exists(), "the project's own checkout is untouched"
    assert events.finished_tools() == [
        ("Creating the worktree and branch runwield/add-a-readme-1", "completed"),
        ("Validation `test -f README.md`", "completed"),
        ("Validation `echo checked > validation.log`", "completed"),
    ]
    assert [n.text for n in events.notices()] == [
        "Validation passed: 2 of 2 commands passed (`test -f README.md` passed; `echo checked > validation.log` passed)."
    ]
    assert (await app.plans.get(plan.id)).state == "executing"
    assert {(link.role) for link in await app.store.plans.plan_sessions(plan.id)} >= {"wrote", "executed"}

    publication = await app.executor.publish(record.id, emit=events)
    assert publication.branch == record.branch and publication.summary.startswith("Validation passed")
    assert git(project, "rev-parse", record.branch) == publication.commit
    assert git(project, "show", "--name-only", "--format=%s", publication.commit).splitlines() == ["Add a README", "", "README.md"]
    assert "Validation passed: 2 of 2" in git(project, "log", "-1", "--format=%b", publication.commit)
    assert git(worktree, "status", "--short") == "?? validation.log", "validation's own output is not published"
    assert (await app.plans.get(plan.id)).state == "published"
    stored = await app.store.executions.get_execution(record.id)
    assert stored.state == "published" and json.loads(stored.outcome)["publication"]["commit"] == publication.commit
    assert events.notices()[-1].text.startswith(f"Published branch {record.branch} at commit {publication.commit[:12]}")
    with pytest.raises(ExecutionError, match="published"):
        await app.executor.publish(record.id, emit=events)
    await app.close()


async def test_a_failing_validation_is_the_reported_outcome_whatever_the_agent_claims(tmp_path: Path) -> None:
    b = await bench(tmp_path, ["test -f README.md", "python3 -c 'raise SystemExit(3)'"])
    project, app, session_id, plan = b.project, b.app, b.session_id, b.plan
    events = Recorder()
    claims = []

    async def work(worktree: Path) -> None:
        claims.append("All done, every test passes!")

    record = await app.executor.start(plan.id, work=work, emit=events, session_id=session_id)
    assert record.state == "validation_failed"
    [notice] = events.notices()
    assert notice.level == "error"
    assert notice.text == (
        "Validation failed: 0 of 2 commands passed (`test -f README.md` failed (exit 1); "
        "`python3 -c 'raise SystemExit(3)'` failed (exit 3))."
    )
    assert [status for _, status in events.finished_tools()] == ["completed", "failed", "failed"]
    with pytest.raises(ExecutionError, match="only a validated one can be published"):
        await app.executor.publish(record.id, emit=events)
    assert git(project, "rev-parse", record.branch) == record.base_commit, "nothing was published"

    async def fix(worktree: Path) -> None:
        (worktree / "README.md").write_text("# Hello\n")

    again = await app.executor.choose(record.id, "continue", work=fix, emit=events)
    assert (again.state, again.round) == ("validation_failed", 2), "the second command still fails"
    steps = await app.store.executions.execution_steps(record.id)
    assert [(s.round, s.name, s.exit_code) for s in steps if s.name == "validate"] == [(1, "validate", 1), (1, "validate", 3), (2, "validate", 0), (2, "validate", 3)]
    abandoned = await app.executor.choose(record.id, "abandon", emit=events)
    assert abandoned.state == "abandoned" and (await app.plans.get(plan.id)).state == "abandoned"
    assert Path(record.worktree, "README.md").exists(), "abandoning deletes nothing"
    assert git(project, "branch", "--list", record.branch)
    await app.close()


async def test_a_command_that_outlives_its_timeout_is_killed_with_its_children_and_fails(tmp_path: Path) -> None:
    # The command's shell starts a child and waits for it: both must be gone once the step has failed.
    b = await bench(tmp_path, ["echo started; sleep 600 & echo $! > child.pid; wait"], timeout=3)
    project, app, session_id, plan = b.project, b.app, b.session_id, b.plan
    events = Recorder()

    record = await app.executor.start(plan.id, work=no_work, emit=events, session_id=session_id)
    assert record.state == "validation_failed"
    assert "timed out after 3s" in events.notices()[0].text
    [step] = [s for s in await app.store.executions.execution_steps(record.id) if s.name == "validate"]
    assert step.exit_code is None and step.output.startswith("started\n")
    child = int(Path(record.worktree, "child.pid").read_text())
    await until(lambda: not running(child), f"the command's child (pid {child}) to be killed")
    await app.close()


def running(pid: int) -> bool:
    """Whether a process exists and is not a zombie (killed, but not yet reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def test_without_configured_commands_the_outcome_says_it_was_not_validated(tmp_path: Path) -> None:
    b = await bench(tmp_path, [])
    project, app, session_id, plan = b.project, b.app, b.session_id, b.plan
    events = Recorder()

    async def work(worktree: Path) -> None:
        (worktree / "README.md").write_text("# Hello\n")

    record = await app.executor.start(plan.id, work=work, emit=events)
    assert record.state == "unvalidated"
    assert [(n.level, n.text) for n in events.notices()] == [("warning", "Not validated: no [validation] commands are configured.")]
    publication = await app.executor.publish(record.id, emit=events)
    assert publication.summary.startswith("Not validated")
    await app.close()


async def test_only_an_approved_current_revision_of_a_plan_in_a_git_project_executes(tmp_path: Path) -> None:
    b = await bench(tmp_path, ["true"])
    project, app, session_id, plan = b.project, b.app, b.session_id, b.plan
    events = Recorder()

    async def work(worktree: Path) -> None:
        raise AssertionError("must not run")

    draft = await app.plans.write(cwd=project, title="Draft", body="text", session_id=session_id)
    with pytest.raises(ExecutionError, match="is draft"):
        await app.executor.start(draft.id, work=work, emit=events)
    await app.plans.revise(plan.id, "changed after approval")
    with pytest.raises(ExecutionError, match="only an approved current revision"):
        await app.executor.start(plan.id, work=work, emit=events)
    loose = tmp_path / "loose"
    loose.mkdir()
    elsewhere = await approved_plan(app, loose, session_id, title="Loose")
    with pytest.raises(ExecutionError, match="not a git repository"):
        await app.executor.start(elsewhere.id, work=work, emit=events)
    assert await app.store.executions.list_executions() == [] and events.events == []
    assert not (app.settings.state_dir / "worktrees").exists()
    await app.close()


async def test_a_failing_agent_step_stops_the_execution_with_the_choices_and_reopen_withdraws_approval(tmp_path: Path) -> None:
    b = await bench(tmp_path, ["true"])
    project, app, session_id, plan = b.project, b.app, b.session_id, b.plan
    events = Recorder()

    async def work(worktree: Path) -> None:
        (worktree / "half.txt").write_text("half\n")
        raise RuntimeError("the model is unreachable")

    record = await app.executor.start(plan.id, work=work, emit=events)
    assert record.state == "interrupted"
    assert events.notices()[-1].text.startswith("The execution stopped: the Agent's work on the Plan failed: the model is unreachable")
    held = await app.executor.choose(record.id, "hold", emit=events)
    assert held.state == "held" and (await app.plans.get(plan.id)).state == "held"
    reopened = await app.executor.choose(record.id, "reopen", emit=events)
    plan = await app.plans.get(plan.id)
    assert reopened.state == "reopened" and (plan.state, plan.approved_revision) == ("draft", None)
    assert Path(record.worktree, "half.txt").read_text() == "half\n"
    with pytest.raises(ExecutionError, match="nothing to choose"):
        await app.executor.choose(record.id, "continue", work=work, emit=events)
    await app.close()


async def test_branches_of_plans_with_the_same_title_do_not_collide(tmp_path: Path) -> None:
    b = await bench(tmp_path, [])
    second = await approved_plan(b.app, b.project, b.session_id)
    one = await b.app.executor.start(b.plan.id, work=no_work, emit=Recorder())
    two = await b.app.executor.start(second.id, work=no_work, emit=Recorder())
    assert (one.branch, two.branch) == ("runwield/add-a-readme-1", "runwield/add-a-readme-2")
    await b.app.close()


async def test_a_snapshot_includes_untracked_files_and_leaves_the_index_alone(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj")
    before = git(project, "write-tree")
    (project / "new.txt").write_text("new\n")
    tree = await snapshot_tree(project)
    assert tree != before and "new.txt" in git(project, "ls-tree", "--name-only", tree)
    assert git(project, "status", "--short") == "?? new.txt"
