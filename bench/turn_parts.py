"""What a `wld acp` turn's CPU goes to: the same turns with parts of the turn left out, beside the Python SDK echo agent.

    python bench/turn_parts.py --prompts 1000 --rounds 3

Each variant is `wld acp` of this checkout, started through this script with some parts of a turn replaced by
nothing: `usage` (the offline scripted model's usage report, which counts the words of the whole conversation, becomes
a constant), `store` (the turn's two transactions are kept in memory instead, so the model's history still grows as
it would), `updates` (no `session/update` notification is sent). None of these is a way to run wld: they show what is
left when a part is gone, and so what 0.5x the echo agent's prompts/s would leave a turn. Rounds interleave the
variants so that drift on a shared machine hits them alike; the table gives each one's median.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import json
import platform
import statistics
import sys
from typing import Any

from acp_stdio import PYTHON_BASELINE, prompt_throughput  # bench/, this script's directory

VARIANTS = ((), ("usage",), ("usage", "store"), ("usage", "store", "updates"))


def constant_usage() -> None:
    """The scripted model reports the same usage every turn, without counting the conversation."""
    from runwield_bridge.core.models import ModelUsage
    from runwield_bridge.plugins.scripted import ScriptedModel

    usage = ModelUsage(context_tokens=10, cost_usd=1e-5)
    ScriptedModel._usage = lambda self, request, reply: usage  # type: ignore[method-assign]


def turns_in_memory() -> None:
    """A turn's first and last transaction keep their entries in a list: no database write, the same history."""
    from runwield_bridge.core.records import TranscriptEntry
    from runwield_bridge.core.store.sessions import SessionRepository

    kept: dict[str, list[TranscriptEntry]] = {}  # each Session's entries, by id
    sessions: dict[str, Any] = {}
    ids = itertools.count(1)

    def keep(session_id: str, entries: list[tuple[str, str, dict[str, Any]]]) -> None:
        for kind, text, data in entries:
            kept[session_id].append(TranscriptEntry(id=next(ids), session_id=session_id, kind=kind, text=text, data=json.dumps(data)))

    async def begin_turn(self: SessionRepository, session_id: str, turn_id: str, entries: Any, interrupted: Any, *, after: int = 0, title: str | None = None) -> Any:
        if session_id not in sessions:
            sessions[session_id], kept[session_id] = await self.get_session(session_id), []
        entries_of = kept[session_id]
        before = entries_of[bisect.bisect_right(entries_of, after, key=lambda entry: entry.id or 0) :]
        keep(session_id, entries)
        return sessions[session_id], before

    async def end_turn(self: SessionRepository, session_id: str, turn_id: str, stop_reason: str, entries: Any, **changes: Any) -> None:
        keep(session_id, entries)

    SessionRepository.begin_turn = begin_turn  # type: ignore[method-assign]
    SessionRepository.end_turn = end_turn  # type: ignore[assignment]


def no_updates() -> None:
    """``session/update`` notifications go nowhere."""
    from runwield_bridge.acp.session_methods import SessionMethods

    async def send_update(self: SessionMethods, session_id: str, update: Any) -> None:
        return None

    SessionMethods.send_update = send_update  # type: ignore[method-assign]


LEAVE_OUT = {"usage": constant_usage, "store": turns_in_memory, "updates": no_updates}


def serve(parts: list[str]) -> int:
    """Run `wld acp` with ``parts`` left out."""
    for part in parts:
        LEAVE_OUT[part]()
    from runwield_bridge.cli import main

    return main(["acp"])


def name(parts: tuple[str, ...]) -> str:
    return "`wld acp`" + "".join(f" − {part}" for part in parts)


async def measure(prompts: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Each variant's (prompts/s, CPU ms per turn) in each round, the Python SDK echo agent's first."""
    agents = {"Python SDK echo agent": PYTHON_BASELINE.split()}
    agents |= {name(parts): [sys.executable, __file__, "--serve", ",".join(parts)] for parts in VARIANTS}
    results: dict[str, list[tuple[float, float]]] = {label: [] for label in agents}
    for _ in range(rounds):
        for label, argv in agents.items():
            results[label].append(await prompt_throughput(argv, prompts, validate=False))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=1000, help="timed sequential prompts per agent and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # the agent side: wld acp with these parts left out
    args = parser.parse_args()
    if args.serve is not None:
        return serve([part for part in args.serve.split(",") if part])
    results = asyncio.run(measure(args.prompts, args.rounds))
    echo_rate, echo_cpu = (statistics.median(column) for column in zip(*results["Python SDK echo agent"]))
    print(f"prompts={args.prompts} rounds={args.rounds} python={platform.python_version()}\n")
    print("| agent | prompts/s (median) | vs Python echo | agent CPU per turn (ms, median) | vs Python echo |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, runs in results.items():
        rate, cpu = (statistics.median(column) for column in zip(*runs))
        print(f"| {label} | {rate:.0f} | {rate / echo_rate:.2f}× | {cpu:.2f} | {cpu / echo_cpu:.2f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
