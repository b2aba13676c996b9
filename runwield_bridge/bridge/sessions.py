"""Conversations bound to ACP sessions: a new one, one resumed by id, one reopened (``session/load``) when it is needed."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from acp import RequestError

from ..acp.client import AgentEndpoint
from ..config import ConfigError
from ..channels.types import BridgeError
from ..channels.types import Conversation as Chat
from .agent_mode import settle_agent_mode
from ..acp.agent_connection import AgentUnavailable, SessionSink
from .agent_links import AgentLink
from .bindings import BindingStore
from .claims import Claims
from .conversation import Conversation, Event
from .delivery import say
from .model_menu import model_option
from .replay import Replay
from .routes import BindingRoute
from .session_picker import require_known
from ..supervision import Backoff
from .turn_errors import describe_error


class Sessions:
    """One AgentLink (one ACP connection) per configured agent, and each conversation's binding to a session on one."""

    def __init__(
        self,
        agents: dict[str, AgentEndpoint],
        sink: SessionSink,
        bindings: BindingStore,
        routes: Sequence[BindingRoute],
        claims: Claims,
        *,
        start_timeout: float,
        backoff: Backoff,
    ) -> None:
        self.links = {name: AgentLink(name, endpoint, sink, start_timeout=start_timeout, backoff=backoff) for name, endpoint in agents.items()}
        self.bindings = bindings
        self.routes = list(routes)
        self.claims = claims
        for i, route in enumerate(self.routes):
            if route.agent is not None:
                self.check_agent(route.agent, f"bindings[{i}].agent")

    def check_agent(self, name: str, where: str) -> None:
        if name not in self.links:
            raise ConfigError(f"{where}: no agent named {name!r} (configured: {', '.join(sorted(self.links))})")

    async def restore(self, conversation: Conversation) -> None:
        """Take the conversation's stored binding, if it has one."""
        if binding := await self.bindings.get_binding(conversation.chat.key):
            self.claims.bind(conversation, binding.agent, binding.acp_session_id, binding.cwd)

    async def new_session(self, conversation: Conversation, agent: str | None = None, cwd: str | None = None) -> str:
        route = self._route(conversation.chat)
        name = agent or (route.agent if route and route.agent else None) or conversation.channel.settings.agent
        if name not in self.links:
            raise BridgeError(f"There is no agent named {name!r}. Configured agents: {', '.join(sorted(self.links))}.")
        link = self.links[name]
        workdir = _absolute(cwd or (route.cwd if route else None) or conversation.channel.settings.cwd or os.getcwd())
        conn = await self.connection(link)
        try:
            response = await conn.new_session(cwd=workdir, mcp_servers=[])
        except RequestError as exc:
            raise BridgeError(f"Agent {name} could not start a session: {describe_error(exc)}") from None
        link.loaded.add(response.session_id)
        await self._settle(conversation, link, conn, response, response.session_id)
        conversation.model_option = model_option(response.config_options)
        await self._persist(conversation, name, response.session_id, workdir)
        return response.session_id

    async def resume(self, conversation: Conversation, session_id: str, agent: str | None = None) -> tuple[str, Replay]:
        """Bind the conversation to an existing session (of ``agent``, else its own agent's) through ``session/load``; an
        unknown id changes nothing."""
        name = agent or conversation.agent or conversation.channel.settings.agent
        link = self.links.get(name)
        if link is None:
            raise BridgeError(f"Agent {name} is no longer configured; send /new to start over.")
        workdir = conversation.cwd or _absolute(conversation.channel.settings.cwd or os.getcwd())
        channel = conversation.channel
        view = channel.open_reply(conversation.chat) if channel.capabilities.full_history else None
        replay = await self._load(conversation, link, session_id, workdir, Replay(view))
        if view is not None:
            await view.finish()
        await require_known(link, session_id, replay)
        await self._persist(conversation, name, session_id, workdir)
        return session_id, replay

    async def ready(self, conversation: Conversation) -> AgentLink:
        """The link of the conversation's session, opening (new) or reopening (load) it as needed."""
        if conversation.session_id is None:
            await self.new_session(conversation)
        assert conversation.agent is not None and conversation.session_id is not None
        link = self.links.get(conversation.agent)
        if link is None:
            raise BridgeError(
                f"This conversation is bound to agent {conversation.agent}, which is no longer configured. Send /new to start a new session."
            )
        await self.connection(link)
        if conversation.session_id not in link.loaded:
            await self._load(conversation, link, conversation.session_id, conversation.cwd or _absolute(os.getcwd()), Replay())
        self.claims.claim(conversation, (link.name, conversation.session_id))
        return link

    async def connection(self, link: AgentLink) -> Any:
        try:
            return await link.connection()
        except AgentUnavailable as exc:
            raise BridgeError(f"{exc} Nothing was sent.") from None

    async def _load(self, conversation: Conversation, link: AgentLink, session_id: str, cwd: str, replay: Replay) -> Replay:
        conn = await self.connection(link)
        if not link.can_load:
            raise BridgeError(
                f"Agent {link.name} cannot reopen sessions (it does not offer session/load), so session "
                f"{session_id} cannot be continued here. Nothing was sent. Send /new to start a new session."
            )
        key = (link.name, session_id)
        previous = self.claims.holder(key)
        self.claims.claim(conversation, key)
        if not conversation.fire(Event.LOAD):
            self.claims.put_back(key, previous, conversation)
            raise BridgeError(f"Session {session_id} cannot be opened while this conversation is {conversation.state.value.replace('_', ' ')}; try again once it is done.")
        conversation.replay = replay
        try:
            response = await conn.load_session(cwd=cwd, session_id=session_id, mcp_servers=[])
        except (RequestError, ConnectionError) as exc:
            self.claims.put_back(key, previous, conversation)
            raise BridgeError(
                f"Agent {link.name} could not reopen session {session_id}: {describe_error(exc)}. Nothing was sent "
                "and no new session was started. Send /new for a new session, or /resume SESSION_ID for another."
            ) from None
        finally:
            conversation.replay = None
            conversation.fire(Event.LOADED)
        link.loaded.add(session_id)
        if response is not None:
            await self._settle(conversation, link, conn, response, session_id)
        conversation.model_option = model_option(response.config_options if response else None) or conversation.model_option
        return replay

    async def _settle(self, conversation: Conversation, link: AgentLink, conn: Any, opened: Any, session_id: str) -> None:
        """The session just opened (new, or loaded for ``/resume``, ``/sessions``, ``/spawn --resume`` or a reopening)
        in the mode that asks; a mode in which the agent approves itself is said in the chat."""
        for warning in await settle_agent_mode(conn, link.name, link.endpoint, opened, session_id):
            await say(conversation.channel, conversation.chat, f"⚠️ {warning}")

    async def _persist(self, conversation: Conversation, agent: str, session_id: str, cwd: str) -> None:
        await self.bindings.set_binding(conversation.chat.key, agent, session_id, cwd)
        self.claims.bind(conversation, agent, session_id, cwd)

    def _route(self, chat: Chat) -> BindingRoute | None:
        return next((r for r in self.routes if r.matches(chat.channel, chat.chat, chat.thread)), None)


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))
