"""Benchmark what a native Session sends its model as it grows: tokens per request and time per turn at turns 10, 100
and 1,000, with compaction (a model with a small window) next to a window so large that it is never reached (whose
requests grow with every turn, so that Session runs ``--growing-turns``).

    python bench/long_context.py [--turns 1000] [--window 4096] [--growing-turns 300]

Each turn is a prompt of about 200 tokens against a local fake OpenAI-compatible server (tests/fakes/small_window.py)
that answers in a word, through the real pydantic-ai client and the Session Host in this process, on SQLite. Tokens
are the server's count (a token is four bytes of the request body); a turn's time runs from the prompt to its
settling (wall clock, and this process's CPU time, the fake server's included), the median of the ten turns ending at
the one named.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))
from fakes.small_window import SmallWindowFake, is_summary_request, tokens  # noqa: E402

from runwield_bridge.app import App  # noqa: E402
from runwield_bridge.config import load_settings  # noqa: E402
from runwield_bridge.core.events import TurnSettled  # noqa: E402

MARKS = (10, 100, 1000)
NEVER_REACHED = 100_000_000


async def ignore(event: object) -> None:
    return None


Row = tuple[int, float, float, int]
"""One turn: the tokens of its model request, its milliseconds and CPU milliseconds, and its summary requests."""


async def run(turns: int, window: int) -> list[Row]:
    """The rows of ``turns`` turns of a Session on a model whose ``context_window`` is ``window``."""
    rows = []
    async with SmallWindowFake(NEVER_REACHED) as fake:
        with tempfile.TemporaryDirectory() as home:
            config = Path(home) / "wld.toml"
            config.write_text(
                f'home = "{home}"\n[sessions]\nmodel = "small"\n[models.small]\nprovider = "openai"\nmodel = "small"\n'
                f'base_url = "{fake.base_url}"\napi_key = "x"\ncontext_window = {window}\n'
            )
            app = await App.start(load_settings(config))
            try:
                session = await app.session_host.create(home)
                for n in range(1, turns + 1):
                    began, cpu = time.perf_counter(), time.process_time()
                    settled = await app.session_host.prompt(session.id, f"note {n}: " + "word " * 160, ignore)
                    elapsed, used = (time.perf_counter() - began) * 1000, (time.process_time() - cpu) * 1000
                    assert isinstance(settled, TurnSettled) and settled.stop_reason == "end_turn", settled
                    sent = fake.bodies  # this turn's requests: the list is emptied after each turn
                    rows.append((tokens(sent[-1]), elapsed, used, sum(map(is_summary_request, sent))))
                    fake.clear_calls()  # what the fake recorded is not needed again: the memory is
                    del fake.bodies[:]
            finally:
                await app.close()
    return rows


def at(rows: list[Row], turn: int) -> str:
    """The tokens sent at ``turn``, and the median milliseconds and CPU milliseconds of the ten turns ending there."""
    if turn > len(rows):
        return "not run | | "
    ten = rows[max(0, turn - 10) : turn]
    return f"{rows[turn - 1][0]:,} | {statistics.median(r[1] for r in ten):.1f} | {statistics.median(r[2] for r in ten):.1f}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--window", type=int, default=4096, help="the small model's context_window")
    parser.add_argument("--growing-turns", type=int, default=300, help="turns of the Session whose window is never reached")
    args = parser.parse_args()
    compacted = await run(args.turns, args.window)
    growing = await run(min(args.growing_turns, args.turns), NEVER_REACHED)
    print(f"turns={args.turns} window={args.window} python={sys.version.split()[0]}\n")
    print(f"| turn | window {args.window:,}: tokens sent | ms | CPU ms | window never reached: tokens sent | ms | CPU ms |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for mark in (mark for mark in MARKS if mark <= args.turns):
        print(f"| {mark:,} | {at(compacted, mark)} | {at(growing, mark)} |")
    count = sum(row[3] for row in compacted)
    print(f"\ncompactions (one summary request each) in {args.turns:,} turns: {count}; tokens sent at most: {max(r[0] for r in compacted):,}")


if __name__ == "__main__":
    asyncio.run(main())
