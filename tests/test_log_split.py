"""A large `--log` file parsed in two processes gives the spool one process gives: the same
events in the same order, the same counters in the same order, the same span
(`gapwatch.offline.log_split`); where the parsers' states differ at the seam, the rest is parsed
again in one process, with the same result."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec
import pytest
from shared_files import sim_with_log_once
from split_parse import two_processes

from gapwatch.config import Config
from gapwatch.logs import parse
from gapwatch.logs.parse import LogParser
from gapwatch.offline import log_split
from gapwatch.offline.log_span import LogSpan
from gapwatch.offline.report import build_report, spool_logs, to_json

#: The split reports and parses below fork their workers as `gapwatch report` does, which they
#: do only with this process's main thread alone (tests/conftest.py, `no_stray_threads`).
pytestmark = pytest.mark.usefixtures("no_stray_threads")


@pytest.fixture(scope="module")
def sim_with_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """4 simulated GPUs (a gap every ~2 s on each) for 4 min, and the prover's log."""
    # A ~1 MB log.
    return sim_with_log_once(tmp_path_factory, seed=7, duration_s=240.0, gpus=4)


@pytest.fixture
def splits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Any file splits (small parts), in a test runner's process too; the adopted halves."""
    monkeypatch.setattr(log_split, "MIN_SPLIT_BYTES", 1)
    monkeypatch.setattr(log_split, "STARTUP_BYTES", 64 << 10)
    monkeypatch.setattr(log_split, "WARM_BYTES", 256 << 10)
    # The partitions' GPUs a parser keeps: the child's warm-up sees as many as this process.
    monkeypatch.setattr(parse, "_PART_GPU_KEPT", 100)
    return two_processes(monkeypatch)


def _both(log: Path) -> None:
    config = Config()
    span_two, span_one = LogSpan(1.0), LogSpan(1.0)
    split = log_split.spool_split([str(log)], config, None, span_two)
    assert split is not None
    two, counted_two = split
    one, counted_one = spool_logs([str(log)], config, None, span_one.observe)
    try:
        assert list(counted_two.items()) == list(counted_one.items())
        assert span_two.files == span_one.files
        assert len(two) == len(one) > 5000
        assert list(two) == list(one)
    finally:
        one.close()
        two.close()


def test_the_halves_give_the_events_and_counters_of_one_parse(
    sim_with_log: tuple[Path, Path], splits: list[int]
) -> None:
    _both(sim_with_log[1])
    assert splits == [1]  # the child's half was taken


def test_a_child_whose_parser_differs_at_the_seam_is_parsed_again_here(
    sim_with_log: tuple[Path, Path], splits: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_split, "STARTUP_BYTES", 0)  # no anchor line: TIMELINE unplaced
    _both(sim_with_log[1])
    assert splits == []


