"""Buttons and the model menu as Discord components. Clicks arrive through ``on_interaction``, not view callbacks."""

from __future__ import annotations

from collections.abc import Sequence

import discord

from ..types import Button, ModelMenu

PRESS_PREFIX = "wld:"
MODEL_SELECT = "wld-model"
PER_ROW = 5
MAX_COMPONENTS = 25
LABEL_LENGTH = 80
OPTION_LENGTH = 100


class Components(discord.ui.View):
    """Components drawn under a message; discord.py keeps no state for them (the Bridge does)."""

    def __init__(self) -> None:
        super().__init__(timeout=None)

    def is_dispatchable(self) -> bool:
        return False


def button_view(buttons: Sequence[Button]) -> Components | None:
    """Up to five buttons a row; answers carry the Bridge's data as ``custom_id``, links open their URL."""
    if not buttons:
        return None
    view = Components()
    for i, button in enumerate(buttons[:MAX_COMPONENTS]):
        label, row = _cut(button.label, LABEL_LENGTH), i // PER_ROW
        if button.url:
            view.add_item(discord.ui.Button(label=label, url=button.url, row=row))
        else:
            view.add_item(discord.ui.Button(label=label, custom_id=button.data, style=discord.ButtonStyle.primary, row=row))
    return view


def model_view(menu: ModelMenu) -> Components:
    """A select menu of the session's models, the current one preselected (Discord takes 25, values of 100 characters)."""
    options = [
        discord.SelectOption(
            label=_cut(choice.name, OPTION_LENGTH),
            value=choice.value,
            description=_cut(choice.description, OPTION_LENGTH) or None,
            default=choice.value == menu.current,
        )
        for choice in menu.choices
        if len(choice.value) <= OPTION_LENGTH
    ][:MAX_COMPONENTS]
    view = Components()
    view.add_item(discord.ui.Select(custom_id=MODEL_SELECT, placeholder="Choose a model", options=options))
    return view


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
