"""The Workspace page in headless Chromium (Debian's, through Playwright), on a real Session Host over ACP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from acp_session import INIT, WLD, say
from acp_wire import WireClient
from tests.bridge_kit import asking_agent
from playwright.async_api import Browser, Page, WebSocket, WebSocketRoute, async_playwright, expect
from test_review_browser import CHROMIUM_ARGS, chromium
from waiting import PATIENCE, release, until
from workspace_kit import Workspace, cut_connections, screenshot, workspace

pytestmark = pytest.mark.asyncio(loop_scope="module")
WAIT = PATIENCE * 1000  # Playwright counts milliseconds
expect.set_options(timeout=WAIT)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    """One Chromium for the module; each test gets its own page."""
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        yield launched
        await launched.close()


async def open_page(browser: Browser, ws: Workspace, **query: str | int) -> Page:
    return await ws.open_page(browser, WAIT, **query)


async def start_session(page: Page, cwd: Path) -> None:
    await page.get_by_label("Project directory").fill(str(cwd))
    await page.get_by_role("button", name="New Session", exact=True).click()
    await expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled()  # a Session is open


async def send(page: Page, text: str) -> None:
    """Type a message and press Enter, as a person would, once the turn before has ended (Stop is gone): a message
    typed during a turn joins it or waits for the next prompt, and a busy machine can end a turn well after its last
    words)."""
    await expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    await type_during_turn(page, text)


async def type_during_turn(page: Page, text: str) -> None:
    box = page.get_by_label("Message", exact=True)
    await expect(box).to_be_enabled()
    await box.fill(text)
    await box.press("Enter")


def entries(page: Page, kind: str, text: str):
    return page.locator(f"#entries .entry.{kind}", has_text=text)


async def slow_turn(page: Page, text: str) -> None:
    """Send ``text`` (with the scripted model's `slow` in it) and wait until its reply has begun."""
    await send(page, text)
    await expect(page.locator("#entries .agent.live", has_text=f"You said: {text}")).to_have_count(1)


async def prompts_of(ws: Workspace, page: Page) -> list[str]:
    """What the Session shown saved as the person's messages (prompted or steered), in order."""
    session_id = await page.evaluate("document.querySelector('[aria-current=true]').dataset.session")
    return [e.text for e in await ws.app.session_host.history(session_id) if type(e).__name__ == "UserMessage"]


async def test_a_conversation_started_in_the_browser_is_continued_over_stdio(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path) as ws:
        page = await open_page(browser, ws)
        await start_session(page, tmp_path)
        box = page.get_by_label("Message")
        await box.type("first line")
        await box.press("Shift+Enter")
        await box.type("second line")
        assert await box.input_value() == "first line\nsecond line", "Shift+Enter is a new line, not a send"
        await box.press("Enter")
        await expect(entries(page, "agent", "You said: first line")).to_have_count(1)
        await expect(page.locator("#session-title")).to_have_text("first line")
        await expect(page.get_by_role("button", name="first line")).to_be_visible()  # the sidebar, under its Project

        await page.get_by_label("Reasoning").select_option("high")
        await expect(page.get_by_label("Reasoning")).to_be_enabled()  # disabled while the change is on its way
        await expect(page.get_by_label("Reasoning")).to_have_value("high")
        await send(page, "and now?")
        await expect(entries(page, "thought", "Thinking (high) about: and now?")).to_have_count(1)

        await page.get_by_role("button", name="Commands").click()
        await page.get_by_role("menuitem", name="/help").click()
        assert (await box.input_value()).startswith("/help")
        await box.fill("")

        session_id = await page.evaluate("document.querySelector('[aria-current=true]').dataset.session")
        async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:
            await client.call("initialize", INIT)
            await client.call("session/resume", {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []})
            assert (await say(client, session_id, "from the terminal"))["result"] == {"stopReason": "end_turn"}
        await expect(entries(page, "agent", "You said: from the terminal")).to_have_count(1)
        await expect(entries(page, "user", "from the terminal")).to_have_count(1)
        await expect(entries(page, "user", "and now?")).to_have_count(1)
        await expect(page.locator("#entries .live")).to_have_count(0)
        await screenshot(page, "conversation")

        older = await open_page(browser, ws, limit=3)
        await older.get_by_role("button", name="first line").click()
        await expect(entries(older, "agent", "You said: from the terminal")).to_have_count(1)
        await expect(entries(older, "user", "first line")).to_have_count(0)
        await older.locator("#conversation").evaluate("c => { c.scrollTop = 0; c.dispatchEvent(new Event('scroll')); }")
        await expect(entries(older, "user", "and now?")).to_have_count(1)
        await older.get_by_role("button", name="Show older messages").click()
        await expect(entries(older, "user", "first line")).to_have_count(1)
        await expect(older.get_by_role("button", name="Show older messages")).to_be_hidden()
        assert await older.locator("#entries .entry").count() == await page.locator("#entries .entry").count()

        await older.set_viewport_size({"width": 390, "height": 844})
        await expect(older.get_by_label("Projects and Sessions")).to_be_hidden()
        await older.get_by_role("button", name="Sessions").click()
        await expect(older.get_by_label("Projects and Sessions")).to_be_visible()
        await older.get_by_role("button", name="first line").click()
        await expect(older.get_by_label("Projects and Sessions")).to_be_hidden()
        await screenshot(older, "phone")


async def test_a_question_is_answered_in_a_browser_form(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path) as ws:
        page = await open_page(browser, ws)
        await start_session(page, tmp_path)
        await send(page, "interview me")
        form = page.locator("form.question")
        await expect(form).to_contain_text("Which language should the example use?")
        await expect(form.get_by_label("Rust")).not_to_be_checked()  # nothing is chosen for the person
        await form.get_by_label("Other", exact=True).check()
        await form.get_by_label("Other answer").fill("Zig")
        await screenshot(page, "question")
        await type_during_turn(page, "by the way")  # the form takes the answer; this waits for the next prompt
        await expect(page.locator("#queued .entry", has_text="by the way")).to_have_count(1)
        await form.get_by_role("button", name="Answer").click()
        await expect(form).to_contain_text("Should it include tests?")
        await form.get_by_label("Yes").check()
        await form.get_by_label("Yes").press("Enter")
        await expect(form).to_contain_text("Anything else I should know?")
        await form.get_by_label("Answer (required)").fill("only on CI")
        await form.get_by_role("button", name="Answer").click()
        await expect(entries(page, "agent", "Your answers, in order: 1. Zig; 2. Yes; 3. only on CI.")).to_have_count(1)
        await expect(form).to_have_count(0)
        await expect(page.get_by_text("1 queued message sent.")).to_be_visible()
        await expect(entries(page, "agent", "You said: by the way")).to_have_count(1)


async def test_a_plan_is_reviewed_and_approved_from_the_page(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path) as ws:
        page = await open_page(browser, ws)
        await start_session(page, tmp_path)
        await send(page, "make a plan to add a README")
        await expect(entries(page, "agent", "Saved Plan")).not_to_have_count(0)
        await send(page, "/plan-review")
        review = page.get_by_role("link", name="Review the Plan")
        await expect(review).to_have_count(1)
        await expect(page.get_by_role("button", name="Stop")).to_be_hidden()  # the turn has ended: the
        # page redraws its entries from the saved history then, and a click on the link being redrawn opens nothing
        await screenshot(page, "plan")
        async with page.expect_popup() as opened:
            await review.click()
        reviewer = await opened.value
        await expect(reviewer.locator("h1")).to_have_text("Add a README")
        await reviewer.get_by_role("button", name="Approve revision 1").click()
        await expect(reviewer.get_by_text("is approved")).to_be_visible()

        form = page.locator("form.question")  # the Session asks, in a form, whether to execute now
        await expect(form).to_contain_text("Execute “Add a README” now?")
        await form.get_by_label("Not now").check()
        await form.get_by_role("button", name="Answer").click()
        await expect(form).to_have_count(0)
        [plan] = await ws.app.plans.for_project(tmp_path)
        assert (plan.state, plan.approved_revision) == ("approved", 1)


async def test_a_connection_cut_mid_turn_is_rebuilt_without_duplicates_or_replays(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path) as ws:
        page = await open_page(browser, ws)
        await start_session(page, tmp_path)
        await slow_turn(page, "slow count")
        await cut_connections(page)
        await expect(page.get_by_text("The connection dropped during this turn")).to_be_visible()
        await expect(page.locator("#connection")).to_have_text("Connected")
        # the turn goes on without this connection; the page follows what the Session saves
        await expect(entries(page, "agent", "You said: slow count 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15")).to_have_count(1)
        await expect(entries(page, "user", "slow count")).to_have_count(1)
        await expect(entries(page, "agent", "You said: slow count")).to_have_count(1)
        await expect(page.locator("#entries .live")).to_have_count(0)
        assert await page.get_by_label("Message").input_value() == "", "nothing is put back to be sent again"
        assert await prompts_of(ws, page) == ["slow count"], "the prompt reached the Session once"



async def test_the_same_prompt_from_the_browser_and_from_stdio_has_one_effect(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path) as ws:
        page = await open_page(browser, ws)
        sent: list[dict] = []  # what the page puts on its WebSocket, and what comes back, as Chromium sees it
        received: list[dict] = []

        def watch(socket: WebSocket) -> None:
            socket.on("framesent", lambda payload: sent.append(json.loads(payload)))
            socket.on("framereceived", lambda payload: received.append(json.loads(payload)))

        page.on("websocket", watch)
        await page.reload()  # its socket now opens under watch
        await expect(page.locator("#connection")).to_have_text("Connected")
        await start_session(page, tmp_path)
        await send(page, "only once")
        await expect(entries(page, "agent", "You said: only once")).to_have_count(1)
        await expect(page.locator("#entries .live")).to_have_count(0)

        [prompt] = [m for m in sent if m.get("method") == "session/prompt"]
        request_id = prompt["params"]["_meta"]["runwield"]["requestId"]
        assert isinstance(request_id, str) and request_id, "the page sends a requestId with its prompt"
        [answer] = [m["result"] for m in received if m.get("id") == prompt["id"] and "result" in m]

        async with WireClient.spawn([WLD, "acp"], cwd=tmp_path) as client:  # the same request, from an IDE on stdio
            await client.call("initialize", INIT)
            assert await client.call("session/prompt", prompt["params"]) == answer, "stdio gets the recorded answer"
        updates = [n["params"]["update"] for n in client.notifications if n.get("method") == "session/update"]
        assert not [u for u in updates if u.get("sessionUpdate") == "agent_message_chunk"], "the turn did not run again"

        assert await prompts_of(ws, page) == ["only once"], "the prompt reached the Session once"
        await page.reload()  # and the page, reading the Session afresh, shows one turn
        await page.get_by_role("button", name="only once").click()
        await expect(entries(page, "agent", "You said: only once")).to_have_count(1)
        await expect(entries(page, "user", "only once")).to_have_count(1)


async def test_a_message_typed_during_a_turn_joins_it(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path) as ws:
        page = await open_page(browser, ws)
        await start_session(page, tmp_path)
        await slow_turn(page, "slow start")
        await type_during_turn(page, "also this")  # the box stays enabled during the turn
        steered = entries(page, "user", "also this")
        await expect(steered).to_contain_text("↪ added to the running turn")
        await expect(entries(page, "agent", "You said: also this")).to_have_count(1)
        await expect(page.get_by_role("button", name="Stop")).to_be_hidden()
        await expect(page.locator("#entries .live")).to_have_count(0)
        await expect(steered).to_contain_text("↪ added to the running turn")  # the saved copy keeps its mark
        assert " 15" not in await page.locator("#entries").inner_text(), "the steered message cut the slow reply short"
        assert await prompts_of(ws, page) == ["slow start", "also this"]
        await expect(page.locator("#queued .entry")).to_have_count(0)


REFUSED = {"outcome": "promptRequired", "reason": "noRunningTurn"}  # as a turn that ends meanwhile answers
INJECTED = {"outcome": "injected"}


async def answer_steering(page: Page, asked: list[dict], answers: list[dict]) -> None:
    """Answer the page's `_session/steering` requests with ``answers``, in turn, before the server sees them (noting
    their params in ``asked``); every other frame goes through."""

    def route(socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()

        def from_page(frame: str | bytes) -> None:
            message = json.loads(frame)
            if message.get("method") != "_session/steering":
                return server.send(frame)
            asked.append(message["params"])
            socket.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answers.pop(0)}))

        socket.on_message(from_page)

    await page.route_web_socket("**/acp", route)
    await page.reload()
    await expect(page.locator("#connection")).to_have_text("Connected")


