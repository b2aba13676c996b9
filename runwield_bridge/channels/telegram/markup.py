"""Agent Markdown as Telegram HTML: code fences, inline code and bold; everything else escaped, links as text."""

from __future__ import annotations

import html
import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*).*$")
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")


def to_html(text: str) -> str:
    """Telegram ``parse_mode=HTML`` text; a fence left open (mid-stream) is closed at the end."""
    out: list[str] = []
    code: list[str] | None = None
    marker = language = ""
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if code is None and match:
            code, marker, language = [], match.group(1), match.group(2)
        elif code is not None and match and match.group(1).startswith(marker) and not match.group(2):
            out.append(_pre(code, language))
            code = None
        elif code is not None:
            code.append(line)
        else:
            out.append(_inline(line))
    if code is not None:
        out.append(_pre(code, language))
    return "\n".join(out)


def _pre(lines: list[str], language: str) -> str:
    body = html.escape("\n".join(lines), quote=False)
    if language:
        return f'<pre><code class="language-{html.escape(language)}">{body}</code></pre>'
    return f"<pre>{body}</pre>"


def _inline(line: str) -> str:
    parts = _INLINE_CODE.split(line)
    rendered = []
    for i, part in enumerate(parts):
        if i % 2:
            rendered.append(f"<code>{html.escape(part, quote=False)}</code>")
        else:
            rendered.append(_BOLD.sub(r"<b>\1</b>", html.escape(part, quote=False)))
    return "".join(rendered)
