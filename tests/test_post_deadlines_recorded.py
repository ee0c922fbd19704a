"""The offline commands judge a PoSt by the deadlines its recording was made with
(`gapwatch.cuzk.post_deadlines`): `report`, `replay`, `export` and `compare` of a recording made
with `[cuzk] winning_post_deadline_s = 5` said its late WinningPoSt `ok` against the 30 s of the
config they ran with, nothing said. A key the user's own config names wins, and the output says
which was used wherever the two differ; a recording whose header has none (older than the keys)
is judged by the running config, as before; a header value no deadline can be (negative, NaN,
1e300, a string) is said and counted as a bad header value, never used (docs/post.md,
"Deadlines")."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from shared_files import read_only_once
from sim_recordings import record_sim, report_of

from gapwatch.cli import main

#: The recording's WinningPoSt deadline: the first WinningPoSt of `sim:post` takes 6.5 s (on
#: time against cuzk's 30 s epoch), so it is late against this one.
RECORDED_S = 5.0
FIRST = "winpost-1000-1a2b3c01"
KEY = "winning_post_deadline_s"


def _config(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`record --source sim:post` for 60 s with a config of a 5 s WinningPoSt deadline: its
    first WinningPoSt said LATE live (the stderr checked where it is made)."""
    def make(folder: Path) -> None:
        config = _config(folder, "short.toml", f"[cuzk]\n{KEY} = {RECORDED_S:g}\n")
        out, err = record_sim(folder, "post", 60, "--config", str(config))
        assert f"WinningPoSt {FIRST}: 6.5 s of its 5 s deadline" in err and "LATE" in err

    return read_only_once(tmp_path_factory, "post-deadline-5s", make,
                          ("post.jsonl",)) / "post.jsonl"


def _with_header(src: Path, dest: Path, change: Any) -> Path:
    """`src` with its header's `config.cuzk` changed by `change(cuzk)` (in place), written by
    the standard library's JSON (NaN and Infinity as it writes them)."""
    lines = src.read_bytes().splitlines(keepends=True)
    head = json.loads(lines[0])
    change(head["config"]["cuzk"])
    lines[0] = json.dumps(head).encode() + b"\n"
    dest.write_bytes(b"".join(lines))
    return dest


def _report(path: Path, *flags: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(report_of(path, "--json", *flags))
    return doc


def _first(doc: dict[str, Any]) -> dict[str, Any]:
    """The first WinningPoSt's last word in a report's JSON."""
    words = [e["proof"] for e in doc["prover_events"]["proof"] if e["job_id"] == FIRST]
    assert words, "the report says nothing of the first WinningPoSt"
    last: dict[str, Any] = words[-1]
    return last


def test_a_report_judges_post_by_the_deadline_it_was_recorded_with_and_says_so(
        recorded: Path) -> None:
    """The reproduction: recorded with a 5 s deadline (LATE live), reported on a box without
    that config: `6.5 ... 30.0 ok`, nothing said. Now the recording's 5 s judges it, and the
    PoSt section says whose deadline it is and what this run's config says."""
    doc = _report(recorded)
    first = _first(doc)
    assert (first["deadline_s"], first["verdict"]) == (RECORDED_S, "late")
    assert doc["post_deadlines"] == {
        "winning_s": RECORDED_S, "window_s": 1800.0, "at_risk_share": 0.5,
        "from": {"winning_s": "recording", "window_s": "recording",
                 "at_risk_share": "recording"},
        "recorded": {"winning_s": RECORDED_S, "window_s": 1800.0, "at_risk_share": 0.5},
        "config": {"winning_s": 30.0, "window_s": 1800.0, "at_risk_share": 0.5}}
    text = report_of(recorded)
    section = text[text.index("Prover events:"):]
    assert section.splitlines()[1] == (
        "  PoSt judged by the deadlines the recording was made with: WinningPoSt 5 s (this "
        "run's config: 30 s; a config naming [cuzk] winning_post_deadline_s judges by its own)")
    assert "Prover events: 2 PoSt proof(s) (2 late" in text


def test_a_deadline_the_users_config_names_wins_over_the_recordings_and_is_said(
        recorded: Path, tmp_path: Path) -> None:
    """`--config` naming the key: the user's 30 s for this run, said beside the recording's."""
    config = _config(tmp_path, "epoch.toml", f"[cuzk]\n{KEY} = 30\n")
    doc = _report(recorded, "--config", str(config))
    first = _first(doc)
    assert (first["deadline_s"], first["verdict"]) == (30.0, "ok")
    deadlines = doc["post_deadlines"]
    assert (deadlines["winning_s"], deadlines["from"]["winning_s"]) == (30.0, "config")
    assert deadlines["from"]["window_s"] == "recording"
    text = report_of(recorded, "--config", str(config))
    assert ("  PoSt judged by this run's config where it names the key: WinningPoSt 30 s "
            "([cuzk] winning_post_deadline_s; recorded with 5 s)") in text.splitlines()


def test_a_config_that_names_other_keys_leaves_the_recordings_deadlines(
        recorded: Path, tmp_path: Path) -> None:
    """A config of other keys (and a flag that rebuilds it, `--log`) sets no deadline: the
    recording's still judges. `with_overrides` dumped every default into the config it
    rebuilt, so every key read as one the user named."""
    config = _config(tmp_path, "other.toml", "[detector]\nmin_gap_ms = 300\n")
    log = _config(tmp_path, "empty.log", "")
    doc = _report(recorded, "--config", str(config), "--log", str(log))
    assert doc["post_deadlines"]["from"]["winning_s"] == "recording"
    assert _first(doc)["deadline_s"] == RECORDED_S


def test_a_recording_whose_header_has_no_deadlines_is_judged_by_this_runs_config(
        recorded: Path, tmp_path: Path) -> None:
    """A recording older than the keys: this run's config, as before, and nothing to say."""
    def drop(cuzk: dict[str, Any]) -> None:
        for key in (KEY, "window_post_deadline_s", "post_at_risk_share"):
            del cuzk[key]

    old = _with_header(recorded, tmp_path / "old.jsonl", drop)
    doc = _report(old)
    assert _first(doc)["verdict"] == "ok"
    assert doc["post_deadlines"]["from"] == {
        "winning_s": "config", "window_s": "config", "at_risk_share": "config"}
    assert doc["post_deadlines"]["recorded"] == {
        "winning_s": None, "window_s": None, "at_risk_share": None}
    assert "PoSt judged by" not in report_of(old)
    config = _config(tmp_path, "short.toml", f"[cuzk]\n{KEY} = 5\n")
    assert _first(_report(old, "--config", str(config)))["verdict"] == "late"


@pytest.mark.parametrize("value", [-5.0, 0, float("nan"), float("inf"), 1e300, "5", True, [5]],
                         ids=["negative", "zero", "nan", "inf", "1e300", "string", "bool",
                              "list"])
def test_a_header_deadline_no_deadline_can_be_is_said_and_never_used(
        recorded: Path, tmp_path: Path, value: object) -> None:
    """A hostile header value: counted and said as a bad header value (`bad_header`), and this
    run's config judges the PoSt (NaN was replaced by the key's default, said as that)."""
    def spoil(cuzk: dict[str, Any]) -> None:
        cuzk[KEY] = value

    bad = _with_header(recorded, tmp_path / "bad.jsonl", spoil)
    doc = _report(bad)
    assert doc["counters"]["bad_header"] == 1
    [said] = [p for p in doc["problems"] if "config.cuzk.winning_post_deadline_s" in p]
    assert "this run's config judges PoSt" in said
    assert doc["post_deadlines"]["from"]["winning_s"] == "config"
    assert doc["post_deadlines"]["recorded"]["winning_s"] is None
    assert (_first(doc)["deadline_s"], _first(doc)["verdict"]) == (30.0, "ok")
    # The header's other deadlines are its own still.
    assert doc["post_deadlines"]["from"]["window_s"] == "recording"


def test_a_header_whose_cuzk_section_is_no_table_is_said_and_this_runs_config_judges(
        recorded: Path, tmp_path: Path) -> None:
    lines = recorded.read_bytes().splitlines(keepends=True)
    head = json.loads(lines[0])
    head["config"]["cuzk"] = "x" * 5000
    lines[0] = json.dumps(head).encode() + b"\n"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines))
    doc = _report(bad)
    assert doc["counters"]["bad_header"] == 1
    [said] = [p for p in doc["problems"] if "config.cuzk" in p]
    assert len(said) < 400  # the value quoted cut
    assert _first(doc)["verdict"] == "ok"


