"""Any other ACP agent: nothing known of its modes, so the mode it starts in is left as it is unless configured."""

from __future__ import annotations

from .base import AgentAdapter

GENERIC = AgentAdapter(name="generic")
