"""The Workspace's door: the login link that `wld workspace` prints, the page, and ACP over a WebSocket at ``/acp``.

Every way in needs a login: the one-time token of a login link becomes a login session held in an ``HttpOnly``,
``SameSite=Strict`` cookie; the WebSocket also wants the browser's ``Origin`` to be this server's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from ..acp.serve import serve_transport
from ..acp.websocket import MAX_FRAME, WebSocketTransport
from ..core.logins import WorkspaceLogins
from ..core.sessions import SessionHost
from .review import SECURITY_HEADERS, TEMPLATES
from .server import Handler, WebServer

WORKSPACE_PATH = "/workspace"
LOGIN_PATH = "/workspace/login"
ACP_PATH = "/acp"
COOKIE = "wld_workspace"
NOT_LOGGED_IN = "Open the link that `wld workspace` prints to log in; each link works once."
HEARTBEAT_SECONDS = 30.0

Serve = Callable[[WebSocketTransport], Awaitable[None]]


def login_url(base_url: str, token: str) -> str:
    """The link that logs a browser in with ``token``."""
    return f"{base_url}{LOGIN_PATH}?token={token}"


def add_workspace_routes(server: WebServer, host: SessionHost, logins: WorkspaceLogins, page: Handler | None = None) -> None:
    """Mount the login link, the page (``page``, or a placeholder) and ``/acp`` on the shared web server (before it starts)."""
    door = WorkspaceDoor(server, logins, lambda transport: serve_transport(host, transport))
    server.add_route("GET", LOGIN_PATH, door.log_in)
    server.add_route("GET", WORKSPACE_PATH, door.guarded(page or placeholder_page))
    server.add_route("GET", ACP_PATH, door.acp_socket)


class WorkspaceDoor:
    """The handlers: logging in, and checking the cookie (and the ``Origin``) of everything behind it."""

    def __init__(self, server: WebServer, logins: WorkspaceLogins, serve: Serve) -> None:
        self.server = server
        self.logins = logins
        self.serve = serve

    @property
    def origin(self) -> str:
        """This server's own origin (``scheme://host[:port]`` of its public URL)."""
        parts = urlsplit(self.server.base_url)
        return f"{parts.scheme}://{parts.netloc}"

    async def log_in(self, request: web.Request) -> web.StreamResponse:
        """Spend the link's token for a login session (the cookie) and go to the Workspace."""
        session = await self.logins.log_in(request.query.get("token", ""))
        if session is None:
            return refusal(401, "Login link not valid", "This login link is unknown, expired or already used. " + NOT_LOGGED_IN)
        response = web.Response(status=303, headers={**SECURITY_HEADERS, "Location": WORKSPACE_PATH})
        response.set_cookie(
            COOKIE,
            session,
            max_age=int(self.logins.session_ttl),
            path="/",
            httponly=True,
            samesite="Strict",
            secure=self.server.base_url.startswith("https://"),
        )
        return response

    async def logged_in(self, request: web.Request) -> bool:
        return await self.logins.is_logged_in(request.cookies.get(COOKIE))

    def guarded(self, page: Handler) -> Handler:
        """``page`` for a logged-in browser; 401 for anyone else."""

        async def handler(request: web.Request) -> web.StreamResponse:
            if not await self.logged_in(request):
                return refusal(401, "Not logged in", NOT_LOGGED_IN)
            return await page(request)

        return handler

    async def acp_socket(self, request: web.Request) -> web.StreamResponse:
        """ACP on a WebSocket, for a logged-in browser on this server's own origin; served until it closes."""
        if request.headers.get("Origin") != self.origin:
            return refusal(403, "Wrong origin", f"The Workspace's WebSocket only answers pages from {self.origin}.")
        if not await self.logged_in(request):
            return refusal(401, "Not logged in", NOT_LOGGED_IN)
        socket = web.WebSocketResponse(max_msg_size=MAX_FRAME, heartbeat=HEARTBEAT_SECONDS)
        await socket.prepare(request)
        try:
            await self.serve(WebSocketTransport(socket))
        finally:
            await socket.close()
        return socket


async def placeholder_page(request: web.Request) -> web.StreamResponse:
    """Until the Workspace page is installed: say that the login worked and where ACP is served."""
    return page_response(200, "Workspace", f"You are logged in. ACP is served over a WebSocket at {ACP_PATH}.", "message.html")


def refusal(status: int, title: str, reason: str) -> web.Response:
    """A refusal page: why, and that nothing was changed."""
    return page_response(status, title, reason, "refusal.html")


def page_response(status: int, title: str, text: str, template: str) -> web.Response:
    """A small page from the package's templates (every value escaped)."""
    html = TEMPLATES.get_template(template).render(title=title, reason=text)
    return web.Response(text=html, content_type="text/html", status=status, headers=SECURITY_HEADERS)
