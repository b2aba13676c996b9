"""Shared fixtures: every test gets its own WLD_HOME and no stray config."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from database_kit import BACKENDS, database, postgres_database, sqlite_url


@pytest.fixture(autouse=True)
def wld_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "wld-home"
    monkeypatch.setenv("WLD_HOME", str(home))
    monkeypatch.delenv("WLD_CONFIG", raising=False)
    return home


@pytest.fixture(params=BACKENDS)
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh database on each backend, SQLite and PostgreSQL, in turn."""
    async with database(request.param, tmp_path) as url:
        yield url


@pytest.fixture(params=BACKENDS)
async def wld_database(request: pytest.FixtureRequest, wld_home: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    """`wld` processes started by the test keep their state in a fresh database on each backend in turn: SQLite
    under WLD_HOME (the default), or a new PostgreSQL database named by the wld.toml in WLD_CONFIG."""
    if request.param == "sqlite":
        yield sqlite_url(wld_home)
        return
    async with postgres_database() as url:
        config = wld_home.parent / "wld-postgres.toml"
        config.write_text(f"database_url = {json.dumps(url)}\n", encoding="utf-8")
        monkeypatch.setenv("WLD_CONFIG", str(config))
        yield url
