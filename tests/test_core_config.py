"""Config: defaults, TOML loading, errors that name the file, the key and the nearest key."""

from __future__ import annotations

import os
import re
import threading
import tomllib
import typing
from pathlib import Path

import annotated_types
import pydantic
import pytest

from gapwatch.cli import main
from gapwatch.config import Config, ConfigError, load_config, with_overrides

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


#: Keys whose default is None (not given): TOML has no null, so the example writes them
#: commented out (`# key = value`), as it writes the rules.
_UNSET_BY_DEFAULT = {"cuzk.max_parallel_synthesis"}


def test_example_config_documents_every_key_and_loads() -> None:
    """config.example.toml holds every key (rules and keys not set by default are commented
    out) and is itself valid."""
    example = ROOT / "config.example.toml"
    text = example.read_text()
    present = _keys_in(tomllib.loads(text))
    assert _keys(Config) - {"logs.rules"} - _UNSET_BY_DEFAULT <= present
    for key in _UNSET_BY_DEFAULT:
        section, name = key.split(".")
        assert getattr(getattr(Config(), section), name) is None
        assert re.search(rf"^# {name} = ", text, re.MULTILINE), key
    assert load_config(example) == Config()


def _limits(metadata: list[object]) -> str | None:
    """A key's bounds as config.example.toml writes them (`1 to 60000`, `above 0, at most 1`,
    `at least 1`), from its pydantic constraints; None when it has none."""
    def num(v: object) -> str:
        return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)

    lo: object = None
    hi: object = None
    lo_open = False
    for m in metadata:
        if isinstance(m, annotated_types.Ge):
            lo = m.ge
        elif isinstance(m, annotated_types.Gt):
            lo, lo_open = m.gt, True
        elif isinstance(m, annotated_types.Le):
            hi = m.le
    if lo is not None and hi is not None:
        return f"above {num(lo)}, at most {num(hi)}" if lo_open else f"{num(lo)} to {num(hi)}"
    if lo is not None:
        return f"above {num(lo)}" if lo_open else f"at least {num(lo)}"
    return None if hi is None else f"at most {num(hi)}"


def _slow_readings(section: object) -> tuple[str, ...]:
    """The keys `SamplerConfig._slow_reading` bounds (0, or at least 1 s)."""
    decorators = getattr(section, "__pydantic_decorators__", None)
    found = decorators.field_validators.get("_slow_reading") if decorators else None
    return tuple(found.info.fields) if found is not None else ()


def test_the_example_config_writes_each_keys_limits_above_it() -> None:
    """The limits were enforced for every key but written beside a few: an operator learnt
    `flush_interval_s` takes 0.01 to 10 from the error. Each constrained key has a
    `# Limits: ...` line right above it, as the model enforces them."""
    lines = (ROOT / "config.example.toml").read_text().splitlines()
    section, said = "", {}
    for before, line in zip(["", *lines], lines, strict=False):
        if line.startswith("["):
            section = line.strip("[]")
        elif (key := re.match(r"(?:# )?(\w+) = ", line)) is not None:
            said[f"{section}.{key.group(1)}"] = before.removeprefix("# Limits: ").rstrip(".") \
                if before.startswith("# Limits: ") else None
    for name, f in Config.model_fields.items():
        assert f.annotation is not None
        for key, field in f.annotation.model_fields.items():
            want = _limits(field.metadata)
            # A list's items' bounds (`list[Annotated[int, Field(ge=0, le=255)]]`): "each ...".
            for item in typing.get_args(field.annotation)[:1]:
                for part in typing.get_args(item)[1:]:
                    if (each := _limits(getattr(part, "metadata", []))) is not None:
                        want = f"each {each}"
            if key in _slow_readings(f.annotation):  # a validator's lower bound, not metadata's
                hi = (want or "").removeprefix("at most ")
                want = f"0 (off) or 1 to {hi}" if hi else "0 (off) or at least 1"
            if want is not None:
                got = said.get(f"{name}.{key}")
                assert got is not None and want in (got, got.rsplit(" (", 1)[0]), (name, key, got, want)


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


# Hostile config files (docs/bad-input.md, Configuration): each is one line and exit 2, read
# within bounds, never a hang, a traceback or a file read whole into memory.