def test_a_child_is_taken_only_where_its_parser_state_is_this_ones(
    sim_with_log: tuple[Path, Path], splits: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same half, its state changed in one value: parsed again here."""
    parse_rest = log_split._parse_rest

    def another_state(*args: Any) -> log_split._Half:
        half = parse_rest(*args)
        assert half.state is not None
        return replace(half, state=(*half.state[:-1], "another attributor"))

    monkeypatch.setattr(log_split, "_parse_rest", another_state)
    _both(sim_with_log[1])
    assert splits == []


def test_a_report_with_a_log_parsed_in_two_processes_is_the_same_bytes(
    sim_with_log: tuple[Path, Path], splits: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, log = sim_with_log
    two = build_report(path, Config(), [str(log)], workers=1)
    assert splits == [1]
    monkeypatch.setattr(log_split, "MIN_SPLIT_BYTES", 1 << 62)  # the same, in one process
    one = build_report(path, Config(), [str(log)], workers=1)
    assert splits == [1]
    assert msgspec.json.encode(to_json(two)) == msgspec.json.encode(to_json(one))


def test_every_attribute_of_the_parser_is_in_its_resume_state_or_not_state() -> None:
    """`LogParser.resume_state` is what makes the split exact: an attribute added to the parser
    must be added there (or here, when it does not shape later events)."""
    in_state = {"offline", "cuzk_enabled", "keep_unparsed", "drops_untimed", "_last_timed_s",
                "anchor_wall_s", "anchor_source", "_own_anchors", "_daemons", "start_lines",
                "runs_apart", "_worker_gpu", "_worker_job", "_part_gpu", "_maps_key", "_maps_of",
                "_rules", "attributor", "_panic"}
    # counts, a cache of the counters' names, and the line being parsed's arrival kind and
    # place (set by each `parse_line` from its `backlog` and `apart` arguments)
    not_state = {"counters", "_kind_keys", "_arrival_source", "_apart", "_place"}
    assert set(vars(LogParser())) == in_state | not_state


def test_a_seam_is_a_line_start(tmp_path: Path) -> None:
    f = tmp_path / "x.log"
    f.write_bytes(b"ab\ncd\n\nef")
    assert [log_split.line_start(str(f), at) for at in range(0, 11)] == \
        [0, 3, 3, 3, 6, 6, 6, 7, 9, 9, 9]


def test_the_progress_line_follows_this_process_s_part_and_the_spool_is_the_same(
    sim_with_log: tuple[Path, Path], splits: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child parses its part at the same time: this process's share of its own part is
    the share of the whole said (`LogBytes` against the seam)."""
    from gapwatch.logs import files
    from gapwatch.offline.progress import Progress

    monkeypatch.setattr(files, "READ_BYTES", 64 << 10)
    lines: list[str] = []
    ticks = iter(range(10**6))
    progress = Progress(lines.append, "gapwatch report", clock=lambda: float(next(ticks)),
                        after_s=0.0, every_s=0.0)
    config = Config()
    log = str(sim_with_log[1])
    split = log_split.spool_split([log], config, None, LogSpan(1.0), progress)
    assert split is not None and splits == [1]
    two, _ = split
    one, _ = spool_logs([log], config, None)
    try:
        assert list(two) == list(one)
    finally:
        one.close()
        two.close()
    percents = [int(line.split("log ")[1].split(" %")[0]) for line in lines]
    assert len(percents) >= 4 and percents == sorted(percents) and percents[-1] == 100


def test_a_restart_before_the_seam_outside_the_warm_up_is_read_by_the_child_too(
    sim_with_log: tuple[Path, Path], splits: list[int], tmp_path: Path
) -> None:
    """The daemon restarted (a new TIMELINE anchor, another memory budget) well before the
    seam: the child reads that restart as it warms up (`warm_parts`), so its state agrees
    at the seam and its half is taken; it used to be parsed again here."""
    lines = sim_with_log[1].read_text().splitlines(keepends=True)
    stamped = [i for i, x in enumerate(lines) if x[:4] == "2026"]
    k = stamped[len(stamped) * 3 // 10]
    # The daemon's start lines, to its engine's start (cuzk-daemon starting ... budget, pinned
    # pool, `starting cuzk engine`), stamped at line k.
    n = next(i for i, x in enumerate(lines) if "starting cuzk engine" in x) + 1
    restart = [lines[k][:27] + x[27:] for x in lines[:n]]
    assert "starting cuzk engine" in restart[-1] and "cuzk-daemon starting" in restart[0]
    log = tmp_path / "cuzk.log"
    log.write_text("".join(lines[:k] + restart + lines[k:]))
    at = len("".join(lines[:k]))
    size = log.stat().st_size
    plan = log_split._whole_plan(str(log), size)
    assert plan is not None and at < plan.seam - log_split.WARM_BYTES  # outside the warm-up
    _both(log)
    assert splits == [1]


def test_a_stop_signal_between_the_childs_fork_and_the_clean_up_leaves_no_child_parsing(
    sim_with_log: tuple[Path, Path], splits: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop signal right after the log's second parser was forked, before the clean-up's
    `try` held it: the child parsed on after this process had stopped. It is started inside
    the clean-up's reach with the stop signals held back: the signal is taken after, and the
    child is killed and joined."""
    from faults import interrupted_right_after_each_start, process_running

    log = str(sim_with_log[1])
    started = interrupted_right_after_each_start(
        monkeypatch, lambda: log_split.spool_split([log], Config(), None, LogSpan(1.0)))
    assert started and not [pid for pid in started if process_running(pid)]