async def test_messages_a_turn_cannot_take_are_queued_sent_as_one_prompt_and_never_lost(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path) as ws:
        page = await open_page(browser, ws)
        asked: list[dict] = []
        answers = [REFUSED]
        await answer_steering(page, asked, answers)
        await start_session(page, tmp_path)
        await slow_turn(page, "slow start")
        for text in ("first follow-up", "not this one", "second follow-up"):
            await type_during_turn(page, text)
        queued = page.locator("#queued .entry")
        await expect(queued).to_have_count(3)
        await expect(queued.first).to_contain_text("Queued")
        await queued.filter(has_text="not this one").get_by_role("button", name="Remove").click()
        await expect(queued).to_have_count(2)
        await screenshot(page, "queued")
        assert [p["prompt"] for p in asked] == [[{"type": "text", "text": "first follow-up"}]], "the rest queue behind it"

        await expect(page.get_by_text("2 queued messages sent as one prompt.")).to_be_visible()
        await expect(entries(page, "agent", "You said: slow start 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15")).to_have_count(1)
        await expect(entries(page, "agent", "You said: first follow-up second follow-up")).to_have_count(1)
        await expect(queued).to_have_count(0)
        await expect(page.get_by_role("button", name="Stop")).to_be_hidden()
        assert await prompts_of(ws, page) == ["slow start", "first follow-up\nsecond follow-up"]

        box = page.get_by_label("Message", exact=True)
        joining = page.locator("#joining .entry")
        answers += [INJECTED, REFUSED]  # the first is taken by the turn (the server never sees it), the second queued
        await slow_turn(page, "slow again")
        await type_during_turn(page, "taken, never read")
        await expect(joining).to_contain_text("↪ added to the running turn")
        await type_during_turn(page, "after the stop")
        await expect(queued).to_have_count(1)
        await page.get_by_role("button", name="Stop").click()  # the turn stops before it reads either: both come back
        await expect(box).to_have_value("taken, never read\n\nafter the stop")
        await expect(page.get_by_text("1 message did not reach the Agent")).to_have_count(2)
        await expect(queued).to_have_count(0)
        await expect(joining).to_have_count(0)
        assert answers == []
        await box.fill("")

        answers.append(REFUSED)
        await send(page, "slow once more")  # a reload with a message queued: it comes back in the box, not sent
        await type_during_turn(page, "after the reload")
        await expect(queued).to_have_count(1)
        await page.reload()
        await expect(page.locator("#connection")).to_have_text("Connected")
        await page.get_by_role("button", name="slow start").click()
        await expect(page.get_by_text("1 message did not reach the Agent")).to_be_visible()
        await expect(box).to_have_value("after the reload")
        await expect(queued).to_have_count(0)
        assert [p for p in await prompts_of(ws, page) if p.startswith("after")] == [], "nothing queued was sent on its own"


