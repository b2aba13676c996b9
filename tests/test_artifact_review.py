"""Artifact Review over `wld acp`: the agent's `request_artifact_review` shows a link; the page, served by the same
process over real HTTP, shows the file and takes one answer, which answers the tool call."""

from __future__ import annotations

import asyncio
import struct
import zlib
from pathlib import Path
from typing import Any

import aiohttp
from acp_session import FORMS_INIT, say, since, text_since, wld_session
from acp_wire import WireClient
from test_runtime_acp import mcp_config
from test_secrets import stored_bytes
from waiting import PATIENCE

CONFIG = '[web]\nlisten = "127.0.0.1:0"\n'
REPORT = """# Weekly report

The build is **green**; see [the log](log.txt).

<script>alert("owned")</script>

![the chart](charts/week.png)
"""


def png(width: int = 2, height: int = 1) -> bytes:
    """A small valid PNG image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


async def review_requested(client: WireClient, sid: str, prompt: str) -> tuple[asyncio.Task[dict[str, Any]], dict[str, Any], int]:
    """Send ``prompt`` (the turn waits for the review); the link's message once it is shown, and where the turn began."""
    start = len(client.messages)
    turn = asyncio.create_task(say(client, sid, prompt))

    def shown(_: Any) -> bool:
        return any("artifactReview" in (u.get("_meta") or {}).get("runwield", {}) for u in since(client, start, sid))

    await client.wait_message(shown)
    [link] = [u for u in since(client, start, sid) if "artifactReview" in (u.get("_meta") or {}).get("runwield", {})]
    return turn, link, start


async def fetch(http: aiohttp.ClientSession, method: str, url: str, **data: str) -> tuple[int, str, aiohttp.typedefs.LooseHeaders]:
    async with http.request(method, url, data=data or None) as response:
        return response.status, await response.text(), response.headers


