"""The Plan workflow with a real external agent driving the Session, through the real `wld bridge` and the fake Telegram:
the agent writes the Plan with RunWield's `write_plan` on the MCP bus, the review page approves it, the agent carries it
out in the Plan's worktree (its own write tool, which the person allows with a button), validation decides, Publish
commits. The agent's model is a local fake of its provider, scripted call by call."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.bridge_kit import telegram_section
from tests.coding_agents_kit import QWEN_PLAN_TOOL, qwen_agent
from tests.fakes.openai_api import OpenAIFake, Reply, ToolCall
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


@dataclass
class Stage:
    """The project, the operator on Telegram, the agent's fake model, and where the Plan's worktree will be."""

    project: Path
    me: Operator
    model: OpenAIFake
    config: Path

    @property
    def worktree(self) -> Path:
        return Path(os.environ["WLD_HOME"]) / "worktrees" / project_key(project_root(self.project)) / SLUG


@contextlib.asynccontextmanager
async def qwen_stage(tmp_path: Path) -> AsyncIterator[Stage]:
    """A git project, the fake Telegram and the fake chat-completions model, and a wld.toml whose Sessions Qwen Code
    drives (with ``write_plan`` on its MCP bus) and whose Plans validate with CHECK."""
    project = make_project(tmp_path / "proj")
    async with TelegramFake() as telegram, OpenAIFake(api_key="test-key", model="fake-qwen") as model:
        agent = qwen_agent(tmp_path / "qwen-home", model.base_url, model.api_key, model.model, ["write_plan"])
        config = write_wld_config(
            tmp_path / "wld.toml",
            {
                "sessions": {"runtime": "acp:qwen"},
                "web": {"listen": f"127.0.0.1:{free_port()}"},
                "validation": {"commands": [CHECK]},
                "channels": {"telegram": telegram_section(telegram) | {"cwd": str(project)}},
                "agents": {"qwen": agent},
            },
        )
        yield Stage(project, Operator(telegram), model, config)


def writes_hello(worktree: Path, attempt: int = 1) -> tuple[Reply, Reply]:
    """The agent's model carrying out the Plan: Qwen Code's own write_file in the worktree, then its claim. Each attempt
    is a new tool call (a model names each call anew; the agent ignores a call id it has seen)."""
    write = ToolCall(f"call-write-{attempt}", "write_file", {"file_path": str(worktree / "hello.txt"), "content": "hello\n"})
    return Reply(tool_calls=(write,)), Reply(text=("Wrote hello.txt. Everything works and every test passes.",))


async def plan_approved(stage: Stage, *execution: Reply) -> dict[str, Any]:
    """Ask for a Plan (the agent writes it on the MCP bus), open its review from the Plan's button, approve it in the
    browser, and choose Execute, All at once, the agent's model then answering with ``execution``; the mode question
    answered."""
    me = stage.me
    stage.model.queue(
        Reply(tool_calls=(ToolCall("call-plan", QWEN_PLAN_TOOL, {"title": TITLE, "body": PLAN_BODY}),)),
        Reply(text=("I saved the Plan for your review.",)),
        *execution,
    )
    await me.says("Please plan writing hello.txt saying hello")
    plan = await me.sees(f"📋 Plan “{TITLE}” (revision 1)", timeout=PATIENCE)
    assert [b["text"] for b in me.buttons(plan)] == ["Review", "Execute"], "the Plan the agent wrote comes with its next steps"
    await me.sees("I saved the Plan for your review.", timeout=PATIENCE)
    await me.presses(plan, "Review")
    link = await me.sees("in your browser", after=plan["message_id"], timeout=PATIENCE)
    await decide(LINK.search(link["text"]).group(1), "approve")
    question = await me.answers(f"Execute “{TITLE}” now?", "Execute", after=link["message_id"])
    return await me.answers("be executed?", "All at once", after=question["message_id"])


async def test_qwen_code_writes_the_plan_carries_it_out_in_the_worktree_and_publish_commits_it(tmp_path: Path) -> None:
    async with qwen_stage(tmp_path) as stage, wld_bridge(stage.config, stage.me.fake):
        me = stage.me
        mode = await plan_approved(stage, *writes_hello(stage.worktree))

        asked = await me.sees("The agent asks to go ahead", after=mode["message_id"], timeout=PATIENCE)
        assert "hello.txt" in asked["text"], asked["text"]
        assert not (stage.worktree / "hello.txt").exists(), "nothing is written before the person allows it"
        await me.presses(asked, "Allow")
        delivery = await me.sees("validation passed. What now?", after=asked["message_id"], timeout=PATIENCE)
        said = "\n".join(me.text(i) for i in range(mode["message_id"] + 1, delivery["message_id"]))
        assert f"Creating the worktree and branch {BRANCH}" in said
        assert "🤖 Agent says: Wrote hello.txt. Everything works" in said, "the agent's claim reads as its own"
        assert "✅ Validation passed: 1 of 1 commands passed" in said, "validation decides"
        assert (stage.worktree / "hello.txt").read_text() == "hello\n", "the agent's edit landed in the worktree"
        assert not (stage.project / "hello.txt").exists(), "and not in the project"

        await me.presses(delivery, "Publish")
        published = await me.sees(f"Published branch {BRANCH} at commit", after=delivery["message_id"], timeout=PATIENCE)
        assert git(stage.project, "show", f"{BRANCH}:hello.txt") == "hello"
        assert git(stage.project, "rev-parse", BRANCH)[:12] in published["text"]
        assert TITLE in git(stage.project, "log", "-1", "--format=%s", BRANCH)
        assert git(stage.project, "status", "--porcelain") == "", "the project's own checkout is untouched"


def agent_processes(home: Path) -> list[int]:
    """The processes running with ``home`` as their HOME: the agent and whatever it started."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and f"HOME={home}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
    return found


