"""Agent Markdown rebuilt for a platform's markup: prose lines and fenced code blocks are converted separately."""

from __future__ import annotations

import re
from collections.abc import Callable

from ..markdown import code_fences, source_lines

_INLINE_CODE = re.compile(r"`([^`\n]+)`")

Prose = Callable[[str], str]
"""Converts one line outside code fences."""
Code = Callable[[list[str], str], str]
"""Converts one fenced block: its lines and its language (may be empty)."""


def convert(text: str, prose: Prose, code: Code) -> str:
    """``text`` with every line and fenced block converted; a fence left open (mid-stream) is closed at the end."""
    lines = source_lines(text)
    out: list[str] = []
    line = 0
    for fence in code_fences(text):
        out.extend(prose(prose_line) for prose_line in lines[line : fence.start])
        before = prose(fence.prefix) if fence.prefix.strip() else ""
        out.append(before + code(fence.code_lines, fence.language))
        line = fence.end
    out.extend(prose(prose_line) for prose_line in lines[line:])
    return "\n".join(out)


def convert_spans(line: str, text: Callable[[str], str], code: Callable[[str], str]) -> str:
    """One prose line with its inline code spans (without their backticks) and the text between converted separately."""
    return "".join(code(part) if i % 2 else text(part) for i, part in enumerate(_INLINE_CODE.split(line)))
