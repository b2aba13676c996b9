"""The native runtime's coding tools in a real git repository, called by a fake OpenAI-compatible model:
asking before changes and commands, [tools] rules, grants that outlive a restart, the path rule, timeouts."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from fakes.openai_api import OpenAIFake, Reply, ToolCall
from test_providers import model_entry
from waiting import PATIENCE

from runwield_bridge.app import App
from runwield_bridge.config import load_settings
from runwield_bridge.core import coding_tools
from runwield_bridge.core.events import Event, ToolProgress, TurnSettled
from runwield_bridge.core.interactions import Outcome, PendingQuestion
from runwield_bridge.core.tool_gate import Change, ToolRules

ORIGINAL = "def greet():\n    return 'hello'\n"


@pytest_asyncio.fixture
async def model() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake(model="coder") as fake:
        yield fake


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one committed file, src/app.py."""
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(ORIGINAL)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run([*git, *args], check=True)
    return root


def git_status(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], check=True, capture_output=True, text=True).stdout


class Person:
    """Answers the permission questions in place (a form), in order, and keeps them."""

    def __init__(self) -> None:
        self.answers: list[str] = []
        self.asked: list[PendingQuestion] = []

    async def __call__(self, pending: PendingQuestion) -> Outcome:
        self.asked.append(pending)
        assert self.answers, f"an unexpected question: {pending.question.prompt}"
        return Outcome.answer(self.answers.pop(0))


class Coder:
    """An app whose Session works in ``repo`` with the fake model; ``call`` makes the model call one tool."""

    def __init__(self, app: App, session_id: str, model: OpenAIFake, person: Person) -> None:
        self.app, self.session_id, self.model, self.person = app, session_id, model, person

    async def call(self, name: str, arguments: dict[str, Any], on_event: Callable[[Event], None] | None = None) -> list[Event]:
        """One turn in which the model calls ``name`` once, then says done; the turn's events."""
        self.model.queue(Reply(tool_calls=(ToolCall(f"call_{name}", name, arguments),)), Reply(text=("done",)))
        events: list[Event] = []

        async def emit(event: Event) -> None:
            events.append(event)
            if on_event is not None:
                on_event(event)

        settled = await self.app.session_host.prompt(self.session_id, f"please use {name}", emit, forms=self.person)
        assert isinstance(settled, TurnSettled) and settled.stop_reason == "end_turn"
        return events


def tools_toml(**keys: Any) -> str:
    lines = [f"{key} = {value!r}".replace("'", '"') for key, value in keys.items()]
    return "\n[tools]\n" + "\n".join(lines) + "\n" if lines else ""


@contextlib.asynccontextmanager
async def coder(tmp_path: Path, repo: Path, model: OpenAIFake, session_id: str | None = None, **tools: Any) -> AsyncIterator[Coder]:
    """Start the app (``tools`` become its [tools] table) with a Session in ``repo`` (or reopen ``session_id``)."""
    (tmp_path / "wld.toml").write_text(model_entry("openai", "coder", model.base_url) + tools_toml(**tools))
    app = await App.start(load_settings(tmp_path / "wld.toml"))
    try:
        sid = session_id or (await app.session_host.create(str(repo))).id
        yield Coder(app, sid, model, Person())
    finally:
        await app.close()


def finished(events: list[Event]) -> ToolProgress:
    [done] = [e for e in events if isinstance(e, ToolProgress) and e.status in ("completed", "failed")]
    return done


def tool_result(model: OpenAIFake) -> str:
    """What the model was told the tool returned (the last tool message of the latest request)."""
    messages = model.calls_to("chat.completions")[-1]["messages"]
    return [m for m in messages if m["role"] == "tool"][-1]["content"]


EDIT = {"path": "src/app.py", "old": "'hello'", "new": "'hello, world'"}


