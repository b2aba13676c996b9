"""The Workspace page's files: all shipped as package data, and none of them reaches outside its own server."""

from __future__ import annotations

import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

from runwield_bridge.web.workspace_page import ASSETS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "runwield_bridge"
EXTERNAL = re.compile(r"""(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|fonts\.googleapis|cdn""", re.IGNORECASE)


def page_files() -> list[Path]:
    return sorted(path for path in ASSETS.rglob("*") if path.is_file())


def test_every_file_of_the_page_is_package_data() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["runwield_bridge"]
    missing = [str(path.relative_to(PACKAGE)) for path in page_files() if not any(fnmatch(path.relative_to(PACKAGE).as_posix(), g) for g in globs)]
    assert page_files() and missing == [], f"add these to [tool.setuptools.package-data] in pyproject.toml: {missing}"


def test_no_file_of_the_page_loads_anything_from_elsewhere() -> None:
    found = {path.name: EXTERNAL.findall(path.read_text()) for path in page_files()}
    assert {name: hits for name, hits in found.items() if hits} == {}
