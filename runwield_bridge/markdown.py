"""The one markdown parser (markdown-it-py, CommonMark, raw HTML off) and the code it finds.

The review page, the chat markup and the chunker all read Markdown through this module, so code is
code in the same places for each of them (four backticks around three, ``~~~``, a fence inside a
list item or a quote, inline code holding backticks). A leaf: it imports nothing of the project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline, backtick
from markdown_it.token import Token

_NEWLINE = re.compile(r"\r\n?|\n")
_MARKER_PREFIX = re.compile(r"[^\s>]")
_SPANS = "runwield_code_spans"


@dataclass(frozen=True, slots=True)
class CodeSpan:
    """Inline code: where it starts and ends in its line (backticks included) and the code."""

    start: int
    end: int
    code: str


def _noting_backticks(state: StateInline, silent: bool) -> bool:
    """CommonMark's code span rule, noting where each span is when :func:`code_spans` asks."""
    start, tokens = state.pos, len(state.tokens)
    found = backtick(state, silent)
    spans = state.env.get(_SPANS)
    if found and spans is not None and len(state.tokens) > tokens and state.tokens[-1].type == "code_inline":
        spans.append(CodeSpan(start, state.pos, state.tokens[-1].content))
    return found


PARSER = MarkdownIt("commonmark", {"html": False})
"""CommonMark with raw HTML turned off: ``<script>`` in a Plan or a reply is text, never markup."""
PARSER.inline.ruler.at("backticks", _noting_backticks)


def parse(text: str) -> list[Token]:
    """The block-level token stream of ``text``."""
    return PARSER.parse(text)


def code_spans(line: str) -> list[CodeSpan]:
    """The inline code in one line, where CommonMark finds it (``` ``a `b` c`` ``` holds backticks; ``\\` `` is no span)."""
    spans: list[CodeSpan] = []
    PARSER.parseInline(line, {_SPANS: spans})
    return sorted(spans, key=lambda span: span.start)


def source_lines(text: str) -> list[str]:
    """``text`` split into lines where the parser splits it (its token maps count these lines)."""
    return _NEWLINE.split(text)


@dataclass(frozen=True, slots=True)
class CodeFence:
    """A fenced code block: lines ``start`` (its opening line) to ``end`` (exclusive) of the source.

    ``open_through`` is the last line at whose end the fence is still open: its last code line when a
    closing line or the end of its list item or quote ends it, the last line of all when nothing does.
    ``closed`` says whether a closing line ends it.
    """

    start: int
    end: int
    open_through: int
    opener: str
    marker: str
    info: str
    content: str
    closed: bool

    @property
    def language(self) -> str:
        """The first word of the info string (may be empty)."""
        return self.info.split(maxsplit=1)[0] if self.info.strip() else ""

    @property
    def code_lines(self) -> list[str]:
        """The code inside the fence, without the container's indentation."""
        return self.content.removesuffix("\n").split("\n") if self.content else []

    @property
    def prefix(self) -> str:
        """What comes before the marker on the opening line (indentation, ``- ``, ``> ``)."""
        return self.opener[: self.opener.index(self.marker)]

    @property
    def reopener(self) -> str:
        """A line that opens the same fence again at the top of a new message (inside a quote, in the quote)."""
        return ("" if self.indented else self._continuation) + self.opener[len(self.prefix) :]

    @property
    def closer(self) -> str:
        """A line that closes the fence on a continuation line of its container."""
        return self._continuation + self.marker

    @property
    def indented(self) -> bool:
        """Whether the fence sits in a list item, so it reopens at the margin and its lines move there too.

        (Up to three spaces alone open a fence at the margin as well: such a fence reopens as it was.)
        """
        return not self._quoted and (len(self.prefix) > 3 or bool(self.prefix.strip()))

    def outdent(self, line: str) -> str:
        """A line of the fence moved to the margin, as it goes after :attr:`reopener` (a quote keeps its ``>``)."""
        if not self.indented:
            return line
        spaces = len(line) - len(line.lstrip(" "))
        return line[min(spaces, len(self.prefix)) :]

    @property
    def _quoted(self) -> bool:
        return ">" in self.prefix

    @property
    def _continuation(self) -> str:
        return _MARKER_PREFIX.sub(" ", self.prefix)


def code_fences(text: str) -> list[CodeFence]:
    """Every fenced code block in ``text``, nested ones included, in source order."""
    lines = source_lines(text)
    parsed_lines = len(lines) - (lines[-1] == "")  # the parser sees no line after a final newline
    fences = []
    for token in parse(text):
        if token.type != "fence" or token.map is None:
            continue
        start, end = token.map
        closed = _line_count(token.content) == end - start - 2
        open_through = end - 1 if not closed and end >= parsed_lines else end - 2
        fences.append(CodeFence(start, end, open_through, lines[start], token.markup, token.info, token.content, closed))
    return fences


def fence_open_after(fences: list[CodeFence], line: int) -> CodeFence | None:
    """The fence still open at the end of ``line`` (0-based), if any."""
    return next((fence for fence in fences if fence.start <= line <= fence.open_through), None)


def _line_count(content: str) -> int:
    return len(content.removesuffix("\n").split("\n")) if content else 0
