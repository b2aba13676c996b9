"""``elicitation/create`` in chat: forms as buttons or numbered prompts, URLs shown but never fetched.

A single choice of two to four options becomes buttons. A choice with Other (``acp.other_choice``:
a single-select with an Other option and an optional text field for it) is one question: buttons for
two to four options and Other, else a numbered menu; a listed option answers at once, Other asks
once for its text, and other typed text is the Other answer. Any other form is asked in messages of
up to three fields (``batches``); a single or multi select of up to four choices, and a secret field,
each get a message of their own: buttons (a multi-select's toggle, with Done), or the secret's warning.
A URL request shows the literal ``http``/``https`` URL with Continue and Decline; any other scheme is
declined. Anything malformed or unsupported is explained and declined.

Each question has one visible way to say no: its own option that does (``Cancel``, ``Not now``), else a
Cancel button (it declines), else, where there are no buttons, ``/cancel``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any, Literal
from urllib.parse import urlparse

from acp.schema import (
    CreateFormRequestElicitationRequest,
    CreateFormSessionElicitationRequest,
    CreateUrlRequestElicitationRequest,
    CreateUrlSessionElicitationRequest,
    ElicitationBooleanPropertySchema,
    ElicitationIntegerPropertySchema,
    ElicitationMultiSelectPropertySchema,
    ElicitationNumberPropertySchema,
    ElicitationSchema,
    ElicitationStringPropertySchema,
    StringMultiSelectItems,
    TitledMultiSelectItems,
)
from pydantic import TypeAdapter, ValidationError

from ...acp.other_choice import ChoiceWithOther, NotAnAnswer, match_option, other_prompt, read_choice, recognise
from .batches import HINT, Batch, groups
from .pending import Answer, ChatOutcome, ChatQuestion, InvalidAnswer, Withdrawn

Kind = Literal["text", "number", "integer", "boolean", "choice", "multi"]
Ask = Callable[[ChatQuestion, float], Awaitable[Answer]]
SKIP = "-"
MAX_BUTTONS = 4
DISMISS = "Cancel"
URL_SCHEMES = ("http", "https")
DISMISSING = ("cancel", "not now", "later", "decline")
"""Labels of options that already say no: a question offering one gets no Cancel button of its own."""

_REQUEST = TypeAdapter(
    CreateFormSessionElicitationRequest
    | CreateFormRequestElicitationRequest
    | CreateUrlSessionElicitationRequest
    | CreateUrlRequestElicitationRequest
)


class Unsupported(ValueError):
    """An elicitation this bridge cannot put to a person; the message says why."""


@dataclass(frozen=True)
class Field:
    """One form field, reduced to what a chat prompt needs."""

    name: str
    title: str
    kind: Kind
    required: bool
    description: str = ""
    choices: tuple[tuple[Any, str], ...] = ()  # (value, label)
    rules: Any = None  # the property schema, for bounds, lengths, patterns and formats
    secret: bool = False

    @property
    def buttons(self) -> bool:
        """Whether the field is asked with buttons: a single or multi select of up to four choices."""
        if self.kind == "multi":
            return 1 <= len(self.choices) <= MAX_BUTTONS
        return self.kind in ("choice", "boolean") and 2 <= len(self.choices) <= MAX_BUTTONS

    @property
    def alone(self) -> bool:
        """Whether the field needs a message of its own: its buttons, or a secret's warning and deletion."""
        return self.secret or self.buttons


def parse_request(params: Any) -> Any:
    """The typed request for form or URL mode; raises Unsupported for anything else or anything malformed."""
    mode = params.get("mode") if isinstance(params, dict) else None
    if mode not in ("form", "url"):
        raise Unsupported(f"it uses elicitation mode {mode!r}, and this bridge supports only form and url")
    try:
        return _REQUEST.validate_python(params)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'][1:])) or 'request'}: {e['msg']}" for e in exc.errors()[:3])
        raise Unsupported(f"the request is malformed ({problems})") from None


def secret_names(params: Any) -> frozenset[str]:
    """The string fields of a raw form request marked secret: ``"writeOnly": true``, ``_meta`` ``{"secret": true}``, or
    ``"format": "password"`` (which SDK-built agents send though the official schema does not list it)."""
    schema = params.get("requestedSchema") if isinstance(params, dict) else None
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return frozenset()
    return frozenset(
        name
        for name, prop in properties.items()
        if isinstance(prop, dict) and prop.get("type") == "string"
        and (prop.get("writeOnly") is True or (prop.get("_meta") or {}).get("secret") is True or prop.get("format") == "password")
    )  # fmt: skip


