"""The one inbound HTTP server: channels (webhooks) and review pages add routes, then it starts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from ..config import ConfigError, WebConfig

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
HEALTH_PATH = "/healthz"


class WebServer:
    """An aiohttp application on ``[web] listen``; routes must be added before ``start``.
    It always answers ``GET /healthz`` (for a container's health check or a load balancer)."""

    def __init__(self, config: WebConfig) -> None:
        self.config = config
        self.app = web.Application()
        self.app.router.add_route("GET", HEALTH_PATH, healthy)
        self._added = 0
        self._runner: web.AppRunner | None = None
        self._bound: str | None = None

    @property
    def route_count(self) -> int:
        """The routes added with ``add_route`` (the health check is not one of them)."""
        return self._added

    @property
    def has_routes(self) -> bool:
        return self.route_count > 0

    @property
    def base_url(self) -> str:
        """What links and webhook registrations use: ``public_url``, else the address actually bound."""
        if self.config.public_url:
            return self.config.public_url.rstrip("/")
        return f"http://{self._bound or self.config.listen}"

    def add_route(self, method: str, path: str, handler: Handler) -> None:
        if self._runner is not None:
            raise RuntimeError(f"route {method} {path} added after the web server started")
        self.app.router.add_route(method, path, handler)
        self._added += 1

    async def start(self) -> None:
        host, port = split_listen(self.config.listen)
        runner = web.AppRunner(self.app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            await runner.cleanup()
            raise ConfigError(f"web.listen: cannot listen on {self.config.listen}: {exc.strerror or exc}") from None
        self._runner = runner
        bound_host, bound_port = runner.addresses[0][:2]
        self._bound = f"{bound_host}:{bound_port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


async def healthy(request: web.Request) -> web.Response:
    """``/healthz``: this process is up and serving HTTP."""
    return web.Response(text="ok\n", headers={"Cache-Control": "no-store"})


def split_listen(listen: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:8787`` for IPv6) as a pair; a bad value is a config error naming the key."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"web.listen: expected HOST:PORT, got {listen!r}")
    return host.strip("[]") or "127.0.0.1", int(port)
