"""Params checked against the official ACP v1 JSON schema before any handler sees them.

``official-schema-v1.json`` beside this module is the schema of the npm package
``@agentclientprotocol/sdk`` that the wire tests validate against (a test keeps the two equal). The
SDK's pydantic models are lenient on purpose (``"1"`` passes as protocol version 1, a bad
``clientCapabilities`` falls back to its default), so they cannot be the check.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .schema_check import Check, SchemaChecks

if TYPE_CHECKING:  # jsonschema is loaded once params fail the compiled check: most processes never need it
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

OFFICIAL_SCHEMA = Path(__file__).with_name("official-schema-v1.json")
PROBLEM_LENGTH = 200


@functools.cache
def definitions() -> dict[str, Any]:
    """The type definitions (``$defs``) of the official schema."""
    return json.loads(OFFICIAL_SCHEMA.read_text(encoding="utf-8"))["$defs"]


@functools.cache
def _validator(type_name: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    types = definitions()
    if type_name not in types:
        raise KeyError(f"the official ACP schema has no type {type_name!r}")
    return Draft202012Validator({"$ref": f"#/$defs/{type_name}", "$defs": types})


@functools.cache
def _check(type_name: str) -> Check | None:
    return _checks().check(type_name)


@functools.cache
def _checks() -> SchemaChecks:
    return SchemaChecks(definitions())


def schema_problems(type_name: str, params: Any) -> list[dict[str, str]]:
    """What makes ``params`` break the schema's ``type_name`` (the most telling problem), or [] when valid. The
    compiled check answers quickly for valid params (schema_check.py); ``jsonschema`` says what is wrong."""
    check = _check(type_name)
    if check is not None and check(params):
        return []
    from jsonschema.exceptions import relevance

    error = max(_validator(type_name).iter_errors(params), key=relevance, default=None)
    if error is None:
        return []
    error = _tagged_branch(error)
    field = ".".join(map(str, error.absolute_path)) or "params"
    return [{"field": field, "problem": _problem(error)}]


def _tagged_branch(error: ValidationError) -> ValidationError:
    """For a union, the error inside the one branch whose tag (a ``const``, such as ``type``) matched."""
    while error.context:
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        matched = [errors for errors in branches.values() if not any(e.validator == "const" for e in errors)]
        if len(matched) != 1:
            break
        error = max(matched[0], key=relevance)
    return error


def _problem(error: ValidationError) -> str:
    """The problem in words that never quote the (possibly huge) value."""
    expected = error.validator_value
    if error.validator == "type":
        return "must be of type " + " or ".join(expected if isinstance(expected, list) else [expected])
    if error.validator == "minimum":
        return f"must be at least {expected}"
    if error.validator == "maximum":
        return f"must be at most {expected}"
    if error.validator == "const":
        return f"must be {json.dumps(expected)}"
    if error.validator == "enum":
        return "must be one of " + ", ".join(json.dumps(value) for value in expected)
    if error.validator in ("anyOf", "oneOf"):
        return "matches none of the forms the protocol allows"
    return error.message[:PROBLEM_LENGTH]
