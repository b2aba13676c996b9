"""Whether ``/resume SESSION_ID`` reached a session the agent had: some agents (Qwen Code 0.15) answer ``session/load``
of any id, starting an empty session under it, so an answer without history is checked against ``session/list``."""

from __future__ import annotations

from acp import RequestError

from ..acp.agent_connection import AgentConnection
from .conversations import Replay

LIST_PAGES = 50
"""At most this many pages of ``session/list`` are read looking for the id."""


async def agent_had(link: AgentConnection, session_id: str, cwd: str, replay: Replay) -> bool | None:
    """True when the agent replayed history or lists the session; False when it lists its sessions without this one;
    None when it replayed nothing and offers no list (it cannot be told)."""
    if replay.user_messages or replay.agent_messages:
        return True
    if not link.offers("list") or link.conn is None:
        return None
    cursor: str | None = None
    for _ in range(LIST_PAGES):
        try:
            page = await link.conn.list_sessions(cwd=cwd, cursor=cursor)
        except (RequestError, ConnectionError):
            return None
        if any(info.session_id == session_id for info in page.sessions):
            return True
        if not (cursor := page.next_cursor):
            return False
    return None


def never_had(agent: str, session_id: str) -> str:
    return (
        f"Agent {agent} has no session {session_id}: it replayed no history and its session list does not name it. "
        "Nothing was changed. Check the id, or send /new for a new session."
    )


def cannot_tell(agent: str, session_id: str) -> str:
    return (
        f"Agent {agent} replayed no history for session {session_id} and cannot list its sessions, so it may not have "
        "had this session: if it did not, this conversation is now on a new, empty session under that id."
    )
