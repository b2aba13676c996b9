"""Next steps offered with a message (a saved Plan's Review and Execute): buttons, or a numbered list, that send a command.

A step is a slash command the agent takes as a prompt. Pressing its button, or replying with its number where
there are no buttons, sends that command from the person who chose it, as if they had typed it.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..acp.extensions import PlanSavedMeta
from ..channels.contract import Channel
from ..channels.types import Button, ButtonPress, Conversation

OFFER_PREFIX = "wld:step"
"""Inside the "wld:" namespace the channels route to the Bridge; question tokens are hex, so never "step"."""
KEPT = 1000
"""How many offers the Bridge remembers (the oldest are forgotten, and their buttons then say so)."""


class Step(Protocol):
    """A step to offer: its button's label and the command a press sends (a Plan's next step, a session to resume)."""

    @property
    def label(self) -> str: ...

    @property
    def command(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Offer:
    channel: Channel
    conversation: Conversation
    commands: tuple[str, ...]


class Offers:
    """The steps offered under messages, found by the token in their buttons' data."""

    def __init__(self) -> None:
        self._by_token: OrderedDict[str, Offer] = OrderedDict()

    def buttons(self, channel: Channel, conversation: Conversation, actions: Sequence[Step]) -> list[Button]:
        """One button per step, each sending its command when pressed in this conversation."""
        token = secrets.token_hex(4)
        self._by_token[token] = Offer(channel, conversation, tuple(a.command for a in actions))
        while len(self._by_token) > KEPT:
            self._by_token.popitem(last=False)
        return [Button(a.label, f"{OFFER_PREFIX}:{token}:{i}") for i, a in enumerate(actions)]

    def command_for(self, channel: Channel, press: ButtonPress) -> str | None:
        """The command a press on an offered step sends; None if the offer is unknown here (or from elsewhere)."""
        token, _, index = press.data.removeprefix(f"{OFFER_PREFIX}:").partition(":")
        offer = self._by_token.get(token)
        if offer is None or offer.channel is not channel or offer.conversation.key != press.conversation.key:
            return None
        return offer.commands[int(index)] if index.isdigit() and int(index) < len(offer.commands) else None


def is_offer(data: str) -> bool:
    return data.startswith(f"{OFFER_PREFIX}:")


def numbered_choice(commands: Sequence[str], text: str) -> str | None:
    """The command a reply picks by its number from a numbered list of steps, if it is just such a number."""
    answer = text.strip()
    return commands[int(answer) - 1] if answer.isdigit() and 1 <= int(answer) <= len(commands) else None


def plan_text(saved: PlanSavedMeta, numbered: bool) -> str:
    """A saved Plan as a chat message: its title and summary, and its steps as a numbered list where there are no buttons."""
    lines = [f"📋 Plan “{saved.title}” (revision {saved.revision})"]
    if saved.summary:
        lines.append(saved.summary)
    if numbered and saved.actions:
        lines += ["", *(f"{n}. {a.label}" for n, a in enumerate(saved.actions, 1)), "Reply with a number to take that step."]
    return "\n".join(lines)
