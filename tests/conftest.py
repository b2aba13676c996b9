"""Shared fixtures: every test gets its own WLD_HOME and no stray config."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def wld_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "wld-home"
    monkeypatch.setenv("WLD_HOME", str(home))
    monkeypatch.delenv("WLD_CONFIG", raising=False)
    return home
