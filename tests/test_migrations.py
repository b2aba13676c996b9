"""The schema's versions: the migrations make exactly the tables the store uses, on SQLite and PostgreSQL; processes
starting together on a new database take turns migrating it; `wld db status` says where a database stands."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlmodel import SQLModel
from test_acp_server import WLD

from runwield_bridge.core.store import Store
from runwield_bridge.core.store.migrate import HEAD, MIGRATIONS, SchemaError, status


def differences(conn: Connection) -> list[object]:
    return compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)


async def test_the_migrations_make_exactly_the_tables_the_store_uses(database_url: str) -> None:
    store = await Store.open(database_url)
    try:
        async with store.engine.connect() as conn:
            assert await conn.run_sync(differences) == [], "a table changed without a migration (or a migration without the table)"
        found = await status(store.engine)
        assert (found.current, found.unstamped, found.up_to_date) == (HEAD, False, True)
    finally:
        await store.close()


def test_head_is_the_newest_migration() -> None:
    assert ScriptDirectory(str(MIGRATIONS)).get_current_head() == HEAD


async def test_a_database_of_an_unknown_version_is_refused_and_left_alone(database_url: str) -> None:
    store = await Store.open(database_url)
    async with store.engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    await store.close()
    with pytest.raises(SchemaError, match="at version 9999, which this release does not know .* upgrade wld"):
        await Store.open(database_url)
    store = Store(database_url)
    try:
        assert (await status(store.engine)).current == "9999"
    finally:
        await store.close()


async def test_wld_refuses_a_database_of_an_unknown_version_in_one_line(wld_database: str) -> None:
    store = await Store.open(wld_database)
    async with store.engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    await store.close()
    code, out, err = await run(WLD, "sessions")
    assert (code, out) == (2, "") and err.startswith("wld: database error: the database is at version 9999, which this release does not know")
    assert err.rstrip().endswith("upgrade wld") and len(err.splitlines()) == 1


async def run(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.mark.parametrize("round_", range(2))
async def test_wld_processes_started_at_once_on_a_new_database_all_come_up(wld_database: str, round_: int) -> None:
    commands = [[WLD, "sessions"], [WLD, "sessions"], [WLD, "db", "upgrade"], [WLD, "db", "upgrade"]]
    results = await asyncio.gather(*(run(*command) for command in commands))
    for command, (code, out, err) in zip(commands, results, strict=True):
        assert code == 0, f"{command[1:]} failed: {err}"
    assert [out for _, out, _ in results[:2]] == ["no sessions yet; start one with: wld chat\n"] * 2
    upgrades = sorted(out for _, out, _ in results[2:])
    assert all(out.startswith(("upgraded from", f"already at {HEAD}")) for out in upgrades), upgrades


async def test_wld_db_status_shows_the_current_and_the_newest_version(wld_database: str, wld_home: Path) -> None:
    code, out, _ = await run(WLD, "db", "status")
    assert code == 0
    lines = out.splitlines()
    assert lines[1:] == [
        "current:  none (an empty database)",
        "head:     0009 (Artifact Reviews)",
        "behind: `wld db upgrade` brings it to head (as every wld command does on start)",
    ]
    assert lines[0].startswith("database: ") and wld_database.split("://")[0] in lines[0]
    assert not (wld_home / "wld.db").exists(), "a status changes nothing"
    assert await run(WLD, "db", "upgrade") == (0, "upgraded from none (an empty database) to 0009 (Artifact Reviews)\n", "")
    code, out, _ = await run(WLD, "db", "status")
    assert out.splitlines()[1:] == ["current:  0009 (Artifact Reviews)", "head:     0009 (Artifact Reviews)", "up to date"]


def test_a_missing_postgresql_server_skips_with_a_reason_but_fails_where_it_is_required(tmp_path: Path) -> None:
    tests = Path(__file__).parent
    shutil.copy(tests / "conftest.py", tmp_path)
    (tmp_path / "test_probe.py").write_text("async def test_on_each_backend(database_url):\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(tests), "WLD_TEST_POSTGRES_URL": "postgresql+asyncpg://postgres@127.0.0.1:9/none"}
    env.pop("WLD_REQUIRE_POSTGRES", None)
    args = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto", "test_probe.py"]
    skipped = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert "1 passed, 1 skipped" in skipped.stdout, skipped.stdout
    assert "no PostgreSQL server at postgresql+asyncpg://postgres@127.0.0.1:9/none" in skipped.stdout
    required = subprocess.run(args, capture_output=True, text=True, env={**env, "WLD_REQUIRE_POSTGRES": "1"}, cwd=tmp_path)
    assert "1 passed, 1 error" in required.stdout and "WLD_REQUIRE_POSTGRES is set but there is no PostgreSQL server" in required.stdout


async def test_notes_of_unfinished_messages_written_at_0003_are_kept_by_the_upgrade_to_0004(database_url: str) -> None:
    """0004 rebuilds the table (its key takes in the conversation): what a 0.3.0 bridge noted is still finished later."""
    def to_0003_with_a_note(conn: Connection) -> None:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = conn
        command.upgrade(config, "0003")
        conn.execute(
            text(
                "INSERT INTO unfinished_messages (channel, message_id, conversation, text, kind, updated_at)"
                " VALUES ('telegram', '5', 'telegram:1', 'Working', 'reply', 1.0)"
            )
        )

    engine = create_async_engine(database_url)
    async with engine.begin() as conn:
        await conn.run_sync(to_0003_with_a_note)
    await engine.dispose()
    store = await Store.open(database_url)
    try:
        notes = await store.bridge.unfinished_messages("telegram")
        assert [(n.message_id, n.conversation, n.text, n.kind, n.instance) for n in notes] == [("5", "telegram:1", "Working", "reply", None)]
        await store.bridge.keep_message("telegram", "5", "telegram:2", "Another chat's message 5", "reply")
        assert len(await store.bridge.unfinished_messages("telegram")) == 2
    finally:
        await store.close()