def _stderr(argv: list[str]) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0, err.getvalue()
    return err.getvalue()


def test_a_replay_judges_post_by_the_recordings_deadline_and_says_so(recorded: Path) -> None:
    err = _stderr(["replay", str(recorded), "--headless", "--speed", "0"])
    assert f"WinningPoSt {FIRST}: 6.5 s of its 5 s deadline" in err
    assert "PoSt judged by the deadlines the recording was made with: WinningPoSt 5 s" in err


def test_a_replay_with_a_config_naming_the_key_judges_by_it(recorded: Path,
                                                             tmp_path: Path) -> None:
    config = _config(tmp_path, "epoch.toml", f"[cuzk]\n{KEY} = 30\n")
    err = _stderr(["replay", str(recorded), "--headless", "--speed", "0", "--config",
                   str(config)])
    assert f"WinningPoSt {FIRST}: 6.5 s of its 5 s deadline" not in err
    assert "PoSt judged by this run's config where it names the key: WinningPoSt 30 s" in err


def test_an_export_draws_post_as_judged_by_the_recordings_deadline(recorded: Path,
                                                                    tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    err = _stderr(["export", str(recorded), "--out", str(out)])
    trace = json.loads(out.read_text())
    names = [e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"
             and e["name"].startswith("winning-post") and FIRST in json.dumps(e.get("args"))]
    assert names == ["winning-post late"]
    assert "PoSt judged by the deadlines the recording was made with" in err


def test_compare_judges_each_side_by_its_own_recordings_deadline(
        recorded: Path, tmp_path: Path) -> None:
    """BEFORE recorded with 5 s, AFTER (the same run) with none in its header: each side is
    judged by its own, and the comparison says the two differ."""
    def drop(cuzk: dict[str, Any]) -> None:
        del cuzk[KEY]

    old = _with_header(recorded, tmp_path / "old.jsonl", drop)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["compare", str(recorded), str(old), "--json"]) == 0
    doc = msgspec.json.decode(out.getvalue())
    sides = doc["sides"]
    assert sides["BEFORE"]["post_deadlines"]["winning_s"] == RECORDED_S
    assert sides["AFTER"]["post_deadlines"]["winning_s"] == 30.0
    late = next(f for f in doc["figures"] if f["figure"] == "PoSt late: winning-post")
    assert (late["before"], late["after"]) == (1.0, 0.0)
    assert any("judged by different PoSt deadlines" in n for n in doc["notes"])
