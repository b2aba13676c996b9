"""What ``/spawn AGENT [--here | --thread] [--resume SESSION_ID] TASK`` asks for, read the same way by the chat
bridge and by the Session Host: the agent, then options, then the task as typed."""

from __future__ import annotations

from dataclasses import dataclass

USAGE = "Usage: /spawn AGENT [--here | --thread] [--resume SESSION_ID] TASK"
TITLE_LENGTH = 80
QUOTES = ('""', "''", "“”", "‘’")


class SpawnMistake(ValueError):
    """A /spawn that cannot be done as typed; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class SpawnRequest:
    """What a /spawn asks for."""

    agent: str
    thread: bool
    task: str
    resume: str | None = None

    @property
    def title(self) -> str:
        """The new thread's (or Session's) title: the task's first line (or the session it resumes)."""
        first = self.task.split("\n", 1)[0].strip() or f"{self.agent} session {self.resume}"
        return first if len(first) <= TITLE_LENGTH else first[: TITLE_LENGTH - 1].rstrip() + "…"


def parse_spawn(argument: str, agents: list[str]) -> SpawnRequest:
    """The request a /spawn's argument makes: the agent, then options, then the task as typed (one pair of quotes around
    all of it taken off); SpawnMistake saying what is wrong (an unknown agent names the configured ones)."""
    known = ", ".join(agents) or "none"
    words, rest = _leading_words(argument)
    if not words or words[0].startswith("--"):
        raise SpawnMistake(f"Name the agent first. {USAGE}. Configured agents: {known}.")
    agent, options = words[0], words[1:]
    if agent not in agents:
        raise SpawnMistake(f"There is no agent named {agent!r}. Configured agents: {known}.")
    places: set[str] = set()
    resume: str | None = None
    while options:
        flag = options.pop(0)
        if flag in ("--here", "--thread"):
            places.add(flag)
        elif flag == "--resume" and options and not options[0].startswith("--"):
            resume = options.pop(0)
        elif flag == "--resume":
            raise SpawnMistake(f"--resume needs the id of the session to continue. {USAGE}")
        else:
            raise SpawnMistake(f"/spawn has no option {flag}. {USAGE}")
    if len(places) > 1:
        raise SpawnMistake(f"Choose one of --here and --thread, not both. {USAGE}")
    task = _unquoted(rest)
    if not task and resume is None:
        raise SpawnMistake(f"Say what {agent} should do. {USAGE}")
    return SpawnRequest(agent, places == {"--thread"}, task, resume)


def _leading_words(argument: str) -> tuple[list[str], str]:
    """The agent and the options (with an option's value) at the start, and the rest as typed."""
    words: list[str] = []
    rest = argument.strip()
    while rest and (not words or rest.startswith("--") or words[-1] == "--resume"):
        word, _, rest = rest.partition(" ")
        words.append(word)
        rest = rest.lstrip()
    return words, rest


def _unquoted(text: str) -> str:
    """The text without one pair of quotes around all of it (straight, or curly as phones type them)."""
    for opening, closing in QUOTES:
        if len(text) >= 2 and text[0] == opening and text[-1] == closing and opening not in text[1:-1] and closing not in text[1:-1]:
            return text[1:-1].strip()
    return text