async def test_escape_stops_the_running_turn(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path) as ws:
        page = await open_page(browser, ws)
        await start_session(page, tmp_path)
        await slow_turn(page, "slow please")
        stop = page.get_by_role("button", name="Stop")
        await expect(stop).to_be_visible()
        await page.get_by_label("Message").press("Escape")
        await expect(stop).to_be_hidden()  # the turn settled as cancelled, long before its fifteen seconds
        await expect(page.get_by_label("Message")).to_be_enabled()
        assert " 15" not in await page.locator("#entries").inner_text()

async def test_the_page_says_what_a_server_without_the_workspace_extension_lacks(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path) as ws:
        page = await ws.open_page(browser, WAIT, without_workspace=True)
        banner = page.get_by_role("alert")
        await expect(banner).to_contain_text("This server offers no bounded history")
        await expect(banner).to_contain_text("does not check request ids and revisions")


async def test_the_page_and_its_socket_need_the_login_and_the_origin(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path) as ws:
        stranger = await browser.new_page()
        stranger.set_default_timeout(WAIT)
        response = await stranger.goto(ws.url())
        assert response is not None and response.status == 401
        await expect(stranger.locator("body")).to_contain_text("Open the link that `wld workspace` prints")

        page = await open_page(browser, ws)  # logged in: the page connects
        elsewhere = page.context  # the same browser, cookie and all, on a page of another origin
        other = await elsewhere.new_page()
        await other.route("http://elsewhere.test/**", lambda route: route.fulfill(body="<p>another site</p>", content_type="text/html"))
        await other.goto("http://elsewhere.test/")
        opening = other.evaluate(
            """url => new Promise(done => { const s = new WebSocket(url); s.onopen = () => done("open"); s.onclose = () => done("refused"); })""",
            ws.base_url.replace("http", "ws", 1) + "/acp",
        )
        assert await asyncio.wait_for(opening, PATIENCE) == "refused"
        await expect(page.locator("#connection")).to_have_text("Connected")


