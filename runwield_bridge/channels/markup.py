"""Agent Markdown rebuilt for a platform's markup: prose lines and fenced code blocks are converted separately."""

from __future__ import annotations

import re
from collections.abc import Callable

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*).*$")
_INLINE_CODE = re.compile(r"`([^`\n]+)`")

Prose = Callable[[str], str]
"""Converts one line outside code fences."""
Code = Callable[[list[str], str], str]
"""Converts one fenced block: its lines and its language (may be empty)."""


def convert(text: str, prose: Prose, code: Code) -> str:
    """``text`` with every line and fenced block converted; a fence left open (mid-stream) is closed at the end."""
    out: list[str] = []
    block: list[str] | None = None
    marker = language = ""
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if block is None and match:
            block, marker, language = [], match.group(1), match.group(2)
        elif block is not None and match and match.group(1).startswith(marker) and not match.group(2):
            out.append(code(block, language))
            block = None
        elif block is not None:
            block.append(line)
        else:
            out.append(prose(line))
    if block is not None:
        out.append(code(block, language))
    return "\n".join(out)


def convert_spans(line: str, text: Callable[[str], str], code: Callable[[str], str]) -> str:
    """One prose line with its inline code spans (without their backticks) and the text between converted separately."""
    return "".join(code(part) if i % 2 else text(part) for i, part in enumerate(_INLINE_CODE.split(line)))
