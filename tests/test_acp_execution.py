"""Plans executed from chat over `wld acp`: approval from the review page resumes the Session, validation is the
outcome, delivery is the user's choice; Pair Execution in plain messages; recovery after SIGKILL on session/load."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

from acp_session import menus, model_requests, say, since
from acp_wire import WireClient
from plan_kit import git, make_project, write_config
from test_acp_plans import decide, heard, reply, review_link
from test_acp_server import INIT, WLD

from runwield_bridge.acp.extensions import TURN
from waiting import PATIENCE

PLAN = "make a plan to write README.md saying hello"
TITLE = "Write README.md saying hello"
BRANCH = "runwield/write-readme-md-saying-hello-1"


@contextlib.asynccontextmanager
async def wld(tmp_path: Path) -> AsyncIterator[WireClient]:
    """An initialized `wld acp` reading the wld.toml in ``tmp_path``."""
    async with WireClient.spawn([WLD, "acp"], cwd=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")}) as client:
        await client.call("initialize", INIT)
        yield client


@contextlib.asynccontextmanager
async def project_session(tmp_path: Path, commands: list[str]) -> AsyncIterator[tuple[WireClient, str, Path]]:
    """A git project validated by ``commands``, and a Session on it over `wld acp`."""
    project = make_project(tmp_path / "proj")
    write_config(tmp_path, commands)
    async with wld(tmp_path) as client:
        session = await client.call("session/new", {"cwd": str(project), "mcpServers": []})
        yield client, session["sessionId"], project


async def approve_and_execute(client: WireClient, sid: str, mode: str) -> str:
    """Make the Plan, review it, approve it on the page; answer Execute and the mode. The text the mode's reply got."""
    await say(client, sid, PLAN)
    await reply(client, sid, "/load-plan")
    await reply(client, sid, "1")
    _, text = await reply(client, sid, "Review")
    start = len(client.messages)
    assert "is approved" in await decide(review_link(text), "approve")
    text = await heard(client, sid, start, f"Execute “{TITLE}” now?")
    assert f"The review approved revision 1 of “{TITLE}”." in text, "the approval reached the waiting Session"
    response, text = await reply(client, sid, "Execute")
    assert response["result"] == {"stopReason": "end_turn"}
    assert "1. All at once" in text and "2. Pair Execution" in text
    response, text = await reply(client, sid, mode)
    assert response["result"] == {"stopReason": "end_turn"}
    return text


def settled_turns(client: WireClient, start: int, sid: str) -> list[str]:
    """The stop reasons of the turns announced as ended (``_meta.runwield.turn`` on ``session_info_update``)."""
    return [turn.stop_reason for u in since(client, start, sid, "session_info_update") if (turn := TURN.read(u)) is not None]


def tool_titles(client: WireClient, start: int, sid: str) -> list[str]:
    return [u["title"] for u in since(client, start, sid, "tool_call")]


async def test_execute_from_chat_reports_validation_and_publishes_only_when_chosen(tmp_path: Path) -> None:
    async with project_session(tmp_path, ["grep -q hello README.md"]) as (client, sid, project):
        start = len(client.messages)
        text = await approve_and_execute(client, sid, "All at once")
        assert "write_file README.md" in tool_titles(client, start, sid), "the Agent's tool ran, streamed as usual"
        assert f"Creating the worktree and branch {BRANCH}" in tool_titles(client, start, sid)
        assert "Validation passed: 1 of 1 commands passed" in text
        [menu] = menus(client, len(client.messages) - 3, sid)[-1:]
        assert "What now?" in menu and "1. Publish" in menu and "2. Hold" in menu and "3. Abandon" in menu
        assert not (project / "README.md").exists(), "the work happened in the worktree"
        assert git(project, "rev-parse", BRANCH) == git(project, "rev-parse", "main"), "nothing published yet"

        _, text = await reply(client, sid, "Publish")
        assert f"Published branch {BRANCH} at commit" in text and "Validation passed" in text
        assert git(project, "show", f"{BRANCH}:README.md") == "hello"


async def test_a_failing_validation_is_the_outcome_whatever_the_agent_claims(tmp_path: Path) -> None:
    async with project_session(tmp_path, ["test -f CHANGELOG.md"]) as (client, sid, project):
        text = await approve_and_execute(client, sid, "All at once")
        marked, claim = text.index("🤖 Agent says: Wrote README.md"), text.index("every test passes")
        verdict = text.index("❌ Validation failed: 0 of 1 commands passed")
        assert marked < claim < verdict, "the Agent's claim is marked as its own words; the reported outcome is the validation"
        menu = menus(client, 0, sid)[-1]
        assert "Publish" not in menu
        for n, label in enumerate(["Continue", "Reopen for review", "Hold", "Abandon"], 1):
            assert f"{n}. {label}" in menu
        _, text = await reply(client, sid, "Abandon")
        assert f"The execution is abandoned. Nothing was deleted: branch {BRANCH}" in text
        assert git(project, "branch", "--list", BRANCH)


