"""``/resume SESSION_ID`` through the real Bridge and the Telegram fake: an id the agent never had is refused (Qwen Code
0.15.10 answers session/load of any id, with no history, and its session/list does not name it); an id it had still
resumes."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.bridge_kit import OWNER, asking_agent, bridge_world
from tests.wld_process import free_port

REPO = Path(__file__).resolve().parent.parent
QWEN_015 = REPO / "node_modules" / "qwen-code-0.15" / "cli.js"


def qwen_agent(tmp_path: Path) -> dict[str, object]:
    """``[agents.qwen]``: Qwen Code 0.15.10 in ACP mode, offline (its home a temp dir, its OpenAI endpoint a closed local port)."""
    node = shutil.which("node")
    assert node and QWEN_015.exists(), "Qwen Code 0.15.10 needs node and node_modules"
    home = tmp_path / "qwen-home"
    home.mkdir()
    env = {"HOME": str(home), "OPENAI_API_KEY": "sk-offline", "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1", "OPENAI_MODEL": "offline"}
    return {"command": [node, str(QWEN_015), "--experimental-acp"], "env": env}


async def test_resume_of_an_id_qwen_code_never_had_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path, telegram={"agent": "qwen", "cwd": str(tmp_path)}, agents={"qwen": qwen_agent(tmp_path)}) as world:
        await world.exchange(OWNER, OWNER, "/new", "New session")
        bound = (await world.app.store.bridge.get_binding(f"telegram:{OWNER}")).acp_session_id
        told = await world.exchange(OWNER, OWNER, "/resume does-not-exist", "does-not-exist")
        assert "Agent qwen does not know session does-not-exist" in told["text"] and "no new session was started" in told["text"]
        assert not any("Resumed" in text for text in world.texts(OWNER))
        assert (await world.app.store.bridge.get_binding(f"telegram:{OWNER}")).acp_session_id == bound


async def test_resume_of_a_session_our_agent_had_replays_it(tmp_path: Path) -> None:
    async with bridge_world(tmp_path=tmp_path, telegram={"agent": "asker"}, agents={"asker": asking_agent(tmp_path)}) as world:
        await world.exchange(OWNER, OWNER, "first words", "echo: first words")
        first = (await world.app.store.bridge.get_binding(f"telegram:{OWNER}")).acp_session_id
        await world.exchange(OWNER, OWNER, "/new", "New session")
        resumed = await world.exchange(OWNER, OWNER, f"/resume {first}", f"Resumed session {first}")
        assert "2 earlier messages" in resumed["text"] and "echo: first words" in resumed["text"]
        assert (await world.app.store.bridge.get_binding(f"telegram:{OWNER}")).acp_session_id == first

