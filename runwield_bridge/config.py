"""``wld.toml`` parsed into pydantic models: unknown keys rejected, secrets from the environment."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ConfigError(Exception):
    """The configuration cannot be used; the message says which key and why."""


class Strict(BaseModel):
    """Base for config sections: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(Strict):
    """A ``[models.NAME]`` entry."""

    provider: str = "openai"
    """The registered provider that builds this model (built in: openai, anthropic, scripted); the App rejects an unknown one."""
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    context_window: int | None = None
    reasoning_levels: list[str] = Field(default_factory=list)
    vision: bool = False
    """The model takes images in prompts."""


class AgentConfig(Strict):
    """An ``[agents.NAME]`` entry: an ACP agent started by command."""

    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    tools: list[str] = Field(default_factory=list)
    """RunWield tools this agent may call through the MCP bus when it drives a Session; none unless listed."""
    adapter: Literal["codex", "qwen", "claude", "gemini", "opencode", "generic"] | None = None
    """What RunWield knows of the agent (its modes); found from ``command`` when unset."""
    mode: str | None = None
    """The agent's mode for its sessions; by default the one in which it asks the person (``default`` for Qwen Code,
    Claude Agent and Gemini CLI; for Codex its approval policy ``untrusted``; for OpenCode its permission ``ask``)."""


class WebConfig(Strict):
    """The one inbound HTTP server."""

    listen: str = "127.0.0.1:8787"
    public_url: str | None = None

    @property
    def base_url(self) -> str:
        return (self.public_url or f"http://{self.listen}").rstrip("/")


class PluginsConfig(Strict):
    """Which plugins may load: ``allow`` (all when unset) minus ``block``."""

    allow: list[str] | None = None
    block: list[str] = Field(default_factory=list)


class ValidationConfig(Strict):
    """``[validation]``: the commands an executed Plan must pass in its worktree, each within ``timeout`` seconds."""

    commands: list[str] = Field(default_factory=list)
    timeout: float = Field(default=900.0, gt=0)


class ToolsConfig(Strict):
    """``[tools]``: what the native runtime's tools may do without asking, and how long a command may run (seconds)."""

    allow: list[str] = Field(default_factory=list)  # shell-style patterns on a command line: "pytest *", "git status"
    allow_writes: list[str] = Field(default_factory=list)  # globs on project-relative paths: "src/**", "docs/*.md"
    command_timeout: float = Field(default=120.0, gt=0)


class SessionsConfig(Strict):
    """Defaults for new Sessions, and how long a question waits for its answer (seconds; 0 waits forever)."""

    model: str = "scripted"
    agent: str = "build"
    runtime: str = "native"
    """What drives the turns of new Sessions: ``native`` (the model and RunWield's tools) or ``acp:NAME``."""
    question_timeout: float = Field(default=3600.0, ge=0)
    vision_fallback: str | None = None
    """A vision model that text-only models ask about images through the ``see_image`` tool."""
    compact_at: float = Field(default=0.8, gt=0, le=1)
    """The share of the model's ``context_window`` a native Session's request may take before older messages are
    compacted into a summary."""


class Settings(Strict):
    """The whole of ``wld.toml``; every value has a default."""

    home: Path | None = None
    database_url: str | None = None
    log_level: str = "WARNING"
    workflow_metrics: bool = False
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    web: WebConfig = Field(default_factory=WebConfig)
    plugins: PluginsConfig = Field(default_factory=PluginsConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    channels: dict[str, dict[str, Any]] = Field(default_factory=dict)
    bindings: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def state_dir(self) -> Path:
        """Where all state lives: ``home``, else ``$WLD_HOME``, else the user data directory."""
        if self.home is not None:
            return self.home.expanduser()
        if env := os.environ.get("WLD_HOME"):
            return Path(env).expanduser()
        return Path(platformdirs.user_data_dir("runwield-bridge", appauthor=False))

    @property
    def db_url(self) -> str:
        """The database URL with its asyncio driver; ConfigError when that driver is not installed."""
        return with_async_driver(self.database_url) if self.database_url else f"sqlite+aiosqlite:///{self.state_dir / 'wld.db'}"


# The asyncio driver of a database URL that names none, and the extras that install a driver.
DEFAULT_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg", "postgres": "postgresql+asyncpg"}
DRIVER_EXTRAS = {"postgresql+asyncpg": "postgres"}
SUPPORTED_DATABASES = ("sqlite", "postgresql")


def with_async_driver(url: str) -> str:
    """``url`` (``postgresql://...``, say) with the asyncio driver of its database; ConfigError naming what to install."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigError(f"database_url: {url!r} is not a database URL") from None
    parsed = parsed.set(drivername=DEFAULT_DRIVERS.get(parsed.drivername, parsed.drivername))
    if parsed.get_backend_name() not in SUPPORTED_DATABASES:
        raise ConfigError(
            f"database_url: {parsed.get_backend_name()!r} is not supported: wld keeps its state in SQLite (the default) "
            "or PostgreSQL (postgresql+asyncpg://user:password@host:5432/name)"
        )
    try:
        dialect = parsed.get_dialect()
        dialect.import_dbapi()
    except NoSuchModuleError:
        raise ConfigError(f"database_url: {parsed.drivername} names no driver SQLAlchemy knows (wld uses {' or '.join(sorted(set(DEFAULT_DRIVERS.values())))})") from None
    except ImportError:
        driver, extra = parsed.get_driver_name(), DRIVER_EXTRAS.get(parsed.drivername)
        install = f"pip install 'runwield-bridge[{extra}]'" if extra else f"pip install {driver}"
        raise ConfigError(f"database_url: the {driver} driver for {parsed.get_backend_name()} is not installed; {install}") from None
    if not dialect.is_async:
        raise ConfigError(f"database_url: {parsed.drivername} is not an asyncio driver (wld needs one, e.g. postgresql+asyncpg)")
    return parsed.render_as_string(hide_password=False)


def expand_env(value: Any, where: str = "") -> Any:
    """Replace ``${NAME}`` in every string with the environment variable; a missing one is an error."""
    if isinstance(value, str):

        def lookup(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in os.environ:
                raise ConfigError(f"{where or 'value'}: environment variable {name} is not set")
            return os.environ[name]

        return _ENV_REF.sub(lookup, value)
    if isinstance(value, dict):
        return {k: expand_env(v, f"{where}.{k}" if where else k) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def describe_errors(error: ValidationError, prefix: str = "") -> str:
    """One line per problem, naming the key by its dotted path."""
    lines = []
    for item in error.errors():
        key = ".".join(str(part) for part in (prefix, *item["loc"]) if part != "")
        message = "unknown key" if item["type"] == "extra_forbidden" else item["msg"]
        lines.append(f"{key}: {message}")
    return "\n".join(lines)


def config_path(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The config file to read: ``--config``, else ``$WLD_CONFIG``, else none."""
    if explicit:
        return Path(explicit)
    if env := os.environ.get("WLD_CONFIG"):
        return Path(env)
    return None


def load_settings(path: str | os.PathLike[str] | None = None) -> Settings:
    """Read and validate the configuration; with no file, every default applies."""
    resolved = config_path(path)
    if resolved is None:
        return Settings()
    try:
        raw = tomllib.loads(resolved.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{resolved}: no such config file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{resolved}: not valid TOML: {exc}") from None
    try:
        return Settings.model_validate(expand_env(raw))
    except ValidationError as exc:
        raise ConfigError(f"{resolved}:\n{describe_errors(exc)}") from None
