"""``/sessions`` (and ``/resume`` without an id): the conversation's agent's recent sessions from ``session/list``, as
buttons that continue one here (on a phone nobody types a session id); and the check that a resumed id is one the
agent knows."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from acp import RequestError
from acp.schema import SessionInfo

from ..acp.extensions import ARCHIVED
from ..ages import age
from ..channels.types import BridgeError
from ..acp.agent_connection import AgentUnavailable
from .agent_links import AgentLink
from .conversation import Conversation
from .delivery import deliver
from .offers import Offers
from .replay import Replay

SHOWN = 10
"""How many sessions the list shows, the most recently updated first."""
LABEL_LENGTH = 40
PAGES_CHECKED = 20
"""How many pages of ``session/list`` a resume's check reads before it takes the agent's word for the id."""


@dataclass(frozen=True, slots=True)
class ResumeStep:
    """A session offered as a button: its label, and the ``/resume ID`` a press sends."""

    label: str
    command: str


def lists_sessions(link: AgentLink) -> bool:
    """Whether the agent offers ``session/list`` (``sessionCapabilities.list`` in its ``initialize`` answer)."""
    caps = link.info.agent_capabilities if link.info else None
    return bool(caps and caps.session_capabilities and caps.session_capabilities.list is not None)


async def recent_sessions(link: AgentLink) -> list[SessionInfo]:
    """The agent's sessions (its first page of ``session/list``), the most recently updated first; BridgeError if it
    lists none or cannot be reached."""
    try:
        conn = await link.connection()
    except AgentUnavailable as exc:
        raise BridgeError(f"{exc} Nothing was sent.") from None
    if not lists_sessions(link):
        raise BridgeError(f"Agent {link.name} does not list its sessions (it offers no session/list). Use /resume SESSION_ID.")
    try:
        response = await conn.list_sessions()
    except RequestError as exc:
        raise BridgeError(f"Agent {link.name} could not list its sessions: {exc}") from None
    return sorted(response.sessions, key=lambda info: _updated(info) or 0.0, reverse=True)


async def require_known(link: AgentLink, session_id: str, replay: Replay) -> None:
    """Refuse a ``session/load`` the agent answered without knowing the session: it replayed no history and its
    ``session/list`` does not have the id (an agent that says nothing of an unknown id would else start afresh)."""
    if replay.user_messages or replay.agent_messages or not lists_sessions(link):
        return
    if not await _listed(link, session_id):
        raise BridgeError(
            f"Agent {link.name} does not know session {session_id} (it replayed no history and does not list it). "
            "Nothing was sent and no new session was started. Send /sessions to choose one of its sessions."
        )


async def _listed(link: AgentLink, session_id: str) -> bool:
    """Whether the agent's ``session/list`` has the session, on any of its first ``PAGES_CHECKED`` pages."""
    cursor: str | None = None
    for _ in range(PAGES_CHECKED):
        if link.conn is None:
            return True  # the agent went away: the list cannot say, so the load's own answer stands
        try:
            page = await link.conn.list_sessions(cursor=cursor)
        except (RequestError, ConnectionError):
            return True
        if any(info.session_id == session_id for info in page.sessions):
            return True
        if not (cursor := page.next_cursor):
            return False
    return True


async def show_sessions(links: Mapping[str, AgentLink], offers: Offers, state: Conversation) -> None:
    """The agent's recent sessions as buttons that send ``/resume ID`` (where there are none, each with its command)."""
    channel, conversation = state.channel, state.chat
    name = state.agent or channel.settings.agent
    link = links.get(name)
    if link is None:
        raise BridgeError(f"Agent {name} is no longer configured; send /new to start over.")
    sessions = (await recent_sessions(link))[:SHOWN]
    if not sessions:
        await deliver(channel, conversation, f"Agent {name} has no sessions yet; your next message starts one.")
        return
    now = time.time()
    buttons = channel.capabilities.buttons
    lines = [f"Sessions of {name}, the most recent first ({'choose one' if buttons else 'send its /resume'} to continue it here):"]
    steps = []
    for n, info in enumerate(sessions, 1):
        title = info.title or f"Session {info.session_id}"
        when = age(now - updated) if (updated := _updated(info)) is not None else "age unknown"
        step = ResumeStep(_short(f"{title} · {when}"), f"/resume {info.session_id}")
        lines.append(f"{n}. {title} ({when}{_standing(info, state)})" + ("" if buttons else f": {step.command}"))
        steps.append(step)
    shown = offers.buttons(channel, conversation, steps) if buttons else []
    await deliver(channel, conversation, "\n".join(lines), shown)


def _standing(info: SessionInfo, state: Conversation) -> str:
    """Where a session stands, as far as the list says: bound here, archived, or nothing to add."""
    if info.session_id == state.session_id:
        return ", continuing here"
    return ", archived" if ARCHIVED.read(info) else ""


def _updated(info: SessionInfo) -> float | None:
    """When the session was last updated (``updatedAt``), as a timestamp; None if the agent did not say or said nonsense."""
    try:
        return datetime.fromisoformat(info.updated_at).timestamp() if info.updated_at else None
    except ValueError:
        return None


def _short(text: str) -> str:
    return text if len(text) <= LABEL_LENGTH else text[: LABEL_LENGTH - 1].rstrip() + "…"
