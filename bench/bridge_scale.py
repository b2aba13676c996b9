"""Benchmark the Bridge at scale in one process, against one agent process per conversation (OpenAB's model).

    python bench/bridge_scale.py                 # 1, 100, 1000 and 10000 conversations
    python bench/bridge_scale.py --sizes 1 100   # fewer
    python bench/bridge_scale.py --sizes 100000 --no-active-heap   # without the traced second burst

For each size N, a fresh process runs the real Bridge (in-process Session Host agent over an
in-memory ACP pipe, SQLite store in a temporary WLD_HOME) with a channel that renders replies
through the standard streaming view but sends nowhere, and measures:

- memory per bound idle conversation: RSS growth after N conversations each had one turn, over N
  (everything: the Bridge's state, the Session Host's live session, SQLite's cache);
- memory per active turn: Python heap growth (tracemalloc) while all N conversations have a turn
  in flight, over the turns in flight (RSS cannot show it: the turns reuse memory the idle phase freed);
- the process's CPU time to bind the N conversations and for the burst (on a shared machine steadier than the
  latencies, which wait for the CPU);
- added latency from a platform update to ``session/prompt`` arriving at the agent: for one
  message on a bound conversation among N (p50 of 50), and for messages arriving 500 at once
  (all N at once below 500) while the earlier ones' turns stay in flight (p50, p99).

The comparison runs ``wld acp`` and the official TypeScript SDK echo agent (bench/echo_agent.mjs)
once each, reads their RSS after initialize and session/new, and multiplies by N.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path
from typing import Any

from databases import fresh_database  # bench/, this script's directory

REPO = Path(__file__).resolve().parent.parent
WLD = str(Path(sys.executable).parent / "wld")
BATCH = 500
SINGLE_SAMPLES = 50


def progress(what: str) -> None:
    """One line on stderr saying which phase a long run is in (and the process, for a profiler to attach to)."""
    print(f"{time.strftime('%H:%M:%S')} pid {os.getpid()}: {what}", file=sys.stderr, flush=True)


def rss_kib(pid: int | str = "self") -> int:
    """Resident set size of a process, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


# -- one size, in a fresh process ---------------------------------------------


def bench_plugin(hold: asyncio.Event, holding: list[int]) -> Any:
    """A model that answers at once, or (for prompts saying "hold") streams one chunk and waits for ``hold``.

    ``holding[0]`` counts the turns waiting on ``hold``.
    """
    from runwield_bridge.core.models import ModelInfo, ModelUsage, TextDelta
    from runwield_bridge.hookspecs import hookimpl

    info = ModelInfo(id="bench", name="Bench", description="answers at once, or holds", context_window=32768)

    class HoldingModel:
        def __init__(self) -> None:
            self.info = info

        async def stream(self, request: Any) -> AsyncIterator[Any]:
            if "hold" in request.messages[-1].text:
                yield TextDelta("working…")
                holding[0] += 1
                await hold.wait()
            yield TextDelta("done")
            yield ModelUsage(context_tokens=1, cost_usd=0.0)

    class Plugin:
        @hookimpl
        def register_models(self, register: Any) -> None:
            register(info, HoldingModel)

    return Plugin()


async def measure(size: int, database_server: str | None = None, active_heap: bool = True) -> dict[str, Any]:
    async with fresh_database(database_server) as database:
        return await measure_on(size, database, active_heap)


