"""What a person sees the first time they run `wld`: version, help, session list, a chat left at once, a bad database."""

from __future__ import annotations

import argparse
import asyncio
import socket
import sqlite3
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from database_kit import postgres_database
from sqlalchemy.engine import make_url

from runwield_bridge.build_info import CHECKOUT, source_commit
from runwield_bridge.cli import build_parser
from runwield_bridge.config import ConfigError
from runwield_bridge.core.store import Store

WLD = str(Path(sys.executable).parent / "wld")
RUN_TIMEOUT = 120  # one `wld` process; starting it takes seconds on a busy machine


def wld(*args: str, home: Path, env: dict[str, str] | None = None, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run `wld ARGS` with its state in ``home`` and no configuration file."""
    environment = {"PATH": str(Path(sys.executable).parent), "WLD_HOME": str(home), **(env or {})}
    return subprocess.run([WLD, *args], input=stdin, capture_output=True, text=True, env=environment, cwd=home, timeout=RUN_TIMEOUT)


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def test_version_prints_the_installed_version_and_the_commit_of_the_git_checkout_it_runs_from(tmp_path: Path) -> None:
    done = wld("--version", home=tmp_path)
    commit = git("rev-parse", "--short=12", "HEAD", cwd=CHECKOUT)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, f"wld {version('runwield-bridge')} (commit {commit})", "")


def test_the_commit_is_read_from_loose_and_packed_refs_and_is_none_outside_a_checkout(tmp_path: Path) -> None:
    assert source_commit(tmp_path) is None
    git("init", "-q", "-b", "main", cwd=tmp_path)
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "one", cwd=tmp_path)
    assert source_commit(tmp_path) == git("rev-parse", "--short=12", "HEAD", cwd=tmp_path)
    git("pack-refs", "--all", cwd=tmp_path)
    assert not (tmp_path / ".git" / "refs" / "heads" / "main").exists()
    assert source_commit(tmp_path) == git("rev-parse", "--short=12", "HEAD", cwd=tmp_path)


def test_every_subcommand_and_argument_has_help_text() -> None:
    def walk(parser: argparse.ArgumentParser, name: str) -> list[str]:
        missing = []
        listing = parser.format_help().splitlines()
        for action in parser._actions:  # argparse has no public list of a parser's arguments
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.metavar or action.dest}")
            if isinstance(action.choices, dict):  # the subcommands
                for sub, subparser in action.choices.items():
                    if not any(line.split()[1:] and line.split()[0] == sub for line in listing):
                        missing.append(f"{name} {sub}")
                    missing += walk(subparser, f"{name} {sub}")
        return missing

    assert walk(build_parser(), "wld") == []


async def many_sessions(home: Path, count: int) -> None:
    """``count`` saved Sessions in ``home``'s database (copies of one made through the store)."""
    store = await Store.open(f"sqlite+aiosqlite:///{home / 'wld.db'}")
    try:
        await store.sessions.create_session(cwd=str(home), agent="build", model="scripted", reasoning=None, title="a saved chat")
    finally:
        await store.close()
    with sqlite3.connect(home / "wld.db") as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(sessions)")]
        [template] = db.execute(f"SELECT {', '.join(columns)} FROM sessions").fetchall()
        rows = [(f"ses_{n:032x}", *template[1:]) for n in range(count)]
        db.executemany(f"INSERT INTO sessions ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows)


def test_sessions_has_column_headers_and_a_reader_that_leaves_early_is_no_error(tmp_path: Path) -> None:
    asyncio.run(many_sessions(tmp_path, 3000))  # far more than a pipe holds, so writing goes on after `head` left
    listing = wld("sessions", home=tmp_path)
    header, first = listing.stdout.splitlines()[:2]
    assert header.split() == ["SESSION", "UPDATED", "MODEL", "COST", "TITLE"]
    assert first.startswith("ses_") and first.endswith("a saved chat")
    assert (first.index("scripted"), first.index("a saved chat")) == (header.index("MODEL"), header.index("TITLE")), "under their headers"

    piped = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"'{WLD}' sessions | head -1"],
        capture_output=True, text=True, env={"WLD_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=RUN_TIMEOUT,
    )
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, header + "\n", "")


def test_chat_left_at_once_saves_nothing_and_prints_no_traceback(tmp_path: Path) -> None:
    for leave in ("/quit\n", ""):  # the command, and end of input (Ctrl-D)
        chat = wld("chat", home=tmp_path, stdin=leave)
        assert chat.returncode == 0 and "Traceback" not in chat.stderr + chat.stdout, chat.stderr
        assert "New Session" in chat.stdout
    assert wld("sessions", home=tmp_path).stdout.strip() == "no sessions yet; start one with: wld chat"

    chat = wld("chat", home=tmp_path, stdin="hello\n")  # end of input lets the turn finish (a /quit would cancel it)
    assert "You said: hello" in chat.stdout and "Traceback" not in chat.stderr, chat.stderr
    [saved] = wld("sessions", home=tmp_path).stdout.splitlines()[1:]
    assert saved.endswith("hello"), "the first message makes (and titles) the Session"


