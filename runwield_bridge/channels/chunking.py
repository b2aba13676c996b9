"""Split a long reply into platform-sized messages without ever splitting a code fence.

Breaks go, in order of preference, after a blank line, after a line outside a fence, after a line
inside a fence, at a space, anywhere. A fence that has to be cut is closed at the end of one piece
and reopened (with its info string) at the start of the next, so every piece renders on its own.
(Only a fence whose opening line alone fills half a message is cut without reopening.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

Weight = Callable[[str], int]
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def utf16_weight(char: str) -> int:
    """A character's length in UTF-16 code units, the unit Telegram counts in."""
    return 2 if ord(char) > 0xFFFF else 1


def char_weight(_: str) -> int:
    """Every character counts as one."""
    return 1


@dataclass(frozen=True, slots=True)
class Fence:
    """An open code fence: its opening line and the marker a closing line repeats."""

    opener: str
    marker: str

    def closes(self, line: str) -> bool:
        match = _FENCE.match(line)
        return bool(match) and match.group(1)[0] == self.marker[0] and len(match.group(1)) >= len(self.marker) and not match.group(2).strip()


@dataclass(frozen=True, slots=True)
class _Break:
    at: int
    rank: int
    fence: Fence | None


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
    """Whether every code fence opened in ``text`` is closed in it."""
    return _fence_after(text.splitlines()) is None


def _fence_after(lines: list[str], fence: Fence | None = None) -> Fence | None:
    for line in lines:
        if fence is None:
            if match := _FENCE.match(line):
                fence = Fence(line, match.group(1))
        elif fence.closes(line):
            fence = None
    return fence


def _cut(text: str, limit: int, weight: Weight, skip: int) -> tuple[str, str, int]:
    """The first piece, the rest (a cut fence reopened) and how much of the rest is that reopening."""
    prefix = [0, *accumulate(map(weight, text))]
    fitting = [b for b in _line_breaks(text) if b.at > skip and prefix[b.at] + _closing_cost(b.fence) <= limit]
    roomy = [b for b in fitting if prefix[b.at] >= limit // 2]
    if roomy:
        best = max(roomy, key=lambda b: (b.rank, b.at))
    elif fitting:
        best = fitting[-1]
    else:
        best = _hard_break(text, prefix, limit, skip)
    fence = best.fence if best.fence and 2 * (len(best.fence.opener) + len(best.fence.marker) + 2) <= limit else None
    head, rest = text[: best.at], text[best.at :]
    if fence is None:
        return head, rest, 0
    reopening = fence.opener + "\n"
    return head + ("" if head.endswith("\n") else "\n") + fence.marker, reopening + rest, len(reopening)


def _line_breaks(text: str) -> list[_Break]:
    """Every line end as a candidate cut, ranked, with the fence still open there."""
    breaks: list[_Break] = []
    fence: Fence | None = None
    position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        content = line.rstrip("\r\n")
        fence = _fence_after([content], fence)
        if line != content:
            rank = 1 if fence else 3 if not content.strip() else 2
            breaks.append(_Break(position, rank, fence))
    return breaks


def _hard_break(text: str, prefix: list[int], limit: int, skip: int) -> _Break:
    """A cut inside a line: at the last space that fits, else after the last character that fits."""
    line_start = text.rfind("\n", 0, max(_fits(prefix, limit), skip + 1)) + 1
    fence = _fence_after(text[:line_start].splitlines())
    at = _fits(prefix, limit - (_closing_cost(fence) if fence else 0))
    space = text.rfind(" ", skip, at)
    if space > skip + (at - skip) // 2:
        at = space + 1
    return _Break(max(at, skip + 1), 0, fence)


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


def _closing_cost(fence: Fence | None) -> int:
    return len(fence.marker) + 1 if fence else 0
