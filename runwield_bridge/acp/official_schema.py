"""The official ACP v1 JSON schema: ``official-schema-v1.json`` beside this module, the schema of the npm package
``@agentclientprotocol/sdk`` that the wire tests validate against (a test keeps the two equal)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

OFFICIAL_SCHEMA = Path(__file__).with_name("official-schema-v1.json")


@functools.cache
def definitions() -> dict[str, Any]:
    """The type definitions (``$defs``) of the official schema."""
    return json.loads(OFFICIAL_SCHEMA.read_text(encoding="utf-8"))["$defs"]
