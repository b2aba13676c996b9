"""A Plan's markdown as blocks a reviewer can comment on, rendered safely by the shared parser (raw HTML is text)."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Literal

from markdown_it.token import Token

from ..markdown import PARSER, parse, source_lines

Kind = Literal["heading", "paragraph", "item", "code", "rule"]


@dataclass(frozen=True, slots=True)
class Block:
    """One rendered block and where it starts in the source, so a reviewer can comment on it."""

    kind: Kind
    line: int
    source: str
    html: str
    level: int = 0
    number: int | None = None
    quoted: bool = False


def inline(text: str) -> str:
    """Escape text, then mark up CommonMark inlines (`code`, **strong**, *emphasis*, links); raw HTML stays text."""
    return PARSER.renderInline(text)


class _Walk:
    """Turns the token stream into blocks: a list item's first block is the item, later ones sit beneath it."""

    def __init__(self, text: str) -> None:
        self.lines = source_lines(text)
        self.blocks: list[Block] = []
        self.lists: list[int | None] = []  # the next number of each open list (None: a bullet list)
        self.item: tuple[int, int | None] | None = None  # an open item's line and number, until its first block
        self.quotes = 0
        self.heading = 0

    def token(self, token: Token) -> None:
        kind = token.type
        if kind in ("bullet_list_open", "ordered_list_open"):
            self.lists.append(int(token.attrGet("start") or 1) if kind == "ordered_list_open" else None)
        elif kind in ("bullet_list_close", "ordered_list_close"):
            self.lists.pop()
        elif kind == "list_item_open" and token.map:
            number = self.lists[-1]
            if number is not None:
                self.lists[-1] = number + 1
            self.item = (token.map[0], number)
        elif kind == "list_item_close" and self.item:
            self.add("item", self.item[0], "")
        elif kind in ("blockquote_open", "blockquote_close"):
            self.quotes += 1 if kind == "blockquote_open" else -1
        elif kind == "heading_open":
            self.heading = int(token.tag[1])
        elif kind == "inline" and token.map:
            html = PARSER.renderer.renderInline(token.children or [], PARSER.options, {})
            self.add("heading" if self.heading else "paragraph", token.map[0], html)
            self.heading = 0
        elif kind in ("fence", "code_block") and token.map:
            self.add("code", token.map[0], escape(token.content.removesuffix("\n")))
        elif kind == "hr" and token.map:
            self.add("rule", token.map[0], "")

    def add(self, kind: Kind, line: int, html: str) -> None:
        quoted = self.quotes > 0
        if self.item is None:
            level = len(self.lists)
            self.blocks.append(Block(kind, line + 1, self.lines[line], html, level=self.heading or level, quoted=quoted))
            return
        start, number = self.item
        inner = html if kind == "paragraph" else block_html(Block(kind, line + 1, "", html, level=self.heading))
        self.blocks.append(Block("item", start + 1, self.lines[start], inner, level=len(self.lists) - 1, number=number, quoted=quoted))
        self.item = None


def parse_blocks(text: str) -> list[Block]:
    """The document as blocks in source order; line numbers are 1-based."""
    walk = _Walk(text)
    for token in parse(text):
        walk.token(token)
    return walk.blocks


def block_html(block: Block) -> str:
    """The HTML of one block on its own (a list item is a one-item list that keeps its number)."""
    html = _bare_html(block)
    return f"<blockquote>{html}</blockquote>" if block.quoted else html


def _bare_html(block: Block) -> str:
    if block.kind == "heading":
        return f"<h{block.level}>{block.html}</h{block.level}>"
    indent = f' style="margin-left:{1.5 * block.level:g}em"' if block.level else ""
    if block.kind == "code":
        return f"<pre{indent}><code>{block.html}</code></pre>"
    if block.kind == "rule":
        return "<hr>"
    if block.kind == "item":
        if block.number is None:
            return f"<ul{indent}><li>{block.html}</li></ul>"
        return f'<ol start="{block.number}"{indent}><li>{block.html}</li></ol>'
    return f"<p{indent}>{block.html}</p>"