async def test_a_sigkill_while_qwen_code_waits_to_write_is_recovered_without_repeating_its_work(tmp_path: Path) -> None:
    async with qwen_stage(tmp_path) as stage:
        me, home = stage.me, tmp_path / "qwen-home"
        try:
            async with wld_bridge(stage.config, me.fake) as (bridge, _):
                mode = await plan_approved(stage, *writes_hello(stage.worktree))
                asked = await me.sees("The agent asks to go ahead", after=mode["message_id"], timeout=PATIENCE)
                bridge.proc.kill()  # the Session Host dies while the agent's write waits for the person
                await bridge.proc.wait()
            stage.model.replies.clear()  # the first attempt's claim was never asked for
            requests = len(stage.model.calls)
            await until(lambda: not agent_processes(home), "the agent the killed bridge started to end with it")

            async with wld_bridge(stage.config, me.fake):  # nobody says anything: the bridge reopens the Session
                report = await me.sees(f"Work on Plan “{TITLE}” was interrupted (branch {BRANCH})", after=asked["message_id"], timeout=PATIENCE)
                assert "Uncertain: the Agent's work on the Plan was running when it stopped" in report["text"]
                assert "has not been repeated" in report["text"]
                recovery = await me.sees("What now?", after=report["message_id"] - 1, timeout=PATIENCE)
                assert [b["text"] for b in me.buttons(recovery)][:4] == ["Continue", "Reopen for review", "Hold", "Abandon"], "the person chooses"
                assert len(stage.model.calls) == requests, "the agent is not run again before the person chooses"
                assert not (stage.worktree / "hello.txt").exists()

                stage.model.queue(*writes_hello(stage.worktree, attempt=2))
                await me.presses(recovery, "Continue")
                again = await me.sees("The agent asks to go ahead", after=recovery["message_id"], timeout=PATIENCE)
                await me.presses(again, "Allow")
                delivery = await me.sees("validation passed. What now?", after=again["message_id"], timeout=PATIENCE)
                assert (stage.worktree / "hello.txt").read_text() == "hello\n" and not (stage.project / "hello.txt").exists()
                await me.presses(delivery, "Publish")
                await me.sees(f"Published branch {BRANCH} at commit", after=delivery["message_id"], timeout=PATIENCE)
                assert git(stage.project, "show", f"{BRANCH}:hello.txt") == "hello"
        finally:
            for pid in agent_processes(home):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
