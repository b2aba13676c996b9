"""The review pages' server, built and bound only when first needed, so most processes never import aiohttp."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..config import ConfigError, WebConfig
from ..core.artifact_reviews import ArtifactReviews
from ..core.code_reviews import CodeReviewHub
from ..core.reviews import ReviewHub, ReviewUnavailable

if TYPE_CHECKING:
    from .server import WebServer


class LazyReviewServer:
    """Review pages (Plan, Code and Artifact Reviews) on the ``[web] listen`` server, started by the first review."""

    def __init__(self, config: WebConfig, hub: ReviewHub, artifacts: ArtifactReviews, code_reviews: CodeReviewHub | None = None) -> None:
        self.config = config
        self.hub = hub
        self.artifacts = artifacts
        self.code_reviews = code_reviews
        self._server: WebServer | None = None
        self._running = False
        self._starting = asyncio.Lock()
        hub.link_base = self.base_url

    @property
    def server(self) -> WebServer:
        """The web server with the review routes (other routes, such as webhooks, may be added before it starts)."""
        if self._server is None:
            from .artifact_review import add_artifact_routes
            from .review import add_review_routes
            from .server import WebServer

            self._server = WebServer(self.config)
            add_review_routes(self._server, self.hub)
            if self.code_reviews is not None:
                from .code_review import add_code_review_routes

                add_code_review_routes(self._server, self.code_reviews)
            add_artifact_routes(self._server, self.artifacts)
        return self._server

    async def base_url(self) -> str:
        """Where review links point, starting the server if it is not running yet."""
        async with self._starting:
            if not self._running:
                try:
                    await self.server.start()
                except ConfigError as exc:
                    raise ReviewUnavailable(f"review pages cannot be served: {exc}") from None
                self._running = True
        return self.server.base_url

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop()
        self._running = False
