"""The Workspace page (``/workspace``): static files shipped in the package; the page speaks ACP on ``/acp``."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from .server import WebServer

ASSETS = Path(__file__).with_name("workspace")
TYPES = {".html": "text/html", ".css": "text/css", ".js": "text/javascript"}
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def asset_names() -> dict[str, Path]:
    """Every file the page is made of, by its path under ``/workspace/static/``."""
    return {path.relative_to(ASSETS).as_posix(): path for path in ASSETS.rglob("*") if path.suffix in TYPES and path.name != "index.html"}


def _file(path: Path) -> web.Response:
    return web.Response(body=path.read_bytes(), content_type=TYPES[path.suffix], charset="utf-8", headers=HEADERS)


def add_workspace_routes(server: WebServer) -> None:
    """``GET /workspace`` (the page) and ``GET /workspace/static/NAME`` (its CSS and JavaScript modules)."""
    assets = asset_names()

    async def page(request: web.Request) -> web.Response:
        return _file(ASSETS / "index.html")

    async def asset(request: web.Request) -> web.Response:
        path = assets.get(request.match_info["name"])
        if path is None:
            raise web.HTTPNotFound(text="no such file in the Workspace page")
        return _file(path)

    server.add_route("GET", "/workspace", page)
    server.add_route("GET", "/workspace/static/{name:.+}", asset)
