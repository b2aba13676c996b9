"""A single choice with an Other answer: the form RunWield sends for it, how a chat recognises one, its reply rules.

RunWield asks a choice interview as a form of two fields: a required single-select ``answer`` whose
last option is ``Other`` (value ``_other``), and an optional plain-text ``other`` that counts only when
Other is chosen. A chat asks such a form, RunWield's or any agent's of exactly this shape, as one
question: a number or a unique exact label (or value) picks an option, Other asks once for its text,
and any other reply with a letter or digit in it is the Other answer itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from acp.schema import ElicitationSchema, ElicitationStringPropertySchema

ANSWER, OTHER_TEXT = "answer", "other"
OTHER_VALUE, OTHER_LABEL = "_other", "Other"


class Labelled(Protocol):
    """An option a reply can name: by its label or its value."""

    @property
    def value(self) -> str: ...

    @property
    def label(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Option:
    """One option of a single-select field: its value and the label a person sees."""

    value: str
    label: str
    description: str = ""


def option_schema(option: Option) -> dict[str, Any]:
    """A titled single-select option (``oneOf`` entry)."""
    return {"const": option.value, "title": option.label, **({"description": option.description} if option.description else {})}


def choice_with_other_schema(options: Sequence[Option]) -> dict[str, Any]:
    """The ``requestedSchema`` of a choice with Other: the options, Other last, and the optional Other text."""
    other = Option(OTHER_VALUE, OTHER_LABEL, "Your own answer, typed below")
    return {
        "type": "object",
        "properties": {
            ANSWER: {"type": "string", "title": "Choice", "oneOf": [option_schema(o) for o in (*options, other)]},
            OTHER_TEXT: {"type": "string", "title": "Other answer", "description": "Used only when you choose Other"},
        },
        "required": [ANSWER],
    }


@dataclass(frozen=True, slots=True)
class ChoiceWithOther:
    """A form recognised as one choice with Other: the field holding the choice, the one holding Other's text."""

    choice: str
    text: str
    options: tuple[Option, ...]
    """In the form's order, Other included."""
    other: int
    """Other's index in ``options``."""

    @property
    def listed(self) -> int:
        """How many options there are besides Other."""
        return len(self.options) - 1

    def content(self, picked: int | str) -> dict[str, str]:
        """The form's content for an option's index (never Other's), or for Other with its text."""
        if isinstance(picked, str):
            return {self.choice: self.options[self.other].value, self.text: picked}
        return {self.choice: self.options[picked].value}


def recognise(schema: ElicitationSchema) -> ChoiceWithOther | None:
    """The form as one choice with Other when it has exactly that shape: a required single-select with
    one option labelled Other and at least one more, and an optional unconstrained text field; else None."""
    properties = schema.properties or {}
    required = set(schema.required or ())
    if len(properties) != 2 or schema.type not in (None, "object"):
        return None
    choices = [n for n, p in properties.items() if n in required and _options(p)]
    texts = [n for n, p in properties.items() if n not in required and _plain_text(p)]
    if len(choices) != 1 or len(texts) != 1:
        return None
    options = _options(properties[choices[0]])
    others = [i for i, o in enumerate(options) if o.label.strip().casefold() == OTHER_LABEL.casefold()]
    if len(others) != 1 or len(options) < 2:
        return None
    return ChoiceWithOther(choices[0], texts[0], options, others[0])


def _options(prop: Any) -> tuple[Option, ...]:
    if not isinstance(prop, ElicitationStringPropertySchema):
        return ()
    if prop.one_of:
        return tuple(Option(o.const, o.title, o.description or "") for o in prop.one_of)
    return tuple(Option(v, v) for v in prop.enum or ())


def _plain_text(prop: Any) -> bool:
    if not isinstance(prop, ElicitationStringPropertySchema):
        return False
    constraints = (prop.one_of, prop.enum, prop.pattern, prop.format, prop.min_length, prop.max_length)
    return all(c is None for c in constraints)


class NotAnAnswer(ValueError):
    """A reply that picks nothing; the message says why."""


def match_option(options: Sequence[Labelled], reply: str) -> int | None:
    """The index of the option a trimmed reply names: its number (from 1), or its exact label or value in
    any case; None when it names none; raises NotAnAnswer when it names more than one."""
    if reply.isascii() and reply.isdigit():
        number = int(reply)
        if 1 <= number <= len(options):
            return number - 1
    key = reply.casefold()
    matches = [i for i, o in enumerate(options) if key in (o.label.strip().casefold(), o.value.strip().casefold())]
    if len(matches) > 1:
        raise NotAnAnswer(f'"{reply}" matches more than one option')
    return matches[0] if matches else None


def read_choice(options: Sequence[Labelled], reply: str) -> int | str:
    """A trimmed reply to a choice with Other (Other among ``options``): the index of the option it names
    (Other's too), else the reply itself as Other's text; raises NotAnAnswer when it has no letter or digit."""
    if (index := match_option(options, reply)) is not None:
        return index
    if any(ch.isalnum() for ch in reply):
        return reply
    raise NotAnAnswer("there was no answer in it")


def other_prompt(prompt: str) -> str:
    """The one follow-up after a bare Other."""
    return f"Type your own answer to: {prompt}"
