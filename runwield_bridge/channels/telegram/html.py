"""Agent Markdown as Telegram HTML: code fences, inline code and bold; everything else escaped, links as text."""

from __future__ import annotations

import html
import re

from ..markup import convert, convert_spans

_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")


def to_html(text: str) -> str:
    """Telegram ``parse_mode=HTML`` text; a fence left open (mid-stream) is closed at the end."""
    return convert(text, _inline, _pre)


def _pre(lines: list[str], language: str) -> str:
    body = html.escape("\n".join(lines), quote=False)
    if language:
        return f'<pre><code class="language-{html.escape(language)}">{body}</code></pre>'
    return f"<pre>{body}</pre>"


def _inline(line: str) -> str:
    return convert_spans(line, lambda text: _BOLD.sub(r"<b>\1</b>", html.escape(text, quote=False)), _code)


def _code(span: str) -> str:
    return f"<code>{html.escape(span, quote=False)}</code>"
