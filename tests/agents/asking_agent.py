"""A small ACP agent (official Python SDK) for the Bridge's tests, run as ``[agents.NAME] command``.

What a prompt contains decides what it does:
  "permission"  asks session/request_permission for a tool it names only there, settles that tool
                (by id alone: completed if allowed, else failed), then says the outcome
  "choose"      asks a single-choice form (three options), then says the answer
  "survey"      asks a two-field form (text and integer), then says the answers
  "drink"       asks a single choice with Other and an optional text field for it, then says the answers
  "details"     asks a three-field form (text, integer, text), then says the answers
  "toppings"    asks a multi-select of four (at least one), then says the answers
  "visit"       asks a URL elicitation (a javascript: or file: one if the prompt says "javascript" or "file"), then
                says the action
  "token"       asks a form with one secret field (writeOnly, or "format": "password" if the prompt says "password"),
                logs the answer it got as a "secret" call, and says only how long it was
  "malformed"   sends an elicitation/create the schema rejects, then says the action
  "terminal"    calls terminal/create, terminal/output, terminal/wait_for_exit, terminal/kill,
                terminal/release, fs/read_text_file and fs/write_text_file, then says what each answered
  "hold"        waits (unless cancelled) until the file `release` beside $AGENT_LOG exists, then says
                "released: <its text>"
  "slow"        streams a chunk every 0.1 s for 5 s unless cancelled
  "crash"       exits at once with code 3
  "hangup"      closes its stdout (the connection) and lingers 30 s before it exits, as a wrapper of a crashed agent may
  an image      says how many images and bytes it got
  "Reply with exactly WORDS"  says WORDS
  anything else "echo: <text>"
Every call is appended as a JSON line to $AGENT_LOG; sessions persist in $AGENT_STATE (a JSON file),
so after a restart session/load works and replays the history; session/list lists them (titled by their first
prompt). With $AGENT_LOADS_ANY set, session/load of an id it does not know answers as if it did, replaying nothing
(as some agents do), instead of refusing it. With $AGENT_STEERING=silent it says it takes input into a running turn
(``_meta.steering``) and never answers ``_session/steering``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, run_agent, text_block, update_agent_message, update_tool_call, update_user_message
from acp.schema import (
    AgentCapabilities,
    ListSessionsResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    AvailableCommand,
    AvailableCommandsUpdate,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ToolCallUpdate,
)

LOG = os.environ.get("AGENT_LOG")
STATE = Path(os.environ["AGENT_STATE"]) if os.environ.get("AGENT_STATE") else None
SILENT_STEERING = os.environ.get("AGENT_STEERING") == "silent"
EXACTLY = "Reply with exactly "


def log(method: str, **params: Any) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as out:
            out.write(json.dumps({"method": method, **params}) + "\n")


def load_sessions() -> dict[str, list[list[str]]]:
    try:
        return json.loads(STATE.read_text()) if STATE else {}
    except (OSError, ValueError):
        return {}


class AskingAgent:
    """Many sessions on one connection, as the Bridge expects of any agent."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions = load_sessions()
        self.cancelled: dict[str, asyncio.Event] = {}
        self.updated: dict[str, str] = {}
        """When each session was last prompted (or started) since this process started, as ISO 8601."""

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **_: Any) -> InitializeResponse:
        caps = client_capabilities.model_dump(by_alias=True, exclude_none=True) if client_capabilities else {}
        log("initialize", clientCapabilities=caps, pid=os.getpid())
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="asking-agent", title="Asking agent", version="1.2.3"),
            field_meta={"steering": {"supported": True}} if SILENT_STEERING else None,
        )

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        log(method, **params)
        if SILENT_STEERING and method.lstrip("_") == "session/steering":
            await asyncio.Event().wait()  # never answers
        raise RequestError.method_not_found(method)

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        session_id = f"test-{uuid.uuid4().hex[:12]}"
        self.sessions[session_id] = []
        self.touch(session_id)
        self.save()
        log("session/new", sessionId=session_id, cwd=cwd)
        asyncio.get_running_loop().call_later(0.05, lambda: asyncio.ensure_future(self.offer_commands(session_id)))
        return NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> LoadSessionResponse:
        log("session/load", sessionId=session_id)
        if session_id not in self.sessions and os.environ.get("AGENT_LOADS_ANY"):
            return LoadSessionResponse()
        if session_id not in self.sessions:
            raise RequestError(-32002, f"Session {session_id} not found", {"sessionId": session_id})
        for user, reply in self.sessions[session_id]:
            await self.conn.session_update(session_id, update_user_message(text_block(user)))
            await self.conn.session_update(session_id, update_agent_message(text_block(reply)))
        return LoadSessionResponse()

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> ListSessionsResponse:
        log("session/list")
        infos = [
            SessionInfo(session_id=sid, cwd=cwd or "/", title=turns[0][0] if turns else None, updated_at=self.updated.get(sid))
            for sid, turns in self.sessions.items()
        ]
        return ListSessionsResponse(sessions=infos[::-1])  # the newest first

    async def offer_commands(self, session_id: str) -> None:
        commands = [AvailableCommand(name="review", description="Review the changes"), AvailableCommand(name="Bad-Name", description="not for menus")]
        await self.conn.session_update(session_id, AvailableCommandsUpdate(session_update="available_commands_update", available_commands=commands))

    async def cancel(self, session_id: str, **_: Any) -> None:
        log("session/cancel", sessionId=session_id)
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        texts = [block.text for block in prompt if block.type == "text"]
        images = [block for block in prompt if block.type == "image"]
        log("session/prompt", sessionId=session_id, texts=texts, images=[i.mime_type for i in images])
        if session_id not in self.sessions:
            raise RequestError(-32002, f"Session {session_id} not found", {"sessionId": session_id})
        self.cancelled[session_id] = asyncio.Event()
        text = texts[-1] if texts else ""
        words = text.lower().split()
        if "crash" in words:
            os._exit(3)
        if "hangup" in words:
            os.close(1)
            time.sleep(30)
            os._exit(3)
        if "hold" in words:
            return await self.hold(session_id, text)
        if "slow" in words:
            return await self.slow(session_id)
        if images:
            size = sum(len(base64.b64decode(i.data)) for i in images)
            reply = f"got {len(images)} image(s), {size} bytes, {images[0].mime_type}"
        elif "permission" in words:
            reply = await self.ask_permission(session_id)
        elif "choose" in words:
            reply = await self.elicit(session_id, "Pick a colour", {"colour": {"type": "string", "title": "Colour", "enum": ["red", "green", "blue"]}}, ["colour"])
        elif "survey" in words:
            schema = {"name": {"type": "string", "title": "Your name", "minLength": 2}, "age": {"type": "integer", "title": "Age", "minimum": 0}}
            reply = await self.elicit(session_id, "A short survey", schema, ["name", "age"])
        elif "drink" in words:
            schema = {"drink": {"type": "string", "enum": ["Tea", "Coffee", "Other"]}, "note": {"type": "string", "title": "Something else"}}
            reply = await self.elicit(session_id, "Tea or coffee?", schema, ["drink"])
        elif "details" in words:
            schema = {
                "name": {"type": "string", "title": "Your name", "minLength": 2},
                "age": {"type": "integer", "title": "Age", "minimum": 0},
                "city": {"type": "string", "title": "City"},
            }
            reply = await self.elicit(session_id, "A few details", schema, ["name", "age", "city"])
        elif "toppings" in words:
            items = {"anyOf": [{"const": c.lower(), "title": c} for c in ("Cheese", "Olives", "Basil", "Ham")]}
            schema = {"toppings": {"type": "array", "title": "Toppings", "items": items, "minItems": 1}}
            reply = await self.elicit(session_id, "Which toppings?", schema, ["toppings"])
        elif "visit" in words:
            url = {"javascript": "javascript:alert(document.cookie)", "file": "file:///etc/passwd"}
            link = next((url[word] for word in words if word in url), "https://auth.example.com/login?state=xyz")
            response = await self.raw_elicit({"sessionId": session_id, "mode": "url", "elicitationId": "e1", "message": "Sign in to continue", "url": link})
            reply = f"url: {response.get('action')}"
        elif "token" in words:
            marked = {"format": "password"} if "password" in words else {"writeOnly": True}
            schema = {"type": "object", "properties": {"token": {"type": "string", "title": "API token", **marked}}, "required": ["token"]}
            response = await self.raw_elicit({"sessionId": session_id, "mode": "form", "message": "Your API token, please", "requestedSchema": schema})
            secret = (response.get("content") or {}).get("token")
            log("secret", value=secret)
            reply = f"token: {response.get('action')}, {len(secret or '')} characters"
        elif "malformed" in words:
            response = await self.raw_elicit({"sessionId": session_id, "mode": "form", "message": "Broken", "requestedSchema": "not a schema"})
            reply = f"malformed: {response.get('action')}"
        elif "terminal" in words:
            reply = await self.try_client_methods(session_id)
        elif text.startswith(EXACTLY):
            reply = text.removeprefix(EXACTLY)
        else:
            reply = f"echo: {text}"
        await self.say(session_id, reply)
        self.sessions[session_id].append([text, reply])
        self.touch(session_id)
        self.save()
        return PromptResponse(stop_reason="end_turn")

    async def hold(self, session_id: str, text: str) -> PromptResponse:
        release = Path(LOG or "agent.log").with_name("release")
        while not release.exists():
            if self.cancelled[session_id].is_set():
                return PromptResponse(stop_reason="cancelled")
            await asyncio.sleep(0.05)
        reply = f"released: {release.read_text()}"
        await self.say(session_id, reply)
        self.sessions[session_id].append([text, reply])
        self.save()
        return PromptResponse(stop_reason="end_turn")

    async def slow(self, session_id: str) -> PromptResponse:
        for n in range(50):
            if self.cancelled[session_id].is_set():
                return PromptResponse(stop_reason="cancelled")
            await self.say(session_id, f"{n} ")
            await asyncio.sleep(0.1)
        return PromptResponse(stop_reason="end_turn")

    async def ask_permission(self, session_id: str) -> str:
        options = [
            PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
            PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ]
        tool = ToolCallUpdate(tool_call_id="call-1", title="Write notes.txt", kind="edit")
        response = await self.conn.request_permission(options=options, session_id=session_id, tool_call=tool)
        outcome = response.outcome
        allowed = getattr(outcome, "option_id", None) == "allow"
        await self.conn.session_update(session_id, update_tool_call("call-1", status="completed" if allowed else "failed"))
        return f"permission: {outcome.outcome} {getattr(outcome, 'option_id', '')}".strip()

    async def elicit(self, session_id: str, message: str, properties: dict[str, Any], required: list[str]) -> str:
        schema = {"type": "object", "properties": properties, "required": required}
        response = await self.raw_elicit({"sessionId": session_id, "mode": "form", "message": message, "requestedSchema": schema})
        return f"form: {response.get('action')} {json.dumps(response.get('content'), sort_keys=True)}"

    async def raw_elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.conn._conn.send_request("elicitation/create", params)
        except RequestError as exc:
            return {"action": f"error {exc}"}

    async def try_client_methods(self, session_id: str) -> str:
        """Each client method we do not advertise, called raw: ``method=code`` for an error, ``method=ok <result>`` else."""
        calls = {
            "terminal/create": {"command": "echo", "args": ["hi"]},
            "terminal/output": {"terminalId": "t1"},
            "terminal/wait_for_exit": {"terminalId": "t1"},
            "terminal/kill": {"terminalId": "t1"},
            "terminal/release": {"terminalId": "t1"},
            "fs/read_text_file": {"path": "/etc/hostname"},
            "fs/write_text_file": {"path": "/tmp/never-written", "content": "x"},
        }
        answers = []
        for method, params in calls.items():
            try:
                answers.append(f"{method}=ok {json.dumps(await self.conn._conn.send_request(method, {'sessionId': session_id, **params}))}")
            except RequestError as exc:
                answers.append(f"{method}={exc.code}")
        return "client methods: " + " ".join(answers)

    async def say(self, session_id: str, text: str) -> None:
        await self.conn.session_update(session_id, update_agent_message(text_block(text)))

    def touch(self, session_id: str) -> None:
        self.updated[session_id] = datetime.now(UTC).isoformat()

    def save(self) -> None:
        if STATE:
            STATE.write_text(json.dumps(self.sessions))


if __name__ == "__main__":
    sys.exit(asyncio.run(run_agent(AskingAgent(), use_unstable_protocol=True)))
