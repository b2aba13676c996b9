"""A Session Host under a low open-file limit: a running turn costs no descriptor of its own, and a prompt that meets
an exhausted resource is refused clearly, logged once rather than with a traceback per request."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from waiting import PATIENCE

HOST = """
import asyncio, errno, json, logging, os, resource, sys
from runwield_bridge.app import App
from runwield_bridge.config import Settings
from runwield_bridge.core.models import ModelInfo, ModelUsage, TextDelta
from runwield_bridge.hookspecs import hookimpl
from runwield_bridge.plugin_host import load_plugins

LIMIT, TURNS, EXHAUST = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "exhaust"
resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
INFO = ModelInfo(id="held", name="Held", description="holds every turn until all are running", context_window=32768)
hold, running = asyncio.Event(), [0]

class Held:
    info = INFO

    async def stream(self, request):
        running[0] += 1
        if running[0] == TURNS:
            hold.set()
        await hold.wait()
        yield TextDelta("done")
        yield ModelUsage(context_tokens=1, cost_usd=0.0)

class Plugin:
    @hookimpl
    def register_models(self, register):
        register(INFO, Held)

async def ignore(event):
    pass

async def prompt_all(app, records):
    prompts = [asyncio.ensure_future(app.session_host.prompt(r.id, "go", ignore)) for r in records]
    results = await asyncio.gather(*prompts, return_exceptions=True)
    return [r.stop_reason if hasattr(r, "stop_reason") else f"{type(r).__name__}: {r}" for r in results]

async def main():
    plugins = load_plugins()
    plugins.register(Plugin(), "held-model")
    app = await App.start(Settings.model_validate({"home": sys.argv[1], "sessions": {"model": "held"}}), plugins)
    records = [await app.session_host.create(sys.argv[1]) for _ in range(TURNS)]
    spare = []
    if EXHAUST:  # every descriptor the process may have is open
        while True:
            try:
                spare.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as exc:
                assert exc.errno == errno.EMFILE
                break
    results = await prompt_all(app, records)
    for fd in spare:
        os.close(fd)
    hold.clear()
    running[0] = TURNS - 1
    again = await prompt_all(app, records[:1])
    await app.close()
    print(json.dumps({"results": results, "again": again}))

asyncio.run(main())
"""


def run_host(home: Path, limit: int, turns: int, exhaust: bool) -> tuple[dict[str, list[str]], str]:
    done = subprocess.run(
        [sys.executable, "-c", HOST, str(home), str(limit), str(turns), "exhaust" if exhaust else "-"],
        capture_output=True, text=True, timeout=PATIENCE * 5,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def test_a_thousand_turns_run_at_once_in_a_process_allowed_256_open_files(tmp_path: Path) -> None:
    outcome, log = run_host(tmp_path, 256, 1000, exhaust=False)
    assert outcome["results"] == ["end_turn"] * 1000, log[-3000:]
    assert outcome["again"] == ["end_turn"]


def test_out_of_open_files_each_prompt_is_refused_clearly_and_logged_once(tmp_path: Path) -> None:
    outcome, log = run_host(tmp_path, 256, 20, exhaust=True)
    refusal = "cannot take this prompt now: this process ran out of a resource (Too many open files); nothing was done"
    assert all(r.startswith("OutOfResources: Session ses_") and refusal in r for r in outcome["results"]), outcome
    assert "Traceback" not in log, log[-3000:]
    assert log.count("refusing prompts: this process ran out of a resource (Too many open files)") == 1, log
    assert outcome["again"] == ["end_turn"], "with descriptors free again, a prompt runs"
    assert log.count("prompts are taken again; 20 were refused for want of a resource") == 1, log