async def test_an_edit_is_asked_rejected_then_allowed_once(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    async with coder(tmp_path, repo, model) as c:
        c.person.answers = ["reject"]
        rejected = finished(await c.call("edit_file", EDIT))
        [question] = c.person.asked
        assert question.question.prompt == "Change the file `src/app.py`?"
        assert [o.label for o in question.question.options] == ["Allow once", "Always for this Session", "Reject"]
        assert question.tool_call_id == "call_edit_file", "the question belongs to the tool call"
        assert rejected.status == "failed" and "src/app.py was not changed: refused: the user rejected it" in rejected.output
        assert git_status(repo) == "", "nothing changed"

        c.person.answers = ["once"]
        allowed = finished(await c.call("edit_file", EDIT))
        assert allowed.status == "completed" and tool_result(model) == "Edited src/app.py"
        assert (repo / "src" / "app.py").read_text() == "def greet():\n    return 'hello, world'\n"
        assert git_status(repo) == " M src/app.py\n"

        c.person.answers = ["once"]
        again = finished(await c.call("edit_file", EDIT))
        assert len(c.person.asked) == 2, "Allow once is for one change: the next one asks again — and fails before asking"
        assert "the old text was found 0 times in src/app.py; it must be found exactly once" in again.output


async def test_an_edit_whose_old_text_is_not_unique_says_how_often_it_was_found(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    async with coder(tmp_path, repo, model) as c:
        done = finished(await c.call("edit_file", {"path": "src/app.py", "old": "'", "new": '"'}))
    assert done.status == "failed" and "the old text was found 2 times in src/app.py" in done.output
    assert c.person.asked == [] and git_status(repo) == "", "nothing is asked for an edit that cannot be made"


async def test_search_finds_files_by_name_and_lines_by_content(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    (repo / "src" / "util.py").write_text("import os\n\ndef helper():\n    return greet()\n")
    (repo / "README.md").write_text("Call greet() to be greeted.\n")
    async with coder(tmp_path, repo, model) as c:
        by_name = finished(await c.call("find_files", {"pattern": "**/*.py"}))
        by_content = finished(await c.call("search_files", {"query": "greet("}))
        by_regex = finished(await c.call("search_files", {"query": r"^def \w+", "regex": True, "glob": "src/**"}))
        read = finished(await c.call("read_file", {"path": "src/util.py", "offset": 3, "limit": 1}))
    assert by_name.output == "src/app.py\nsrc/util.py", "sorted, relative, .git skipped"
    assert by_content.output == "README.md:1: Call greet() to be greeted.\nsrc/app.py:1: def greet():\nsrc/util.py:4: return greet()"
    assert by_regex.output == "src/app.py:1: def greet():\nsrc/util.py:3: def helper():"
    assert read.output == "def helper():\n\n(1 more lines; read on from line 4)"
    assert c.person.asked == [], "looking changes nothing and asks nothing"


WAIT_FOR_GO = "echo first; while [ ! -f go ]; do sleep 0.05; done; echo second"


async def test_a_command_is_asked_rejected_then_runs_with_its_output_streamed(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    async with coder(tmp_path, repo, model, command_timeout=PATIENCE) as c:
        c.person.answers = ["reject"]
        rejected = finished(await c.call("run_command", {"command": "touch ran"}))
        assert rejected.status == "failed" and "`touch ran` was not run: refused: the user rejected it" in rejected.output
        assert not (repo / "ran").exists()

        def release_when_first_line_shows(event: Event) -> None:
            if isinstance(event, ToolProgress) and event.status == "in_progress" and event.output == "first\n":
                (repo / "go").touch()  # the command goes on only once its first line was streamed

        c.person.answers = ["once"]
        events = await c.call("run_command", {"command": WAIT_FOR_GO}, release_when_first_line_shows)
    streamed = [e.output for e in events if isinstance(e, ToolProgress) and e.status == "in_progress" and e.output]
    assert streamed[0] == "first\n", "the output arrives while the command runs"
    done = finished(events)
    assert done.status == "completed" and done.title == f"run_command {WAIT_FOR_GO}"
    assert done.output == "first\nsecond\n\n(exit code 0)"
    assert [q.question.prompt for q in c.person.asked] == ["Run `touch ran`?", f"Run `{WAIT_FOR_GO}`?"]


async def test_always_for_this_session_skips_the_question_also_after_a_restart(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    async with coder(tmp_path, repo, model) as c:
        c.person.answers = ["always"]
        assert finished(await c.call("run_command", {"command": "git status --short"})).status == "completed"
        assert finished(await c.call("run_command", {"command": "git status --short"})).status == "completed"
        assert len(c.person.asked) == 1, "the second run is not asked"
        c.person.answers = ["reject"]
        other = finished(await c.call("run_command", {"command": "git log"}))
        assert other.status == "failed" and len(c.person.asked) == 2, "the grant is for that command only"
        session_id = c.session_id
    async with coder(tmp_path, repo, model, session_id=session_id) as again:
        assert finished(await again.call("run_command", {"command": "git status --short"})).status == "completed"
        assert again.person.asked == [], "the grant survived the restart"
        fresh = await again.app.session_host.create(str(repo))
        other_session = Coder(again.app, fresh.id, model, again.person)
        again.person.answers = ["reject"]
        await other_session.call("run_command", {"command": "git status --short"})
        assert len(again.person.asked) == 1, "another Session is asked"


async def test_tools_allow_rules_skip_the_question(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    async with coder(tmp_path, repo, model, allow=["git status", "echo *"], allow_writes=["src/**"]) as c:
        assert finished(await c.call("run_command", {"command": "git status"})).status == "completed"
        assert finished(await c.call("run_command", {"command": "echo  hi"})).output == "hi\n\n(exit code 0)"
        assert finished(await c.call("edit_file", EDIT)).status == "completed"
        assert c.person.asked == []
        c.person.answers = ["reject", "reject"]
        chained = finished(await c.call("run_command", {"command": "echo hi; touch pwned"}))
        outside_rule = finished(await c.call("write_file", {"path": "README.md", "content": "x"}))
    assert [q.question.prompt for q in c.person.asked] == ["Run `echo hi; touch pwned`?", "Change the file `README.md`?"]
    assert chained.status == outside_rule.status == "failed"
    assert not (repo / "pwned").exists() and not (repo / "README.md").exists()


def test_command_patterns_never_match_a_chained_command_line() -> None:
    rules = ToolRules(commands=("pytest *",), writes=("docs/*.md",))
    assert rules.allows(Change("command", "pytest -q tests"))
    for line in ("pytest x; rm -rf ~", "pytest x && curl evil", "pytest $(rm x)", "pytest > /etc/passwd", "pytest x | sh"):
        assert not rules.allows(Change("command", line)), line
    assert rules.allows(Change("write", "docs/a.md")) and not rules.allows(Change("write", "docs/sub/a.md"))


@pytest.mark.parametrize("where", ["dotdot", "absolute", "symlink"])
async def test_a_path_leaving_the_project_is_refused_and_nothing_changes(tmp_path: Path, repo: Path, model: OpenAIFake, where: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("keep")
    (repo / "link").symlink_to(outside)
    path = {"dotdot": "../outside/secret.txt", "absolute": str(outside / "secret.txt"), "symlink": "link/secret.txt"}[where]
    async with coder(tmp_path, repo, model, allow_writes=["**"]) as c:
        results = [
            finished(await c.call("write_file", {"path": path, "content": "gone"})),
            finished(await c.call("edit_file", {"path": path, "old": "keep", "new": "gone"})),
            finished(await c.call("read_file", {"path": path})),
            finished(await c.call("search_files", {"query": "keep", "path": str(Path(path).parent)})),
        ]
        listed = finished(await c.call("find_files", {"pattern": "**"}))
    for result in results:
        assert result.status == "failed" and "outside the project directory" in result.output, result
    assert (outside / "secret.txt").read_text() == "keep" and c.person.asked == []
    assert "secret.txt" not in listed.output, "a symlink out of the project is not followed"


async def test_a_command_that_runs_too_long_is_killed_with_its_children_and_reported(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    async with coder(tmp_path, repo, model, command_timeout=2) as c:
        c.person.answers = ["once"]
        done = finished(await c.call("run_command", {"command": "echo started; sleep 300 & echo $! > child.pid; wait"}))
    assert done.status == "failed"
    assert done.output.startswith("started\n") and "timed out after 2s and was stopped, with everything it started" in done.output
    child = int((repo / "child.pid").read_text())
    async with asyncio.timeout(PATIENCE):
        while alive(child):
            await asyncio.sleep(0.05)


def alive(pid: int) -> bool:
    """Whether ``pid`` is still running (a zombie waiting to be reaped is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z" and os.path.exists(f"/proc/{pid}")


async def test_an_unanswered_question_expires_as_a_rejection(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    (tmp_path / "wld.toml").write_text(model_entry("openai", "coder", model.base_url).replace("[sessions]\n", "[sessions]\nquestion_timeout = 0.5\n"))
    app = await App.start(load_settings(tmp_path / "wld.toml"))
    try:
        record = await app.session_host.create(str(repo))

        async def nobody_answers(pending: PendingQuestion) -> Outcome:
            await asyncio.Event().wait()
            raise AssertionError("never answered")

        c = Coder(app, record.id, model, Person())
        c.person = nobody_answers  # type: ignore[assignment]
        done = finished(await c.call("write_file", {"path": "new.txt", "content": "x"}))
    finally:
        await app.close()
    assert done.status == "failed" and "new.txt was not changed: refused: the question was expired, which counts as a rejection" in done.output
    assert not (repo / "new.txt").exists()


async def test_cancelling_the_turn_kills_a_running_command_with_its_children(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    async with coder(tmp_path, repo, model, command_timeout=PATIENCE * 10) as c:
        c.person.answers = ["once"]
        cancel: asyncio.Task[Any] | None = None

        def cancel_when_ready(event: Event) -> None:
            nonlocal cancel
            if cancel is None and isinstance(event, ToolProgress) and "ready" in (event.output or ""):
                cancel = asyncio.ensure_future(c.app.session_host.cancel(c.session_id))

        c.model.queue(Reply(tool_calls=(ToolCall("call_1", "run_command", {"command": "sleep 300 & echo $! > child.pid; echo ready; wait"}),)))

        async def emit(event: Event) -> None:
            cancel_when_ready(event)

        settled = await c.app.session_host.prompt(c.session_id, "run it", emit, forms=c.person)
        assert cancel is not None
        await cancel
    assert isinstance(settled, TurnSettled) and settled.stop_reason == "cancelled"
    child = int((repo / "child.pid").read_text())
    async with asyncio.timeout(PATIENCE):
        while alive(child):
            await asyncio.sleep(0.05)


class SwappingPerson(Person):
    """A Person who, while the question waits, does ``meanwhile`` (swaps a directory for a symlink, say)."""

    def __init__(self, meanwhile: Callable[[], None]) -> None:
        super().__init__()
        self.meanwhile = meanwhile

    async def __call__(self, pending: PendingQuestion) -> Outcome:
        self.meanwhile()
        return await super().__call__(pending)


def swap_for_link(directory: Path, target: Path) -> Callable[[], None]:
    """Move ``directory`` aside and put a symlink to ``target`` in its place."""

    def swap() -> None:
        directory.rename(directory.with_name(directory.name + ".moved"))
        directory.symlink_to(target, target_is_directory=True)

    return swap


@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
async def test_a_directory_swapped_for_a_symlink_while_the_question_waits_is_not_followed(
    tmp_path: Path, repo: Path, model: OpenAIFake, tool: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text(ORIGINAL)
    arguments = {"write_file": {"path": "src/raced.txt", "content": "raced"}, "edit_file": {**EDIT, "path": "src/app.py"}}[tool]
    async with coder(tmp_path, repo, model) as c:
        c.person = SwappingPerson(swap_for_link(repo / "src", outside))
        c.person.answers = ["once"]
        done = finished(await c.call(tool, arguments))
    assert len(c.person.asked) == 1, "the change was asked, and allowed"
    assert sorted(p.name for p in outside.iterdir()) == ["app.py"] and (outside / "app.py").read_text() == ORIGINAL, "nothing outside"
    assert done.status == "failed", done.output
    assert "'src' is a symbolic link now (it was not when the path was checked), which is not followed" in done.output
    assert (repo / "src.moved" / "app.py").read_text() == ORIGINAL and not (repo / "src.moved" / "raced.txt").exists()


async def test_a_directory_made_as_a_symlink_while_the_question_waits_is_not_followed(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    async with coder(tmp_path, repo, model) as c:
        c.person = SwappingPerson(lambda: (repo / "new").symlink_to(outside, target_is_directory=True))
        c.person.answers = ["once"]
        done = finished(await c.call("write_file", {"path": "new/deep/raced.txt", "content": "raced"}))
    assert done.status == "failed" and "'new' is a symbolic link now" in done.output
    assert list(outside.iterdir()) == []


async def test_a_file_swapped_for_a_symlink_while_the_question_waits_is_not_followed(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text(ORIGINAL)

    def swap() -> None:
        (repo / "src" / "app.py").unlink()
        (repo / "src" / "app.py").symlink_to(outside / "app.py")

    async with coder(tmp_path, repo, model) as c:
        c.person = SwappingPerson(swap)
        c.person.answers = ["once"]
        done = finished(await c.call("edit_file", EDIT))
    assert done.status == "failed" and "'src/app.py' is a symbolic link now" in done.output
    assert (outside / "app.py").read_text() == ORIGINAL


async def test_an_edit_is_made_on_the_file_as_it_is_when_allowed(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    app = repo / "src" / "app.py"
    async with coder(tmp_path, repo, model) as c:
        c.person = SwappingPerson(lambda: app.write_text("# added while asked\n" + ORIGINAL))
        c.person.answers = ["once"]
        assert finished(await c.call("edit_file", EDIT)).status == "completed"
        assert app.read_text() == "# added while asked\ndef greet():\n    return 'hello, world'\n", "the other change is kept"
        app.write_text(ORIGINAL)
        c.person = SwappingPerson(lambda: app.write_text(ORIGINAL * 2))
        c.person.answers = ["once"]
        twice = finished(await c.call("edit_file", {"path": "src/app.py", "old": "'hello'", "new": "'bye'"}))
    assert twice.status == "failed" and "the old text was found 2 times in src/app.py" in twice.output
    assert app.read_text() == ORIGINAL * 2


@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
async def test_a_file_hard_linked_from_outside_is_not_changed_through_the_link(tmp_path: Path, repo: Path, model: OpenAIFake, tool: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shared.py").write_text(ORIGINAL)
    (outside / "shared.py").chmod(0o640)
    os.link(outside / "shared.py", repo / "linked.py")
    arguments = {"write_file": {"path": "linked.py", "content": "replaced\n"}, "edit_file": {**EDIT, "path": "linked.py"}}[tool]
    async with coder(tmp_path, repo, model, allow_writes=["**"]) as c:
        done = finished(await c.call(tool, arguments))
        read = finished(await c.call("read_file", {"path": "linked.py"}))
    assert done.status == "completed", done.output
    assert "it had 1 other hard link(s), which keep the old content: linked.py is a new file now" in done.output
    assert (outside / "shared.py").read_text() == ORIGINAL and os.stat(outside / "shared.py").st_nlink == 1
    expected = {"write_file": "replaced\n", "edit_file": "def greet():\n    return 'hello, world'\n"}[tool]
    assert (repo / "linked.py").read_text() == expected == read.output, "the file in the project changed"
    assert (repo / "linked.py").stat().st_mode & 0o777 == 0o640, "it keeps its permissions"
    assert sorted(p.name for p in repo.iterdir()) == [".git", "linked.py", "src"], "no temporary file is left"


async def test_a_fifo_is_skipped_or_refused_by_every_file_tool_without_blocking(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    os.mkfifo(repo / "src" / "pipe")
    async with coder(tmp_path, repo, model, allow_writes=["**"]) as c, asyncio.timeout(PATIENCE):
        listed = finished(await c.call("list_files", {"path": "src"}))
        found = finished(await c.call("find_files", {"pattern": "**"}))
        searched = finished(await c.call("search_files", {"query": "greet"}))
        searched_in = finished(await c.call("search_files", {"query": "greet", "path": "src/pipe"}))
        read = finished(await c.call("read_file", {"path": "src/pipe"}))
        edited = finished(await c.call("edit_file", {"path": "src/pipe", "old": "a", "new": "b"}))
        written = finished(await c.call("write_file", {"path": "src/pipe", "content": "x"}))
    assert listed.output == "app.py" and found.output == "src/app.py" and searched.output == "src/app.py:1: def greet():"
    for refused in (searched_in, read, edited, written):
        assert refused.status == "failed" and "'src/pipe' is a named pipe (FIFO)" in refused.output, refused
    assert stat.S_ISFIFO(os.stat(repo / "src" / "pipe").st_mode)


async def test_read_file_reads_only_what_it_keeps_and_says_the_file_goes_on(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    with (repo / "big.txt").open("wb") as big:
        big.write(b"first line\n" * 10_000)
        big.truncate(1 << 30)
    async with coder(tmp_path, repo, model) as c:
        whole = finished(await c.call("read_file", {"path": "big.txt"}))
        lines = finished(await c.call("read_file", {"path": "big.txt", "offset": 2, "limit": 1}))
    assert whole.output.startswith("first line\n") and len(whole.output) < 70_000
    assert whole.output.endswith(f"\n(read_file shows the first 64 KiB of this file's {1 << 30} bytes)")
    assert lines.output == f"first line\n\n(5956 more lines; read on from line 3)\n(read_file shows the first 64 KiB of this file's {1 << 30} bytes)"


@pytest.mark.parametrize(
    ("pattern", "unsupported"),
    [
        (r"(\w)\1", r"a backreference (\1 to \9)"),
        ("foo(?=bar)", "lookahead ((?=...), (?!...))"),
        ("(?<!x)y", "lookbehind ((?<=...), (?<!...))"),
        ("(?P<a>x)(?P=a)", "a named backreference ((?P=name))"),
        ("a++", "a possessive quantifier (*+, ++, ?+)"),
    ],
)
async def test_a_regex_re2_does_not_support_is_refused_saying_what(tmp_path: Path, repo: Path, model: OpenAIFake, pattern: str, unsupported: str) -> None:
    async with coder(tmp_path, repo, model) as c:
        done = finished(await c.call("search_files", {"query": pattern, "regex": True}))
        invalid = finished(await c.call("search_files", {"query": "(unclosed", "regex": True}))
    assert done.status == "failed" and f"the regular expression {pattern!r} uses {unsupported}, which search_files does not support" in done.output
    assert "RE2 syntax (linear time)" in done.output
    assert invalid.status == "failed" and invalid.output == "not a valid regular expression: missing ): (unclosed"


async def test_a_catastrophic_regex_is_matched_in_linear_time(tmp_path: Path, repo: Path, model: OpenAIFake) -> None:
    (repo / "src" / "long.txt").write_text("a" * 28 + "b\n" + "aaa\n" + ("a" * 5000 + "b\n") * 100)
    async with coder(tmp_path, repo, model) as c, asyncio.timeout(PATIENCE):
        done = finished(await c.call("search_files", {"query": "(a+)+$", "regex": True, "path": "src"}))
        folded = finished(await c.call("search_files", {"query": "DEF GREET", "ignore_case": True}))
    assert done.output == "src/long.txt:2: aaa"
    assert folded.output == "src/app.py:1: def greet():"


async def test_a_search_stops_at_its_time_and_byte_bounds_and_says_so(tmp_path: Path, repo: Path, model: OpenAIFake, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(5):
        (repo / f"f{n}.txt").write_text("needle\n" + "hay\n" * 250)  # 1,007 bytes each
    async with coder(tmp_path, repo, model) as c:
        monkeypatch.setattr(coding_tools, "MAX_SEARCH_TOTAL", 2500)
        by_bytes = finished(await c.call("search_files", {"query": "needle"}))
        monkeypatch.setattr(coding_tools, "MAX_SEARCH_TOTAL", 1 << 30)
        monkeypatch.setattr(coding_tools, "SEARCH_SECONDS", 0.0)
        by_time = finished(await c.call("search_files", {"query": "needle"}))
        by_name = finished(await c.call("find_files", {"pattern": "*.txt"}))
    assert by_bytes.status == "completed"
    assert by_bytes.output == "f0.txt:1: needle\nf1.txt:1: needle" + STOPPED.format("it stopped after reading 2014 bytes")
    assert by_time.output == "no matches" + STOPPED.format("it stopped after 0 s")
    assert by_name.output == "no files match" + STOPPED.format("it stopped after 0 s")


STOPPED = "\n(the search stopped early, before every file was looked at: {}; narrow it with `path` or `glob`)"