async def test_spawn_starts_an_agent_on_a_task_beside_this_session_or_opens_it_here(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path, {"agents": {"echo-agent": asking_agent(tmp_path)}}) as ws:
        page = await open_page(browser, ws, poll=600000)  # nothing but what the server pushes updates the page
        await start_session(page, tmp_path)
        await send(page, "hello")
        await expect(page.locator("#session-title")).to_have_text("hello")

        await send(page, "/spawn echo-agent --thread say hi")
        line = page.locator("#entries .entry.spawned")
        await expect(line).to_contain_text("echo-agent session ses_")
        await expect(line).to_contain_text("started beside this one: say hi")
        await expect(page.locator("#projects").get_by_role("button", name="say hi")).to_be_visible()  # listed beside it
        await expect(page.locator("#entries .live")).to_have_count(0)  # the turn settled: the saved line keeps its button
        await expect(page.locator("#session-title")).to_have_text("hello")  # this conversation stays open
        await screenshot(page, "spawn")
        await line.get_by_role("button", name="Open the Session").click()
        await expect(page.locator("#session-title")).to_have_text("say hi")
        await expect(entries(page, "user", "say hi")).to_have_count(1)
        await expect(entries(page, "agent", "echo: say hi")).to_have_count(1)

        await page.locator("#projects").get_by_role("button", name="hello").click()
        await send(page, "/spawn echo-agent --here hold this")
        await expect(page.locator("#session-title")).to_have_text("hold this")  # opened in the page
        await expect(entries(page, "user", "hold this")).to_have_count(1)
        release(tmp_path, "now")
        await expect(entries(page, "agent", "released: now")).to_have_count(1)
        await expect(page.locator("#entries .live")).to_have_count(0)
        titles = await page.locator("#projects .session").all_inner_texts()
        assert sorted(titles) == ["hello", "hold this", "say hi"]


