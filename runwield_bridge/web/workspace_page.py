"""The Workspace page's files, shipped in the package: ``index.html`` (served behind the login at ``/workspace``),
and its CSS and JavaScript modules at ``/workspace/static/NAME`` (plain files: no build step, nothing external)."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from .server import Handler, WebServer

ASSETS = Path(__file__).with_name("workspace")
STATIC_PATH = "/workspace/static"
TYPES = {".html": "text/html", ".css": "text/css", ".js": "text/javascript"}
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def asset_names() -> dict[str, Path]:
    """The page's CSS and JavaScript, by their path under ``/workspace/static/``."""
    return {path.relative_to(ASSETS).as_posix(): path for path in ASSETS.rglob("*") if path.suffix in (".css", ".js")}


def _file(path: Path) -> web.Response:
    return web.Response(body=path.read_bytes(), content_type=TYPES[path.suffix], charset="utf-8", headers=HEADERS)


def add_page_assets(server: WebServer) -> Handler:
    """Serve the page's CSS and JavaScript (they hold no data); returns the handler of the page itself."""
    assets = asset_names()

    async def page(request: web.Request) -> web.Response:
        return _file(ASSETS / "index.html")

    async def asset(request: web.Request) -> web.Response:
        path = assets.get(request.match_info["name"])
        if path is None:
            raise web.HTTPNotFound(text="no such file in the Workspace page")
        return _file(path)

    server.add_route("GET", STATIC_PATH + "/{name:.+}", asset)
    return page
