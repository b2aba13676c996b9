"""What is wrong with params that break the official ACP schema, in words, as jsonschema finds it (validation.py
asks only for params that fail its compiled check)."""

from __future__ import annotations

import functools
import json
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, relevance

from .official_schema import definitions

PROBLEM_LENGTH = 200


def problems(type_name: str, params: Any) -> list[dict[str, str]]:
    """The most telling problem that makes ``params`` break ``type_name``, or [] when they are valid."""
    error = max(_validator(type_name).iter_errors(params), key=relevance, default=None)
    if error is None:
        return []
    error = _tagged_branch(error)
    field = ".".join(map(str, error.absolute_path)) or "params"
    return [{"field": field, "problem": _problem(error)}]


@functools.cache
def _validator(type_name: str) -> Draft202012Validator:
    types = definitions()
    if type_name not in types:
        raise KeyError(f"the official ACP schema has no type {type_name!r}")
    return Draft202012Validator({"$ref": f"#/$defs/{type_name}", "$defs": types})


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