async def test_a_question_a_spawned_task_asked_before_anyone_opened_its_session_is_a_form_when_it_is_opened(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path, {"agents": {"echo-agent": asking_agent(tmp_path)}}) as ws:
        page = await open_page(browser, ws)
        await start_session(page, tmp_path)
        await send(page, "/spawn echo-agent --thread choose a colour")
        opener = page.locator("#entries .entry.spawned").get_by_role("button", name="Open the Session")
        new = await opener.get_attribute("data-spawned")
        assert new is not None
        await until(lambda: (live := ws.app.session_host.registry.find(new)) is not None and live.parked, "the task's question, asked of nobody")
        await opener.click()
        form = page.locator("form.question")
        await expect(form).to_contain_text("Pick a colour")  # asked as this page asks everything: a form
        await form.get_by_label("green").check()
        await form.get_by_role("button", name="Answer").click()
        await expect(entries(page, "agent", 'form: accept {"colour": "green"}')).to_have_count(1)
        await expect(form).to_have_count(0)


async def test_a_spawn_of_an_unknown_agent_is_refused_in_the_page_and_starts_nothing(browser: Browser, tmp_path: Path) -> None:
    async with workspace(tmp_path, {"agents": {"echo-agent": asking_agent(tmp_path)}}) as ws:
        page = await open_page(browser, ws)
        await start_session(page, tmp_path)
        await send(page, "/spawn codex fix the tests")
        refusal = page.locator("#entries .entry.notice.error")
        await expect(refusal).to_contain_text("There is no agent named 'codex'. Configured agents: runwield, echo-agent. Nothing was started.")
        await send(page, "/spawn echo-agent --thread")
        await expect(refusal.nth(1)).to_contain_text("Say what echo-agent should do.")
        await expect(page.locator("#entries .entry.spawned")).to_have_count(0)
        assert len((await ws.app.session_host.store.sessions.list_sessions())) == 1, "no Session was created"
        assert not (tmp_path / "agent.log").exists(), "the agent was never started"
