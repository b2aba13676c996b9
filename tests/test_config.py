"""wld.toml: defaults, unknown keys named, secrets from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from runwield_bridge.cli import main
from runwield_bridge.config import ConfigError, load_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "wld.toml"
    path.write_text(text)
    return path


def test_no_file_gives_the_offline_default(wld_home: Path) -> None:
    settings = load_settings()
    assert settings.sessions.model == "scripted"
    assert settings.state_dir == wld_home
    assert settings.db_url.endswith(str(wld_home / "wld.db"))
    assert settings.web.base_url == "http://127.0.0.1:8787"


def test_unknown_key_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, '[web]\nlisten = "127.0.0.1:9000"\npublic_ur = "https://x"\n')
    with pytest.raises(ConfigError, match=r"web\.public_ur: unknown key"):
        load_settings(path)


def test_unknown_nested_key_in_a_model_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, '[models.local]\nprovider = "openai"\nmodle = "x"\n')
    with pytest.raises(ConfigError, match=r"models\.local\.modle: unknown key"):
        load_settings(path)


def test_env_reference_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_KEY_FOR_TEST", "s3cret")
    path = write(tmp_path, '[models.local]\nprovider = "openai"\napi_key = "${SECRET_KEY_FOR_TEST}"\n')
    assert load_settings(path).models["local"].api_key == "s3cret"


def test_missing_env_reference_names_variable_and_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    path = write(tmp_path, '[models.local]\napi_key = "${NOT_SET_ANYWHERE}"\n')
    with pytest.raises(ConfigError, match=r"models\.local\.api_key: environment variable NOT_SET_ANYWHERE is not set"):
        load_settings(path)


def test_wld_config_env_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, '[web]\npublic_url = "https://wield.example.com/"\n')
    monkeypatch.setenv("WLD_CONFIG", str(path))
    assert load_settings().web.base_url == "https://wield.example.com"


def test_invalid_toml_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(write(tmp_path, "[web\n"))


def test_every_subcommand_accepts_config_and_reports_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "bogus = 1\n")
    assert main(["sessions", "--config", str(path)]) == 2
    assert "bogus: unknown key" in capsys.readouterr().err
    assert main(["--config", str(path), "doctor"]) == 2


def test_unknown_default_model_is_a_config_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, '[sessions]\nmodel = "gpt-none"\n')
    assert main(["doctor", "--config", str(path)]) == 2
    assert "unknown model 'gpt-none'" in capsys.readouterr().err


@pytest.mark.parametrize(("key", "value", "says"), [("model", "gpt-none", "unknown model 'gpt-none'"), ("agent", "wizard", "unknown Agent 'wizard'")])
def test_an_unknown_session_default_names_its_key_and_creates_no_state(
    wld_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: str, says: str
) -> None:
    path = write(tmp_path, f'[sessions]\n{key} = "{value}"\n')
    for command in (["doctor"], ["sessions"], ["plans"]):
        assert main([*command, "--config", str(path)]) == 2
        assert f"sessions.{key}: {says}" in capsys.readouterr().err
    assert not wld_home.exists(), "a configuration error changes nothing: no state directory, no database"


def test_wld_bridge_without_channels_says_so_and_creates_no_state(wld_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bridge", "--config", str(write(tmp_path, ""))]) == 2
    assert "no channels configured; add a [channels.NAME] section" in capsys.readouterr().err
    assert not wld_home.exists(), "nothing was created"


def test_an_unregistered_provider_names_the_registered_ones_and_creates_no_state(
    wld_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, '[models.local]\nprovider = "olama"\nmodel = "llama3.1"\n')
    for command in (["doctor"], ["sessions"]):
        assert main([*command, "--config", str(path)]) == 2
        err = capsys.readouterr().err
        assert "models.local.provider: no plugin provides 'olama'" in err
        known = err.split("known providers: ", 1)[1].split(")", 1)[0].split(", ")
        assert {"anthropic", "openai", "scripted"} <= set(known), err
    assert not wld_home.exists(), "a configuration error changes nothing: no state directory, no database"