async def measure_on(size: int, database: dict[str, str], active_heap: bool = True) -> dict[str, Any]:
    from runwield_bridge.acp import session_methods
    from runwield_bridge.app import InProcessAgent
    from runwield_bridge.app import App
    from runwield_bridge.long_lived_heap import freeze_long_lived_heap
    from runwield_bridge.bridge.bridge import Bridge
    from runwield_bridge.bridge.inbox import ChannelInbox
    from runwield_bridge.channels.budget import ChatBudget
    from runwield_bridge.channels.types import Capabilities, Conversation, IncomingMessage, MessageRef, Sender
    from runwield_bridge.channels.settings import ChannelSettings
    from runwield_bridge.channels.streaming import StreamingReply
    from runwield_bridge.config import Settings
    from runwield_bridge.plugin_host import load_plugins

    arrived: dict[str, float] = {}
    arrived_cpu: dict[str, float] = {}  # the process's CPU time then
    sent_cpu: dict[str, float] = {}  # by conversation
    original_prompt = session_methods.SessionMethods.prompt

    async def timed_prompt(self: Any, request: Any) -> Any:
        arrived[request.session_id] = time.perf_counter()
        arrived_cpu[request.session_id] = time.process_time()
        return await original_prompt(self, request)

    session_methods.SessionMethods.prompt = timed_prompt  # type: ignore[method-assign]

    class NullChannel:
        """Renders replies through the standard streaming view, and sends them nowhere."""

        name = "bench"
        capabilities = Capabilities(max_message_length=4096)
        settings = ChannelSettings(allowed_users=["u"], edit_interval=1.0)

        async def send(self, conversation: Any, text: str, buttons: Any = ()) -> Any:
            return MessageRef(conversation, "1")

        async def edit(self, message: Any, text: str, buttons: Any = ()) -> None:
            pass

        async def typing(self, conversation: Any) -> None:
            pass

        async def set_commands(self, conversation: Any, commands: Any) -> None:
            pass

        def open_reply(self, conversation: Any) -> StreamingReply:
            return StreamingReply(self, conversation, ChatBudget(rate=1.0, burst=5), self.settings.edit_interval)

        async def close(self) -> None:
            pass

    hold = asyncio.Event()
    holding = [0]
    plugins = load_plugins()
    plugins.register(bench_plugin(hold, holding), "bench-model")
    home = tempfile.mkdtemp(prefix="wld-bench-")
    settings = Settings.model_validate({"home": home, "sessions": {"model": "bench"}, **database})
    app = await App.start(settings, plugins)
    freeze_long_lived_heap()  # as `wld bridge` does once started
    channel = NullChannel()
    bindings = app.store.bridge
    bridge = Bridge({"runwield": InProcessAgent(app.session_host)}, bindings)
    inbox = ChannelInbox(bridge, channel)
    person = Sender("u", "user")
    conversations = [Conversation("bench", str(i)) for i in range(size)]

    async def send(conversation: Conversation, text: str) -> float:
        """Send one message; returns when it was handed to the Bridge."""
        sent = time.perf_counter()
        sent_cpu[conversation.key] = time.process_time()
        turn = await inbox.receive_message(IncomingMessage(conversation, person, text))
        assert turn is not None, "the bench message did not start a turn"
        turns.append(turn)
        return sent

    async def in_batches(texts: str) -> dict[str, float]:
        sent: dict[str, float] = {}
        for start in range(0, size, BATCH):
            batch = conversations[start : start + BATCH]
            times = await asyncio.gather(*(send(c, texts) for c in batch))
            sent.update({c.key: t for c, t in zip(batch, times)})
        return sent

    async def session_of(conversation: Conversation) -> str:
        binding = await bindings.get_binding(conversation.key)
        assert binding is not None
        return binding.acp_session_id

    turns: list[asyncio.Task[None]] = []
    await send(Conversation("bench", "warm-up"), "warm up")  # load every code path once
    await asyncio.gather(*turns)
    turns.clear()
    gc.collect()
    baseline = rss_kib()

    progress(f"binding {size} conversations")
    started, cpu_started = time.perf_counter(), time.process_time()
    await in_batches("hello")
    await asyncio.gather(*turns)
    bind_seconds, bind_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    turns.clear()
    gc.collect()
    idle = rss_kib()
    sessions = {c.key: await session_of(c) for c in conversations}

    single: list[float] = []
    for conversation in conversations[: min(size, SINGLE_SAMPLES)] * max(1, SINGLE_SAMPLES // size):
        sent = await send(conversation, "again")
        await asyncio.gather(*turns)
        turns.clear()
        single.append(arrived[sessions[conversation.key]] - sent)

    async def all_in_flight() -> tuple[list[float], list[float]]:
        """Give every conversation a held turn, BATCH messages at once; the latency of each message, in wall-clock
        time and in the process's CPU time (what it would be on an otherwise idle machine, were nothing waited for)."""
        latencies: list[float] = []
        cpu_latencies: list[float] = []
        for start in range(0, size, BATCH):
            wave = conversations[start : start + BATCH]
            sends = await asyncio.gather(*(send(c, "hold on") for c in wave))
            while not all(arrived.get(sessions[c.key], 0) >= sent for c, sent in zip(wave, sends)):
                await asyncio.sleep(0.01)
            latencies.extend(arrived[sessions[c.key]] - sent for c, sent in zip(wave, sends))
            cpu_latencies.extend(arrived_cpu[sessions[c.key]] - sent_cpu[c.key] for c in wave)
            while holding[0] + sum(turn.done() for turn in turns) < len(turns):  # holding, or ended (refused by the host)
                await asyncio.sleep(0.05)
        return sorted(latencies), sorted(cpu_latencies)

    async def release() -> None:
        hold.set()
        await asyncio.gather(*turns)
        turns.clear()
        hold.clear()
        holding[0] = 0

    progress(f"bound in {bind_seconds:.1f} s; the burst")
    cpu_started = time.process_time()
    burst, burst_on_cpu = await all_in_flight()  # timed without tracing
    burst_cpu = time.process_time() - cpu_started
    progress("burst done")
    active_rss = rss_kib()
    active_turns, failed_turns = holding[0], sum(turn.done() for turn in turns)
    await release()
    traced = None
    if active_heap:  # the same again, traced
        gc.collect()
        tracemalloc.start()
        traced_before = tracemalloc.get_traced_memory()[0]
        await all_in_flight()
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] - traced_before
        active_turns, failed_turns = holding[0], sum(turn.done() for turn in turns)
        tracemalloc.stop()
        await release()

    await bridge.close()
    await app.close()
    shutil.rmtree(home, ignore_errors=True)
    return {
        "size": size,
        "baseline_kib": baseline,
        "idle_kib": idle,
        "active_kib": active_rss,
        "per_idle_kib": (idle - baseline) / size,
        "per_active_kib": None if traced is None else traced / 1024 / max(active_turns, 1),
        "active_turns": active_turns,
        "failed_turns": failed_turns,
        "single_p50_ms": statistics.median(single) * 1000,
        "burst_p50_ms": statistics.median(burst) * 1000,
        "burst_p99_ms": p99(burst) * 1000,
        "burst_cpu_p50_ms": statistics.median(burst_on_cpu) * 1000,
        "burst_cpu_p99_ms": p99(burst_on_cpu) * 1000,
        "bind_seconds": bind_seconds,
        "bind_cpu_seconds": bind_cpu,
        "burst_cpu_seconds": burst_cpu,
    }


