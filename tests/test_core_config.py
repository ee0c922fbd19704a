"""Config: defaults, TOML loading, errors that name the file, the key and the nearest key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gapwatch.cli import main
from gapwatch.config import Config, ConfigError, load_config

ROOT = Path(__file__).parent.parent


def test_no_file_means_defaults() -> None:
    assert load_config() == Config()


def test_explicit_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml")


def test_typo_names_file_key_and_nearest_key(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[detector]\nmin_gap_m = 200\n")
    with pytest.raises(ConfigError) as e:
        load_config(f)
    msg = str(e.value)
    assert str(f) in msg and "detector.min_gap_m" in msg and "did you mean 'min_gap_ms'" in msg


def test_unknown_section_suggests_nearest(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[sampeler]\nperiod_ms = 50\n")
    with pytest.raises(ConfigError, match="did you mean 'sampler'"):
        load_config(f)


def test_bad_value_names_key_and_value(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[sampler]\nperiod_ms = -5\n")
    with pytest.raises(ConfigError, match=r"sampler\.period_ms.*-5"):
        load_config(f)


def test_not_toml_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[sampler\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(f)


def test_bad_user_regex_names_the_rule(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text('[[logs.rules]]\nname = "mine"\nregex = "(unclosed"\n')
    with pytest.raises(ConfigError, match="mine"):
        load_config(f)


def test_xdg_config_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gapwatch").mkdir()
    (tmp_path / "gapwatch" / "config.toml").write_text("[detector]\nmin_gap_ms = 500\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert load_config().detector.min_gap_ms == 500


def _keys(model: type, prefix: str = "") -> set[str]:
    out: set[str] = set()
    for name, f in model.model_fields.items():  # type: ignore[attr-defined]
        ann = f.annotation
        if isinstance(ann, type) and hasattr(ann, "model_fields"):
            out |= _keys(ann, f"{prefix}{name}.")
        else:
            out.add(f"{prefix}{name}")
    return out


def test_example_config_documents_every_key_and_loads() -> None:
    """config.example.toml holds every key (rules are commented out) and is itself valid."""
    example = ROOT / "config.example.toml"
    data = tomllib.loads(example.read_text())
    present = _keys_in(data)
    assert _keys(Config) - {"logs.rules"} <= present
    assert load_config(example) == Config()


def _keys_in(data: dict[str, object], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for k, v in data.items():
        if isinstance(v, dict):
            out |= _keys_in(v, f"{prefix}{k}.")
        else:
            out.add(f"{prefix}{k}")
    return out


def test_cli_exits_2_on_bad_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[detector]\nidle_sm = 3\n")
    assert main(["record", "--out", str(tmp_path / "r.jsonl"), "--config", str(f)]) == 2
    assert "idle_sm_pct" in capsys.readouterr().err
