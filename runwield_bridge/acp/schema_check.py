"""A JSON schema compiled into plain Python checks that answer only whether an instance is valid.

``jsonschema`` takes about half a millisecond to find a ``session/prompt`` valid (it resolves every ``$ref`` and
builds a validator for every subschema, on every call); these checks take a few microseconds. They cover the
keywords the official ACP schema uses, with ``jsonschema``'s meaning (Draft 2020-12, formats not asserted); a type
whose schema reaches any other keyword gets no compiled check, and ``jsonschema`` answers for it alone. Only a
valid instance is answered here: what is wrong with an invalid one is still said by ``jsonschema``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]
ANNOTATIONS = frozenset({"description", "title", "default", "format", "discriminator", "$schema", "examples", "deprecated"})
"""Keywords that assert nothing (``format`` is not asserted without a format checker, as ``jsonschema`` runs here)."""


class Unsupported(Exception):
    """The schema uses a keyword these checks do not implement."""


def _is_integer(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


TYPES: dict[str, Check] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "integer": _is_integer,
    "number": _is_number,
}


class SchemaChecks:
    """Compiled checks of the types (``$defs``) of one schema, each built once, on first use."""

    def __init__(self, definitions: dict[str, Any]) -> None:
        self._definitions = definitions
        self._built: dict[str, Check] = {}

    def check(self, type_name: str) -> Check | None:
        """The check of ``type_name``, or None when its schema uses a keyword not implemented here."""
        built = dict(self._built)
        try:
            return self._ref(f"#/$defs/{type_name}")
        except Unsupported:
            self._built = built  # checks built on the way may refer to the one that could not be
            return None

    def _ref(self, ref: str) -> Check:
        name = ref.removeprefix("#/$defs/")
        if name == ref or name not in self._definitions:
            raise Unsupported(ref)
        if name not in self._built:
            target: list[Check] = []
            self._built[name] = lambda value: target[0](value)  # a recursive reference reaches it before it is built
            try:
                target.append(self._compile(self._definitions[name]))
            except Unsupported:
                del self._built[name]
                raise
        return self._built[name]

    def _compile(self, schema: Any) -> Check:
        if schema is True or schema == {}:
            return lambda value: True
        if schema is False:
            return lambda value: False
        if not isinstance(schema, dict):
            raise Unsupported(repr(schema))
        checks = [self._keyword(schema, key, argument) for key, argument in schema.items() if not _annotation(key, argument)]
        checks = [check for check in checks if check is not None]
        if len(checks) == 1:
            return checks[0]
        return lambda value: all(check(value) for check in checks)

    def _keyword(self, schema: dict[str, Any], key: str, argument: Any) -> Check | None:
        if key == "$ref":
            return self._ref(argument)
        if key == "type":
            names = argument if isinstance(argument, list) else [argument]
            if any(name not in TYPES for name in names):
                raise Unsupported(f"type {argument!r}")
            kinds = [TYPES[name] for name in names]
            return lambda value: any(kind(value) for kind in kinds)
        if key == "const":
            return _equal_to(argument)
        if key == "enum":
            options = [_equal_to(option) for option in argument]
            return lambda value: any(option(value) for option in options)
        if key == "properties":
            properties = {name: self._compile(sub) for name, sub in argument.items()}
            return lambda value: not isinstance(value, dict) or all(check(value[n]) for n, check in properties.items() if n in value)
        if key == "additionalProperties":
            known = set(schema.get("properties", {}))
            if "patternProperties" in schema:
                raise Unsupported("patternProperties")
            extra = self._compile(argument)
            return lambda value: not isinstance(value, dict) or all(extra(v) for k, v in value.items() if k not in known)
        if key == "required":
            names = list(argument)
            return lambda value: not isinstance(value, dict) or all(name in value for name in names)
        if key == "items":
            item = self._compile(argument)
            return lambda value: not isinstance(value, list) or all(item(v) for v in value)
        if key in ("minimum", "maximum"):
            limit = argument
            within = (lambda v: v >= limit) if key == "minimum" else (lambda v: v <= limit)
            return lambda value: not _is_number(value) or within(value)
        if key == "minLength":
            return lambda value: not isinstance(value, str) or len(value) >= argument
        if key in ("allOf", "anyOf", "oneOf"):
            branches = [self._compile(sub) for sub in argument]
            if key == "allOf":
                return lambda value: all(branch(value) for branch in branches)
            if key == "anyOf":
                return lambda value: any(branch(value) for branch in branches)
            return lambda value: sum(1 for branch in branches if branch(value)) == 1
        if key == "not":
            negated = self._compile(argument)
            return lambda value: not negated(value)
        raise Unsupported(key)


def _annotation(key: str, argument: Any) -> bool:
    """Whether a keyword asserts nothing here (``unevaluatedProperties: true`` allows everything)."""
    return key in ANNOTATIONS or key.startswith("x-") or (key == "unevaluatedProperties" and argument is True)


def _equal_to(expected: Any) -> Check:
    """Equality as ``jsonschema`` means it, for the constants the schema uses (strings, numbers, booleans, null)."""
    if isinstance(expected, str):
        return lambda value: isinstance(value, str) and value == expected
    if expected is None or isinstance(expected, bool):
        return lambda value: value is expected
    if _is_number(expected):
        return lambda value: _is_number(value) and value == expected
    raise Unsupported(f"constant {expected!r}")