# -- one agent process per conversation ------------------------------------------


def process_rss(argv: list[str]) -> int:
    """RSS of an ACP agent process after initialize and session/new (what each conversation costs OpenAB)."""
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(REPO), "mcpServers": []}},
    ]
    home = tempfile.mkdtemp(prefix="wld-bench-agent-")
    env = {**os.environ, "WLD_HOME": home}
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for message in messages:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
            json.loads(proc.stdout.readline())
        time.sleep(0.5)
        return rss_kib(proc.pid)
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(home, ignore_errors=True)


def p99(values: list[float]) -> float:
    return values[min(len(values) - 1, int(len(values) * 0.99))]


def per_active(result: dict[str, Any]) -> str:
    return "not measured" if result["per_active_kib"] is None else f"{result['per_active_kib']:.1f} KiB"


def mib(kib: float) -> str:
    return f"{kib / 1024:,.1f} MiB"


def table(results: list[dict[str, Any]], wld_acp: int, echo: int | None) -> str:
    rows = [
        "| conversations | bridge RSS, all idle | per idle conversation | per active turn | latency to `session/prompt`, one message (p50) | 500 at once (p50 / p99) | 500 at once, in CPU time (p50 / p99) | binding all (wall / CPU) | one `wld acp` per conversation | ratio | failed turns |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        process_model = r["size"] * wld_acp
        rows.append(
            f"| {r['size']:,} | {mib(r['idle_kib'])} | {r['per_idle_kib']:.1f} KiB | {per_active(r)} "
            f"| {r['single_p50_ms']:.2f} ms | {r['burst_p50_ms']:.1f} / {r['burst_p99_ms']:.1f} ms "
            f"| {r['burst_cpu_p50_ms']:.1f} / {r['burst_cpu_p99_ms']:.1f} ms | {r['bind_seconds']:,.0f} / {r['bind_cpu_seconds']:,.0f} s "
            f"| {mib(process_model)} | {process_model / r['idle_kib']:,.1f}× | {r['failed_turns']:,} |"
        )
    rows.append("")
    for r in results:
        if r["failed_turns"]:
            rows.append(
                f"Of {r['size']:,} turns started, {r['failed_turns']:,} ended with an error from the Session Host; "
                f"memory per active turn is over the {r['active_turns']:,} that ran."
            )
    rows.append(f"One `wld acp` process after initialize and session/new: {mib(wld_acp)} RSS.")
    if echo is not None:
        rows.append(f"One official-SDK echo agent (node bench/echo_agent.mjs) likewise: {mib(echo)} RSS.")
    return "\n".join(rows)


def machine() -> str:
    """nproc, the CPU model and the RAM, from /proc (Linux)."""
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")), platform.machine())
    ram = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal:"))
    return f"{os.cpu_count()} CPUs ({model}) · {ram / 1024 / 1024:.1f} GiB RAM"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 100, 1000, 10000])
    parser.add_argument(
        "--database-server",
        metavar="URL",
        help="a PostgreSQL server (postgresql+asyncpg://user@host:port/db): each size runs on a new database of its own"
        " there, dropped afterwards; default: SQLite in the temporary WLD_HOME",
    )
    parser.add_argument(
        "--no-active-heap", action="store_true",
        help="skip the second burst, traced for the heap per active turn (at 100,000 conversations it takes longer than the rest)",
    )
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: measure one size, print JSON
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(asyncio.run(measure(args.one, args.database_server, not args.no_active_heap))))
        return
    started, load_before = time.strftime("%H:%M", time.gmtime()), f"{os.getloadavg()[0]:.1f}"
    results = []
    server = ["--database-server", args.database_server] if args.database_server else []
    server += ["--no-active-heap"] if args.no_active_heap else []
    for size in args.sizes:
        command = [sys.executable, __file__, "--one", str(size), *server]
        out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, cwd=REPO)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"measured {size} conversations", file=sys.stderr)
    wld_acp = process_rss([WLD, "acp"])
    node = shutil.which("node")
    echo = process_rss([node, "bench/echo_agent.mjs"]) if node else None
    print(f"{date.today()}, {started} to {time.strftime('%H:%M', time.gmtime())} UTC · {machine()} · Python {platform.python_version()}")
    print(f"load average {load_before} at the start, {os.getloadavg()[0]:.1f} at the end")
    print(f"store: PostgreSQL, a new database on {args.database_server}" if args.database_server else "store: SQLite")
    print()
    print(table(results, wld_acp, echo))


if __name__ == "__main__":
    main()
