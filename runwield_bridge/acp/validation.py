"""Params checked against the official ACP v1 JSON schema before any handler sees them.

The schema is the npm package ``@agentclientprotocol/sdk``'s (``official_schema.py``). The
SDK's pydantic models are lenient on purpose (``"1"`` passes as protocol version 1, a bad
``clientCapabilities`` falls back to its default), so they cannot be the check.
"""

from __future__ import annotations

import functools
from typing import Any

from .official_schema import definitions
from .schema_check import Check, SchemaChecks

@functools.cache
def _check(type_name: str) -> Check | None:
    return _checks().check(type_name)


@functools.cache
def _checks() -> SchemaChecks:
    return SchemaChecks(definitions())


def schema_problems(type_name: str, params: Any) -> list[dict[str, str]]:
    """What makes ``params`` break the schema's ``type_name`` (the most telling problem), or [] when valid. The
    compiled check answers quickly for valid params (schema_check.py); jsonschema says what is wrong (schema_errors.py,
    loaded only then: most processes never need it)."""
    check = _check(type_name)
    if check is not None and check(params):
        return []
    from .schema_errors import problems

    return problems(type_name, params)
