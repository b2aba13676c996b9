"""Agent Markdown as Telegram HTML and Slack mrkdwn: code fences are found where CommonMark finds them."""

from __future__ import annotations

from runwield_bridge.channels.slack.mrkdwn import to_mrkdwn
from runwield_bridge.channels.telegram.html import to_html

STEPS = "1. Run:\n\n    ```sh\n    make **all** <x>\n    ```\n2. Done **now**"


def test_a_fence_inside_a_list_item_is_code_on_telegram_and_slack() -> None:
    assert to_html(STEPS) == '1. Run:\n\n<pre><code class="language-sh">make **all** &lt;x&gt;</code></pre>\n2. Done <b>now</b>'
    assert to_mrkdwn(STEPS) == "1. Run:\n\n```\nmake **all** &lt;x&gt;\n```\n2. Done *now*"


def test_a_list_item_that_opens_a_fence_keeps_its_bullet_and_the_next_item() -> None:
    text = "- ```py\n  x = 1\n  ```\n- next **step**"
    assert to_html(text) == '- <pre><code class="language-py">x = 1</code></pre>\n- next <b>step</b>'
    assert to_mrkdwn(text) == "- ```\nx = 1\n```\n- next *step*"


def test_a_fence_in_a_quote_loses_the_quote_marks_inside_the_code() -> None:
    assert to_html("> ```js\n> let a = 1\n> ```\n> said **he**") == '&gt; <pre><code class="language-js">let a = 1</code></pre>\n&gt; said <b>he</b>'


def test_a_longer_fence_or_a_tilde_fence_holds_shorter_markers_as_code() -> None:
    text = "Use:\n````md\n```py\nx = **1**\n```\n````\n~~~\n```\n~~~\nThen **go**."
    assert to_html(text) == (
        'Use:\n<pre><code class="language-md">```py\nx = **1**\n```</code></pre>\n<pre>```</pre>\nThen <b>go</b>.'
    )


def test_a_fence_still_open_mid_stream_is_closed_at_the_end() -> None:
    assert to_html("Here:\n```py\nx = 1 < 2") == 'Here:\n<pre><code class="language-py">x = 1 &lt; 2</code></pre>'
    assert to_mrkdwn("Here:\n```py\nx = 1 < 2") == "Here:\n```\nx = 1 &lt; 2\n```"


def test_inline_code_is_found_as_commonmark_finds_it() -> None:
    assert to_html("Run ``a `b` c`` and **go**, not \\`this`") == "Run <code>a `b` c</code> and <b>go</b>, not \\`this`"
    assert to_mrkdwn("Run `x < y` and **go**") == "Run `x &lt; y` and *go*"
