"""The real coding agents as ``[agents.NAME]`` entries, offline: each on a local fake of its model provider, with a
home of its own (so it reads no real settings), asking before it changes anything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
NODE = REPO / "node_modules" / ".bin" / "node"  # Node 22: Qwen Code 0.24 needs it, whatever node is on PATH
QWEN = REPO / "node_modules" / "@qwen-code" / "qwen-code" / "cli-entry.js"
QWEN_SETTINGS = {
    "ui": {"enableFollowupSuggestions": False},  # no side requests to the model: each scripted reply answers the agent
    "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False, "enableAutoSkill": False},
    "tools": {"toolSearch": {"enabled": False}},  # MCP tools are declared to the model, not found through a search
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False},
    "permissions": {"allow": ["mcp__runwield"]},  # RunWield's own tools on the bus; its edits and commands still ask
}
QWEN_PLAN_TOOL = "mcp__runwield__write_plan"
"""What Qwen Code calls RunWield's ``write_plan`` on the MCP bus (server ``runwield``)."""


def qwen_agent(home: Path, base_url: str, api_key: str, model: str, tools: list[str]) -> dict[str, Any]:
    """``[agents.qwen]``: Qwen Code 0.24 over ACP in its ``default`` approval mode (it asks before it writes), on an
    OpenAI-compatible chat-completions server at ``base_url``, with ``home`` as its HOME."""
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps(QWEN_SETTINGS), encoding="utf-8")
    env = {
        "HOME": str(home),
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": api_key,
        "OPENAI_MODEL": model,
        "QWEN_CODE_LEGACY_MCP_BLOCKING": "1",  # session/new waits for the MCP bus: its tools are there for the first prompt
    }
    return {"command": [str(NODE), str(QWEN), "--acp", "--approval-mode", "default"], "env": env, "tools": tools}
