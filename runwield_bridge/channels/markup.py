"""Agent Markdown rebuilt for a platform's markup: prose lines and fenced code blocks are converted separately."""

from __future__ import annotations

from collections.abc import Callable

from ..markdown import code_fences, code_spans, source_lines

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
    out, position = [], 0
    for span in code_spans(line):
        out += [text(line[position : span.start]), code(span.code)]
        position = span.end
    return "".join([*out, text(line[position:])])
