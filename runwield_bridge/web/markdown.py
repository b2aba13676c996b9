"""A small, safe markdown renderer for Plans: all text is escaped; headings, lists, code, rules, emphasis."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from typing import Literal

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|(\d{1,9})[.)])\s+(.*)$")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_CODE_SPAN = re.compile(r"(`[^`]+`)")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])")


@dataclass(frozen=True, slots=True)
class Block:
    """One rendered block and where it starts in the source, so a reviewer can comment on it."""

    kind: Literal["heading", "paragraph", "item", "code", "rule"]
    line: int
    source: str
    html: str
    level: int = 0
    number: int | None = None


def inline(text: str) -> str:
    """Escape text, then mark up `code`, **strong** and *emphasis* (nothing else becomes HTML)."""
    out = []
    for part in _CODE_SPAN.split(text):
        if len(part) > 2 and part.startswith("`") and part.endswith("`"):
            out.append(f"<code>{escape(part[1:-1])}</code>")
        else:
            out.append(_EMPHASIS.sub(r"<em>\1</em>", _STRONG.sub(r"<strong>\1</strong>", escape(part))))
    return "".join(out)


def _starts_block(line: str) -> bool:
    return not line.strip() or bool(_FENCE.match(line) or _HEADING.match(line) or _ITEM.match(line) or _RULE.match(line))


def parse_blocks(text: str) -> list[Block]:
    """The document as blocks in source order; line numbers are 1-based."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        line, start = lines[i], i
        i += 1
        if not line.strip():
            continue
        if fence := _FENCE.match(line):
            body = []
            while i < len(lines) and not lines[i].strip().startswith(fence.group(1)):
                body.append(lines[i])
                i += 1
            i += 1
            blocks.append(Block("code", start + 1, line, escape("\n".join(body))))
        elif heading := _HEADING.match(line):
            level = len(heading.group(1))
            blocks.append(Block("heading", start + 1, line, inline(heading.group(2)), level=level))
        elif _RULE.match(line):
            blocks.append(Block("rule", start + 1, line, ""))
        elif item := _ITEM.match(line):
            words = [item.group(3)]
            while i < len(lines) and lines[i][:1].isspace() and not _starts_block(lines[i]):
                words.append(lines[i].strip())
                i += 1
            number = int(item.group(2)) if item.group(2) else None
            depth = len(item.group(1).expandtabs(4)) // 2
            blocks.append(Block("item", start + 1, line, inline(" ".join(words)), level=depth, number=number))
        else:
            words = [line.strip()]
            while i < len(lines) and not _starts_block(lines[i]):
                words.append(lines[i].strip())
                i += 1
            blocks.append(Block("paragraph", start + 1, line, inline(" ".join(words))))
    return blocks


def block_html(block: Block) -> str:
    """The HTML of one block on its own (a list item is a one-item list that keeps its number)."""
    if block.kind == "heading":
        return f"<h{block.level}>{block.html}</h{block.level}>"
    if block.kind == "code":
        return f"<pre><code>{block.html}</code></pre>"
    if block.kind == "rule":
        return "<hr>"
    if block.kind == "item":
        indent = f' style="margin-left:{1.5 * block.level:g}em"' if block.level else ""
        if block.number is None:
            return f"<ul{indent}><li>{block.html}</li></ul>"
        return f'<ol start="{block.number}"{indent}><li>{block.html}</li></ol>'
    return f"<p>{block.html}</p>"