def form_fields(schema: ElicitationSchema, secrets: frozenset[str] = frozenset()) -> list[Field]:
    """The fields of a form schema, in order; raises Unsupported for what a chat cannot ask."""
    if schema.type not in (None, "object"):
        raise Unsupported(f"the form schema has type {schema.type!r}, not 'object'")
    properties = schema.properties or {}
    required = set(schema.required or ())
    if unknown := required - set(properties):
        raise Unsupported(f"required field(s) {', '.join(sorted(unknown))} are not defined")
    fields = [_field(name, prop, name in required) for name, prop in properties.items()]
    return [replace(f, secret=True) if f.name in secrets and f.kind == "text" else f for f in fields]


def _field(name: str, prop: Any, required: bool) -> Field:
    title = prop.title or name if hasattr(prop, "title") else name
    description = getattr(prop, "description", None) or ""
    base = {"name": name, "title": title, "required": required, "description": description, "rules": prop}
    if isinstance(prop, ElicitationStringPropertySchema):
        if prop.one_of:
            return Field(kind="choice", choices=tuple((o.const, o.title) for o in prop.one_of), **base)
        if prop.enum:
            return Field(kind="choice", choices=tuple((v, v) for v in prop.enum), **base)
        if prop.pattern is not None:
            try:
                re.compile(prop.pattern)
            except re.error as exc:
                raise Unsupported(f"field {name!r} has a pattern Python cannot use ({exc})") from None
        return Field(kind="text", **base)
    if isinstance(prop, ElicitationBooleanPropertySchema):
        return Field(kind="boolean", choices=((True, "Yes"), (False, "No")), **base)
    if isinstance(prop, ElicitationIntegerPropertySchema):
        return Field(kind="integer", **base)
    if isinstance(prop, ElicitationNumberPropertySchema):
        return Field(kind="number", **base)
    if isinstance(prop, ElicitationMultiSelectPropertySchema):
        if isinstance(prop.items, TitledMultiSelectItems):
            return Field(kind="multi", choices=tuple((o.const, o.title) for o in prop.items.any_of), **base)
        if isinstance(prop.items, StringMultiSelectItems):
            return Field(kind="multi", choices=tuple((v, v) for v in prop.items.enum), **base)
    kind = getattr(prop, "type", None) or getattr(getattr(prop, "items", None), "type", "?")
    raise Unsupported(f"field {name!r} is of a type this bridge cannot ask for ({kind!r})")


def single_choice(fields: list[Field]) -> Field | None:
    """The one field of a form that is a single choice of two to four options, else None."""
    if len(fields) == 1 and fields[0].kind in ("choice", "boolean") and 2 <= len(fields[0].choices) <= MAX_BUTTONS:
        return fields[0]
    return None


def parse_value(field: Field, text: str) -> Any:
    """A typed answer as the field's value (SKIP for an optional field left empty); raises InvalidAnswer."""
    answer = text.strip()
    if answer == SKIP and not field.required:
        return SKIP
    if not answer:
        raise InvalidAnswer("An empty answer does not count.")
    if field.kind in ("choice", "boolean"):
        return field.choices[_pick(field, answer)][0]
    if field.kind == "multi":
        return _multi(field, answer)
    if field.kind in ("integer", "number"):
        return _number(field, answer)
    return _text(field, answer)


@dataclass(frozen=True, slots=True)
class _Choice:
    value: str
    label: str


def _pick(field: Field, answer: str) -> int:
    """The reply rules of a select: a number in range, or a unique exact label or value (any case); ``cancel``
    cancels where no option is called that (raises Withdrawn); anything else raises InvalidAnswer."""
    labels = [label for _, label in field.choices]
    try:
        index = match_option([_Choice(str(value), label) for value, label in field.choices], answer)
    except NotAnAnswer as exc:
        raise InvalidAnswer(f"That is ambiguous: {exc}.") from None
    if index is not None:
        return index
    if field.kind == "boolean" and answer.casefold() in ("y", "n", "true", "false"):
        return 0 if answer.casefold() in ("y", "true") else 1
    if answer.casefold() == "cancel":
        raise Withdrawn(answer)
    raise InvalidAnswer(f"Please reply with a number from 1 to {len(labels)}.")


def _multi(field: Field, answer: str) -> list[Any]:
    picks = [part for part in re.split(r"[,\s]+", answer) if part]
    chosen: list[Any] = []
    for part in picks:
        value = field.choices[_pick(field, part)][0]
        if value not in chosen:
            chosen.append(value)
    low, high = field.rules.min_items, field.rules.max_items
    if low is not None and len(chosen) < low or high is not None and len(chosen) > high:
        raise InvalidAnswer(f"Please pick between {low or 0} and {high or len(field.choices)} options, separated by commas.")
    return chosen


