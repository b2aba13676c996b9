"""Review links over real HTTP (aiohttp on 127.0.0.1:0): render, feedback, approval; bad links change nothing."""

from __future__ import annotations

import asyncio
import logging
import re
import tomllib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

import runwield_bridge
from runwield_bridge.app import App
from runwield_bridge.config import WebConfig, load_settings
from runwield_bridge.core.reviews import Feedback, LineComment, ReviewHub, static_link_base
from runwield_bridge.core.records import PlanRecord
from runwield_bridge.web.plan_blocks import block_html, inline, parse_blocks
from runwield_bridge.web.review import TEMPLATES, add_review_routes
from runwield_bridge.web.server import WebServer
from waiting import PATIENCE

PLAN = """# Add a <script> README

Why: *people* keep **asking** about `make test`.

1. Write `README.md`
2. Link it from the docs
   and the site
- a bullet <b>raw</b>

```
rm -rf / && echo "<x>"
```

<script>alert(1)</script>

See [the docs](https://example.com/a?b=1&c=2), not [this](javascript:alert(1)).
"""


class Clock:
    """A settable clock for expiry."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Setup:
    app: App
    hub: ReviewHub
    server: WebServer
    plan: PlanRecord
    session_id: str
    clock: Clock
    http: aiohttp.ClientSession

    async def states(self) -> tuple[str, list[str]]:
        """The Plan's state and its reviews' states, newest first."""
        plan = await self.app.plans.get(self.plan.id)
        return plan.state, [r.state for r in await self.app.store.reviews.reviews_for_plan(self.plan.id)]


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    (tmp_path / "wld.toml").write_text("")
    app = await App.start(load_settings(tmp_path / "wld.toml"))
    session = await app.session_host.create(str(tmp_path))
    plan = await app.plans.write(cwd=tmp_path, title="Add a <script> README", body=PLAN, session_id=session.id)
    server = WebServer(WebConfig(listen="127.0.0.1:0"))
    clock = Clock()
    hub = ReviewHub(app.store, app.plans, static_link_base("http://unused"), ttl=3600, now=clock)
    add_review_routes(server, hub)
    await server.start()
    hub.link_base = static_link_base(server.base_url)  # the port is known once bound
    async with aiohttp.ClientSession() as http:
        yield Setup(app, hub, server, plan, session.id, clock, http)
    await server.stop()
    await app.close()


async def post(setup: Setup, url: str, **fields: str) -> tuple[int, str]:
    async with setup.http.post(url, data=fields) as response:
        return response.status, await response.text()


async def get(setup: Setup, url: str) -> tuple[int, str]:
    async with setup.http.get(url) as response:
        return response.status, await response.text()


async def test_the_page_renders_the_plan_safely_with_a_comment_box_per_block(setup: Setup) -> None:
    link = await setup.hub.start(setup.plan.id, setup.session_id)
    assert link.url.startswith(setup.server.base_url + "/review/")
    async with setup.http.get(link.url) as response:
        assert response.status == 200
        assert response.headers["Referrer-Policy"] == "no-referrer"
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        assert "set-cookie" not in {k.lower() for k in response.headers}
        page = await response.text()
    assert "<script>" not in page and "<b>raw</b>" not in page
    assert "<h1>Add a &lt;script&gt; README</h1>" in page
    assert "<em>people</em>" in page and "<strong>asking</strong>" in page and "<code>make test</code>" in page
    assert '<ol start="2"><li>Link it from the docs\nand the site</li></ol>' in page
    assert "rm -rf / &amp;&amp; echo &quot;&lt;x&gt;&quot;" in page
    assert "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>" in page, "raw HTML in a Plan is shown as text"
    assert '<a href="https://example.com/a?b=1&amp;c=2">the docs</a>' in page and "javascript:alert(1))" in page
    assert 'href="javascript' not in page
    assert 'name="line-5"' in page and 'name="general"' in page and 'name="revision" value="1"' in page
    assert await setup.states() == ("in_review", ["open"])


async def test_feedback_reaches_the_waiting_session_and_closes_the_link(setup: Setup) -> None:
    link = await setup.hub.start(setup.plan.id, setup.session_id)
    waiter = asyncio.create_task(setup.hub.wait(link.review_id))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    status, page = await post(setup, link.url, revision="1", action="feedback", general=" Also a CONTRIBUTING file. ", **{"line-5": "README.rst?"})
    assert status == 200 and "Feedback sent" in page
    outcome = await asyncio.wait_for(waiter, PATIENCE)
    assert outcome.state == "changes_requested" and not outcome.approved
    assert outcome.feedback == Feedback("Also a CONTRIBUTING file.", (LineComment(5, "1. Write `README.md`", "README.rst?"),))
    assert outcome.feedback.as_text() == "Line 5 (1. Write `README.md`): README.rst?\nAlso a CONTRIBUTING file."
    assert await setup.states() == ("changes_requested", ["changes_requested"])

    status, page = await post(setup, link.url, revision="1", action="approve")
    assert status == 409 and "Review closed" in page and "Nothing was changed" in page
    assert await setup.states() == ("changes_requested", ["changes_requested"])


async def test_approval_resolves_the_waiter_and_a_restarted_waiter_still_gets_it(setup: Setup) -> None:
    link = await setup.hub.start(setup.plan.id, setup.session_id)
    waiter = asyncio.create_task(setup.hub.wait(link.review_id))
    await asyncio.sleep(0.05)
    status, page = await post(setup, link.url, revision="1", action="approve")
    assert status == 200 and "is approved" in page
    outcome = await asyncio.wait_for(waiter, PATIENCE)
    assert outcome.approved and outcome.feedback.empty
    plan = await setup.app.plans.get(setup.plan.id)
    assert (plan.state, plan.approved_revision) == ("approved", 1)
    fresh = ReviewHub(setup.app.store, setup.app.plans, static_link_base("http://elsewhere"))  # as after a restart
    assert await fresh.wait(link.review_id) == outcome


async def test_a_decision_made_through_another_hub_on_the_store_reaches_the_waiter(setup: Setup) -> None:
    link = await setup.hub.start(setup.plan.id, setup.session_id)
    other = ReviewHub(setup.app.store, setup.app.plans, static_link_base(""), now=setup.clock)
    waiter = asyncio.create_task(setup.hub.wait(link.review_id, poll=0.05))
    await other.approve(link.url.rsplit("/", 1)[1])
    assert (await asyncio.wait_for(waiter, PATIENCE)).approved


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"action": "feedback"}, "Write some feedback"),
        ({"action": "feedback", "line-4": "no block starts here"}, "There is no line 4"),
        ({"action": "feedback", "line-x": "bad"}, "There is no line x"),
        ({"action": "publish", "general": "kept"}, "Choose Send feedback or Approve"),
        ({"revision": "2", "action": "approve"}, "another revision"),
    ],
)
async def test_bad_posts_show_the_form_again_and_change_nothing(setup: Setup, fields: dict[str, str], message: str) -> None:
    link = await setup.hub.start(setup.plan.id, setup.session_id)
    status, page = await post(setup, link.url, **{"revision": "1", **fields})
    assert status == 400 and message in page and "Nothing was changed" in page
    if fields.get("general"):
        assert ">kept</textarea>" in page, "what the reviewer typed is kept"
    assert await setup.states() == ("in_review", ["open"])


async def test_what_the_reviewer_typed_comes_back_escaped(setup: Setup) -> None:
    link = await setup.hub.start(setup.plan.id, setup.session_id)
    typed = '</textarea><script>alert("x")</script>'
    status, page = await post(setup, link.url, revision="1", action="publish", general=typed, **{"line-5": typed})
    assert status == 400 and "<script>" not in page
    assert page.count("&lt;/textarea&gt;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</textarea>") == 2
    assert '<div class="block" id="L5"><ol start="1"><li>Write <code>README.md</code></li></ol><details open>' in page


@pytest.mark.parametrize(
    "body, content_type",
    [
        (b"revision=1&action=approve&general=\xff", "application/x-www-form-urlencoded"),
        (b"revision=1&action=approve", "application/x-www-form-urlencoded; charset=no-such-charset"),
        (b"--x\r\nnot a header", "multipart/form-data; boundary=x"),
        (b"revision=1", "multipart/form-data"),
        (b'{"revision": "1", "action": "approve"}', "application/json"),
        (b"", "application/x-www-form-urlencoded"),
    ],
)
async def test_a_body_that_is_not_a_form_gets_400_without_a_traceback_and_changes_nothing(
    setup: Setup, body: bytes, content_type: str, caplog: pytest.LogCaptureFixture
) -> None:
    link = await setup.hub.start(setup.plan.id, setup.session_id)
    async with setup.http.post(link.url, data=body, headers={"Content-Type": content_type}) as response:
        assert response.status == 400 and "Nothing was changed" in await response.text()
    assert await setup.states() == ("in_review", ["open"])
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], "no traceback in the log"


async def test_wrong_expired_and_superseded_links_show_a_clear_page_and_change_nothing(setup: Setup) -> None:
    first = await setup.hub.start(setup.plan.id, setup.session_id)
    second = await setup.hub.start(setup.plan.id, setup.session_id)
    base = setup.server.base_url

    status, page = await get(setup, f"{base}/review/not-a-real-token")
    assert status == 404 and "Link not valid" in page
    status, page = await post(setup, f"{base}/review/{first.url.rsplit('/', 1)[1]}x", revision="1", action="approve")
    assert status == 404
    status, page = await post(setup, first.url, revision="1", action="approve")
    assert status == 410 and "A newer review link replaced this one" in page
    assert await setup.states() == ("in_review", ["open", "superseded"])

    await setup.app.plans.revise(setup.plan.id, "# Add a README\n\nShorter.")
    status, page = await post(setup, second.url, revision="1", action="approve")
    assert status == 410 and "has been revised since (now revision 2)" in page
    assert await setup.states() == ("draft", ["superseded", "superseded"])
    assert (await setup.hub.wait(second.review_id)).state == "superseded"

    third = await setup.hub.start(setup.plan.id, setup.session_id)
    setup.clock.now += 3601
    status, page = await post(setup, third.url, revision="2", action="approve")
    assert status == 410 and "Link expired" in page and "Nothing was changed" in page
    assert (await setup.app.plans.get(setup.plan.id)).approved_revision is None
    assert (await setup.hub.wait(third.review_id)).state == "expired"
    assert await setup.states() == ("draft", ["expired", "superseded", "superseded"])


async def test_the_token_is_unguessable_stored_hashed_and_the_live_link_is_reused(setup: Setup) -> None:
    link = await setup.hub.start(setup.plan.id, setup.session_id)
    token = link.url.rsplit("/", 1)[1]
    assert len(token) >= 43 and re.fullmatch(r"[A-Za-z0-9_-]+", token)
    [review] = await setup.app.store.reviews.reviews_for_plan(setup.plan.id)
    assert token not in review.token_hash and len(review.token_hash) == 64
    assert await setup.hub.live_link(setup.plan.id) == link
    setup.clock.now += 3601
    assert await setup.hub.live_link(setup.plan.id) is None


def test_the_markdown_renderer_escapes_everything_it_does_not_mark_up() -> None:
    assert inline('<img src=x onerror="a()"> *x* `<b>`') == '&lt;img src=x onerror=&quot;a()&quot;&gt; <em>x</em> <code>&lt;b&gt;</code>'
    assert inline("2 * 3 * 4 and snake_case_words") == "2 * 3 * 4 and snake_case_words"
    kinds = [(b.kind, b.line) for b in parse_blocks(PLAN)]
    assert kinds == [("heading", 1), ("paragraph", 3), ("item", 5), ("item", 6), ("item", 8), ("code", 10), ("paragraph", 14), ("paragraph", 16)]


def test_review_blocks_find_fences_where_commonmark_does() -> None:
    text = "Intro\n\n````md\n```py\nx = 1\n```\n````\n\n- ```sh\n  make <all>\n  ```\n- next\n  1. nested\n\n  more"
    blocks = parse_blocks(text)
    assert [(b.kind, b.line) for b in blocks] == [("paragraph", 1), ("code", 3), ("item", 9), ("item", 12), ("item", 13), ("paragraph", 15)]
    html = [block_html(b) for b in blocks]
    assert html[1] == "<pre><code>```py\nx = 1\n```</code></pre>", "three backticks inside four are code"
    assert html[2] == "<ul><li><pre><code>make &lt;all&gt;</code></pre></li></ul>", "a list item can hold a fence"
    assert html[4:] == ['<ol start="1" style="margin-left:1.5em"><li>nested</li></ol>', '<p style="margin-left:1.5em">more</p>']


def test_every_template_is_shipped_as_package_data() -> None:
    package = Path(runwield_bridge.__file__).parent
    patterns = tomllib.loads((package.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["runwield_bridge"]
    shipped = {path for pattern in patterns for path in package.glob(pattern)}
    templates = {package / "web" / "templates" / name for name in TEMPLATES.list_templates()}
    assert {"page.html", "review.html", "notice.html", "refusal.html"} <= {t.name for t in templates}
    assert templates <= shipped
    assert all(any(package.glob(pattern)) for pattern in patterns), "no pattern names a folder that does not exist"
