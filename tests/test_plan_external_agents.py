"""The Plan workflow with a real external agent driving the Session (Qwen Code, Codex), through the real `wld bridge` and
the fake Telegram: the agent writes the Plan with RunWield's `write_plan` on the MCP bus, the review page approves it,
the agent carries it out in the Plan's worktree with its own tools (each step the person allows with a button),
validation decides, Publish commits; a SIGKILL mid-execution is recovered. The agent's model is a local fake of its
provider, scripted call by call."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_api import Reply, ScriptedLLMFake
from real_agents import CODEX, QWEN, RealAgent

from tests.bridge_kit import telegram_section
from tests.fakes.telegram_api import TelegramFake
from tests.plan_kit import git, make_project
from tests.test_chat_journey import LINK, Operator, decide, wld_bridge
from tests.wld_process import free_port
from tests.wld_process import write_config as write_wld_config
from waiting import PATIENCE, until

from runwield_bridge.core.plans import project_key, project_root

TITLE = "Write hello.txt saying hello"
SLUG = "write-hello-txt-saying-hello-1"
BRANCH = f"runwield/{SLUG}"
CHECK = "grep -q hello hello.txt"
PLAN_BODY = "1. Write hello.txt containing the word hello.\n2. Validation checks it."
ASKS = "The agent asks to go ahead"
ALLOW_ONCE = {"qwen": "Allow", "codex": "Yes, proceed"}
"""Each agent's option that allows one change once (Codex asks so about a command; about an MCP tool, Allow)."""
by_agent = pytest.mark.parametrize("agent", [QWEN, CODEX], ids=["qwen", "codex"])


@dataclass
class Stage:
    """The agent, the project, the operator on Telegram, the agent's fake model and the wld.toml."""

    agent: RealAgent
    project: Path
    me: Operator
    model: ScriptedLLMFake
    config: Path
    home: Path

    @property
    def worktree(self) -> Path:
        return Path(os.environ["WLD_HOME"]) / "worktrees" / project_key(project_root(self.project)) / SLUG

    def writes_hello(self, attempt: int = 1) -> tuple[Reply, Reply]:
        """The model carrying out the Plan: the agent's own tool writes hello.txt in its working directory (the
        worktree), then it claims success. Each attempt is a new call (an agent ignores a call id it has seen)."""
        write = self.agent.write(f"call-write-{attempt}", self.worktree, "hello.txt", "hello")
        return Reply(tool_calls=(write,)), Reply(text=("Wrote hello.txt. Everything works and every test passes.",))


@contextlib.asynccontextmanager
async def stage(agent: RealAgent, tmp_path: Path) -> AsyncIterator[Stage]:
    """A git project, the fake Telegram and the agent's fake model, and a wld.toml whose Sessions the agent drives
    (with ``write_plan`` on its MCP bus) and whose Plans validate with CHECK."""
    project = make_project(tmp_path / "proj")
    home = tmp_path / "agent-home"
    async with TelegramFake() as telegram, agent.fake() as model:
        config = write_wld_config(
            tmp_path / "wld.toml",
            {
                "sessions": {"runtime": f"acp:{agent.name}"},
                "web": {"listen": f"127.0.0.1:{free_port()}"},
                "validation": {"commands": [CHECK]},
                "channels": {"telegram": telegram_section(telegram) | {"cwd": str(project)}},
                "agents": {agent.name: agent.section(home, model, ["write_plan"])},
            },
        )
        yield Stage(agent, project, Operator(telegram), model, config, home)


async def allowed(me: Operator, after: int, label: str = "Allow") -> dict[str, Any]:
    """The agent's next question (it asks before it acts), answered with its button ``label`` (allow once)."""
    asked = await me.sees(ASKS, after=after, timeout=PATIENCE)
    await me.presses(asked, label)
    return asked


async def plan_approved(stage: Stage, *execution: Reply) -> dict[str, Any]:
    """Ask for a Plan (the agent writes it on the MCP bus, once the person allows the call), open its review from the
    Plan's button, approve it in the browser, and choose Execute, All at once, the agent's model then answering with
    ``execution``; the mode question answered."""
    me = stage.me
    stage.model.queue(
        Reply(tool_calls=(stage.agent.bus_call("call-plan", "write_plan", {"title": TITLE, "body": PLAN_BODY}),)),
        Reply(text=("I saved the Plan for your review.",)),
        *execution,
    )
    await me.says("Please plan writing hello.txt saying hello")
    await allowed(me, 0)
    plan = await me.sees(f"📋 Plan “{TITLE}” (revision 1)", timeout=PATIENCE)
    assert [b["text"] for b in me.buttons(plan)] == ["Review", "Execute"], "the Plan the agent wrote comes with its next steps"
    await me.sees("I saved the Plan for your review.", timeout=PATIENCE)
    await me.presses(plan, "Review")
    link = await me.sees("in your browser", after=plan["message_id"], timeout=PATIENCE)
    await decide(LINK.search(link["text"]).group(1), "approve")
    question = await me.answers(f"Execute “{TITLE}” now?", "Execute", after=link["message_id"])
    return await me.answers("be executed?", "All at once", after=question["message_id"])