def test_a_config_that_is_a_fifo_nobody_writes_to_is_refused_after_its_silence_not_a_hang(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gapwatch.config as config_module
    monkeypatch.setattr(config_module, "CONFIG_FIFO_SILENCE_S", 0.3)
    fifo = tmp_path / "c.toml"
    os.mkfifo(fifo)
    # Before: `open()` blocked for ever (the suite's timeout ended it).
    with pytest.raises(ConfigError, match="FIFO that said nothing"):
        load_config(fifo)


def test_a_config_fifo_with_a_writer_is_read_as_process_substitution_gives_it(
        tmp_path: Path) -> None:
    fifo = tmp_path / "c.toml"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as f:
            f.write("[detector]\nmin_gap_ms = 200\n")

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert load_config(fifo).detector.min_gap_ms == 200
    finally:
        writer.join(5)


def test_a_config_that_is_dev_zero_a_directory_or_a_gib_is_refused_without_reading_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(1 << 30)  # sparse: a GiB that costs nothing to make, and 2 GB to read whole
    for path, why in (("/dev/zero", "a character device"), (str(tmp_path), "a directory"),
                      (str(big), "1073741824 bytes")):
        with pytest.raises(ConfigError, match=why):
            load_config(path)
        assert main(["report", "r.jsonl", "--config", path]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_a_config_nested_too_deep_is_one_line_not_a_recursion_error(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="nested too deep"):
        load_config(f)
    # Nested shallow enough to parse, its value is quoted cut, not printed 400 levels deep.
    f.write_text("[sampler]\ngpus = " + "[" * 400 + "]" * 400 + "\n")
    with pytest.raises(ConfigError) as info:
        load_config(f)
    assert len(str(info.value)) < 300


def test_a_dotted_key_of_thousands_of_parts_is_refused_before_tomllib_spends_minutes_on_it(
        tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("a" + ".a" * 30_000 + " = 1\n")  # 60 KiB; tomllib alone took 18 s over it
    with pytest.raises(ConfigError, match="dotted key of more than 16 parts"):
        load_config(f)


def test_thousands_of_unknown_keys_are_said_in_twenty_lines_and_a_count(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("".join(f"k{i} = 1\n" for i in range(3000)))
    with pytest.raises(ConfigError) as info:
        load_config(f)
    lines = str(info.value).splitlines()
    assert len(lines) == 21 and lines[-1].endswith("2980 more problems")


@pytest.mark.parametrize("setting", [
    "sampler.procmem_every_s = nan", "sampler.link_every_s = inf", "sampler.health_every_s = nan",
    "detector.window_s = inf", "detector.evidence_before_s = inf", "sim.duration_s = inf",
    "detector.default_link_bytes_per_s = inf", "ui.windows_s = [nan]", "ui.windows_s = [-1.0]",
])
def test_nan_and_inf_in_any_float_setting_are_refused(tmp_path: Path, setting: str) -> None:
    f = tmp_path / "c.toml"
    f.write_text(setting + "\n")
    with pytest.raises(ConfigError, match=setting.split(" ")[0]):
        load_config(f)


def test_a_detector_window_of_1e300_is_refused_not_an_overflow_in_the_detector(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[detector]\nwindow_s = 1e300\n")
    assert main(["report", "r.jsonl", "--config", str(f)]) == 2
    assert "detector.window_s: Input should be less than or equal to 3600" in \
        capsys.readouterr().err


@pytest.mark.parametrize(("section", "key"), [("snapshot", "history_s = 1e300"),
                                             ("ui", "windows_s = [30, 1e300]"),
                                             ("ui", "window_s = 1e9")])
def test_a_chart_window_or_snapshot_history_of_1e300_is_refused_not_an_overflow_sizing_the_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, key: str) -> None:
    """The store keeps samples for the longest of them: `1e300` was an OverflowError traceback
    in `record` (a deque's maxlen), `1e9` a store that never let a sample go."""
    f = tmp_path / "c.toml"
    f.write_text(f"[{section}]\n{key}\n")
    out = tmp_path / "r.jsonl"
    assert main(["record", "--config", str(f), "--source", "sim:chained", "--speed", "0",
                 "--duration", "1", "--out", str(out)]) == 2
    assert "Input should be less than or equal to 3600" in capsys.readouterr().err
    assert not out.exists()


def test_gpu_indices_no_recording_holds_are_refused(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    for gpus in ("[-1]", "[100000000000000000000000000000]"):
        f.write_text(f"[sampler]\ngpus = {gpus}\n")
        with pytest.raises(ConfigError, match="sampler.gpus.0"):
            load_config(f)


@pytest.mark.parametrize("content", [None, "x = [", "[sampler]\nperiod_ms = -5\n"])
def test_a_newline_in_the_config_path_stays_inside_its_one_line_message(
    tmp_path: Path, content: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cli says a config error line by line (a line per key that does not validate): a
    newline in the file's name split it, and its second line read as gapwatch's own."""
    from gapwatch.cli import main

    path = tmp_path / "bad\ngapwatch: all good.toml"
    if content is not None:
        path.write_text(content)
    assert main(["parse", "--config", str(path), str(tmp_path / "none.log")]) == 2
    err = capsys.readouterr().err
    assert "bad\\x0agapwatch: all good.toml" in err
    assert not any(line.startswith("gapwatch: all good") for line in err.splitlines())


@pytest.mark.parametrize("setting", ["record.flush_interval_s = 1e-300",
                                     "logs.poll_ms = 1e-300", "logs.idle_poll_ms = 1e-9"])
def test_a_period_too_short_for_any_timer_is_refused_not_a_busy_loop(
        tmp_path: Path, setting: str) -> None:
    """`gt=0` took `1e-300`, a period no wait honours: `flush_interval_s = 1e-300` had the
    writer flush without a pause (a whole core: 4.3 s of CPU in a 4.8 s `record`, 0.6 s
    without), `poll_ms = 1e-300` the tailer poll a FIFO log without one (2.6 s against 0.7)."""
    f = tmp_path / "c.toml"
    f.write_text(setting + "\n")
    with pytest.raises(ConfigError, match=setting.split(" ")[0] + ".*greater than or equal"):
        load_config(f)


def test_a_config_saved_with_a_utf8_byte_order_mark_is_read(tmp_path: Path) -> None:
    """Windows' Notepad (before 2019) and some editors save UTF-8 with a byte order mark: the
    file was refused as `not valid TOML: Invalid statement (at line 1, column 1)`, saying
    nothing of the three bytes no editor shows. A trace CSV's mark is passed over the same way."""
    f = tmp_path / "c.toml"
    f.write_bytes(b"\xef\xbb\xbf[sampler]\nperiod_ms = 50.0\n")
    assert load_config(f).sampler.period_ms == 50.0


def test_a_flag_override_keeps_the_keys_the_file_named_apart_from_its_defaults(
        tmp_path: Path) -> None:
    """`--log` (any flag) rebuilt the config from a dump of every value: every default became a
    key the user set (`model_fields_set`), and an offline command took this run's default
    deadline for one the user asked for (docs/post.md, "Deadlines")."""
    path = tmp_path / "c.toml"
    path.write_text("[cuzk]\nwinning_post_deadline_s = 20\n")
    over = with_overrides(load_config(path), {"logs": {"paths": ["x.log"]}})
    assert over.cuzk.model_fields_set == {"winning_post_deadline_s"}
    assert over.cuzk.winning_post_deadline_s == 20.0 and over.logs.paths == ["x.log"]
    assert over.detector.model_fields_set == set()
    assert over.logs.model_fields_set == {"paths"}


def _float_settings(model: type[pydantic.BaseModel] = Config,
                    prefix: str = "") -> list[tuple[str, typing.Any]]:
    """Every float setting of the config (dotted key, its field), sections walked."""
    out: list[tuple[str, typing.Any]] = []
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, pydantic.BaseModel):
            out += _float_settings(kind, f"{prefix}{name}.")
        elif kind is float or kind == list[float] or typing.get_origin(kind) is list:
            out.append((prefix + name, info))
    return out


def _upper_bound(info: typing.Any) -> float | None:
    """The `le`/`lt` a field (or its list's items) is held under, None: none."""
    metadata = list(info.metadata)
    for arg in typing.get_args(info.annotation):
        metadata += list(getattr(arg, "__metadata__", ()))
    for m in metadata:
        for bound in ("le", "lt"):
            if isinstance(m, (annotated_types.Le, annotated_types.Lt)) and hasattr(m, bound):
                return float(getattr(m, bound))
    return None


def test_every_float_setting_has_an_upper_bound_so_a_number_of_300_digits_is_refused() -> None:
    """A finite float of 300 digits passed every setting with no upper bound, and the code that
    turns seconds into nanoseconds met it: `detector.min_gap_ms = 1e308` and `sim.duration_s =
    1e308` were an OverflowError traceback in `record` and `report`, `sampler.*_every_s =
    1e308` one in the NVML sampler's start."""
    unbounded = [key for key, info in _float_settings()
                 if info.annotation is float and _upper_bound(info) is None]
    assert unbounded == []


@pytest.mark.parametrize("setting", [
    "detector.min_gap_ms", "sim.duration_s", "sampler.procmem_every_s", "sampler.link_every_s",
    "sampler.health_every_s", "sampler.pcie_replay_every_s", "sampler.row_remap_every_s",
    "sampler.legacy_pcie_every_s",
])
def test_a_setting_of_1e308_is_refused_naming_it_not_an_overflow_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str) -> None:
    section, key = setting.split(".")
    f = tmp_path / "c.toml"
    f.write_text(f"[{section}]\n{key} = 1e308\n")
    out = tmp_path / "r.jsonl"
    assert main(["record", "--config", str(f), "--source", "sim:pageable", "--speed", "0",
                 "--duration", "5", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{setting}: Input should be less than or equal to" in err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("setting", [
    '[logs]\npaths = ["a\\u0000b"]', '[prometheus]\nlisten = "127.0.0.1\\u0000:9400"',
    '[copytrace]\nenabled = true\nsocket = "/tmp/a\\u0000b"',
    '[sim]\nstatus_listen = "127.0.0.1\\u0000:0"', '[snapshot]\ndir = "a\\u0000b"',
    '[[logs.rules]]\nname = "r\\u0000"\nregex = "x"',
])
def test_a_nul_in_a_text_setting_is_refused_naming_it_not_a_traceback_where_it_is_used(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str) -> None:
    """A path, address or name holding a NUL (TOML's `\\u0000`) was taken, then met the call
    that uses it: `ValueError: embedded null byte` (a log path, the copy trace's socket) or
    `TypeError: host name must not contain null character` (the exporter's and the simulated
    prover's listen address) tracebacks, exit 1; the snapshot folder failed at each snapshot."""
    f = tmp_path / "c.toml"
    f.write_text(setting + "\n")
    out = tmp_path / "r.jsonl"
    assert main(["record", "--config", str(f), "--source", "sim:pageable", "--duration", "1",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "NUL" in err and "Traceback" not in err and not out.exists()
