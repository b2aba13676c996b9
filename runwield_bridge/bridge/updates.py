"""What an agent sends a conversation, routed by the conversation's state: its updates, permission requests and questions.

Replaying: into the replay. Holding for a Plan: kept, and handled once it is shown. Otherwise into the running turn's
reply, or (no turn of this bridge's runs) into a reply aside; a saved Plan or a review link holds what follows while
its message is shown, and a question waits until then too. A child session's progress goes to its line in any state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

from ..acp.extensions import ARTIFACT_REVIEW, CHILD, NOTICE, PLAN_SAVED, TURN, PlanSavedMeta
from ..channels.background import Background
from ..channels.streaming import SHOWN
from ..channels.types import Conversation as Chat
from ..channels.unfinished import MessageLog
from .asking import CANCELLED, ask_permission, ask_question
from .asking.forms import Unsupported
from .asking.pending import ChatQuestions
from .child_lines import ChildLines
from .claims import Claims, SessionKey
from .command_menu import menu_commands
from .conversation import Conversation, Event, State
from .conversations import Conversations
from .delivery import deliver, say
from .model_menu import model_option
from .offers import Offers, plan_text
from .replies import open_reply, pause_replies
from .turns import Turns

log = logging.getLogger(__name__)


class Updates:
    """The ACP client side of every agent link (its ``SessionSink``): traffic found by session, routed by state."""

    def __init__(
        self, conversations: Conversations, claims: Claims, children: ChildLines, questions: ChatQuestions, offers: Offers, messages: MessageLog, instance: str | None, background: Background
    ) -> None:
        self.conversations = conversations
        self.claims = claims
        self.menu = claims.menu
        self.children = children
        self.questions = questions
        questions.watch = self.question_changed
        self.offers = offers
        self.messages = messages
        self.instance = instance
        self.background = background
        self.turns: Turns | None = None
        """Where a conversation goes on when a question or a Plan shown let it settle."""

    def on_update(self, agent: str, session_id: str, update: Any) -> None:
        kind = getattr(update, "session_update", None)
        conversation = self.claims.holder((agent, session_id))
        if conversation is None:
            if kind == "available_commands_update":  # a new session's commands come before its binding is made
                self.claims.note_early((agent, session_id), menu_commands(update))
            return
        if (child := CHILD.read(update)) is not None:  # a child session's progress: its line, whatever the state
            self.children.show(conversation.channel, conversation.chat, session_id, child)
        elif conversation.state is State.REPLAYING:
            assert conversation.replay is not None
            conversation.replay.add(update)
        elif conversation.state is State.HOLDING_FOR_PLAN:
            assert conversation.held is not None
            conversation.held.append(update)
        else:
            self._show(conversation, (agent, session_id), kind, update)

    def _show(self, conversation: Conversation, key: SessionKey, kind: str | None, update: Any) -> None:
        """An update for the running turn's reply, or the reply aside; a saved Plan or a review link holds what follows."""
        if kind == "available_commands_update":
            self.menu.changed(conversation, menu_commands(update))
        elif kind == "config_option_update":
            conversation.model_option = model_option(update.config_options) or conversation.model_option
        elif (turn := TURN.read(update)) is not None:
            if (aside := conversation.aside) is not None:
                conversation.aside = None
                self.background.spawn(aside.finish(turn.stop_reason), f"aside:{conversation.chat.key}")
        elif (saved := PLAN_SAVED.read(update)) is not None:
            self._hold(conversation, key, self._show_plan(conversation, saved), "plan")
        elif conversation.view is not None:
            if NOTICE.read(update) == "error":
                conversation.errors_shown += (getattr(update.content, "text", ""),)
            conversation.view.update(update)
        elif kind in SHOWN:
            if conversation.aside is None:
                conversation.aside = open_reply(conversation, self.messages, self.instance)
            conversation.aside.update(update)
        if ARTIFACT_REVIEW.read(update) is not None:  # the agent waits for the review: its link's button is shown now
            self._hold(conversation, key, pause_replies(conversation), "link")

    def _hold(self, conversation: Conversation, key: SessionKey, show: Awaitable[None], what: str) -> None:
        """Show a message of its own, holding the updates that follow until it is shown (while a question waits for its
        answer nothing is held: the message is shown all the same)."""
        held = conversation.fire(Event.HOLD)
        task = self.background.spawn(self._shown(conversation, key, show, held, what), f"{what}:{conversation.chat.key}")
        if held:
            conversation.held, conversation.showing = [], task

    async def _shown(self, conversation: Conversation, key: SessionKey, show: Awaitable[None], held: bool, what: str) -> None:
        try:
            await show
        except Exception as exc:
            log.warning("could not show a %s in %s: %s", what, conversation.chat.key, exc)
        finally:
            if held:
                self._release(conversation, key)

    def _release(self, conversation: Conversation, key: SessionKey) -> None:
        """Handle the updates held while a message was being shown, in order."""
        updates, conversation.held, conversation.showing = conversation.held or [], None, None
        conversation.fire(Event.RELEASE)
        for update in updates:
            self.on_update(key[0], key[1], update)
        self._resumed(conversation)

    async def _show_plan(self, conversation: Conversation, saved: PlanSavedMeta) -> None:
        """A saved Plan as a message of its own below the reply so far, its next steps as buttons (else numbered)."""
        channel, chat = conversation.channel, conversation.chat
        await pause_replies(conversation)
        buttons = channel.capabilities.buttons
        shown = self.offers.buttons(channel, chat, saved.actions) if buttons else []
        conversation.offer = () if buttons else tuple(a.command for a in saved.actions)
        await deliver(channel, chat, plan_text(saved, numbered=not buttons), shown)

    def _resumed(self, conversation: Conversation) -> None:
        """A question or a Plan shown interrupted a settling (or idle, messages waiting) conversation: it goes on now."""
        if self.turns is not None and (conversation.state is State.SETTLING or (conversation.state is State.IDLE and conversation.queue)):
            self.background.spawn(self.turns.go_on(conversation), f"queue:{conversation.chat.key}")

    def question_changed(self, chat: Chat, opened: bool) -> None:
        """``ChatQuestions.watch``: a question opened (the conversation waits for an answer), or its last open one ended."""
        conversation = self.conversations.get(chat.key)
        if conversation is None:
            return
        if opened:
            conversation.fire(Event.ASK)  # refused only while replaying: asked all the same
        elif conversation.state is State.WAITING_FOR_ANSWER:  # else the turn's end ended it
            conversation.fire(Event.ANSWERED)
            self._resumed(conversation)

    async def _before_asking(self, conversation: Conversation) -> None:
        """A question is asked below a Plan being shown, and below the replies so far."""
        while True:
            while conversation.showing is not None:
                await asyncio.shield(conversation.showing)
            await pause_replies(conversation)
            if conversation.showing is None:
                return

    async def on_permission(self, agent: str, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]) -> RequestPermissionResponse:
        conversation = self.claims.holder((agent, session_id))
        if conversation is None:
            return CANCELLED
        await self._before_asking(conversation)
        return await ask_permission(self.questions, conversation.channel, conversation.chat, tool_call, options)

    async def on_elicitation(self, agent: str, session_id: str | None, params: Any) -> dict[str, Any]:
        conversation = self.claims.holder((agent, session_id)) if session_id else None
        if conversation is None:
            log.warning("agent %s asked a question for unknown session %s; declined", agent, session_id)
            return {"action": "decline"}
        await self._before_asking(conversation)
        try:
            return await ask_question(self.questions, conversation.channel, conversation.chat, params)
        except Unsupported as exc:
            await say(conversation.channel, conversation.chat, f"❓ Agent {agent} asked a question this bridge cannot show: {exc}. It was declined.")
            return {"action": "decline"}
