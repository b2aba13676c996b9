"""Benchmark the writer locks on SQLite (`core/locks.py`): the cost of taking and letting go of one lock while many
others are held by the same process, with the locks on one file or spread over `SHARDS` files.

    python bench/lock_files.py                       # 2,000 / 10,000 / 20,000 held, one file and 16
    python bench/lock_files.py --held 100000 --files 16

The kernel keeps a file's byte-range locks in one list and walks it to take one, so the cost grows with the locks
held on that file.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from runwield_bridge.core import locks

ROUNDS, SAMPLES = 10, 100


async def cost(held: int, files: int) -> float:
    """Microseconds to take and let go of one lock with ``held`` others held, over ``files`` lock files: the best of
    `ROUNDS` rounds, since on a shared machine a round is as often slowed by others as not."""
    locks.SHARDS = files
    with tempfile.TemporaryDirectory(prefix="wld-locks-") as directory:
        writers = locks.FileLocks(Path(directory))
        for i in range(held):
            assert await writers(f"ses_held_{i}").try_acquire()
        extra = [writers(f"ses_extra_{i}") for i in range(SAMPLES)]
        rounds = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            for lock in extra:
                assert await lock.try_acquire()
                await lock.release()
            rounds.append(time.perf_counter() - started)
        writers.close()
    return min(rounds) / SAMPLES * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--held", type=int, nargs="+", default=[2000, 10000, 20000])
    parser.add_argument("--files", type=int, nargs="+", default=[1, locks.SHARDS])
    args = parser.parse_args()
    print("| locks held | " + " | ".join(f"{n} file{'s' if n > 1 else ''} (µs)" for n in args.files) + " |")
    print("|---:|" + "---:|" * len(args.files))
    for held in args.held:
        row = [f"{asyncio.run(cost(held, files)):,.1f}" for files in args.files]
        print(f"| {held:,} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
