"""Where the ``openai`` and ``anthropic`` providers find their API keys, checked without importing pydantic-ai."""

from __future__ import annotations

import os

from ..config import ModelConfig

KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
"""The environment variable each provider reads its API key from when the entry sets no ``api_key``."""


def missing_key(name: str, entry: ModelConfig, env: str) -> str | None:
    """Why the model ``name`` has no API key: neither ``api_key`` nor ``env`` is set; None when it has one."""
    if entry.api_key or os.environ.get(env):
        return None
    return f"models.{name}: no API key; set api_key (for example api_key = \"${{{env}}}\") or {env}"
