"""Messages with buttons as Block Kit: the text in mrkdwn sections, the buttons in one actions block."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..chunking import split_message
from ..types import Button

SECTION_LENGTH = 3000
MAX_BUTTONS = 25
LABEL_LENGTH = 75
LINK_ACTION = "wld-link"


def blocks(mrkdwn: str, buttons: Sequence[Button]) -> list[dict[str, Any]]:
    """The blocks of a message (none without buttons: plain ``text`` shows then)."""
    if not buttons:
        return []
    sections = [{"type": "section", "text": {"type": "mrkdwn", "text": piece}} for piece in split_message(mrkdwn, SECTION_LENGTH)]
    return [*sections, {"type": "actions", "elements": [_button(i, b) for i, b in enumerate(buttons[:MAX_BUTTONS])]}]


def _button(index: int, button: Button) -> dict[str, Any]:
    """An answer carries the Bridge's data as action id and value; a link opens its URL (its click is only acknowledged)."""
    label = button.label if len(button.label) <= LABEL_LENGTH else button.label[: LABEL_LENGTH - 1] + "…"
    element: dict[str, Any] = {"type": "button", "text": {"type": "plain_text", "text": label, "emoji": True}}
    if button.url:
        return {**element, "action_id": f"{LINK_ACTION}-{index}", "url": button.url}
    return {**element, "action_id": button.data, "value": button.data}