def test_a_postgres_url_without_its_driver_says_which_extra_to_install(tmp_path: Path) -> None:
    missing = tmp_path / "no-asyncpg"
    missing.mkdir()
    (missing / "asyncpg.py").write_text("raise ModuleNotFoundError(\"No module named 'asyncpg'\")\n")  # as if not installed
    (tmp_path / "wld.toml").write_text('database_url = "postgresql://wld:secret@127.0.0.1:5432/wld"\n')
    env = {"WLD_CONFIG": str(tmp_path / "wld.toml"), "PYTHONPATH": str(missing)}
    for command in ("sessions", "chat"):
        done = wld(command, home=tmp_path, env=env)
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr.splitlines() == [
            "wld: configuration error: database_url: the asyncpg driver for postgresql is not installed; "
            "pip install 'runwield-bridge[postgres]'"
        ]
    assert list(tmp_path.glob("*.db")) == [], "nothing was created"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def refused_in_one_line(tmp_path: Path, url: str, shown: str, reason: str) -> None:
    """Every command that opens the database stops with one line saying where and why; nothing is written."""
    (tmp_path / "wld.toml").write_text(f'database_url = "{url}"\n')
    before = sorted(tmp_path.rglob("*"))
    for command in (("sessions",), ("db", "status"), ("db", "upgrade")):
        done = wld(*command, home=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")})
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        [line] = done.stderr.splitlines()
        assert line.startswith(f"wld: database error: cannot open {shown}: ") and reason in line, line
        assert "sekrit" not in line, "the password is never shown"
    assert sorted(tmp_path.rglob("*")) == before


def test_a_postgresql_server_that_is_not_there_is_said_in_one_line(tmp_path: Path) -> None:
    port = free_port()
    url = f"postgresql://wld:sekrit@127.0.0.1:{port}/wld"
    refused_in_one_line(tmp_path, url, f"postgresql+asyncpg://wld:***@127.0.0.1:{port}/wld", "Connect call failed")
    with (tmp_path / "wld.toml").open("a") as config:
        config.write(f'[web]\nlisten = "127.0.0.1:{free_port()}"\n')  # a port no other test takes
    doctor = wld("doctor", home=tmp_path, env={"WLD_CONFIG": str(tmp_path / "wld.toml")})
    found = doctor.stdout.splitlines()
    assert doctor.returncode == 1 and found[-1] == "1 problem(s) found", doctor.stdout + doctor.stderr
    assert f"problem  database: cannot open postgresql+asyncpg://wld:[redacted]@127.0.0.1:{port}/wld: " in doctor.stdout


async def test_a_postgresql_database_that_does_not_exist_is_said_in_one_line(tmp_path: Path) -> None:
    async with postgres_database() as existing:  # the server is there (skips or fails as the other PostgreSQL tests do)
        url = make_url(existing).set(database="wld_no_such_database").render_as_string(hide_password=False)
        await asyncio.to_thread(refused_in_one_line, tmp_path, url, make_url(url).render_as_string(), 'database "wld_no_such_database" does not exist')


def test_an_sqlite_path_that_cannot_be_a_database_is_said_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    url = f"sqlite:///{tmp_path / 'taken'}"
    refused_in_one_line(tmp_path, url, f"sqlite+aiosqlite:///{tmp_path / 'taken'}", "unable to open database file")


def test_a_database_url_without_a_driver_gets_the_asyncio_one() -> None:
    from runwield_bridge.config import with_async_driver

    assert with_async_driver("sqlite:////srv/wield/wld.db") == "sqlite+aiosqlite:////srv/wield/wld.db"
    with pytest.raises(ConfigError, match=r"database_url: sqlite\+pysqlite is not an asyncio driver"):
        with_async_driver("sqlite+pysqlite:////srv/wield/wld.db")
    with pytest.raises(ConfigError, match=r"database_url: sqlite\+nosuchdriver names no driver SQLAlchemy knows \(wld uses postgresql\+asyncpg or sqlite\+aiosqlite\)"):
        with_async_driver("sqlite+nosuchdriver:////srv/wield/wld.db")
    for url in ("mysql://root@127.0.0.1/wld", "mssql+aioodbc://host/wld", "nosuchdb://host/db"):  # installed or not
        with pytest.raises(ConfigError, match=r"database_url: '\w+' is not supported: wld keeps its state in SQLite"):
            with_async_driver(url)


async def test_processes_opening_a_fresh_database_at_once_all_start(database_url: str) -> None:
    """As two IDE windows starting `wld acp` on a new install (stores here; tests/test_migrations.py starts processes)."""
    stores = await asyncio.gather(*(Store.open(database_url) for _ in range(4)))
    for store in stores:
        await store.close()
