"""The console channel's rendering, in process (fast)."""

from __future__ import annotations

import io

from acp.schema import ToolCallProgress, ToolCallStart

from runwield_bridge.channels.console.channel import ConsoleReply, Terminal


def test_a_finished_tool_call_is_named_by_its_title_not_its_id() -> None:
    out = io.StringIO()
    reply = ConsoleReply(Terminal(out))
    reply.update(ToolCallStart(session_update="tool_call", tool_call_id="call-3", title="list_files .", kind="search", status="pending"))
    reply.update(ToolCallProgress(session_update="tool_call_update", tool_call_id="call-3", status="in_progress"))
    reply.update(ToolCallProgress(session_update="tool_call_update", tool_call_id="call-3", status="completed"))
    reply.update(ToolCallStart(session_update="tool_call", tool_call_id="call-4", title="read_file nope", kind="read", status="pending"))
    reply.update(ToolCallProgress(session_update="tool_call_update", tool_call_id="call-4", status="failed"))
    assert out.getvalue().splitlines() == [
        "  ⚙ list_files . …",
        "  ✅ list_files .",
        "  ⚙ read_file nope …",
        "  ❌ read_file nope",
    ]


def test_a_tool_named_only_by_an_update_keeps_that_title() -> None:
    """The bridge passes a permission request's tool on as an update; its completion is then named by that title."""
    out = io.StringIO()
    reply = ConsoleReply(Terminal(out))
    reply.update(ToolCallProgress(session_update="tool_call_update", tool_call_id="call-16", title="Write notes.txt", kind="edit"))
    reply.update(ToolCallProgress(session_update="tool_call_update", tool_call_id="call-16", status="completed"))
    assert out.getvalue().splitlines() == ["  ✅ Write notes.txt"]
