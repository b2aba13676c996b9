"""`wld`: chat, acp, bridge, workspace, sessions, plans, plugins, doctor, db."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from . import redaction
from .config import ConfigError, Settings, load_settings

if TYPE_CHECKING:  # each command imports what it uses, so `wld acp` answers initialize before loading the rest
    from .app import App
    from .core.sessions import SessionHost

Command = Callable[[argparse.Namespace, Settings], Awaitable[int]]
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
SESSION_ROW = "{:<36}  {:<16}  {:<14} {:>10}  {}"  # `wld sessions`: id, updated, model, cost, title


def _setup_logging(settings: Settings, verbose: int) -> None:
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose else getattr(logging, settings.log_level.upper(), logging.WARNING)
    logging.basicConfig(stream=sys.stderr, level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    redaction.install(settings.model_dump(mode="json"), logging.getLogger().handlers)


async def until_stopped(work: Awaitable[int]) -> int:
    """Run ``work`` until it returns or ``STOP_SIGNALS`` arrive: then it is cancelled, so its cleanup (which stops the
    agents it started) runs before wld exits; a later signal is ignored (it would cut that cleanup short). 0 after a
    signal: stopping was asked for."""
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    signalled: list[int] = []

    def stop(signum: int) -> None:
        if not signalled:
            signalled.append(signum)
            task.cancel()

    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop, signum)
    try:
        return await task
    except asyncio.CancelledError:
        if not signalled:
            raise
        return 0
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)


async def cmd_acp(args: argparse.Namespace, settings: Settings) -> int:
    from .acp.serve import serve_stdio

    started: list[App] = []

    async def start_host() -> SessionHost:
        """Started once ``initialize`` is answered: the store, the plugins and the Session Host."""
        from .app import App
        from .long_lived_heap import freeze_long_lived_heap

        started.append(await App.start(settings))
        freeze_long_lived_heap()
        return started[0].session_host

    configured_vision = any(model.vision for model in settings.models.values())  # what initialize can say before the host
    try:
        await serve_stdio(start_host, accepts_images=configured_vision)
    finally:
        for app in started:
            await app.close()
    return 0


async def cmd_chat(args: argparse.Namespace, settings: Settings) -> int:
    from .app import App, run_chat

    app = await App.start(settings)
    try:
        return await run_chat(app.session_host, session_id=args.session, cwd=args.cwd)
    finally:
        await app.close()


async def cmd_bridge(args: argparse.Namespace, settings: Settings) -> int:
    from .app import App, agent_endpoints, bridge_instances, open_workspace
    from .long_lived_heap import freeze_long_lived_heap
    from .bridge.runner import NO_CHANNELS, BridgeService, run_bridge

    if not settings.channels:  # before anything is created
        print(NO_CHANNELS, file=sys.stderr)
        return 2
    app = await App.start(settings)
    freeze_long_lived_heap()
    try:
        pages = app.review_pages
        agents = agent_endpoints(settings, app.session_host)
        instances = bridge_instances(app.store)
        service = BridgeService(settings, app.plugins, app.store.bridge, agents, web=pages.server, start_web=pages.base_url, instances=instances)
        if args.workspace:  # browsers too, on the same Session Host and web server
            await open_workspace(app, open_browser=args.open)
        return await run_bridge(service)
    finally:
        await app.close()


async def cmd_workspace(args: argparse.Namespace, settings: Settings) -> int:
    from .app import App, serve_workspace
    from .long_lived_heap import freeze_long_lived_heap

    app = await App.start(settings)
    freeze_long_lived_heap()
    try:
        return await serve_workspace(app, open_browser=args.open)
    finally:
        await app.close()


async def cmd_sessions(args: argparse.Namespace, settings: Settings) -> int:
    from .app import App
    from .core.sessions import SessionNotFound

    app = await App.start(settings)
    try:
        if args.action in ("archive", "unarchive"):
            if not args.session_id:
                print(f"wld sessions {args.action}: give a SESSION_ID", file=sys.stderr)
                return 2
            try:
                record = await app.session_host.archive(args.session_id, archived=args.action == "archive")
            except SessionNotFound as exc:
                print(f"wld sessions: {exc}", file=sys.stderr)
                return 1
            print(f"{record.id} {'archived' if record.archived else 'active'}")
            return 0
        records = await app.store.sessions.list_sessions(include_archived=args.all)
        if not records:
            print("no sessions yet; start one with: wld chat")
            return 0
        print(SESSION_ROW.format("SESSION", "UPDATED", "MODEL", "COST", "TITLE").rstrip())
        for record in records:
            when = datetime.fromtimestamp(record.updated_at).strftime("%Y-%m-%d %H:%M")
            title = (record.title or "(untitled)") + (" [archived]" if record.archived else "")
            print(SESSION_ROW.format(record.id, when, record.model, f"${record.cost_usd:.6f}", title))
        return 0
    finally:
        await app.close()


async def cmd_plans(args: argparse.Namespace, settings: Settings) -> int:
    from .app import App

    app = await App.start(settings)
    try:
        plans = await (app.plans.for_project(args.project) if args.project else app.store.plans.list_plans())
        for plan in plans:
            when = datetime.fromtimestamp(plan.updated_at).strftime("%Y-%m-%d %H:%M")
            approved = f" (approved rev {plan.approved_revision})" if plan.approved_revision else ""
            print(f"{plan.id}  {when}  {plan.state:<17} rev {plan.current_revision}{approved}  {plan.title}  [{plan.project_dir}]")
        if not plans:
            print(f"no Plans for the project of {args.project}" if args.project else "no Plans yet; ask the Agent to make a plan")
        return 0
    finally:
        await app.close()


async def cmd_plugins(args: argparse.Namespace, settings: Settings) -> int:
    from .plugin_host import load_plugins

    plugins = load_plugins(settings.plugins.allow, settings.plugins.block)
    for plugin in plugins.loaded:
        print(f"{plugin.name}  ({plugin.source})  hooks: {', '.join(plugin.hooks) or '-'}")
    for name in plugins.blocked:
        print(f"{name}  (not loaded: blocked by [plugins])")
    for failed in plugins.failed:
        print(f"{failed.name}  ({failed.source})  FAILED: {failed.error}")
    return 1 if plugins.failed else 0


async def cmd_db(args: argparse.Namespace, settings: Settings) -> int:
    from .core.store import Store, migrate

    store = Store(settings.db_url)
    try:
        found = await migrate.status(store.engine)
    finally:
        await store.close()
    if args.action == "upgrade":
        await (await Store.open(settings.db_url)).close()
        print(f"already at {migrate.describe(found.head)}" if found.up_to_date else f"upgraded from {migrate.describe(found.current)} to {migrate.describe(found.head)}")
        return 0
    read = ", read from its tables: `wld db upgrade` records it" if found.unstamped else ""
    print(f"database: {store.engine.url.render_as_string(hide_password=True)}")
    print(f"current:  {migrate.describe(found.current)}{read}")
    print(f"head:     {migrate.describe(found.head)}")
    print("up to date" if found.up_to_date else "behind: `wld db upgrade` brings it to head (as every wld command does on start)")
    return 0


async def cmd_mcp_bus(args: argparse.Namespace, settings: Settings) -> int:
    from .runtimes.mcp_bus import relay

    return await relay(args.socket)


async def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from .doctor import run_doctor

    if not args.live:
        return await run_doctor(settings)
    from .live_check import live_findings

    return await run_doctor(settings, live_findings(settings))


class VersionAction(argparse.Action):
    """``wld --version``: the version, and the commit when wld runs from a git checkout (read only when asked)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from .build_info import source_commit

        commit = source_commit()
        print(f"wld {version('runwield-bridge')}" + (f" (commit {commit})" if commit else ""))
        parser.exit()