async def test_an_artifact_review_shows_the_markdown_safely_and_answers_its_tool_with_the_feedback(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text(REPORT)
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts" / "week.png").write_bytes(png())
    (tmp_path / "secret.txt").write_text("not for the page")
    async with wld_session(tmp_path, config=CONFIG) as (client, sid), aiohttp.ClientSession() as http:
        turn, link, start = await review_requested(client, sid, "review the file report.md asking Is the summary right?")
        meta = link["_meta"]["runwield"]["artifactReview"]
        url = meta["url"]
        assert meta["path"] == "report.md" and meta["label"] == "Review the file"
        assert link["content"]["text"].startswith(f"Review report.md in your browser: {url}\nIs the summary right?")
        assert not turn.done(), "the tool waits for the answer"

        status, html, headers = await fetch(http, "GET", url)
        assert status == 200
        assert "<h1>Weekly report</h1>" in html and "<strong>green</strong>" in html
        assert "&lt;script&gt;" in html and "<script>" not in html, "raw HTML in the file is text"
        assert "Is the summary right?" in html
        token = url.rsplit("/", 1)[1]
        assert f'<img src="{token}/file/charts/week.png" alt="the chart"' in html
        assert "script-src" not in headers["Content-Security-Policy"] and "img-src 'self'" in headers["Content-Security-Policy"]
        async with http.get(f"{url}/file/charts/week.png") as image:
            assert image.status == 200 and image.content_type == "image/png" and await image.read() == png()
        for outside in ("secret.txt", "..%2F..%2Fetc%2Fpasswd.png", "missing.png"):
            status, _, _ = await fetch(http, "GET", f"{url}/file/{outside}")
            assert status == 404, outside

        status, html, _ = await fetch(http, "POST", url, action="answer", feedback="Make the summary one line.")
        assert status == 200 and "your feedback goes to the Agent" in html
        assert (await asyncio.wait_for(turn, PATIENCE))["result"] == {"stopReason": "end_turn"}
        assert "The reviewer answered about report.md:\nMake the summary one line." in text_since(client, start, sid)

        status, html, _ = await fetch(http, "POST", url, action="answer", feedback="A second answer")
        assert status == 409 and "already answered" in html, "a second answer is refused"
        assert (await fetch(http, "GET", url))[0] == 409
        assert (await fetch(http, "GET", f"{url}/file/charts/week.png"))[0] == 409, "a closed review serves nothing"


async def test_an_empty_answer_accepts_an_image_and_the_review_is_a_page_even_for_a_client_with_forms(tmp_path: Path) -> None:
    (tmp_path / "chart.png").write_bytes(png())
    async with wld_session(tmp_path, init=FORMS_INIT, config=CONFIG) as (client, sid), aiohttp.ClientSession() as http:
        turn, link, start = await review_requested(client, sid, "review the file chart.png")
        url = link["_meta"]["runwield"]["artifactReview"]["url"]
        status, html, _ = await fetch(http, "GET", url)
        assert status == 200 and "Is chart.png what you wanted?" in html
        assert f'<img src="{url.rsplit("/", 1)[1]}/file/chart.png" alt="chart.png">' in html

        status, html, _ = await fetch(http, "POST", url, action="answer", feedback="  ")
        assert status == 200 and "accepted it as it is" in html
        assert (await asyncio.wait_for(turn, PATIENCE))["result"] == {"stopReason": "end_turn"}
        assert "The reviewer accepted chart.png without comments." in text_since(client, start, sid)
        assert not [m for m in client.requests if m["method"] == "elicitation/create"], "no form: the browser page"


async def test_a_file_outside_the_project_is_refused_before_any_link(tmp_path: Path) -> None:
    async with wld_session(tmp_path, config=CONFIG) as (client, sid):
        start = len(client.messages)
        assert (await say(client, sid, "review the file ../etc/passwd"))["result"] == {"stopReason": "end_turn"}
        text = text_since(client, start, sid)
        assert "'..' may not appear in a path" in text and "in your browser" not in text


async def test_an_external_agent_asks_for_an_artifact_review_through_the_mcp_bus(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n\n- one\n")
    config = CONFIG + mcp_config(["request_artifact_review"])
    async with wld_session(tmp_path, config=config) as (client, sid), aiohttp.ClientSession() as http:
        turn, link, start = await review_requested(client, sid, "review")
        url = link["_meta"]["runwield"]["artifactReview"]["url"]
        status, html, _ = await fetch(http, "GET", url)
        assert status == 200 and "<li>one</li>" in html and "Are the notes right?" in html
        assert (await fetch(http, "POST", url, action="answer", feedback="Add a second item."))[0] == 200
        assert (await asyncio.wait_for(turn, PATIENCE))["result"] == {"stopReason": "end_turn"}
        assert text_since(client, start, sid).endswith("review: The reviewer answered about notes.md:\nAdd a second item.")


async def test_a_cancelled_turn_withdraws_its_review_and_the_transcript_keeps_no_link(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("# Report\n")
    async with wld_session(tmp_path, config=CONFIG) as (client, sid), aiohttp.ClientSession() as http:
        turn, link, _ = await review_requested(client, sid, "review the file report.md")
        url = link["_meta"]["runwield"]["artifactReview"]["url"]
        await client.notify("session/cancel", {"sessionId": sid})
        assert (await asyncio.wait_for(turn, PATIENCE))["result"] == {"stopReason": "cancelled"}
        status, html, _ = await fetch(http, "GET", url)
        assert status == 410 and "stopped waiting" in html, "the page says nobody waits for the answer"
        assert (await fetch(http, "POST", url, action="answer", feedback="late"))[0] == 410

        start = len(client.messages)
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        replayed = text_since(client, start, sid)
        assert "Review report.md in your browser: (the link was sent" in replayed and "/artifact/" not in replayed


async def test_an_artifact_review_token_is_in_no_stored_byte_and_no_debug_log(tmp_path: Path, wld_home: Path) -> None:
    (tmp_path / "report.md").write_text("# Report\n")
    config = 'log_level = "DEBUG"\n\n' + CONFIG
    async with wld_session(tmp_path, config=config) as (client, sid), aiohttp.ClientSession() as http:
        turn, link, _ = await review_requested(client, sid, "review the file report.md")
        url = link["_meta"]["runwield"]["artifactReview"]["url"]
        assert (await fetch(http, "POST", url, action="answer", feedback="fine"))[0] == 200
        await asyncio.wait_for(turn, PATIENCE)
        stored, logged = stored_bytes(wld_home), client.stderr
    token = url.rsplit("/", 1)[1]
    assert "DEBUG" in logged and token not in logged, "no log line shows the token"
    assert token not in stored, "the database keeps only its hash"
