"""The chunker never splits a code fence, never exceeds the limit, and loses no text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from runwield_bridge.channels.chunking import fences_balanced, split_message, utf16_weight

FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*$", re.MULTILINE)


def content(text: str) -> str:
    """The text without fence lines and whitespace: what must survive splitting, in order."""
    return re.sub(r"\s+", "", FENCE_LINE.sub("", text))


def test_short_text_is_one_piece_and_blank_text_none() -> None:
    assert split_message("hello", 100) == ["hello"]
    assert split_message(" \n ", 100) == []


def test_paragraph_breaks_are_preferred() -> None:
    text = "a" * 60 + "\n\n" + "b" * 30 + "\n" + "c" * 30
    assert split_message(text, 100) == ["a" * 60 + "\n\n", "b" * 30 + "\n" + "c" * 30]


def test_a_cut_fence_is_closed_and_reopened_with_its_language() -> None:
    code = "\n".join(f"line {i}" for i in range(40))
    text = f"Here:\n```python\n{code}\n```\nDone."
    pieces = split_message(text, 120)
    assert len(pieces) > 2
    assert all(len(p) <= 120 and fences_balanced(p) for p in pieces)
    assert all(p.startswith("```python\n") for p in pieces[1:-1])
    assert content("".join(pieces)) == content(text)


def test_a_long_line_is_cut_at_a_space() -> None:
    pieces = split_message("word " * 50, 40)
    assert all(len(p) <= 40 for p in pieces)
    assert all(p.endswith(" ") for p in pieces[:-1])


def test_limits_can_count_utf16_units() -> None:
    text = "😀" * 30
    pieces = split_message(text, 20, utf16_weight)
    assert all(len(p.encode("utf-16-le")) // 2 <= 20 for p in pieces)
    assert "".join(pieces) == text


prose = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
    max_size=60,
).filter(lambda line: not FENCE_LINE.match(line))
lines = st.one_of(prose, st.sampled_from(["```", "```python", "~~~", "", "````", "```js"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(lines, max_size=40), st.integers(min_value=32, max_value=200))
def test_pieces_fit_keep_fences_whole_and_keep_all_text(parts: list[str], limit: int) -> None:
    text = "\n".join(parts)
    pieces = split_message(text, limit)
    assert all(len(p) <= limit for p in pieces)
    if fences_balanced(text):
        assert all(fences_balanced(p) for p in pieces), pieces
    assert content("".join(pieces)) == content(text)