@by_agent
async def test_the_agent_writes_the_plan_carries_it_out_in_the_worktree_and_publish_commits_it(agent: RealAgent, tmp_path: Path) -> None:
    async with stage(agent, tmp_path) as setup, wld_bridge(setup.config, setup.me.fake):
        me = setup.me
        mode = await plan_approved(setup, *setup.writes_hello())

        asked = await me.sees(ASKS, after=mode["message_id"], timeout=PATIENCE)
        assert "hello.txt" in asked["text"], asked["text"]
        assert not (setup.worktree / "hello.txt").exists(), "nothing is written before the person allows it"
        await me.presses(asked, ALLOW_ONCE[agent.name])
        delivery = await me.sees("validation passed. What now?", after=asked["message_id"], timeout=PATIENCE)
        said = "\n".join(me.text(i) for i in range(mode["message_id"] + 1, delivery["message_id"]))
        assert f"Creating the worktree and branch {BRANCH}" in said
        assert "🤖 Agent says: Wrote hello.txt. Everything works" in said, "the agent's claim reads as its own"
        assert "✅ Validation passed: 1 of 1 commands passed" in said, "validation decides"
        assert (setup.worktree / "hello.txt").read_text() == "hello", "the agent's edit landed in the worktree"
        assert not (setup.project / "hello.txt").exists(), "and not in the project"

        await me.presses(delivery, "Publish")
        published = await me.sees(f"Published branch {BRANCH} at commit", after=delivery["message_id"], timeout=PATIENCE)
        assert git(setup.project, "show", f"{BRANCH}:hello.txt") == "hello"
        assert git(setup.project, "rev-parse", BRANCH)[:12] in published["text"]
        assert TITLE in git(setup.project, "log", "-1", "--format=%s", BRANCH)
        assert git(setup.project, "status", "--porcelain") == "", "the project's own checkout is untouched"

        mark = len(setup.model.calls)
        setup.model.queue(Reply(text=("You are welcome.",)))
        await me.says("Thanks! What did we plan?")
        await me.sees("You are welcome.", after=published["message_id"], timeout=PATIENCE)
        asked_again = next(c.params for c in setup.model.calls[mark:] if "What did we plan?" in json.dumps(c.params))
        assert "I saved the Plan for your review." in json.dumps(asked_again), "back in the project, the agent remembers the planning"


def agent_processes(home: Path) -> list[int]:
    """The processes running with ``home`` as their HOME: the agent and whatever it started."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and f"HOME={home}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
    return found


@by_agent
async def test_a_sigkill_while_the_agent_waits_to_write_is_recovered_without_repeating_its_work(agent: RealAgent, tmp_path: Path) -> None:
    async with stage(agent, tmp_path) as setup:
        me = setup.me
        try:
            async with wld_bridge(setup.config, me.fake) as (bridge, _):
                mode = await plan_approved(setup, *setup.writes_hello())
                asked = await me.sees(ASKS, after=mode["message_id"], timeout=PATIENCE)
                bridge.proc.kill()  # the Session Host dies while the agent's write waits for the person
                await bridge.proc.wait()
            setup.model.replies.clear()  # the first attempt's claim was never asked for
            requests = len(setup.model.calls)
            await until(lambda: not agent_processes(setup.home), "the agent the killed bridge started to end with it")

            async with wld_bridge(setup.config, me.fake):  # nobody says anything: the bridge reopens the Session
                report = await me.sees(f"Work on Plan “{TITLE}” was interrupted (branch {BRANCH})", after=asked["message_id"], timeout=PATIENCE)
                assert "Uncertain: the Agent's work on the Plan was running when it stopped" in report["text"]
                assert "has not been repeated" in report["text"]
                recovery = await me.sees("What now?", after=report["message_id"] - 1, timeout=PATIENCE)
                assert [b["text"] for b in me.buttons(recovery)][:4] == ["Continue", "Reopen for review", "Hold", "Abandon"], "the person chooses"
                assert len(setup.model.calls) == requests, "the agent is not run again before the person chooses"
                assert not (setup.worktree / "hello.txt").exists()

                setup.model.queue(*setup.writes_hello(attempt=2))
                await me.presses(recovery, "Continue")
                again = await allowed(me, recovery["message_id"], ALLOW_ONCE[agent.name])
                delivery = await me.sees("validation passed. What now?", after=again["message_id"], timeout=PATIENCE)
                assert (setup.worktree / "hello.txt").read_text() == "hello" and not (setup.project / "hello.txt").exists()
                await me.presses(delivery, "Publish")
                await me.sees(f"Published branch {BRANCH} at commit", after=delivery["message_id"], timeout=PATIENCE)
                assert git(setup.project, "show", f"{BRANCH}:hello.txt") == "hello"
        finally:
            for pid in agent_processes(setup.home):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