def _common_options(config_default: object, verbose_default: object) -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="PATH", default=config_default, help="wld.toml to read (default: $WLD_CONFIG)")
    common.add_argument("-v", "--verbose", action="count", default=verbose_default, help="log more (to stderr)")
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wld", description="RunWield Bridge", parents=[_common_options(None, 0)])
    common = _common_options(argparse.SUPPRESS, argparse.SUPPRESS)  # so `wld --config X chat` keeps X
    parser.add_argument("--version", action=VersionAction, help="show the version (and the commit of a git checkout) and exit")
    parser.add_argument("--mode", choices=["acp"], help="`--mode acp` is the same as `wld acp`")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", help="`wld COMMAND -h` shows its options")

    chat = sub.add_parser("chat", parents=[common], help="chat in the terminal with the built-in Session Host")
    chat.add_argument("--session", metavar="ID", help="continue a saved Session")
    chat.add_argument("--cwd", default=None, help="project directory of a new Session (default: here)")
    chat.set_defaults(run=cmd_chat)

    acp = sub.add_parser("acp", parents=[common], help="serve the Session Host over ACP on stdio")
    acp.set_defaults(run=cmd_acp)

    bridge = sub.add_parser("bridge", parents=[common], help="run the configured chat channels (see docs/channels.md)")
    bridge.add_argument("--workspace", action="store_true", help="serve the Workspace (browser) too and print a one-time login link")
    bridge.add_argument("--open", action="store_true", help="with --workspace: open the login link in the web browser too")
    bridge.set_defaults(run=cmd_bridge)

    workspace = sub.add_parser("workspace", parents=[common], help="serve the Workspace (browser) and print a one-time login link")
    workspace.add_argument("--open", action="store_true", help="open the login link in the web browser too")
    workspace.set_defaults(run=cmd_workspace)

    sessions = sub.add_parser("sessions", parents=[common], help="list, archive or unarchive Sessions")
    sessions.add_argument("action", nargs="?", choices=["list", "archive", "unarchive"], default="list", help="what to do (default: list)")
    sessions.add_argument("session_id", nargs="?", metavar="SESSION_ID", help="the Session to archive or unarchive")
    sessions.add_argument("--all", action="store_true", help="include archived Sessions")
    sessions.set_defaults(run=cmd_sessions)

    plans = sub.add_parser("plans", parents=[common], help="list Plans with their state (see docs/plans.md)")
    plans.add_argument("--project", metavar="DIR", help="only the Plans of the project DIR belongs to")
    plans.set_defaults(run=cmd_plans)

    plugins = sub.add_parser("plugins", parents=[common], help="list plugins: loaded, blocked, failed")
    plugins.set_defaults(run=cmd_plugins)

    db = sub.add_parser("db", parents=[common], help="the database's schema version: status, or upgrade to the newest")
    db.add_argument("action", choices=["status", "upgrade"], help="status: the current and newest versions; upgrade: migrate to the newest")
    db.set_defaults(run=cmd_db)
    bus = sub.add_parser("mcp-bus", parents=[common], help="relay an external agent to RunWield's tools (started by RunWield)")
    bus.add_argument("--socket", required=True, metavar="PATH", help="the tool bus's socket")
    bus.set_defaults(run=cmd_mcp_bus)

    doctor = sub.add_parser("doctor", parents=[common], help="check configuration, state and plugins")
    doctor.add_argument("--live", action="store_true", help="also start each [agents.NAME], ask it for an exact reply, and stop it")
    doctor.set_defaults(run=cmd_doctor)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.mode == "acp":
        args.run = cmd_acp
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        settings = load_settings(args.config)
        _setup_logging(settings, args.verbose)
        work = args.run(args, settings)
        code = asyncio.run(until_stopped(work) if args.run in (cmd_acp, cmd_bridge, cmd_workspace) else work)
        sys.stdout.flush()  # a reader that left shows up here, not as a traceback at exit
        return code
    except ConfigError as exc:
        print(f"wld: configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `wld sessions | head`: the reader left; the rest of the output goes nowhere
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        from .core.store.migrate import DatabaseUnavailable, SchemaError  # here: `wld acp` imports no store before initialize

        if not isinstance(exc, (SchemaError, DatabaseUnavailable)):
            raise
        print(f"wld: database error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