def _number(field: Field, answer: str) -> int | float:
    try:
        value: int | float = int(answer) if field.kind == "integer" else float(answer)
    except ValueError:
        raise InvalidAnswer(f"Please reply with {'a whole number' if field.kind == 'integer' else 'a number'}.") from None
    low, high = field.rules.minimum, field.rules.maximum
    if low is not None and value < low or high is not None and value > high:
        raise InvalidAnswer(f"Please reply with a number from {low if low is not None else '-∞'} to {high if high is not None else '∞'}.")
    return value


def _text(field: Field, answer: str) -> str:
    rules = field.rules
    if rules.min_length is not None and len(answer) < rules.min_length:
        raise InvalidAnswer(f"Please write at least {rules.min_length} characters.")
    if rules.max_length is not None and len(answer) > rules.max_length:
        raise InvalidAnswer(f"Please write at most {rules.max_length} characters.")
    if rules.pattern is not None and not re.search(rules.pattern, answer):
        raise InvalidAnswer(f"That does not match the expected form ({rules.pattern}).")
    if rules.format and not _has_format(rules.format, answer):
        raise InvalidAnswer(f"Please reply with a valid {rules.format}.")
    return answer


def _has_format(fmt: str, answer: str) -> bool:
    try:
        if fmt == "email":
            return re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", answer) is not None
        if fmt == "uri":
            parsed = urlparse(answer)
            return bool(parsed.scheme and (parsed.netloc or parsed.path))
        if fmt == "date":
            date.fromisoformat(answer)
        elif fmt == "date-time":
            datetime.fromisoformat(answer)
    except ValueError:
        return False
    return True


def field_question(message: str, field: Field, number: int, total: int) -> ChatQuestion:
    """The text prompt for one field of a form (the form's message goes with the first); a form's only field is the
    message's own question, so it carries no number and no title."""
    optional = f" (optional; reply {SKIP} to skip)" if not field.required else ""
    title = f"{number}/{total}. {field.title}{optional}"
    if total == 1:
        lines = [f"❓ {message}"] + ([optional.strip()] if optional else [])
    else:
        lines = [f"❓ {message}", "", title] if number == 1 else [f"❓ {title}"]
    if field.description:
        lines.append(field.description)
    hint = {
        "choice": "Reply with a number.",
        "boolean": "Reply with a number.",
        "multi": "Reply with the numbers of your choices, separated by commas.",
    }.get(field.kind, "Reply with your answer.")
    options = tuple(label for _, label in field.choices)
    return ChatQuestion(
        "\n".join(lines),
        options=options,
        options_as_buttons=field.buttons,
        parse=lambda text: parse_value(field, text),
        label_of=lambda value: _shown(field, value),
        decline=dismiss(options),
        hint=hint,
        pressed_hint=("Press the choices you want, then Done." if field.kind == "multi" else "") if field.buttons else None,
        multi=field.kind == "multi",
        secret=field.secret,
    )


def batch_question(message: str, batch: Batch, total: int) -> ChatQuestion:
    """The prompt for several fields at once: a numbered block (choices listed with their numbers) and how to answer."""
    lines = [f"❓ {message}" if batch.first == 1 else f"❓ {message} (continued)", ""]
    for number, field in enumerate(batch.fields, batch.first):
        optional = f" (optional; reply {SKIP} to skip)" if not field.required else ""
        lines.append(f"{number}/{total}. {field.title}{optional}")
        if field.description:
            lines.append(f"   {field.description}")
        if field.choices:
            several = "numbers separated by commas" if field.kind == "multi" else "a number"
            lines.append(f"   ({several}: " + " · ".join(f"{i} {label}" for i, (_, label) in enumerate(field.choices, 1)) + ")")
    return ChatQuestion(
        "\n".join(lines),
        parse=batch.take,
        label_of=batch.label,
        decline=DISMISS,
        hint=HINT,
    )


def _shown(field: Field, value: Any) -> str:
    """A field's value as the person chose it: option labels, or the text itself."""
    if value == SKIP:
        return "(skipped)"
    labels = {choice: label for choice, label in field.choices}
    if field.kind == "multi":
        return ", ".join(labels.get(item, str(item)) for item in value)
    return labels.get(value, str(value))


def other_choice_question(message: str, form: ChoiceWithOther) -> ChatQuestion:
    """A choice with Other as one question: buttons for two to four options (and Other), else a numbered menu."""
    labels = tuple(option.label for option in form.options)
    return ChatQuestion(
        f"❓ {message}",
        options=labels,
        options_as_buttons=2 <= form.listed <= MAX_BUTTONS,
        parse=lambda text: _read_choice(form, text),
        label_of=lambda picked: labels[picked] if isinstance(picked, int) else picked,
        decline=dismiss(labels),
        hint="Pick an option, or type your own answer.",
    )


