"""The Workspace page for browser tests: a Session Host in this process serving it exactly as `wld workspace` does
(login link, page, ACP over a WebSocket at /acp, review pages), and a Chromium page logged in to it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page, expect

from runwield_bridge.app import App, start_workspace
from runwield_bridge.config import load_settings
from runwield_bridge.core.logins import WorkspaceLogins
from runwield_bridge.web.workspace import login_url
from wld_process import write_config

IMAGES = Path(__file__).resolve().parent.parent / "docs" / "images"
SOCKETS = """(() => {
  // Keep the page's WebSockets reachable, so a test can cut them as a network failure would; and, when asked,
  // hide _meta.runwield.workspace from answers, as a server without the extension would send them.
  const Real = window.WebSocket;
  window.__sockets = [];
  window.WebSocket = class extends Real {
    constructor(...args) { super(...args); window.__sockets.push(this); }
    addEventListener(type, listener, ...rest) {
      if (type === "message" && window.__withoutWorkspace) {
        const inner = listener;
        listener = (event) => {
          const message = JSON.parse(event.data);
          if (message.result && message.result._meta && message.result._meta.runwield) delete message.result._meta.runwield.workspace;
          inner({ data: JSON.stringify(message) });
        };
      }
      super.addEventListener(type, listener, ...rest);
    }
  };
})();"""


@dataclass
class Workspace:
    """A Session Host (SQLite under ``$WLD_HOME``) serving the Workspace on ``base_url``."""

    app: App
    base_url: str
    logins: WorkspaceLogins

    def url(self, **query: str | int) -> str:
        tail = "&".join(f"{k}={v}" for k, v in query.items())
        return f"{self.base_url}/workspace" + (f"?{tail}" if tail else "")

    async def open_page(self, browser: Browser, timeout: float, *, without_workspace: bool = False, **query: str | int) -> Page:
        """A new browser page, logged in with a fresh login link, on the Workspace once it is connected (polling the
        Session list every 300 ms unless ``poll`` says otherwise)."""
        context = await browser.new_context(viewport={"width": 1100, "height": 760})
        page = await context.new_page()
        page.set_default_timeout(timeout)
        await page.add_init_script(SOCKETS)
        if without_workspace:
            await page.add_init_script("window.__withoutWorkspace = true;")
        await page.goto(login_url(self.base_url, await self.logins.mint_token()))
        await page.goto(self.url(**{"poll": 300, **query}))
        await expect(page.locator("#connection")).to_have_text("Connected")
        return page


@contextlib.asynccontextmanager
async def workspace(tmp_path: Path, config: dict[str, Any] | None = None) -> AsyncIterator[Workspace]:
    """The Workspace served from wld.toml ``config`` (its ``[web] listen`` on a free port)."""
    write_config(tmp_path / "wld.toml", {"web": {"listen": "127.0.0.1:0"}, **(config or {})})
    app = await App.start(load_settings(tmp_path / "wld.toml"))
    try:
        base_url, logins = await start_workspace(app)
        yield Workspace(app, base_url, logins)
    finally:
        await app.close()


async def cut_connections(page: Page) -> None:
    """Close the page's WebSockets under it, as a dropped network connection would."""
    await page.evaluate("window.__sockets.forEach((socket) => socket.close())")


async def screenshot(page: Page, name: str) -> None:
    """Save docs/images/workspace-NAME.png for docs/workspace.md, only when WLD_SCREENSHOTS=1 (normal runs leave the tree alone)."""
    if os.environ.get("WLD_SCREENSHOTS") == "1":
        IMAGES.mkdir(exist_ok=True)
        await page.screenshot(path=str(IMAGES / f"workspace-{name}.png"))
