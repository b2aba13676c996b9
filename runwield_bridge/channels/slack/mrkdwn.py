"""Agent Markdown as Slack mrkdwn: ``&``, ``<`` and ``>`` escaped; bold, links and headings rewritten; code kept."""

from __future__ import annotations

import re

from ..markup import convert, convert_spans

_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_LINK = re.compile(r"\[([^\]\n|]+)\]\((https?://[^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+)$")
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def to_mrkdwn(text: str) -> str:
    """Slack ``mrkdwn`` text; a fence left open (mid-stream) is closed at the end."""
    return convert(text, _line, _block)


def mrkdwn_weight(char: str) -> int:
    """What a character costs against Slack's byte limit once escaped (rewrites only ever shorten the text)."""
    return len(_ESCAPES.get(char, char).encode())


def _escape(text: str) -> str:
    return "".join(_ESCAPES.get(char, char) for char in text)


def _line(line: str) -> str:
    if heading := _HEADING.match(line):
        line = f"**{heading.group(1)}**"
    return convert_spans(line, _text, lambda span: f"`{_escape(span)}`")


def _text(text: str) -> str:
    return _BOLD.sub(r"*\1*", _LINK.sub(r"<\2|\1>", _escape(text)))


def _block(lines: list[str], language: str) -> str:
    return "```\n" + _escape("\n".join(lines)) + "\n```"