async def test_review_feedback_from_the_page_makes_the_session_revise_the_plan(tmp_path: Path, wld_home: Path) -> None:
    async with project_session(tmp_path, []) as (client, sid, project):
        await say(client, sid, PLAN)
        await reply(client, sid, "/load-plan")
        await reply(client, sid, "1")
        _, text = await reply(client, sid, "Review")
        start = len(client.messages)
        await decide(review_link(text), "feedback", general="Mention the licence.")
        text = await heard(client, sid, start, "revision 2")
        assert "sent revision 1 of “Write README.md saying hello” back with feedback:\nMention the licence." in text
        await client.wait_message(lambda _: bool(settled_turns(client, start, sid)), PATIENCE)
        assert model_requests(client, start, sid) == 2, "a planning turn: revise_plan, then the reply"
        assert settled_turns(client, start, sid) == ["end_turn"], "the end of the Session's own turn is announced"
        [revised] = wld_home.glob("plans/*/*/rev-2.md")
        assert "Mention the licence." in revised.read_text()


async def test_pair_execution_stops_at_checkpoints_and_completes_only_when_the_user_accepts(tmp_path: Path) -> None:
    async with project_session(tmp_path, ["test -f README.md && test -f NOTES.md"]) as (client, sid, project):
        text = await approve_and_execute(client, sid, "Pair Execution")
        assert "Checkpoint 1 of" in text and "?? README.md" in text and "Nothing is validated yet" in text
        assert "Validation" not in text

        response, text = await reply(client, sid, "write NOTES.md saying more")
        assert response["result"] == {"stopReason": "end_turn"}, "each increment ends the request"
        assert "Checkpoint 2 of" in text and "?? NOTES.md" in text and "Validation" not in text

        response, text = await reply(client, sid, "done")
        assert response["result"] == {"stopReason": "end_turn"}
        assert "Validation passed: 1 of 1 commands passed" in text and "1. Publish" in text
        _, text = await reply(client, sid, "1")
        assert f"Published branch {BRANCH}" in text
        assert git(project, "show", f"{BRANCH}:NOTES.md") == "more"
        _, text = await reply(client, sid, "hello again")
        assert text == "You said: hello again", "after delivery, messages are ordinary turns again"


async def test_a_killed_execution_is_offered_on_load_with_its_work_kept_and_nothing_repeated(tmp_path: Path) -> None:
    marker = tmp_path / "validation-runs.txt"
    # The first run records its shell's pid and sleeps (the process is killed meanwhile); a second run passes at once.
    command = f"echo $$ >> {marker}; if [ $(wc -l < {marker}) -lt 2 ]; then exec sleep 30; fi"
    async with project_session(tmp_path, [command]) as (client, sid, project):
        running = asyncio.ensure_future(approve_and_execute(client, sid, "All at once"))
        while not marker.exists() and not running.done():
            await asyncio.sleep(0.05)
        client.proc.kill()
        await client.proc.wait()
        running.cancel()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(marker.read_text().split()[0]), signal.SIGKILL)  # the orphaned validation command

    async with wld(tmp_path) as client:
        response = await client.request("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
        assert "result" in response
        text = await heard(client, sid, 0, "What now?")
        assert f"Work on Plan “{TITLE}” was interrupted (branch {BRANCH})" in text
        assert "has not been repeated" in text and "?? README.md" in text
        menu = menus(client, 0, sid)[-1]
        for n, label in enumerate(["Continue", "Reopen for review", "Hold", "Abandon"], 1):
            assert f"{n}. {label}" in menu
        [worktree] = (tmp_path / "wld-home" / "worktrees").glob("*/*")
        assert (worktree / "README.md").read_text() == "hello\n", "the partial work is preserved"
        assert len(marker.read_text().splitlines()) == 1, "nothing was repeated before the choice"
        assert model_requests(client, 0, sid) == 0

        start = len(client.messages)
        _, text = await reply(client, sid, "Continue")
        assert "Validation passed: 1 of 1" in text and "1. Publish" in text
        assert len(marker.read_text().splitlines()) == 2, "the uncertain command ran again after the informed choice"
        assert model_requests(client, start, sid) == 0, "the finished Agent step was not repeated"


async def test_a_question_whose_process_is_gone_tells_the_user_to_retry(tmp_path: Path) -> None:
    async with project_session(tmp_path, []) as (client, sid, project):
        await say(client, sid, PLAN)
        await reply(client, sid, "/load-plan")
        client.proc.kill()
        await client.proc.wait()

    async with wld(tmp_path) as client:
        await client.call("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
        text = await heard(client, sid, 0, "retry")
        assert "The question “Choose a Plan” was asked by a process that has since stopped" in text
        _, text = await reply(client, sid, "1")
        assert text == "You said: 1", "the old menu no longer claims the next message"
