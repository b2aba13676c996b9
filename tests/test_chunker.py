"""The chunker never splits a code fence, never exceeds the limit, and loses no text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from runwield_bridge.channels.chunking import fences_balanced, split_message, utf16_weight
from runwield_bridge.markdown import code_fences

FENCE_LINE = re.compile(r"^[ >]*(?:(?:[-*+]|\d+[.)]) +)?(`{3,}|~{3,}).*$", re.MULTILINE)


def content(text: str) -> str:
    """The text without fence lines, quote marks and whitespace: what must survive splitting, in order."""
    return re.sub(r"[\s>]+", "", FENCE_LINE.sub("", text))


def code(piece: str) -> list[tuple[str, list[str]]]:
    """The closed fences of a piece as CommonMark reads them: language and code lines."""
    return [(fence.language, fence.code_lines) for fence in code_fences(piece) if fence.closed]


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


def test_a_fence_in_a_list_item_is_closed_in_it_and_reopened_at_the_margin() -> None:
    lines = [f"line {i}" for i in range(30)]
    body = "\n".join(f"    {line}" for line in lines)
    text = f"1. Step one:\n\n    ```python\n{body}\n    ```\n2. Step two"
    pieces = split_message(text, 120)
    assert len(pieces) > 2 and all(len(p) <= 120 for p in pieces)
    assert all(p.startswith("```python\n") for p in pieces[1:])
    fences = [code(p) for p in pieces]
    assert all(len(f) == 1 and f[0][0] == "python" for f in fences), "every piece shows its part as Python code"
    assert [line for [(_, part)] in fences for line in part] == lines
    assert pieces[-1].endswith("```\n2. Step two")


def test_a_fence_in_a_quote_is_reopened_inside_the_quote() -> None:
    body = "\n".join(f"> line {i}" for i in range(30))
    pieces = split_message(f"> Quoted:\n> ```sh\n{body}\n> ```\nAfter.", 120)
    assert len(pieces) > 2
    assert all(p.startswith("> ```sh\n") for p in pieces[1:-1])
    assert all(code(p)[0][0] == "sh" for p in pieces[:-1])


def test_a_four_backtick_fence_is_not_closed_by_three_inside_it() -> None:
    body = "\n".join(["```py", "x = 1", "```"] * 10)
    pieces = split_message(f"````md\n{body}\n````", 60)
    assert len(pieces) > 2
    assert all(p.startswith("````md\n") for p in pieces[1:])
    assert all(fences_balanced(p) and [lang for lang, _ in code(p)] == ["md"] for p in pieces)


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
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029>"),
    max_size=60,
).filter(lambda line: not FENCE_LINE.match(line))
markdown = ["```", "```python", "~~~", "", "````", "```js", "- item", "1. step", "   ```py", "    ```", "- ```sh", "> ```", "> quoted", "    code"]
lines = st.one_of(prose, st.sampled_from(markdown))


@settings(max_examples=300, deadline=None)
@given(st.lists(lines, max_size=40), st.integers(min_value=32, max_value=200))
def test_pieces_fit_keep_fences_whole_and_keep_all_text(parts: list[str], limit: int) -> None:
    text = "\n".join(parts)
    pieces = split_message(text, limit)
    assert all(len(p) <= limit for p in pieces)
    if fences_balanced(text):
        assert all(fences_balanced(p) for p in pieces), pieces
    assert content("".join(pieces)) == content(text)
