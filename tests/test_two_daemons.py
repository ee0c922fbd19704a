"""Two cuzk daemons on one box, one gapwatch given both logs: a PoRep cuzk on GPU 0 and the
PoSt-only cuzk on GPU 1 that gapwatch's PoSt advice suggests (`--log porep.log --log
post.log`). The second daemon's start line is no restart of the first, the first's PoSt in
flight is not lost in it, each file's TIMELINE lines are placed by its own start line, and
the two daemons are said once (`gapwatch.cuzk.daemons`). Every line is one of upstream's
formats (cuzk-daemon main.rs:63-64, engine.rs:1244, 1339, 2958, 839, scheduler.rs:67,
TIMELINE engine.rs:349-353), as tests/data/cuzk-upstream's scenario logs write them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cuzk_fakes import cuzk_doc
from faults import until
from followed_logs import following
from parsed_logs import watched_events

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.config import LogsConfig
from gapwatch.core.evidence_types import EventEvidence
from gapwatch.core.hints import memory_phrases
from gapwatch.core.models import Gap, LogEvent, ProcessMemory, ProverEvent, ProverStatus
from gapwatch.core.prover_watch import notice_of
from gapwatch.cuzk.advice import CITED, advise
from gapwatch.cuzk.first_wave import unpinned_by_design
from gapwatch.cuzk.pipeline import PipelineFacts
from gapwatch.cuzk.prover import CuzkGap
from gapwatch.cuzk.status import parse_status
from gapwatch.cuzk.watch import CuzkWatch
from gapwatch.logs.parse import LogParser
from gapwatch.sinks.recorder import write_recording

T = "2026-05-12T16:00:"


def _start(at: str, listen: str, gpu: int) -> list[str]:
    """A daemon's start: its first lines, in the order cuzk writes them (main.rs:63-64, then
    `Engine::start`: engine.rs:1198, 1219, 1244, 1339, 2958)."""
    return [
        f"{T}{at}.000000Z  INFO cuzk_daemon: cuzk-daemon starting",
        f"{T}{at}.001000Z  INFO cuzk_daemon: configuration loaded listen={listen}",
        f"{T}{at}.010000Z  INFO cuzk_core::engine: memory budget initialized "
        "total_budget_gib=750",
        f"{T}{at}.020000Z  INFO cuzk_core::engine: CUDA pinned memory pool initialized",
        f"{T}{at}.030000Z  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
        f"{T}{at}.031000Z  INFO cuzk_core::engine: initializing GPU workers num_gpus=1 "
        f"gpu_workers_per_device=2 total_workers=2 gpus=[{gpu}]",
        f"{T}{at}.032000Z  INFO cuzk_core::engine: pipeline GPU worker started worker_id=0 "
        f"gpu={gpu} sub_id=0",
    ]


#: The lines of a daemon's start (`_start`).
N_START = 7


def _winning_post(job: str, enqueued: str, offset_ms: int) -> list[str]:
    """A WinningPoSt of 3.0 s: enqueued, synthesised 2.1 s, proved 0.8 s, completed; its
    TIMELINE offsets from `offset_ms` (its run's milliseconds since its start line)."""
    o = offset_ms
    return [
        f"{T}{enqueued}.000000Z  INFO cuzk_core::scheduler: job enqueued job_id={job} "
        "proof_kind=winning-post priority=Critical queue_position=0",
        f"TIMELINE,{o},SYNTH_START,{job},kind=winning-post",
        f"TIMELINE,{o + 2100},SYNTH_END,{job},synth_ms=2100",
        f"TIMELINE,{o + 2100},GPU_QUEUE,{job},monolithic",
        f"TIMELINE,{o + 2110},GPU_PICKUP,{job},worker=0",
        f"TIMELINE,{o + 2110},GPU_START,{job},worker=0",
        f"TIMELINE,{o + 2910},GPU_END,{job},worker=0,gpu_ms=800",
    ]


#: The PoRep daemon, started at 16:00:00: a partition, then a WinningPoSt Curio still sent it
#: (enqueued 16:00:20, in flight when the PoSt daemon starts at 16:00:21), then partitions.
POREP = [
    *_start("00", "127.0.0.1:9820", 0),
    "TIMELINE,10000,GPU_START,porep-1000-77,worker=0,partition=0",
    "TIMELINE,13000,GPU_END,porep-1000-77,worker=0,partition=0,gpu_ms=3000",
    *_winning_post("winpost-1000-9f8e7d6c", "20", 20100),
    f"{T}23.040000Z  INFO cuzk_core::engine: proof completed successfully (pipeline) "
    "proof_len=192 total_ms=3040 queue_ms=100 synth_ms=2100 gpu_ms=800",
    "TIMELINE,25000,GPU_START,porep-1000-77,worker=0,partition=1",
    "TIMELINE,48000,GPU_END,porep-1000-77,worker=0,partition=1,gpu_ms=23000",
]
#: The PoSt-only daemon, started at 16:00:21 on GPU 1: one WinningPoSt on time.
POST = [
    *_start("21", "127.0.0.1:9830", 1),
    *_winning_post("winpost-1001-aa", "30", 9100),
    f"{T}33.040000Z  INFO cuzk_core::engine: proof completed successfully (pipeline) "
    "proof_len=192 total_ms=3040 queue_ms=100 synth_ms=2100 gpu_ms=800",
]
#: The PoSt daemon killed with a WinningPoSt in flight (enqueued 16:00:38) and started again
#: at 16:00:40: a restart of its own.
POST_RESTARTED = [
    *POST,
    f"{T}38.000000Z  INFO cuzk_core::scheduler: job enqueued job_id=winpost-1002-bb "
    "proof_kind=winning-post priority=Critical queue_position=0",
    "TIMELINE,17100,SYNTH_START,winpost-1002-bb,kind=winning-post",
    *_start("40", "127.0.0.1:9830", 1),
]


def _events(files: dict[str, list[str]]) -> list[LogEvent]:
    """Each file parsed as `report --log` and `parse` read it (one parser, a file after
    another), the events in the order of their times (as the report feeds its watcher)."""
    parser = LogParser(offline=True)
    out: list[LogEvent] = []
    for path, lines in files.items():
        for i, line in enumerate(lines):
            out += parser.parse_line(line, path, i, 0.0)
    return sorted(out, key=lambda e: e.t_wall_s)


_watched = watched_events


def _proofs(said: list[ProverEvent]) -> dict[str, str]:
    """Each PoSt's last word: its verdict, or `lost in restart`."""
    return {e.job_id: "lost in restart" if e.proof.given_up == "restart" else e.proof.verdict
            for e in said if e.job_id is not None and e.proof is not None}


def test_a_second_daemons_start_is_no_restart_and_the_firsts_post_in_flight_is_not_lost() -> None:
    said = _watched(_events({"porep.log": POREP, "post.log": POST}))
    assert [e for e in said if e.kind in ("restart", "restart_cost")] == []
    assert _proofs(said) == {"winpost-1000-9f8e7d6c": "ok", "winpost-1001-aa": "ok"}
    [note] = [e for e in said if e.kind == "setup"]
    notice = notice_of(note, 0)  # the dashboard's notices, record's stderr
    assert notice is not None and notice.level == "warning"
    assert notice.message.startswith("prover setup at 16:00:21: these logs are of 2 cuzk")
    assert note.message.startswith("these logs are of 2 cuzk daemons, not one: --log porep.log "
                                   "(started 16:00:00, listening on 127.0.0.1:9820, GPU 0); "
                                   "--log post.log (started 16:00:21, listening on "
                                   "127.0.0.1:9830)")


def test_the_two_daemon_note_is_counted_as_setup_and_no_alert_pages_on_it() -> None:
    """The note was a prover event of kind "warning": gapwatch_prover_events_total{kind=
    "warning"} became 1 at the second daemon's start, and GapwatchProverWarning paged that
    "cuzk's pinned pool is churning" for the setup gapwatch's own advice recommends (a
    PoSt-only cuzk). It is of kind "setup" (a bounded label, every level exported from 0),
    which no rule reads; "warning" is left to pool churn, what the alert's words say."""
    from gapwatch.sinks.prover_event_metrics import ProverEventCounts, families

    counts = ProverEventCounts()
    for ev in _watched(_events({"porep.log": POREP, "post.log": POST})):
        counts.count(ev)
    (events,) = [f for f in families(counts) if f.name == "gapwatch_prover_events"]
    by_kind = {(s.labels["kind"], s.labels["level"]): s.value for s in events.samples
               if s.name.endswith("_total")}
    assert by_kind[("setup", "warning")] == 1
    assert by_kind[("warning", "warning")] == 0
    rules = (Path(__file__).resolve().parent.parent / "deploy" / "prometheus"
             / "gapwatch.rules.yml").read_text()
    read = set(re.findall(r'gapwatch_prover_events_total\{[^}]*kind=~?"([^"]+)"', rules))
    assert "warning" in read and not any("setup" in k for k in read), read


def test_a_restart_of_the_post_daemon_is_its_own_and_loses_only_its_own_post() -> None:
    said = _watched(_events({"porep.log": POREP, "post.log": POST_RESTARTED}))
    [restart] = [e for e in said if e.kind == "restart"]
    assert restart.t_wall_s == pytest.approx(_t0() + 40.0, abs=0.001)
    assert "killed or crashed" in restart.message
    assert _proofs(said) == {"winpost-1000-9f8e7d6c": "ok", "winpost-1001-aa": "ok",
                             "winpost-1002-bb": "lost in restart"}


def test_with_two_daemons_each_event_names_its_daemon_in_its_fields_and_its_words() -> None:
    """The PoSt daemon's restart and the PoSt it lost in it were said "cuzk restarted ..."
    on stderr, in the report and in --on-event's line, naming neither daemon: each names its
    own (its listen address and GPUs), in `ProverEvent.daemon` and in its words."""
    said = _watched(_events({"porep.log": POREP, "post.log": POST_RESTARTED}))
    of_post = [e for e in said if e.kind.startswith("restart") or e.job_id == "winpost-1002-bb"]
    assert {e.kind for e in of_post} == {"restart", "proof"}
    for e in of_post:
        assert (e.daemon, e.daemon_gpus) == ("127.0.0.1:9830", [1]), e
        assert e.message.startswith("daemon 127.0.0.1:9830 (GPU 1): "), e.message
    [restart] = [e for e in said if e.kind == "restart"]
    assert restart.cause == "killed"
    # The PoRep daemon's PoSt, said after the second daemon showed, names its own.
    [porep_post] = [e for e in said if e.job_id == "winpost-1000-9f8e7d6c" and e.proof
                    and e.proof.done]
    assert porep_post.daemon == "127.0.0.1:9820"
    # With one daemon nothing is named: its words are as they were.
    alone = _watched(_events({"post.log": POST_RESTARTED}))
    assert all(e.daemon is None and not e.message.startswith("daemon ") for e in alone)


def test_one_daemons_runs_in_files_of_their_own_are_one_daemon_restarted() -> None:
    """The same listen address in both files (cuzk writes each run to a file of its own): the
    second file's start line is a restart, as in one file."""
    second = [*_start("50", "127.0.0.1:9820", 0),
              "TIMELINE,5000,GPU_START,porep-1000-78,worker=0,partition=0",
              "TIMELINE,8000,GPU_END,porep-1000-78,worker=0,partition=0,gpu_ms=3000"]
    said = _watched(_events({"run1.log": POREP, "run2.log": second}))
    assert [e.kind for e in said if e.kind.startswith("restart")] == ["restart", "restart_cost"]
    assert not [e for e in said if e.kind == "setup"]


def _restart_words(said: list[ProverEvent]) -> list[str]:
    return [e.message for e in said if e.kind.startswith("restart")]


def test_one_daemons_restart_into_a_new_file_is_said_as_in_one_file() -> None:
    """logrotate, then a restart: `cuzk.log.1` ends with run 1, `cuzk.log` starts with run 2.
    The second file's `cuzk-daemon starting` went to a daemon of its own, merged back a line
    later (the same listen address) with that line lost: run 1 read as up until run 2's
    config line ("up with nothing in flight for 587.0 s ... down 0.0 s") and the gap over it
    `no_work`. The line is held until the file's next line says whose it is."""
    run1 = [*_start("00", "127.0.0.1:9820", 0),
            "TIMELINE,10000,GPU_START,porep-1000-77,worker=0,partition=0",
            "TIMELINE,13000,GPU_END,porep-1000-77,worker=0,partition=0,gpu_ms=3000"]
    run2 = [line.replace(T, "2026-05-12T16:10:") for line in _start("00", "127.0.0.1:9820", 0)]
    run2 += ["TIMELINE,5000,GPU_START,porep-1000-78,worker=0,partition=0",
             "TIMELINE,8000,GPU_END,porep-1000-78,worker=0,partition=0,gpu_ms=3000"]
    one = _events({"cuzk.log": run1 + run2})
    rotated = _events({"cuzk.log.1": run1, "cuzk.log": run2})
    words = _restart_words(_watched(rotated))
    assert words == _restart_words(_watched(one))
    assert any("down 587.0 s" in w for w in words)
    facts = PipelineFacts()
    for e in rotated:
        facts.feed(e)
    t0 = rotated[0].t_wall_s
    assert facts.log_view(0, t0 + 13.1, t0 + 605.0, "host_stall").cause == "restart"


def test_a_file_that_ends_on_its_start_line_is_a_restart_said_at_the_end_of_the_data() -> None:
    """A new file's `cuzk-daemon starting` waits for its next line to say whose it is (its
    listen address); a daemon that died on that line (a bad config: `cuzk.log` holds its first
    line only, the run before in `cuzk.log.1`) never wrote one, and the restart was never
    said. With nothing more to read, the line is the first daemon's, as a file that shows no
    listen address of its own is: a restart, said with the rest at the data's end."""
    run1 = [*_start("00", "127.0.0.1:9820", 0),
            "TIMELINE,10000,GPU_START,porep-1000-77,worker=0,partition=0",
            "TIMELINE,13000,GPU_END,porep-1000-77,worker=0,partition=0,gpu_ms=3000"]
    died = [f"{T}50.000000Z  INFO cuzk_daemon: cuzk-daemon starting"]
    said = _watched(_events({"cuzk.log.1": run1, "cuzk.log": died}))
    [restart] = [e for e in said if e.kind == "restart"]
    assert restart.t_wall_s == pytest.approx(_t0() + 50.0, abs=0.001)
    assert "killed or crashed" in restart.message
    assert said == _watched(_events({"cuzk.log": run1 + died}))  # as one file says it


def test_one_daemons_runs_in_files_without_cuzk_daemons_own_lines_are_one_daemon() -> None:
    """Logs that begin at `starting cuzk engine` (`RUST_LOG=cuzk_core=info`, the H200 captures
    in tests/data): no listen address says another daemon, so a second file's start line is
    a restart, as in one file. It was "these logs are of 2 cuzk daemons", no restart, and the
    parser's lock attribution off for good."""
    engine_only = [line for line in POREP if "cuzk_daemon" not in line]
    later = [line.replace(T, "2026-05-12T17:00:") for line in engine_only]
    said = _watched(_events({"a.log": engine_only, "b.log": later}))
    assert [e.kind for e in said if e.kind.startswith("restart")] == ["restart", "restart_cost"]
    assert not [e for e in said if e.kind == "setup"]
    parser = LogParser(offline=True)
    for path, lines in (("a.log", engine_only), ("b.log", later)):
        for i, line in enumerate(lines):
            parser.parse_line(line, path, i, 0.0)
    assert parser.attributor.enabled


def test_the_first_daemons_settings_are_not_the_post_daemons() -> None:
    """A PoSt-only cuzk with its pipeline off beside a PoRep cuzk with it on: its start line
    set `pipeline_enabled` false for all, and every gap of the PoRep daemon was advised
    `[pipeline] enabled = true`. The settings advised on are the first daemon's."""
    from gapwatch.cuzk.paths import PathsSeen

    post = [line.replace("pipeline_enabled=true", "pipeline_enabled=false") for line in POST]
    facts, seen = PipelineFacts(), PathsSeen()
    for e in _events({"porep.log": POREP, "post.log": post}):
        facts.feed(e)
        seen.feed_log(e)
    assert facts.view().pipeline_enabled is True
    assert seen.result().pipeline_enabled is True


def test_a_gap_over_the_second_daemons_start_is_not_a_restarts() -> None:
    facts = _fed({"porep.log": POREP, "post.log": POST})
    assert facts.runs == 1  # the first daemon's work in flight kept
    assert facts.log_view(0, _t0() + 14.0, _t0() + 24.0, "starved").cause != "restart"


def _t0() -> float:
    return _events({"x": [POREP[0]]})[0].t_wall_s


def test_followed_live_each_files_timeline_is_placed_by_its_own_start_line() -> None:
    """Live, lines arrive interleaved: the PoRep daemon's TIMELINE line written after the PoSt
    daemon started counts from the PoRep daemon's start line, not the latest one read."""
    parser = LogParser()
    t0 = _t0()
    for i, line in enumerate(POREP[:N_START]):
        parser.parse_line(line, "porep.log", i, t0 + 0.1)
    for i, line in enumerate(POST[:N_START]):
        parser.parse_line(line, "post.log", i, t0 + 21.1)
    [porep] = parser.parse_line(POREP[N_START], "porep.log", 10, t0 + 21.2)  # offset 10.000 s
    [post] = parser.parse_line(POST[N_START + 1], "post.log", 11, t0 + 39.2)  # offset 9.100 s
    assert porep.time_source == post.time_source == "timeline"
    assert porep.t_wall_s == pytest.approx(t0 + 0.030 + 10.0, abs=0.001)
    assert post.t_wall_s == pytest.approx(t0 + 21.030 + 9.1, abs=0.001)


def test_parse_timeline_of_two_daemons_says_them_once_and_no_restart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    porep, post = tmp_path / "porep.log", tmp_path / "post.log"
    porep.write_text("\n".join(POREP) + "\n")
    post.write_text("\n".join(POST) + "\n")
    assert main(["parse", "--timeline", str(porep), str(post)]) == 0
    out = capsys.readouterr().out
    assert "0 restart(s)" in out and "cuzk restarted" not in out
    assert out.count("these logs are of 2 cuzk daemons, not one") == 1
    assert "2 PoSt proof(s) (0 late, 0 at risk), 0 restart(s)" in out
    assert "Restarts (" not in out and "in flight when the prover restarted" not in out


def test_followed_live_the_second_daemons_start_is_no_restart() -> None:
    """Both files followed live (`watch --log porep.log --log post.log`): each line arrives
    as it is written, the two files' lines interleaved; the watcher says what it says of one
    daemon with no restart, and the two daemons once."""
    written = _events({"porep.log": POREP, "post.log": POST})  # when each line was written
    parser, watch = LogParser(), CuzkWatch()
    said: list[ProverEvent] = []
    for i, e in enumerate(written):
        for ev in parser.parse_line(e.raw, e.stream, i * 1_000_000, e.t_wall_s):
            said += watch.feed(ev)
    said += watch.finish()
    assert not [e for e in said if e.kind.startswith("restart")]
    assert _proofs(said) == {"winpost-1000-9f8e7d6c": "ok", "winpost-1001-aa": "ok"}
    assert [e.kind for e in said if e.kind == "setup"] == ["setup"]


def test_followed_from_their_end_one_daemons_offsets_are_no_restart_of_the_others() -> None:
    """`watch --log porep.log --log post.log` started after both daemons: no start line is read
    and every line is the first daemon's, but each file's TIMELINE offsets are its own engine's
    clock. The PoSt daemon's offsets (9.1 s since it started) read while the PoRep daemon's
    WinningPoSt is at 20.1 s of its own are no run beginning again: that PoSt is not lost."""
    t0 = _t0()
    porep_post = _winning_post("winpost-1000-9f8e7d6c", "20", 20100)
    written = [  # (written at, file, line): each read as it is written
        (t0 + 20.0, "porep.log", porep_post[0]),
        (t0 + 20.1, "porep.log", porep_post[1]),
        (t0 + 30.0, "post.log", POST[N_START]),  # its job enqueued, then its SYNTH_START at 9.1 s
        (t0 + 30.1, "post.log", POST[N_START + 1]),
        *[(t0 + 30.2 + 0.01 * i, "porep.log", line) for i, line in enumerate(porep_post[2:])],
        (t0 + 30.3, "porep.log", f"{T}30.300000Z  INFO cuzk_core::engine: proof completed "
         "successfully (pipeline) proof_len=192 total_ms=10300 queue_ms=100 synth_ms=2100 "
         "gpu_ms=800"),
    ]
    parser, watch = LogParser(), CuzkWatch()
    said: list[ProverEvent] = []
    for i, (at_s, path, line) in enumerate(written):
        for ev in parser.parse_line(line, path, int(at_s * 1e9) - int(t0 * 1e9) + i, at_s):
            said += watch.feed(ev)
    assert watch.post.offsets_began_again == 0
    assert _proofs(said) == {"winpost-1000-9f8e7d6c": "ok"}


def test_followed_from_their_end_one_daemons_gpu_queue_loses_no_job_of_the_others() -> None:
    """Each daemon pushes its WinningPoSt with the GPU queue key (0,0) (engine.rs:2851) into
    its own queue: the PoSt daemon's picked up while the PoRep daemon's waits for a worker
    replaced nothing, and the PoRep daemon's is picked up later."""
    lines = [("porep.log", "TIMELINE,22200,GPU_QUEUE,winpost-1000-9f8e7d6c,monolithic"),
             ("post.log", "TIMELINE,11200,GPU_QUEUE,winpost-1001-aa,monolithic"),
             ("post.log", "TIMELINE,11210,GPU_PICKUP,winpost-1001-aa,worker=0"),
             ("porep.log", "TIMELINE,24000,GPU_PICKUP,winpost-1000-9f8e7d6c,worker=1")]
    parser, watch = LogParser(), CuzkWatch()
    t0 = _t0()
    said = [e for i, (path, line) in enumerate(lines)
            for ev in parser.parse_line(line, path, i, t0 + 22.2 + i) for e in watch.feed(ev)]
    assert [e for e in said if e.kind == "lost_job"] == []


def test_the_advice_for_a_post_behind_the_gpu_workers_says_how_to_watch_a_post_only_cuzk() -> None:
    """A WinningPoSt that waited 40 s for a GPU worker: no setting of one cuzk frees it, a
    PoSt-only cuzk on its own GPU does, and the advice says how gapwatch watches the two."""
    job = "winpost-1000-9f8e7d6c"
    lines = [*_start("00", "127.0.0.1:9820", 0), *_winning_post(job, "20", 20100)]
    lines = [line.replace(",22210,GPU_", ",62210,GPU_").replace(",23010,GPU_END", ",63010,GPU_END")
             for line in lines]
    said = _watched(_events({"porep.log": lines}))
    [late] = [e for e in said if e.proof is not None and e.proof.done]
    assert late.proof is not None and late.proof.verdict == "late"
    setting = late.proof.setting or ""
    assert "a PoSt-only cuzk on its own GPU ([gpus] devices" in setting
    assert ("one gapwatch per daemon (`gapwatch watch --gpus N --log its.log --cuzk-status "
            "http://its-status-addr/status`)") in setting
    assert "`--log porep.log --log post.log`" in setting



def _retimed(lines: list[str], shift_s: float) -> list[str]:
    """`lines` written `shift_s` later (their TIMELINE offsets, from their start line, as
    they are)."""
    out = []
    for line in lines:
        m = re.match(r"(\d{4}-\d\d-\d\dT\S+Z)(.*)", line)
        if m is not None:
            t_s = datetime.strptime(m[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
            line = datetime.fromtimestamp(t_s.timestamp() + shift_s, UTC).strftime(
                "%Y-%m-%dT%H:%M:%S.%fZ") + m[2]
        out.append(line)
    return out


def test_report_of_two_daemons_logs_says_them_once_no_restart_and_each_run_its_own(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sim = simulate("chained", seed=1, duration_s=80)
    rec = tmp_path / "gw.jsonl"
    write_recording(rec, sim.header, sim.records)
    shift_s = sim.header.started_wall_s + 5.0 - _t0()  # inside the recording
    porep, post = tmp_path / "porep.log", tmp_path / "post.log"
    porep.write_text("\n".join(_retimed(POREP, shift_s)) + "\n")
    post.write_text("\n".join(_retimed(POST, shift_s)) + "\n")
    assert main(["report", str(rec), "--log", str(porep), "--log", str(post)]) == 0
    out = capsys.readouterr().out
    assert "2 PoSt proof(s) (0 late, 0 at risk), 0 restart(s)" in out
    assert out.count("these logs are of 2 cuzk daemons, not one") == 1
    assert "cuzk restarted" not in out and "in flight when the prover restarted" not in out
    # Partitions and PoSt jobs: the table counts them apart, as GPU jobs.
    table = out.split("GPU jobs (from the log): ")[1]
    assert " partitions, " in table.splitlines()[0] and " PoSt jobs, " in table.splitlines()[0]
    # One run each: the PoSt daemon's start made no run 2 of the PoRep daemon's partitions.
    assert table.splitlines()[1].split()[0] == "job"



def _at_least(events: list[LogEvent], n: int) -> Callable[[], bool]:
    return lambda: len(events) >= n


def test_a_real_follower_of_both_files_places_each_files_timeline_by_its_own_start_line(
        tmp_path: Path) -> None:
    """`watch --log porep.log --log post.log`, both daemons started while followed: the PoRep
    daemon's TIMELINE line written after the PoSt daemon started is placed by the PoRep
    daemon's start line, and the watcher fed in the order they came says no restart."""
    porep, post = tmp_path / "porep.log", tmp_path / "post.log"
    porep.write_text("")
    post.write_text("")
    with following([porep, post], LogsConfig(poll_ms=5)) as (_, events, _notices):
        for path, lines in ((porep, POREP[:N_START]), (post, POST[:N_START]),
                            (porep, POREP[N_START:N_START + 3])):
            # Each file's lines read before the next are written: in the order written.
            all_read = _at_least(events, len(events) + len(lines))
            with open(path, "a") as f:
                f.write("\n".join(lines) + "\n")
            assert until(all_read)
    [gpu_start] = [e for e in events if e.name == "GPU_START"]
    assert gpu_start.stream == str(porep) and gpu_start.time_source == "timeline"
    assert gpu_start.t_wall_s == pytest.approx(_t0() + 0.030 + 10.0, abs=0.001)
    watch = CuzkWatch()
    said = [e for ev in events for e in watch.feed(ev)]
    assert not [e for e in said if e.kind.startswith("restart")]
    assert [e.kind for e in said] == ["setup"]


def test_each_daemons_workers_drive_its_own_gpu() -> None:
    """Both daemons number their GPU workers from 0 (engine.rs:2958): a PoRep TIMELINE line of
    worker 0, after the PoSt daemon's worker 0 started on GPU 1, is still GPU 0's."""
    def gpus(events: list[LogEvent], stream: str) -> set[int | None]:
        return {e.gpu for e in events if e.stream == stream and e.worker is not None}

    events = _events({"porep.log": POREP, "post.log": POST})  # read a file after the other
    assert (gpus(events, "porep.log"), gpus(events, "post.log")) == ({0}, {1})
    live = LogParser()  # followed: the lines in the order written
    said = [ev for e in events for ev in live.parse_line(e.raw, e.stream, 0, e.t_wall_s)]
    assert (gpus(said, "porep.log"), gpus(said, "post.log")) == ({0}, {1})



def _status(prover: str, t_s: float, uptime_s: float) -> ProverStatus:
    return ProverStatus(prover, 0, t_s, 1.0, uptime_s, {}, [], None, None, None, None)


def _process(gpu: int, pid: int, t_s: float) -> ProcessMemory:
    return ProcessMemory(0, t_s, gpu, pid, "cuzk", None, None)


def test_the_post_daemons_status_and_process_going_back_restart_only_it() -> None:
    """Both `/status` polled (`--cuzk-status` twice) and both GPUs' processes read: the PoSt
    daemon's uptime going back and its new pid on GPU 1 are its restart (its `status HTTP
    server listening addr=`, main.rs:133, and its lines' GPU say whose), not the PoRep
    daemon's: the PoRep daemon's WinningPoSt in flight is not lost."""
    t0 = _t0()
    post = [*POST[:N_START], f"{T}21.040000Z  INFO cuzk_daemon: status HTTP server listening "
                       "addr=0.0.0.0:9831"]
    events = _events({"porep.log": POREP[:N_START + 6], "post.log": post})  # a WinningPoSt in flight
    watch = CuzkWatch()
    said = [e for ev in events for e in watch.feed(ev)]
    said += watch.feed(_status("127.0.0.1:9831", t0 + 40.0, 19.0))
    said += watch.feed(_process(1, 4242, t0 + 40.0))
    said += watch.feed(_status("127.0.0.1:9831", t0 + 50.0, 2.0))  # went back: restarted
    said += watch.feed(_process(1, 4343, t0 + 52.0))  # a new pid on its GPU
    [restart] = [e for e in said if e.kind == "restart"]
    assert "127.0.0.1:9831 /status uptime_secs went back" in restart.message
    assert watch.daemons.each[1].restarts.restarts == 1
    assert watch.restarts.restarts == 0
    assert [r.job_id for r in watch.running()] == ["winpost-1000-9f8e7d6c"]


@pytest.mark.parametrize("polled", ["127.0.0.1:9821", "127.0.0.1:19821"])
def test_one_daemons_status_is_its_own_whatever_host_or_mapped_port_it_is_polled_on(
        polled: str) -> None:
    """cuzk says it listens on 0.0.0.0:9821 and is polled on 127.0.0.1:9821, or, in a
    container, on the host's 19821 mapped to it: with one daemon and one address polled the
    snapshots are its own, and its uptime going back is its restart (on the mapped port it
    was no daemon's: never a restart sign)."""
    lines = [*POREP[:N_START], f"{T}00.040000Z  INFO cuzk_daemon: status HTTP server listening "
                         "addr=0.0.0.0:9821"]
    watch = CuzkWatch()
    for ev in _events({"porep.log": lines}):
        watch.feed(ev)
    watch.feed(_status(polled, _t0() + 40.0, 40.0))
    said = watch.feed(_status(polled, _t0() + 50.0, 2.0))
    assert [e.kind for e in said] == ["restart"]


def test_the_porep_daemons_first_wave_goes_on_past_the_post_daemons_start() -> None:
    """Both daemons start at boot, seconds apart: the PoRep daemon's first wave (syntheses
    begun before its capacity hint was cached, unpinned, pipeline.rs:270-275) is its own
    process's, and runs to its own hint (pipeline.rs:214-238), not to the PoSt daemon's start."""
    unhinted = ("INFO cuzk_core::pipeline: no capacity hint cached — first synthesis will grow "
                "organically circuit_id=porep-32g")
    porep = [*_start("00", "127.0.0.1:9820", 0),
             f"{T}01.000000Z  {unhinted}", f"{T}02.000000Z  {unhinted}",
             f"{T}40.000000Z  INFO cuzk_core::pipeline: cached synthesis capacity hint "
             "circuit_id=porep-32g num_constraints=3 num_aux=3 num_inputs=3"]
    facts = _fed({"porep.log": porep, "post.log": POST[:N_START]})
    [wave] = facts.view().first_waves
    assert (wave.start_s - _t0(), wave.end_s is not None and wave.end_s - _t0()) == (1.0, 40.0)
    assert wave.syntheses == 2


def test_a_real_follower_from_the_start_of_both_files_says_no_restart(tmp_path: Path) -> None:
    """`watch --from-start --log porep.log --log post.log`: both backlogs, their start lines
    among them, handed on by time (`gapwatch.logs.time_order`): the PoSt daemon's start is
    said as a second daemon, not as the PoRep daemon's restart, and no PoSt is lost."""
    porep, post = tmp_path / "porep.log", tmp_path / "post.log"
    porep.write_text("\n".join(POREP) + "\n")
    post.write_text("\n".join(POST) + "\n")
    with following([porep, post], LogsConfig(poll_ms=5, from_start=True)) as (
            follower, events, _notices):
        assert until(lambda: follower.status().lines == len(POREP) + len(POST))
        assert until(_at_least(events, len(POREP) + len(POST)))
    watch = CuzkWatch()
    said = [e for ev in events for e in watch.feed(ev)] + watch.finish()
    assert not [e for e in said if e.kind.startswith("restart")]
    assert [e.kind for e in said if e.kind == "setup"] == ["setup"]
    assert _proofs(said) == {"winpost-1000-9f8e7d6c": "ok", "winpost-1001-aa": "ok"}


def test_a_recording_that_polled_two_daemons_places_no_log_by_either_ones_uptime(
        tmp_path: Path) -> None:
    """`record --cuzk-status A --cuzk-status B`: read again with `--log`, the TIMELINE lines a
    start line does not place are placed by no `/status` uptime (which log is whose is not
    known), as live (`gapwatch.engine.runtime` anchors by `/status` with one poller only)."""
    from gapwatch.offline.report import recorded_timeline_epoch

    sim = simulate("chained", seed=1, duration_s=10)
    t0 = sim.header.started_wall_s
    others = [r for r in sim.records if not isinstance(r, ProverStatus)]
    one = tmp_path / "one.jsonl"
    write_recording(one, sim.header, [_status("127.0.0.1:9821", t0 + 1.0, 100.0), *others])
    assert recorded_timeline_epoch(one) == pytest.approx(t0 + 1.0 + 0.0005 - 100.0, abs=0.001)
    two = tmp_path / "two.jsonl"
    write_recording(two, sim.header, [_status("127.0.0.1:9821", t0 + 1.0, 100.0),
                                      _status("127.0.0.1:9831", t0 + 1.2, 30.0), *others])
    assert recorded_timeline_epoch(two) is None


def test_a_request_to_the_post_daemon_is_not_the_one_the_porep_daemons_empty_pipeline_waited_for(
) -> None:
    """The PoRep daemon's pipeline empty from 16:00:15 (its last partition proved), its next
    request enqueued at 16:00:27 and synthesised by 16:00:29: most of the gap it had no work.
    The PoSt-only daemon's request at 16:00:16 (its stdout followed) is not that request: the
    gap read as an empty pipeline whose work came 1 s in, the PoSt job named as its request."""
    porep = [*_start("00", "127.0.0.1:9820", 0),
             *_POREP_PROVED_TO_15,
             f"{T}27.000000Z  INFO cuzk_core::scheduler: job enqueued job_id=porep-1000-78 "
             "proof_kind=porep-c2 priority=Normal queue_position=0",
             "TIMELINE,27000,SYNTH_START,porep-1000-78,partition=0",
             "TIMELINE,29000,SYNTH_END,porep-1000-78,partition=0,synth_ms=2000",
             "TIMELINE,29000,GPU_QUEUE,porep-1000-78,partition=0"]
    post = [*_start("05", "127.0.0.1:9830", 1),
            f"{T}16.000000Z  INFO cuzk_core::scheduler: job enqueued job_id=winpost-1001-aa "
            "proof_kind=winning-post priority=Critical queue_position=0"]
    facts = _fed({"porep.log": porep, "post.log": post})
    t0 = _t0()
    view = facts.log_view(0, t0 + 15.0, t0 + 29.1, "host_stall")
    assert view.cause == "no_work"
    assert "('job enqueued job_id=porep-1000-78' at 16:00:27.000)" in view.evidence[1]


#: The PoRep daemon's last partition proved by 16:00:15, its next request enqueued at 16:00:20
#: and its first partition synthesised by 16:00:22 (the lines after its start).
def _fed(files: dict[str, list[str]]) -> PipelineFacts:
    """The prover's facts fed every event of `files` (`_events`: in the order of their times)."""
    facts = PipelineFacts()
    for e in _events(files):
        facts.feed(e)
    return facts


def _pacer(at: str, target: int) -> str:
    """A daemon's dispatch pacer enabled (engine.rs), 35 ms into its start at second `at`."""
    return (f"{T}{at}.035000Z  INFO cuzk_core::engine: GPU queue target dispatch pacer enabled "
            f"gpu_queue_target={target}")


#: The second daemon's request (GPU 1), enqueued at 16:00:15.5, its partition 0 synthesised
#: 7 s on its run's clock (started at 16:00:05) and queued.
_SECOND_REQUEST_AT_15_5 = [
    f"{T}15.500000Z  INFO cuzk_core::scheduler: job enqueued job_id=porep-2000-5 "
    "proof_kind=porep-c2 priority=Normal queue_position=0",
    "TIMELINE,10500,SYNTH_START,porep-2000-5,partition=0",
    "TIMELINE,17500,SYNTH_END,porep-2000-5,partition=0,synth_ms=7000",
    "TIMELINE,17500,GPU_QUEUE,porep-2000-5,partition=0"]


#: The PoRep daemon's partition synthesised and proved on GPU 0 until 16:00:15.
_POREP_PROVED_TO_15 = [
    "TIMELINE,10000,SYNTH_START,porep-1000-77,partition=0",
    "TIMELINE,12000,SYNTH_END,porep-1000-77,partition=0,synth_ms=2000",
    "TIMELINE,12000,GPU_QUEUE,porep-1000-77,partition=0",
    "TIMELINE,12010,GPU_PICKUP,porep-1000-77,worker=0,partition=0",
    "TIMELINE,12010,GPU_START,porep-1000-77,worker=0,partition=0",
    "TIMELINE,15000,GPU_END,porep-1000-77,worker=0,partition=0,gpu_ms=2990"]
_POREP_EMPTY_AT_15 = [
    *_POREP_PROVED_TO_15,
    f"{T}20.000000Z  INFO cuzk_core::scheduler: job enqueued job_id=porep-1000-78 "
    "proof_kind=porep-c2 priority=Normal queue_position=0",
    "TIMELINE,20000,SYNTH_START,porep-1000-78,partition=0",
    "TIMELINE,22000,SYNTH_END,porep-1000-78,partition=0,synth_ms=2000",
    "TIMELINE,22000,GPU_QUEUE,porep-1000-78,partition=0"]


#: A second PoRep daemon's syntheses on GPU 1 (its run's offsets), the second through 16:00:14
#: to 16:00:40, across GPU 0's gap.
_B_SYNTHESISING = ["TIMELINE,1000,SYNTH_START,porep-2000-1,partition=0",
                   "TIMELINE,2000,SYNTH_END,porep-2000-1,partition=0,synth_ms=1000",
                   "TIMELINE,9000,SYNTH_START,porep-2000-2,partition=0",
                   "TIMELINE,35000,SYNTH_END,porep-2000-2,partition=0,synth_ms=26000"]


def _assert_gpu_0_reads_as_alone(other: list[str]) -> None:
    """GPU 0's gap from 16:00:15, its daemon's pipeline empty (`_POREP_EMPTY_AT_15`), reads with
    the second daemon's `other` lines beside it as with its own alone: no work most of it."""
    porep = [*_start("00", "127.0.0.1:9820", 0), *_POREP_EMPTY_AT_15]
    alone = _gap_0_15_to_22({"a.log": porep})
    assert alone[0] == "no_work"
    assert _gap_0_15_to_22({"a.log": porep, "b.log": other}) == alone


def _gap_0_15_to_22(files: dict[str, list[str]]) -> tuple[str | None, list[str]]:
    facts = _fed(files)
    t0 = _t0()
    view = facts.log_view(0, t0 + 15.0, t0 + 22.1, "host_stall")
    return view.cause, view.evidence


def test_a_second_daemons_synthesis_on_its_own_gpu_leaves_the_first_daemons_pipeline_empty(
) -> None:
    """A second PoRep daemon on GPU 1 synthesises from 16:00:14 to 16:00:40, through GPU 0's gap:
    its synthesis feeds GPU 1, not GPU 0, so GPU 0's gap still found its own daemon's pipeline
    empty and reads as it does with the first daemon's log alone (no work most of it)."""
    _assert_gpu_0_reads_as_alone([*_start("05", "127.0.0.1:9830", 1), *_B_SYNTHESISING])


def test_one_daemons_restart_leaves_the_other_daemons_syntheses_in_flight() -> None:
    """The second daemon (GPU 1) has nothing in flight at 16:00:15; its next synthesis begins at
    16:00:15.500 (no `job enqueued` read) and ends at 16:00:18. The first daemon restarts at
    16:00:16: its start line ends its own old run's syntheses, not the second daemon's, so GPU
    1's gap found an empty pipeline whose work began 0.5 s in (the second daemon's synthesis
    dropped, its end read with no start, it read as in flight since before the gap)."""
    first = [*_start("00", "127.0.0.1:9820", 0), *_start("16", "127.0.0.1:9820", 0)]
    other = [*_start("05", "127.0.0.1:9830", 1),
             "TIMELINE,1000,SYNTH_START,porep-2000-1,partition=0",
             "TIMELINE,3000,SYNTH_END,porep-2000-1,partition=0,synth_ms=2000",
             "TIMELINE,3000,GPU_QUEUE,porep-2000-1,partition=0",
             "TIMELINE,3010,GPU_PICKUP,porep-2000-1,worker=0,partition=0",
             "TIMELINE,3010,GPU_START,porep-2000-1,worker=0,partition=0",
             "TIMELINE,10000,GPU_END,porep-2000-1,worker=0,partition=0,gpu_ms=6990",
             "TIMELINE,10500,SYNTH_START,porep-2000-2,partition=0",
             "TIMELINE,13000,SYNTH_END,porep-2000-2,partition=0,synth_ms=2500",
             "TIMELINE,13000,GPU_QUEUE,porep-2000-2,partition=0"]
    facts = _fed({"a.log": first, "b.log": other})
    t0 = _t0()
    view = facts.log_view(1, t0 + 15.0, t0 + 18.1, "host_stall")
    assert view.cause == "empty_pipeline"
    assert "the next synthesis began 0.5 s into the gap" in view.evidence[1]


def test_a_monolithic_job_of_another_daemon_is_neither_this_gpus_wait_nor_its_failure() -> None:
    """The PoSt-only daemon on GPU 1 synthesises a WinningPoSt from 16:00:16 (monolithic: any
    GPU of its own daemon would wait on it): GPU 0's gap is not that job's. And a failure line
    naming no job written by the first daemon (16:00:30, its split prove's finalizer) is its
    own batch's on GPU 0 (from 16:00:25), the one job of its own on a GPU: the second daemon's
    WinningPoSt, on its GPU then too, is no second candidate that would leave the failure
    unplaced."""
    porep = [*_start("00", "127.0.0.1:9820", 0), *_POREP_EMPTY_AT_15,
             "TIMELINE,25000,GPU_PICKUP,porep-batch-1,worker=1",
             "TIMELINE,25000,GPU_START,porep-batch-1,worker=1",
             f"{T}30.000000Z ERROR cuzk_core::engine: GPU proving failed error=b_g2_msm failed"]
    post = [*_start("05", "127.0.0.1:9830", 1),
            "TIMELINE,11000,SYNTH_START,winpost-1-aa,kind=winning-post",
            "TIMELINE,13000,SYNTH_END,winpost-1-aa,synth_ms=2000",
            "TIMELINE,13000,GPU_QUEUE,winpost-1-aa,monolithic",
            "TIMELINE,13010,GPU_PICKUP,winpost-1-aa,worker=0",
            "TIMELINE,13010,GPU_START,winpost-1-aa,worker=0"]
    facts = _fed({"a.log": porep, "b.log": post})
    t0 = _t0()
    assert facts.log_view(0, t0 + 15.0, t0 + 22.1, "host_stall").cause == "no_work"
    [batch] = [m for m in facts.mono_done if m.job == "porep-batch-1"]
    assert batch.end_s == pytest.approx(t0 + 30.0, abs=0.001)
    post_job = facts.mono["winpost-1-aa"]
    assert post_job.end_s is None and post_job.unplaced_failure is None
    assert facts.mono_failures_unplaced == 0


#: The PoSt-only daemon (GPU 1, its stdout and stderr in one file): a WinningPoSt on its GPU
#: from 16:00:12, its split prove's finalizer failing at 16:00:13 (`GPU proving failed`, no
#: span, engine.rs:977 via 3257).
_POST_FAILED_ON_THE_GPU = [
    *_start("05", "127.0.0.1:9830", 1),
    f"{T}10.000000Z  INFO cuzk_core::scheduler: job enqueued job_id=winpost-1-aa "
    "proof_kind=winning-post priority=Critical queue_position=0",
    "TIMELINE,5000,SYNTH_START,winpost-1-aa,kind=winning-post",
    "TIMELINE,7000,SYNTH_END,winpost-1-aa,synth_ms=2000",
    "TIMELINE,7000,GPU_QUEUE,winpost-1-aa,monolithic",
    "TIMELINE,7010,GPU_PICKUP,winpost-1-aa,worker=0",
    "TIMELINE,7010,GPU_START,winpost-1-aa,worker=0",
    f"{T}13.000000Z ERROR cuzk_core::engine: GPU proving failed error=b_g2_msm failed"]


def _post_failure_placed(files: dict[str, list[str]]) -> tuple[str, float | None, int, str | None]:
    """What the PoSt tracker says of winpost-1-aa, when the gaps' facts say it ended, the
    failures they left unplaced, and GPU 1's gap after the failure's cause."""
    said = _proofs(_watched(_events(files)))["winpost-1-aa"]
    facts = _fed(files)
    ended = [m.end_s for m in facts.mono_done if m.job == "winpost-1-aa"]
    t0 = _t0()
    cause = facts.log_view(1, t0 + 14.0, t0 + 40.0, "host_stall").cause
    return said, ended[0] if ended else None, facts.mono_failures_unplaced, cause


def test_a_post_daemons_unnamed_failure_is_placed_alike_by_its_post_and_by_the_gaps_facts(
) -> None:
    """Each daemon's run is followed whole from its own start line: the PoSt daemon's finalizer
    failure, read in its own file after its start line, is its WinningPoSt's (its daemon's one
    job on a GPU), the PoRep daemon's batch on GPU 0 then no second candidate. The PoSt tracker
    (one a daemon) and the gaps' facts both end it there, as with the PoSt daemon's log alone:
    GPU 1's later gap is not that job's (it read as 'monolithic', the job kept in flight, the
    gaps' facts following only the first daemon's start line)."""
    porep = [*_start("00", "127.0.0.1:9820", 0),
             "TIMELINE,10000,GPU_PICKUP,porep-batch-1,worker=0",
             "TIMELINE,10000,GPU_START,porep-batch-1,worker=0",
             "TIMELINE,20000,GPU_END,porep-batch-1,worker=0"]
    alone = _post_failure_placed({"post.log": _POST_FAILED_ON_THE_GPU})
    assert alone[0] == "failed" and alone[1] == pytest.approx(_t0() + 13.0, abs=0.001)
    assert alone[2:] == (0, None)
    both = _post_failure_placed({"porep.log": porep, "post.log": _POST_FAILED_ON_THE_GPU})
    assert both == alone


def _held_words(files: dict[str, list[str]], gpu: int, end_s: float) -> list[str]:
    """GPU `gpu`'s gap from 16:00:15 to `end_s` past 16:00:00: its evidence that names the
    batch collector."""
    facts = _fed(files)
    t0 = _t0()
    view = facts.log_view(gpu, t0 + 15.0, t0 + end_s, "host_stall")
    return [x for x in view.evidence if "batch collector" in x]


def _dispatcher(at: str, wait_ms: int) -> str:
    return (f"{T}{at}.040000Z  INFO cuzk_core::engine: synthesis dispatcher started "
            f"(budget-gated) max_batch_size=2 max_batch_wait_ms={wait_ms}")


def test_a_second_daemons_batch_hold_is_not_the_first_daemons_gpus() -> None:
    """A second PoRep daemon (GPU 1, max_batch_wait_ms=1000) holds its request from 16:00:15.5
    to 16:00:16.5 in its batch collector, sent alone at its timeout (`synth_timeout_flush`),
    its first partition ready at 16:00:22.53 (after GPU 0's gap, whose end is its own
    daemon's partition at 16:00:22.03). The first daemon (GPU 0, max_batch_wait_ms=5000) held nothing: its empty pipeline's gap
    says no hold (it said GPU 1's, with `[scheduler] max_batch_wait_ms` to lower for GPU 0),
    and GPU 1's gap says its own daemon's, with its own wait."""
    first = [*_start("00", "127.0.0.1:9820", 0), _dispatcher("00", 5000), *_POREP_EMPTY_AT_15]
    second = [*_start("05", "127.0.0.1:9830", 1), _dispatcher("05", 1000),
              f"{T}15.500000Z  INFO cuzk_core::scheduler: job enqueued job_id=porep-2000-5 "
              "proof_kind=porep-c2 priority=Normal queue_position=0",
              f"{T}16.500000Z  INFO synth_timeout_flush{{batch_size=1}}: cuzk_core::engine: "
              "processing batch batch_size=1 proof_kind=porep-c2 slot_size=0",
              "TIMELINE,11500,SYNTH_START,porep-2000-5,partition=0",
              "TIMELINE,17500,SYNTH_END,porep-2000-5,partition=0,synth_ms=6000",
              "TIMELINE,17500,GPU_QUEUE,porep-2000-5,partition=0"]
    files = {"a.log": first, "b.log": second}
    assert _held_words(files, 0, 22.1) == []
    [held] = _held_words(files, 1, 22.6)
    assert held.startswith("cuzk held it 1.0 s in the batch collector")
    assert "(max_batch_wait_ms=1000:" in held


def test_an_empty_pipelines_new_work_is_said_paced_only_by_its_own_daemons_pacer() -> None:
    """The first daemon (GPU 0) runs its dispatch pacer (`gpu_queue_target=4`), the second
    (GPU 1) none: GPU 0's empty pipeline says its new work was paced, one partition a tick;
    GPU 1's that its free workers started it at once (it was said paced by the first's pacer;
    and with only the second's pacer on, GPU 0's said at once and GPU 1's the same)."""
    first = [*_start("00", "127.0.0.1:9820", 0), _pacer("00", 4), *_POREP_EMPTY_AT_15]
    second = [*_start("05", "127.0.0.1:9830", 1),
              *_SECOND_REQUEST_AT_15_5]
    facts = _fed({"a.log": first, "b.log": second})
    t0 = _t0()
    gpu0 = facts.log_view(0, t0 + 15.0, t0 + 22.1, "host_stall").evidence[-1]
    gpu1 = facts.log_view(1, t0 + 15.0, t0 + 22.6, "host_stall").evidence[-1]
    assert "the dispatch pacer on ([pipeline] max_gpu_queue_depth, gpu_queue_target=4)" in gpu0
    assert "the free ones all start the new work's partitions at once" in gpu1


def _empty_pipeline_gaps(first_pacer: bool, second_pacer: bool
                         ) -> tuple[PipelineFacts, Gap, Gap]:
    """The daemons of the test above, each with its pacer on or off (the second's target 8):
    GPU 0's empty pipeline from 16:00:18 to 22.1 (its new work came 2.0 s in) and GPU 1's from
    16:00:15 to 22.6, as gaps with the cause and evidence their log views give."""
    first = [*_start("00", "127.0.0.1:9820", 0), *([_pacer("00", 4)] if first_pacer else []),
             *_POREP_EMPTY_AT_15]
    second = [*_start("05", "127.0.0.1:9830", 1),
              *([_pacer("05", 8)] if second_pacer else []),
              *_SECOND_REQUEST_AT_15_5]
    facts = _fed({"a.log": first, "b.log": second})
    t0 = _t0()
    gaps = []
    for gap_id, gpu, start, end in ((1, 1, 15.0, 22.6), (2, 0, 18.0, 22.1)):
        view = facts.log_view(gpu, t0 + start, t0 + end, "host_stall")
        assert view.cause == "empty_pipeline"
        gaps.append(Gap(gap_id=gap_id, gpu=gpu, kind="host_stall",
                        start_mono_ns=int(start * 1e9), start_s=t0 + start,
                        end_mono_ns=int(end * 1e9), end_s=t0 + end, duration_s=end - start,
                        pcie_rx_bytes_per_s=None, pcie_tx_bytes_per_s=None,
                        link_bytes_per_s=None, prover_cause=view.cause,
                        prover_evidence=view.evidence, prover_facts=view.facts))
    return facts, gaps[0], gaps[1]


def _new_work_advice(facts: PipelineFacts, *gaps: Gap) -> str:
    """The empty pipeline's advice's own facts (after the cited evidence of the latest gap)."""
    (a,) = advise(list(gaps), facts.view()).advice
    assert a.setting == "Curio [Cuzk] MaxPending"
    return " | ".join(a.evidence[1 + min(CITED, len(gaps[-1].prover_evidence)):])


def test_a_snapshot_is_judged_paced_by_the_pacer_of_the_daemon_that_answered_it() -> None:
    """The PoRep daemon (GPU 0, `/status` on 9821) paces its dispatch (`gpu_queue_target=4`),
    the PoSt-only daemon beside it (GPU 1, on 9831) does not. The PoSt daemon's snapshot with
    partitions pending and its workers and budget free is not `pacer_hold` (it was: the first
    daemon's pacer judged every daemon's snapshots); the same answer from the PoRep daemon's
    `/status` is, and with the pacers the other way round, the other way round."""
    def listening(at: str, port: int) -> str:
        return f"{T}{at}.040000Z  INFO cuzk_daemon: status HTTP server listening addr=0.0.0.0:{port}"

    held = json.dumps(cuzk_doc(pending=8, total_gib=750)).encode()
    for pacer_daemon, paced_port in ((0, 9821), (1, 9831)):
        first = [*_start("00", "127.0.0.1:9820", 0), listening("00", 9821)]
        second = [*_start("05", "127.0.0.1:9830", 1), listening("05", 9831)]
        (first if pacer_daemon == 0 else second).append(
            _pacer("00", 4) if pacer_daemon == 0 else _pacer("05", 4))
        facts = _fed({"a.log": first, "b.log": second})
        t0 = _t0()
        for gpu, port in ((0, 9821), (1, 9831)):
            gap = CuzkGap(gpu, t0 + 20.0, facts)
            gap.add_status(parse_status(held, f"127.0.0.1:{port}", 0, t0 + 21.0, 1.0))
            paced = gap.cause_counts.get("pacer_hold", 0) == 1
            assert paced == (port == paced_port), (pacer_daemon, port, gap.cause_counts)


def test_an_empty_pipelines_advice_says_the_pacer_of_its_own_gaps_daemon() -> None:
    """The advice on an empty pipeline says how its new work was started as each gap's own
    evidence says it (the pacer of the gap's daemon), not as the first daemon's settings say.
    GPU 1's gap, its PoSt-only daemon running no pacer beside a PoRep daemon pacing at 4, was
    said "the dispatch pacer is on (... gpu_queue_target=4): it paces the new work" under
    evidence saying its free workers took it at once; with the pacer the second daemon's
    alone, "more synthesis workers cannot close these gaps ... at once" under evidence saying
    it was paced. Gaps of both daemons say each with its count."""
    facts, gpu1, gpu0 = _empty_pipeline_gaps(first_pacer=True, second_pacer=False)
    assert facts.view().pacer_target == 4  # the first daemon's: the settings advised on
    assert any("partitions at once" in e for e in gpu1.prover_evidence)
    said = _new_work_advice(facts, gpu1)
    assert "the dispatch pacer is on" not in said
    assert "more synthesis workers cannot close these gaps" in said
    assert said.startswith("more synthesis workers")  # no count: every gap's the same

    facts, gpu1, gpu0 = _empty_pipeline_gaps(first_pacer=False, second_pacer=True)
    assert facts.view().pacer_target is None
    assert any("gpu_queue_target=8) pacing" in e for e in gpu1.prover_evidence)
    said = _new_work_advice(facts, gpu1)
    assert "at once" not in said
    assert ("the dispatch pacer is on (their own daemon's, as each gap's evidence says: "
            "[pipeline] max_gpu_queue_depth, gpu_queue_target=8): it paces the new work") in said

    facts, gpu1, gpu0 = _empty_pipeline_gaps(first_pacer=True, second_pacer=False)
    said = _new_work_advice(facts, gpu1, gpu0)
    assert "1 of 2 gap(s): nothing was synthesising" in said
    assert "gpu_queue_target=4): it paces the new work" in said
    assert ("1 of 2 gap(s), their daemon's dispatch pacer off: more synthesis workers cannot "
            "close these gaps") in said


def test_a_file_read_before_its_start_line_tells_it_another_daemons_feeds_that_daemon_after(
) -> None:
    """b.log shows a line (`job enqueued`, 16:00:04) before its start line tells it a second
    daemon's (16:00:05, a listen address of its own): read then as the first daemon's, its
    syntheses after are the second daemon's all the same (which daemon a file is of is kept a
    file, and forgotten when it changes), so GPU 0's gap reads as with a.log alone."""
    _assert_gpu_0_reads_as_alone([
        f"{T}04.000000Z  INFO cuzk_core::scheduler: job enqueued job_id=porep-2000-0 "
        "proof_kind=porep-c2 priority=Normal queue_position=0",
        *_start("05", "127.0.0.1:9830", 1), *_B_SYNTHESISING])


def test_one_daemons_partition_queued_and_taken_by_its_other_gpu_was_this_gpus_queue_too() -> None:
    """One daemon, two GPUs: cuzk has one GPU work queue a daemon, read by the workers of all its
    GPUs (engine.rs:1427, 1779). A partition queued at 16:00:14.9 and taken by GPU 1's worker at
    16:00:20 was in the queue GPU 0 idled beside from 16:00:15: nothing was missing from GPU 0's
    pipeline. Kept apart by the picking GPU (for two daemons), it read "no partition
    synthesising or queued", an empty pipeline, on every multi-GPU box."""
    lines = [
        f"{T}00.000000Z  INFO cuzk_daemon: cuzk-daemon starting",
        f"{T}00.001000Z  INFO cuzk_daemon: configuration loaded listen=127.0.0.1:9820",
        f"{T}00.030000Z  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
        f"{T}00.031000Z  INFO cuzk_core::engine: initializing GPU workers num_gpus=2 "
        "gpu_workers_per_device=1 total_workers=2 gpus=[0, 1]",
        f"{T}00.032000Z  INFO cuzk_core::engine: pipeline GPU worker started worker_id=0 gpu=0 "
        "sub_id=0",
        f"{T}00.033000Z  INFO cuzk_core::engine: pipeline GPU worker started worker_id=1 gpu=1 "
        "sub_id=0",
        "TIMELINE,8000,SYNTH_START,porep-1000-77,partition=0",
        "TIMELINE,8000,SYNTH_START,porep-1000-77,partition=1",
        "TIMELINE,10000,SYNTH_END,porep-1000-77,partition=0,synth_ms=2000",
        "TIMELINE,10000,GPU_QUEUE,porep-1000-77,partition=0",
        "TIMELINE,10010,GPU_PICKUP,porep-1000-77,worker=0,partition=0",
        "TIMELINE,10010,GPU_START,porep-1000-77,worker=0,partition=0",
        "TIMELINE,14900,SYNTH_END,porep-1000-77,partition=1,synth_ms=6900",
        "TIMELINE,14900,GPU_QUEUE,porep-1000-77,partition=1",
        "TIMELINE,15000,GPU_END,porep-1000-77,worker=0,partition=0,gpu_ms=4990",
        "TIMELINE,16000,SYNTH_START,porep-1000-78,partition=0",
        "TIMELINE,18000,SYNTH_END,porep-1000-78,partition=0,synth_ms=2000",
        "TIMELINE,18000,GPU_QUEUE,porep-1000-78,partition=0",
        "TIMELINE,20000,GPU_PICKUP,porep-1000-77,worker=1,partition=1",
        "TIMELINE,20000,GPU_START,porep-1000-77,worker=1,partition=1",
        "TIMELINE,20010,GPU_PICKUP,porep-1000-78,worker=0,partition=0",
        "TIMELINE,20010,GPU_START,porep-1000-78,worker=0,partition=0",
    ]
    facts = _fed({"cuzk.log": lines})
    t0 = _t0()
    assert facts.queued_at(t0 + 15.0, 0) == 1
    view = facts.log_view(0, t0 + 15.0, t0 + 20.0, "host_stall")
    assert view.cause not in ("empty_pipeline", "no_work", "waits_on_synthesis")


def test_another_daemons_partitions_queued_for_its_own_gpu_are_neither_this_gpus_queue_nor_work(
) -> None:
    """The second daemon (GPU 1) queued a partition for its GPU at 16:00:14.03, not picked up
    in these lines: GPU 0's gap (16:00:15 to 22.1) found its own daemon's queue empty and reads
    as with a.log alone (it read as a queue not empty, no empty pipeline). Without that
    partition, GPU 1's empty pipeline ends on its own daemon's next partition, ready at
    16:00:22.53, not on GPU 0's at 16:00:22.03."""
    porep = [*_start("00", "127.0.0.1:9820", 0), *_POREP_EMPTY_AT_15]
    queued = ["TIMELINE,8000,SYNTH_START,porep-2000-1,partition=0",
              "TIMELINE,9000,SYNTH_END,porep-2000-1,partition=0,synth_ms=1000",
              "TIMELINE,9000,GPU_QUEUE,porep-2000-1,partition=0"]
    start = _start("05", "127.0.0.1:9830", 1)
    work = _SECOND_REQUEST_AT_15_5
    with_queued = {"a.log": porep, "b.log": [*start, *queued, *work]}
    assert _gap_0_15_to_22(with_queued) == _gap_0_15_to_22({"a.log": porep})
    facts = _fed({"a.log": porep, "b.log": [*start, *work]})
    t0 = _t0()
    gpu1 = facts.log_view(1, t0 + 15.0, t0 + 22.6, "host_stall").evidence
    assert any("finished synthesis (SYNTH_END, GPU_QUEUE) at 16:00:22.530" in x for x in gpu1)


def test_one_daemons_restart_leaves_the_other_daemons_monolithic_job_in_flight() -> None:
    """The first daemon restarts at 16:00:16 while the PoSt-only daemon's WinningPoSt is on GPU
    1 (from 16:00:12.04, no GPU_END read): the restart ends the first daemon's work, not the
    second's, so GPU 1's gap after it is still that job's (it was dropped with the first
    daemon's, the gap read as nothing in flight)."""
    first = [*_start("00", "127.0.0.1:9820", 0), *_start("16", "127.0.0.1:9820", 0)]
    post = [*_start("05", "127.0.0.1:9830", 1),
            "TIMELINE,5000,SYNTH_START,winpost-1-aa,kind=winning-post",
            "TIMELINE,7000,SYNTH_END,winpost-1-aa,synth_ms=2000",
            "TIMELINE,7000,GPU_QUEUE,winpost-1-aa,monolithic",
            "TIMELINE,7010,GPU_PICKUP,winpost-1-aa,worker=0",
            "TIMELINE,7010,GPU_START,winpost-1-aa,worker=0"]
    facts = _fed({"a.log": first, "b.log": post})
    assert "winpost-1-aa" in facts.mono
    t0 = _t0()
    assert facts.log_view(1, t0 + 19.0, t0 + 25.0, "host_stall").cause == "monolithic"


def test_a_daemons_restart_empties_its_own_gpu_queue() -> None:
    """The second daemon (GPU 1) queued a partition for its GPU at 16:00:14 and restarted at
    16:00:16 before any worker took it: it died with the old process. Its new run's first
    request (enqueued 16:00:20) is synthesised from 16:00:20.05 to 16:00:27.05, so GPU 1's gap
    from 16:00:18 found its pipeline empty (it read the old run's partition as still queued, a
    queue that was not empty). Without the restart that partition is queued then."""
    queued = ["TIMELINE,8000,SYNTH_START,porep-2000-1,partition=0",
              "TIMELINE,9000,SYNTH_END,porep-2000-1,partition=0,synth_ms=1000",
              "TIMELINE,9000,GPU_QUEUE,porep-2000-1,partition=0"]
    new_run = [*_start("16", "127.0.0.1:9830", 1),
               f"{T}20.000000Z  INFO cuzk_core::scheduler: job enqueued job_id=porep-2000-5 "
               "proof_kind=porep-c2 priority=Normal queue_position=0",
               "TIMELINE,4020,SYNTH_START,porep-2000-5,partition=0",
               "TIMELINE,11020,SYNTH_END,porep-2000-5,partition=0,synth_ms=7000",
               "TIMELINE,11020,GPU_QUEUE,porep-2000-5,partition=0"]
    first = [*_start("00", "127.0.0.1:9820", 0)]
    t0 = _t0()
    kept = PipelineFacts()
    for e in _events({"a.log": first, "b.log": [*_start("05", "127.0.0.1:9830", 1), *queued]}):
        kept.feed(e)
    assert kept.queued_at(t0 + 18.0, 1) == 1
    facts = PipelineFacts()
    for e in _events({"a.log": first,
                      "b.log": [*_start("05", "127.0.0.1:9830", 1), *queued, *new_run]}):
        facts.feed(e)
    assert facts.queued_at(t0 + 18.0, 1) == 0
    view = facts.log_view(1, t0 + 18.0, t0 + 27.1, "host_stall")
    assert view.cause == "empty_pipeline"
    assert "no partition synthesising or queued for the GPU" in view.evidence[0]


def test_the_post_daemons_restart_drops_its_own_monolithic_job_in_flight() -> None:
    """The PoSt-only daemon (GPU 1) restarts at 16:00:16 while its WinningPoSt is on its GPU
    (from 16:00:12.04, no GPU_END read): the job died with its old run, so GPU 1's gap after
    the restart is not that job's (it was kept in flight, the gap read as 'monolithic')."""
    first = [*_start("00", "127.0.0.1:9820", 0)]
    post = [*_start("05", "127.0.0.1:9830", 1),
            "TIMELINE,5000,SYNTH_START,winpost-1-aa,kind=winning-post",
            "TIMELINE,7000,SYNTH_END,winpost-1-aa,synth_ms=2000",
            "TIMELINE,7000,GPU_QUEUE,winpost-1-aa,monolithic",
            "TIMELINE,7010,GPU_PICKUP,winpost-1-aa,worker=0",
            "TIMELINE,7010,GPU_START,winpost-1-aa,worker=0",
            *_start("16", "127.0.0.1:9830", 1)]
    facts = _fed({"a.log": first, "b.log": post})
    assert "winpost-1-aa" not in facts.mono
    t0 = _t0()
    assert facts.log_view(1, t0 + 19.0, t0 + 25.0, "host_stall").cause != "monolithic"


def test_the_porep_daemons_restart_leaves_the_post_daemon_placing_its_unnamed_failure() -> None:
    """The PoRep daemon (GPU 0) restarts at 16:00:11, while the PoSt daemon's WinningPoSt is on
    GPU 1; its finalizer fails at 16:00:13 naming no job. Only the restarted daemon's run is
    lost from sight: the PoSt daemon's run is still followed whole from its own start line, so
    the failure is its WinningPoSt's, as with the PoSt daemon's log alone (every daemon's run
    lost, it was left unplaced and the job kept in flight)."""
    porep = [*_start("00", "127.0.0.1:9820", 0), *_start("11", "127.0.0.1:9820", 0)]
    alone = _post_failure_placed({"post.log": _POST_FAILED_ON_THE_GPU})
    assert alone[0] == "failed" and alone[1] == pytest.approx(_t0() + 13.0, abs=0.001)
    assert alone[2:] == (0, None)
    assert _post_failure_placed({"porep.log": porep, "post.log": _POST_FAILED_ON_THE_GPU}) == alone


def test_a_request_enqueued_before_a_restart_starts_no_batch_hold_in_the_new_run() -> None:
    """The daemon (GPU 0, max_batch_wait_ms=1000) took a PoRep request at 16:00:10 and
    restarted at 16:00:12 before sending it (the request died with its process). Its new run's
    request, enqueued at 16:00:19.5, is sent alone at its timeout at 16:00:20.5: the hold is
    that one's, 16:00:19.5 to 20.5, inside GPU 0's gap from 16:00:15 (it was dated from the old
    run's request, 16:00:10 to 11, before the gap, and the gap said no hold)."""
    lines = [*_start("00", "127.0.0.1:9820", 0), _dispatcher("00", 1000),
             f"{T}10.000000Z  INFO cuzk_core::scheduler: job enqueued job_id=porep-1000-70 "
             "proof_kind=porep-c2 priority=Normal queue_position=0",
             *_start("12", "127.0.0.1:9820", 0), _dispatcher("12", 1000),
             f"{T}19.500000Z  INFO cuzk_core::scheduler: job enqueued job_id=porep-1000-71 "
             "proof_kind=porep-c2 priority=Normal queue_position=0",
             f"{T}20.500000Z  INFO synth_timeout_flush{{batch_size=1}}: cuzk_core::engine: "
             "processing batch batch_size=1 proof_kind=porep-c2 slot_size=0",
             "TIMELINE,8500,SYNTH_START,porep-1000-71,partition=0",
             "TIMELINE,14000,SYNTH_END,porep-1000-71,partition=0,synth_ms=5500",
             "TIMELINE,14000,GPU_QUEUE,porep-1000-71,partition=0"]
    [held] = _held_words({"a.log": lines}, 0, 26.1)
    assert held.startswith("cuzk held it 1.0 s in the batch collector")


def test_another_daemons_worker_on_the_gpu_does_not_count_against_this_daemons_workers() -> None:
    """Two daemons on GPU 0: the PoRep daemon's worker 0 holds partition 0 (picked up 16:00:06),
    its worker 1 is never seen, and its partition 2 waits in its queue from 16:00:05.2 to
    16:00:12; the other daemon's worker 0 holds a SnapDeals partition. Only the PoRep daemon's
    workers can take its partition: only one of its two held work through the gap. Both
    daemons' holds were counted against the PoRep daemon's two workers: `inside_workers`, with
    "worker 0" named twice."""
    job = "porep-1000-7"
    porep = [*_start("00", "127.0.0.1:9820", 0),
             *(f"TIMELINE,{5000 + p * 100},GPU_QUEUE,{job},partition={p}" for p in range(3)),
             f"TIMELINE,6000,GPU_PICKUP,{job},worker=0,partition=0",
             f"TIMELINE,12000,GPU_PICKUP,{job},worker=0,partition=2"]
    snap = [*_start("01", "127.0.0.1:9830", 0),
            "TIMELINE,4000,GPU_QUEUE,snap-1,partition=0",
            "TIMELINE,4100,GPU_PICKUP,snap-1,worker=0,partition=0"]
    t0 = datetime(2026, 5, 12, 16, tzinfo=UTC).timestamp()
    for files in ({"porep.log": porep}, {"porep.log": porep, "snap.log": snap}):
        facts = PipelineFacts()
        for ev in _events(files):
            facts.feed(ev)
        view = facts.log_view(0, t0 + 9, t0 + 11, "host_stall")
        assert view.cause == "dispatch_stall", list(files)
        said = " ".join(view.evidence)
        # Worker 1 is never seen, so not shown free (`HeldOver.free_shown`): one of two held.
        assert ("fewer than 2 GPU worker(s) of GPU 0 seen holding work for 2.0 s of the 2.0 s "
                "gap") in said, said
        assert said.count("worker 0:") == 1 and "snap-1" not in said


def _unpinned_said(files: dict[str, list[str]], at_s: float) -> list[str]:
    """What a pcie_starved gap of GPU 0 from `at_s` + 1 s says of PoRep partition 4 of
    porep-1000-9, completed unpinned at `at_s` (its memory phrases, with the prover's view)."""
    facts = PipelineFacts()
    for ev in _events(files):
        facts.feed(ev)
    view = CuzkGap(0, at_s + 1, facts).view(at_s + 2, at_s + 1, "pcie_starved", at_s + 2)
    unpinned = [EventEvidence(at_s, "partition synthesis complete", None, 4, "unpinned", "",
                              "porep-1000-9")]
    return memory_phrases("pcie_starved", unpinned, None, at_s - 1, view.unpinned_by_design)


def test_another_daemons_or_circuits_open_first_wave_does_not_explain_away_an_unpinned_partition(
) -> None:
    """The PoRep daemon's first wave ended at 16:00:20 (its hint cached); at 16:00:55 a PoRep
    partition completes unpinned, no pool line read: pageable memory to look into. A PoSt-only
    daemon on GPU 1, started at 16:00:40, opened its own first wave of window-post-32g (no hint
    yet). Every daemon's waves were passed, that open wave ran to infinity: the PoRep
    partition read "unpinned by design (its first wave)". A wave is its own daemon's, its own
    circuit type's, and an open one runs only to the data's latest time."""
    porep = [*_start("00", "127.0.0.1:9820", 0),
             f'{T}01.000000Z  INFO synthesize_partition{{job_id="porep-1000-1" partition=0}}: '
             "cuzk_core::pipeline: no capacity hint cached — first synthesis will grow "
             "organically circuit_id=porep-32g",
             f"{T}20.000000Z  INFO cuzk_core::pipeline: cached synthesis capacity hint "
             "circuit_id=porep-32g num_constraints=3 num_aux=3 num_inputs=3",
             f'{T}20.100000Z  INFO synthesize_partition{{job_id="porep-1000-1" partition=0}}: '
             "cuzk_core::pipeline: partition synthesis complete partition=0 synth_ms=19000 "
             "is_pinned=false"]
    post = [*_start("40", "127.0.0.1:9830", 1),
            f"{T}41.000000Z  INFO synth_single{{proof_kind=window-post}}: cuzk_core::pipeline: "
            "no capacity hint cached — first synthesis will grow organically "
            "circuit_id=window-post-32g"]
    at_s = datetime(2026, 5, 12, 16, 0, 55, tzinfo=UTC).timestamp()
    pageable = ["porep-1000-9 partition 4 was synthesised with is_pinned=false: a/b/c in "
                "pageable memory?"]
    assert _unpinned_said({"porep.log": porep}, at_s) == pageable
    assert _unpinned_said({"porep.log": porep, "post.log": post}, at_s) == pageable
    # The PoSt daemon's open wave is of another circuit type, and open, it ends at the data's
    # latest time: asked of its own daemon's waves, it covers no PoRep completion, and no
    # moment after the latest time.
    facts = PipelineFacts()
    for ev in _events({"porep.log": porep, "post.log": post}):
        facts.feed(ev)
    waves = facts.first_waves.waves_of([1])
    assert unpinned_by_design(waves, at_s + 1, at_s + 2, False, at_s + 2) is None
    porep_open = [*_start("40", "127.0.0.1:9830", 1),
                  f'{T}41.000000Z  INFO synthesize_partition{{job_id="porep-1001-1" '
                  "partition=0}: cuzk_core::pipeline: no capacity hint cached — first "
                  "synthesis will grow organically circuit_id=porep-32g"]
    open_facts = PipelineFacts()
    for ev in _events({"post.log": porep_open}):
        open_facts.feed(ev)
    design = unpinned_by_design(open_facts.first_waves.waves(), at_s + 1, at_s + 2, False,
                                at_s + 2)
    assert design is not None
    assert design.holds(at_s, "partition synthesis complete")
    assert not design.holds(at_s + 3600, "partition synthesis complete")
    assert not design.holds(at_s, "SnapDeals partition synthesis complete")


def test_a_panic_said_by_the_readers_clock_names_its_daemon() -> None:
    """A panic in the PoSt daemon's log that killed it (no line after it): said by the live
    reader's clock (`CuzkWatch.at`), not by a line. Every other path named the daemon its
    events are of; this one named none, so with two daemons nobody could tell whose cuzk died."""
    watch = CuzkWatch()
    for ev in _events({"porep.log": POREP, "post.log": POST}):
        watch.feed(ev)
    t_s = max(e.t_wall_s for e in _events({"post.log": POST})) + 1.0
    arrived_ns = 5_000_000_000
    panic = LogEvent(t_wall_s=t_s, time_source="arrival", kind="panic",
                     name="thread 'tokio-runtime-worker' panicked", stream="post.log",
                     raw="thread 'tokio-runtime-worker' panicked at src/engine.rs:1:1:",
                     level="ERROR", t_arrival_mono_ns=arrived_ns)
    assert watch.feed(panic) == []  # it waits for cuzk's line, which never comes
    [said] = watch.at(arrived_ns + 3_000_000_000, None)
    assert said.kind == "error"
    assert (said.daemon, said.daemon_gpus) == ("127.0.0.1:9830", [1])
    assert said.message.startswith("daemon 127.0.0.1:9830 (GPU 1): ")
