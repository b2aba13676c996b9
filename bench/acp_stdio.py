"""Benchmark ACP agents over stdio: spawn-to-initialize latency and CPU, sequential prompt throughput and CPU per turn.

    python bench/acp_stdio.py --agent "wld acp" --spawns 10 --prompts 200

Every agent is measured in the same run next to two official-SDK echo agents: the TypeScript
SDK's (the baseline, first row) and the Python SDK's (second row, the one `wld acp` is held to),
with the same lean client: tests/acp_wire.py with schema validation off unless --validate.
Spawns are interleaved across agents so machine drift hits them alike. Agents run in the repo
root with this interpreter's bin directory (the virtualenv's, where `wld` lives) first on PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))
from acp_wire import WireClient  # noqa: E402

BASELINE = "node bench/echo_agent.mjs"
PYTHON_BASELINE = f"{sys.executable} bench/echo_agent.py"
AGENT_ENV = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
WARMUP_PROMPTS = 10
INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": {},
    "clientInfo": {"name": "acp-stdio-bench", "version": "1"},
}


@dataclass
class Result:
    """Measurements of one agent command."""

    agent: str
    initialize_s: list[float] = field(default_factory=list)
    initialize_cpu_s: list[float] = field(default_factory=list)  # the agent's CPU time when its initialize answer arrived
    prompts_per_s: float | None = None
    cpu_ms_per_prompt: float | None = None  # the agent process's user + system CPU time per timed turn
    error: str | None = None


async def time_to_initialize(argv: list[str], validate: bool) -> tuple[float, float]:
    """Seconds from starting the process to receiving its initialize result, and the CPU seconds it had used by then
    (which a busy machine distorts much less)."""
    start = time.perf_counter()
    async with WireClient.spawn(argv, env=AGENT_ENV, cwd=REPO_ROOT, validate=validate) as client:
        await client.call("initialize", INITIALIZE)
        return time.perf_counter() - start, cpu_seconds(client.proc.pid)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process (all its threads) has used, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def prompt_throughput(argv: list[str], prompts: int, validate: bool) -> tuple[float, float]:
    """Sequential session/prompt turns per second on one session of one connection, and the agent's CPU
    milliseconds per turn (which a busy machine distorts much less than wall time)."""
    async with WireClient.spawn(argv, env=AGENT_ENV, cwd=REPO_ROOT, validate=validate) as client:
        await client.call("initialize", INITIALIZE)
        session = await client.call("session/new", {"cwd": str(REPO_ROOT), "mcpServers": []})

        async def turn(i: int) -> None:
            params = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": f"ping {i}"}]}
            await client.call("session/prompt", params)

        for i in range(WARMUP_PROMPTS):
            await turn(i)
        cpu, start = cpu_seconds(client.proc.pid), time.perf_counter()
        for i in range(prompts):
            await turn(i)
        elapsed, used = time.perf_counter() - start, cpu_seconds(client.proc.pid) - cpu
        return prompts / elapsed, used * 1000 / prompts


async def measure(agents: list[str], spawns: int, prompts: int, validate: bool) -> list[Result]:
    """Measure every agent; a failing agent gets an error instead of numbers."""
    results = [Result(agent) for agent in agents]
    for _ in range(spawns):
        for result in results:
            if result.error is None:
                try:
                    wall, cpu = await time_to_initialize(shlex.split(result.agent), validate)
                    result.initialize_s.append(wall)
                    result.initialize_cpu_s.append(cpu)
                except Exception as error:
                    result.error = f"{type(error).__name__}: {error}"
    for result in results:
        if result.error is None:
            try:
                result.prompts_per_s, result.cpu_ms_per_prompt = await prompt_throughput(shlex.split(result.agent), prompts, validate)
            except Exception as error:
                result.error = f"{type(error).__name__}: {error}"
    return results


def ratio(value: float | None, baseline: float | None) -> str:
    """value / baseline formatted as a multiplier, or n/a."""
    return f"{value / baseline:.2f}×" if value is not None and baseline else "n/a"


def table(results: list[Result]) -> str:
    """Markdown table of the results with ratios to the TypeScript (first row) and Python (second row) echo agents."""
    typescript, python = results[0], results[1]

    def init_of(result: Result) -> float | None:
        return statistics.median(result.initialize_s) if result.error is None else None

    def init_cpu_of(result: Result) -> float | None:
        return statistics.median(result.initialize_cpu_s) if result.error is None else None

    lines = [
        "| agent | initialize median (ms) | vs TS echo | vs Python echo (lower is better) | CPU to initialize (ms) | vs Python echo "
        "| prompts/s | vs TS echo | vs Python echo (higher is better) | agent CPU per turn (ms) | vs Python echo |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for result in results:
        if result.error is not None:
            reason = " ".join(result.error.split())[:160].replace("|", "\\|")
            lines.append(f"| `{result.agent}` | failed: {reason} | | | | | | | | | |")
            continue
        init, init_cpu = init_of(result), init_cpu_of(result)
        assert init is not None and init_cpu is not None
        lines.append(
            f"| `{result.agent}` | {init * 1000:.1f} | {ratio(init, init_of(typescript))} | {ratio(init, init_of(python))} "
            f"| {init_cpu * 1000:.0f} | {ratio(init_cpu, init_cpu_of(python))} "
            f"| {result.prompts_per_s:.0f} | {ratio(result.prompts_per_s, typescript.prompts_per_s)} "
            f"| {ratio(result.prompts_per_s, python.prompts_per_s)} "
            f"| {result.cpu_ms_per_prompt:.2f} | {ratio(result.cpu_ms_per_prompt, python.cpu_ms_per_prompt)} |"
        )
    return "\n".join(lines)


def main() -> int:
    """Parse arguments, run the benchmark, print the table; exit 1 if any agent failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", action="append", default=[], help="agent command line (repeatable)")
    parser.add_argument("--baseline", default=BASELINE, help=f"reference agent (default: {BASELINE})")
    parser.add_argument("--python-baseline", default=PYTHON_BASELINE, help="second reference agent (default: the Python SDK's echo agent)")
    parser.add_argument("--spawns", type=int, default=10, help="spawns per agent for the initialize median")
    parser.add_argument("--prompts", type=int, default=200, help="timed sequential prompts per agent")
    parser.add_argument("--validate", action="store_true", help="validate every message (slower client)")
    args = parser.parse_args()
    references = [args.baseline, args.python_baseline]
    agents = [*references, *(agent for agent in args.agent if agent not in references)]
    results = asyncio.run(measure(agents, args.spawns, args.prompts, args.validate))
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip() or "?"
    print(f"spawns={args.spawns} prompts={args.prompts} (+{WARMUP_PROMPTS} warm-up) "
          f"validation={'on' if args.validate else 'off'} python={platform.python_version()} node={node}\n")
    print(table(results))
    for result in results:
        if result.error is not None:
            print(f"\n{result.agent} failed:\n{result.error}", file=sys.stderr)
    return 1 if any(result.error for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