def _read_choice(form: ChoiceWithOther, text: str) -> int | str:
    """An option's index (Other's included), or the typed text as Other's answer; raises InvalidAnswer."""
    try:
        return read_choice(form.options, text.strip())
    except NotAnAnswer as exc:
        raise InvalidAnswer(f"That did not answer the question: {exc}.") from None


async def run_choice_with_other(message: str, form: ChoiceWithOther, text: Field, ask: Ask, timeout: float) -> dict[str, Any]:
    """Ask a choice with Other as one question, and Other's ``text`` field once only if Other was picked bare."""
    deadline = time.monotonic() + timeout
    answer = await ask(other_choice_question(message, form), timeout)
    if answer.outcome is not ChatOutcome.ANSWERED:
        return _unanswered(answer)
    picked = answer.value
    if picked == form.other:
        own = replace(text, required=True)
        follow_up = ChatQuestion(
            f"❓ {other_prompt(message)}",
            parse=lambda reply: parse_value(own, reply),
            decline=DISMISS,
            hint="Reply with your answer.",
        )
        answer = await ask(follow_up, max(deadline - time.monotonic(), 0.001))
        if answer.outcome is not ChatOutcome.ANSWERED:
            return _unanswered(answer)
        picked = answer.value
    return {"action": "accept", "content": form.content(picked)}


async def run_form(message: str, schema: ElicitationSchema, ask: Ask, timeout: float, secrets: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Ask for a form and return the elicitation response (accept with content, decline, or cancel)."""
    fields = form_fields(schema, secrets)
    if (with_other := recognise(schema)) is not None and not any(field.secret for field in fields):
        [text] = [field for field in fields if field.name == with_other.text]
        return await run_choice_with_other(message, with_other, text, ask, timeout)
    deadline = time.monotonic() + timeout
    choice = single_choice(fields)
    if choice is not None:
        options = tuple(label for _, label in choice.choices)
        answer = await ask(ChatQuestion(f"❓ {message}", options=options, decline=dismiss(options)), timeout)
        if answer.outcome is ChatOutcome.ANSWERED:
            return {"action": "accept", "content": {choice.name: choice.choices[answer.value][0]}}
        return _unanswered(answer)
    if not fields:
        answer = await ask(ChatQuestion(f"❓ {message}", options=("OK",), decline=DISMISS), timeout)
        return {"action": "accept", "content": {}} if answer.outcome is ChatOutcome.ANSWERED else _unanswered(answer)
    content: dict[str, Any] = {}
    first = 1
    for group in groups(fields, lambda field: field.alone):
        if len(group) == 1:
            [field] = group
            question = field_question(message, field, first, len(fields))
        else:
            question = batch_question(message, Batch(group, first, parse_value, _shown), len(fields))
        answer = await ask(question, max(deadline - time.monotonic(), 0.001))
        if answer.outcome is not ChatOutcome.ANSWERED:
            return _unanswered(answer)
        values = answer.value if len(group) > 1 else {group[0].name: answer.value}
        content.update({name: value for name, value in values.items() if value != SKIP})
        first += len(group)
    return {"action": "accept", "content": content}


async def run_url(message: str, url: str, ask: Ask, timeout: float) -> dict[str, Any]:
    """Show the literal ``http``/``https`` URL (never fetched here) and ask whether to continue; raises Unsupported for
    any other scheme (``javascript:``, ``file:``, ...), which a person must not be led to open."""
    scheme = urlparse(url).scheme.lower()
    if scheme not in URL_SCHEMES or not urlparse(url).netloc:
        shown = f"the scheme {scheme}:" if scheme else "no scheme"
        raise Unsupported(f"its link has {shown}, and this bridge shows only http and https links")
    text = f"🔗 {message}\n\n{url}\n\nThe bridge has not opened this link. Continue once you have dealt with it."
    answer = await ask(ChatQuestion(text, options=("Continue",), decline="Decline"), timeout)
    return {"action": "accept"} if answer.outcome is ChatOutcome.ANSWERED else _unanswered(answer)


def dismiss(options: tuple[str, ...]) -> str | None:
    """The Cancel button a question needs, or None when one of its options already says no."""
    return None if any(label.casefold() in DISMISSING for label in options) else DISMISS


def _unanswered(answer: Answer) -> dict[str, Any]:
    return {"action": "decline" if answer.outcome is ChatOutcome.DECLINED else "cancel"}
