"""Split a long reply into platform-sized messages without ever splitting a code fence.

Breaks go, in order of preference, after a blank line, after a line outside a fence, after a line
inside a fence, at a space, anywhere. A fence that has to be cut is closed at the end of one piece
and reopened (with its info string) at the start of the next, so every piece renders on its own.
(Only a fence whose opening line alone fills half a message is cut without reopening.)
Fences are found by the shared markdown parser: ``~~~``, four backticks around three, and a fence
inside a list item (closed in the item, reopened at the margin with its lines outdented) or a quote
(closed and reopened in the quote).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

from ..markdown import CodeFence, code_fences, fence_open_after

Weight = Callable[[str], int]
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")


def utf16_weight(char: str) -> int:
    """A character's length in UTF-16 code units, the unit Telegram counts in."""
    return 2 if ord(char) > 0xFFFF else 1


def char_weight(_: str) -> int:
    """Every character counts as one."""
    return 1


@dataclass(frozen=True, slots=True)
class _Break:
    at: int
    rank: int
    fence: CodeFence | None
    line: int
    """The line (0-based) holding the first character after the cut."""
    mid_line: bool = False


def split_message(text: str, limit: int, weight: Weight = char_weight) -> list[str]:
    """Pieces of ``text``, each of at most ``limit`` by ``weight``; whitespace-only input gives none."""
    if limit < 16:
        raise ValueError("limit must be at least 16")
    pieces: list[str] = []
    rest, skip = text, 0
    while sum(map(weight, rest)) > limit:
        head, rest, skip = _cut(rest, limit, weight, skip)
        pieces.append(head)
    if rest[skip:].strip():
        pieces.append(rest)
    return pieces


def fences_balanced(text: str) -> bool:
    """Whether every code fence opened in ``text`` is closed by a closing line in it."""
    return all(fence.closed for fence in code_fences(text))


def _cut(text: str, limit: int, weight: Weight, skip: int) -> tuple[str, str, int]:
    """The first piece, the rest (a cut fence reopened) and how much of the rest is that reopening."""
    prefix = [0, *accumulate(map(weight, text))]
    breaks = _line_breaks(text[: _window(text, _fits(prefix, limit))])
    fitting = [b for b in breaks if b.at > skip and prefix[b.at] + _closing_cost(b.fence) <= limit]
    roomy = [b for b in fitting if prefix[b.at] >= limit // 2]
    if roomy:
        best = max(roomy, key=lambda b: (b.rank, b.at))
    elif fitting:
        best = fitting[-1]
    else:
        best = _hard_break(text, prefix, limit, skip, breaks)
    fence = best.fence if best.fence and 2 * (len(best.fence.reopener) + len(best.fence.closer) + 2) <= limit else None
    head, rest = text[: best.at], text[best.at :]
    if fence is None:
        return head, rest, 0
    reopening = fence.reopener + "\n"
    return head + ("" if head.endswith("\n") else "\n") + fence.closer, reopening + _outdented(text, fence, best), len(reopening)


def _outdented(text: str, fence: CodeFence, cut: _Break) -> str:
    """The rest after ``cut`` with the cut fence's lines moved to the margin, where the reopened fence is."""
    rest = text[cut.at :]
    if not fence.indented:
        return rest
    end = next(whole.end for whole in code_fences(text) if whole.start == fence.start)  # the fence may run past the window
    lines = _LINE.findall(rest)
    for index in range(1 if cut.mid_line else 0, min(len(lines), end - cut.line)):
        lines[index] = fence.outdent(lines[index])
    return "".join(lines)


def _line_breaks(text: str) -> list[_Break]:
    """Every line end as a candidate cut, ranked, with the fence still open there."""
    fences = code_fences(text)
    breaks = []
    for line, match in enumerate(_LINE.finditer(text)):
        if match.group().endswith(("\n", "\r")):
            fence = fence_open_after(fences, line)
            rank = 1 if fence else 3 if not match.group().strip() else 2
            breaks.append(_Break(match.end(), rank, fence, line + 1))
    return breaks


def _hard_break(text: str, prefix: list[int], limit: int, skip: int, breaks: list[_Break]) -> _Break:
    """A cut inside a line: at the last space that fits, else after the last character that fits."""
    line_start = _line_start(text, max(_fits(prefix, limit), skip + 1))
    earlier = [b for b in breaks if b.at <= line_start]
    fence = earlier[-1].fence if earlier else None
    at = _fits(prefix, limit - (_closing_cost(fence) if fence else 0))
    space = text.rfind(" ", skip, at)
    if space > skip + (at - skip) // 2:
        at = space + 1
    return _Break(max(at, skip + 1), 0, fence, len(earlier), mid_line=True)


def _window(text: str, end: int) -> int:
    """Where the line after the one holding ``end`` ends: what the parser must read to know the fences up to ``end``.

    Whether a fence is open at a line never depends on what comes after the next line (a closing
    line later on, or none, leaves it open; the next line may end its list item or quote).
    """
    for _ in range(2):
        newline = text.find("\n", end)
        end = len(text) if newline < 0 else newline + 1
    return end


def _fits(prefix: list[int], room: int) -> int:
    """The longest prefix length whose weight is at most ``room``."""
    low, high = 0, len(prefix) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if prefix[middle] <= room:
            low = middle
        else:
            high = middle - 1
    return low


def _line_start(text: str, position: int) -> int:
    """Where the line holding ``position`` starts (a line ends at ``\\n``, ``\\r\\n`` or ``\\r``)."""
    return max(text.rfind("\n", 0, position), text.rfind("\r", 0, position)) + 1


def _closing_cost(fence: CodeFence | None) -> int:
    return len(fence.closer) + 1 if fence else 0
