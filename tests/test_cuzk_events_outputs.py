"""The prover's events reach every output: the session's listeners (the dashboard's alert line,
`record`'s stderr) as notices, the store, the recording, /metrics, and the report (text and
JSON); a replay derives them again instead of reading them back."""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client.core import Metric
from session_fakes import KeptRecords

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.core import prover_watch
from gapwatch.core.config import DetectorConfig
from gapwatch.core.models import (
    Gap,
    GpuInfo,
    LogEvent,
    Notice,
    ProcessMemory,
    ProofTiming,
    ProofVerdict,
    ProverEvent,
    ProverStatus,
    SessionHeader,
    StateChange,
)
from gapwatch.cuzk.watch import CuzkWatch
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.logs.parse import LogParser
from gapwatch.offline import prover_events
from gapwatch.offline.detect import detect_records
from gapwatch.offline.report import summarise, to_json
from gapwatch.offline.report_text import format_text
from gapwatch.sinks.metrics import MetricsSink
from gapwatch.sinks.prover_event_metrics import families
from gapwatch.sinks.recorder import write_recording

DATA = Path(__file__).parent / "data" / "cuzk-upstream"
HEADER = SessionHeader(gapwatch_version="t", host="box", source="sim", started_wall_s=0.0,
                       started_mono_ns=0, period_ms=100.0,
                       gpus=[GpuInfo(index=0, link_bytes_per_s=63e9)])


def events_of(*names: str) -> list[LogEvent]:
    """The scenario logs' events in time order, as one daemon's log holding them all: each
    file starts the daemon (again), so every file after the first is a restart too."""
    out: list[LogEvent] = []
    for name in names:
        parser = LogParser(offline=True)
        for i, line in enumerate((DATA / name).read_text().splitlines()):
            out += parser.parse_line(line, name, i, 0.0)
        out += parser.flush()
    return sorted(out, key=lambda e: e.t_wall_s)


ALL = ("post-behind-partitions.log", "restart.log", "panic.log", "lost-job.log", "post-late.log")


def session_over(*names: str) -> tuple[Session, list[Gap | StateChange | Notice], KeptRecords,
                                       MetricsSink]:
    metrics, recorder = MetricsSink(), KeptRecords()
    session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), sinks=[recorder, metrics],
                      watch=CuzkWatch())
    heard: list[Gap | StateChange | Notice] = []
    session.subscribe(heard.append)
    for e in events_of(*names):
        session.on_log_event(e)
    session.finish()
    return session, heard, recorder, metrics


def samples(fams: list[Metric], name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(s.labels.items())): s.value for f in fams for s in f.samples
            if s.name == name}


def test_a_late_post_is_a_notice_to_the_listeners_and_a_record_in_the_recording() -> None:
    session, heard, recorder, _ = session_over("post-late.log")
    notices = [n for n in heard if isinstance(n, Notice)]
    assert notices and all(n.level == "error" for n in notices)
    assert all("winpost-1000-9f8e7d6c" in n.message for n in notices)
    assert notices[0].message.startswith("prover proof at ")
    recorded = [r for r in recorder.records if isinstance(r, ProverEvent)]
    assert [r.kind for r in recorded] == ["proof", "proof"]  # late while running, then done
    assert not [r for r in recorder.records if isinstance(r, Notice)]  # said, not recorded twice
    assert len(session.store.snapshot().prover_events) == 2


def test_metrics_count_restarts_errors_lost_jobs_and_post_latency() -> None:
    _, _, _, metrics = session_over(*ALL)
    fams = list(families(metrics.copy_counts().prover))
    events = samples(fams, "gapwatch_prover_events_total")
    assert events[(("kind", "restart"), ("level", "warning"))] == 5
    # panic.log's panic and cuzk's `task panicked` line for it: one incident, one error.
    assert events[(("kind", "error"), ("level", "error"))] == 1
    assert events[(("kind", "lost_job"), ("level", "error"))] == 1
    assert events[(("kind", "proof"), ("level", "error"))] == 1  # late running, then ended: one
    proofs = samples(fams, "gapwatch_proofs_total")
    assert proofs[(("proof_kind", "winning-post"), ("verdict", "late"))] == 1
    assert proofs[(("proof_kind", "winning-post"), ("verdict", "ok"))] == 2
    assert proofs[(("proof_kind", "window-post"), ("verdict", "late"))] == 0
    count = samples(fams, "gapwatch_proof_seconds_count")
    assert count[(("proof_kind", "winning-post"),)] == 3
    under_30 = samples(fams, "gapwatch_proof_seconds_bucket")
    assert under_30[(("le", "30.0"), ("proof_kind", "winning-post"))] == 2
    wait = samples(fams, "gapwatch_proof_phase_seconds_sum")
    assert wait[(("phase", "gpu_wait"), ("proof_kind", "winning-post"))] > 0.37
    assert samples(fams, "gapwatch_prover_restart_cost_seconds_total")[()] > 50


def test_a_replayed_prover_event_is_derived_again_not_read_back() -> None:
    session, _, recorder, _ = session_over("lost-job.log")
    recorded = [r for r in recorder.records if isinstance(r, ProverEvent)]
    again = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), watch=CuzkWatch())
    for r in recorded:
        again.on_record(r)
    assert again.store.snapshot().prover_events == ()


def test_the_report_has_a_prover_events_section_in_text_and_json() -> None:
    logs = events_of(*ALL)
    found = detect_records(HEADER, [], DetectorConfig(), logs, watch=CuzkWatch())
    report = summarise("rec.jsonl", found, ["x.log"])
    doc = to_json(report)["prover_events"]
    assert len(doc["restart"]) == len(doc["restart_cost"]) == 5
    # restart.log's own: its old run's last GPU work to its new run's first, 51 s.
    [cost] = [c for c in doc["restart_cost"] if 50 < c["length_s"] < 52]
    assert [p["name"] for p in cost["parts"]][0] == "down"
    assert "SRS reloaded" in [p["name"] for p in cost["parts"]]
    assert doc["lost_job"][0]["job_id"] == "winpost-1000-11111111"
    late = [p for p in doc["proof"] if p["proof"]["verdict"] == "late"]
    assert late and late[-1]["proof"]["setting"]
    text = format_text(report)
    assert "Prover events: 3 PoSt proof(s) (1 late, 0 at risk), 5 restart(s), 1 error(s), " \
           "1 lost GPU job(s)" in text
    assert "winpost-1000-0a1b2c3d" in text and "parts (they may overlap): down" in text
    assert "waited for a GPU worker behind" not in text.split("Restarts")[0].split(
        "winpost-1000-0a1b2c3d")[1].split("\n")[1]  # on time: no "behind" line under it


def test_the_perfetto_trace_shows_proofs_and_restart_costs_as_slices() -> None:
    from gapwatch.offline.perfetto import TraceBuilder

    found = detect_records(HEADER, [], DetectorConfig(), events_of(*ALL), watch=CuzkWatch())
    builder = TraceBuilder(HEADER)
    builder.extend(found.prover_events)
    events = builder.trace()["traceEvents"]
    slices = [e["name"] for e in events if e.get("ph") == "X" and e.get("cat") == "prover"]
    assert "winning-post late" in slices and "winning-post ok" in slices
    assert "restart_cost" in slices and "lost_job" in slices
    instants = [e["name"] for e in events if e.get("ph") == "i"]
    assert "error: lost_job winpost-1000-11111111" in instants


def _panic_storm(n: int) -> list[LogEvent]:
    """`n` CUDA panics (supraseal-c2's, each timed by the line before it), one a second."""
    lines = []
    for i in range(n):
        lines += [f"2026-05-12T18:{i // 60 % 60:02d}:{i % 60:02d}.000000Z  INFO cuzk_core::engine: "
                  "memory budget initialized total_budget_gib=750",
                  "thread '<unnamed>' panicked at /x/supraseal-c2/src/lib.rs:316:9:",
                  f'cudaGetLastError()@/x/gs.cu:220 failed: "out of memory {i}"',
                  "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"]
    parser = LogParser(offline=True)
    out = [e for i, line in enumerate(lines) for e in parser.parse_line(line, "p.log", i, 0.0)]
    return out + parser.flush()


def test_a_panic_storm_keeps_the_first_errors_and_counts_every_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Every event was held to the end of an offline run (~0.6 KB each: 100,000 panics 90 MB,
    # a prover failing every partition for a week gigabytes); `parse --timeline` stopped
    # feeding the watcher at 100,000 with nothing said.
    monkeypatch.setattr(prover_events, "MAX_KEPT", 50)
    found = detect_records(HEADER, [], DetectorConfig(), _panic_storm(300), watch=CuzkWatch())
    assert found.prover_events.counts["error"] == 300
    assert len([e for e in found.prover_events if e.kind == "error"]) == 50
    report = summarise("rec.jsonl", found, ["p.log"])
    doc = to_json(report)["prover_events"]
    assert len(doc["error"]) == 50 and doc["not_kept"] == {"error": 250}
    text = format_text(report)
    assert "0 restart(s), 300 error(s)" in text
    assert "... 260 more (--json lists the first 50 of each kind; all are counted)" in text


def _rows_by_hand(events: list[ProverEvent]) -> list[ProverEvent]:
    """The rows as the table's rule says them, worked out over the whole list: each proof's
    last word, in the order last said; a job id said after its proof's last word (done, or
    given up) another proof."""
    rows: list[ProverEvent] = []
    running: dict[str | None, ProverEvent] = {}
    for e in events:
        p = e.proof
        if p is None:
            continue
        if e.job_id in running:
            rows.remove(running.pop(e.job_id))
        rows.append(e)
        if not (p.done or p.given_up is not None):
            running[e.job_id] = e
    return rows


def test_the_post_rows_counted_as_they_come_are_the_rows_of_the_whole_list() -> None:
    # The summary counts every proof as it comes, without holding the rows; the table lists
    # the rows: both the rows the whole list gives (a word replacing its proof's running one,
    # a retry a row of its own, a proof still running at the end a row).
    rng = random.Random(5)
    for _ in range(200):
        events = []
        for t in range(rng.randrange(1, 40)):
            done = rng.random() < 0.3
            given_up = None if done or rng.random() < 0.8 else rng.choice(["restart", "too_many"])
            verdict = rng.choice(["ok", "at_risk", "late", "unknown"])
            events.append(ProverEvent(
                t_wall_s=float(t), kind="proof", level="info", message="",
                job_id=f"wp-{rng.randrange(4)}",
                proof=ProofTiming("winning-post", verdict=verdict,  # type: ignore[arg-type]
                                  done=done, given_up=given_up)))  # type: ignore[arg-type]
        rows = _rows_by_hand(events)
        assert prover_events._proofs(events) == rows
        tally = prover_events.ProverEvents(events).proofs()
        assert (tally.rows, tally.late, tally.at_risk, tally.given_up, tally.unknown) == (
            len(rows), sum(e.proof is not None and e.proof.verdict == "late" for e in rows),
            sum(e.proof is not None and e.proof.verdict == "at_risk" for e in rows),
            sum(e.proof is not None and e.proof.given_up is not None for e in rows),
            sum(e.proof is not None and e.proof.verdict == "unknown" for e in rows))


def test_the_perfetto_export_says_how_many_prover_events_it_did_not_draw(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(prover_events, "MAX_KEPT", 5)
    sim = simulate("chained", seed=1, duration_s=30)
    rec = tmp_path / "gw.jsonl"
    write_recording(rec, sim.header, sim.records)
    t0 = sim.header.started_wall_s + 1.0
    lines = []
    for i in range(20):  # a panic every second, inside the recording
        stamp = datetime.fromtimestamp(t0 + i, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lines += [f"{stamp}  INFO cuzk_core::engine: memory budget initialized total_budget_gib=750",
                  "thread '<unnamed>' panicked at /x/supraseal-c2/src/lib.rs:316:9:",
                  f'cudaGetLastError()@/x/gs.cu:220 failed: "out of memory {i}"']
    log = tmp_path / "p.log"
    log.write_text("\n".join(lines) + "\n")
    assert main(["export", str(rec), "--log", str(log), "--out", str(tmp_path / "t.json")]) == 0
    assert "15 more prover events counted but not drawn (the first 5 of each kind are)" in \
        capsys.readouterr().err


def test_a_proof_kept_while_running_keeps_its_last_word_past_the_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Its running word was among the first kept, its end past the bound: the row read "running"
    # of a proof that had ended.
    monkeypatch.setattr(prover_events, "MAX_KEPT", 3)

    def proof(t: float, job: str, done: bool) -> ProverEvent:
        return ProverEvent(t_wall_s=t, kind="proof", level="info", message="", job_id=job,
                           proof=ProofTiming("winning-post", done=done))
    log = prover_events.ProverEvents([proof(1.0, "a", False), proof(2.0, "b", True),
                                      proof(3.0, "c", True), proof(4.0, "d", True),
                                      proof(5.0, "a", True), proof(6.0, "e", True)])
    assert [(e.job_id, e.proof is not None and e.proof.done) for e in log] == [
        ("a", False), ("b", True), ("c", True), ("a", True)]
    assert log.not_kept == {"proof": 2} and log.proofs().rows == 5


def test_proofs_never_said_again_are_counted_in_bounded_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A PoSt whose GPU job was lost is never said again: its running word stayed in the tally
    # to the end, one entry a lost proof, without bound.
    monkeypatch.setattr(prover_watch, "MAX_RUNNING_PROOFS", 100)
    log = prover_events.ProverEvents(
        ProverEvent(t_wall_s=float(i), kind="proof", level="warning", message="",
                    job_id=f"wp-{i}", proof=ProofTiming("winning-post", verdict="at_risk",
                                                        done=False))
        for i in range(1000))
    assert len(log._counted._proofs._words) == 100
    tally = log.proofs()
    assert (tally.rows, tally.at_risk) == (1000, 1000)


def test_a_post_that_could_not_be_timed_is_counted_unknown_in_every_output_never_ok() -> None:
    """A stray `GPU_END` of a WinningPoSt id, its begin never read: it was "ok" in /metrics
    (`gapwatch_proofs_total{verdict="ok"}`), the report's "0 late" summary, its table and
    --json, and said nothing on the dashboard or stderr (an info event). It is "unknown"
    everywhere, a warning; `--on-event` is not run for it (it is not known to be late)."""
    from gapwatch.engine.events import event_of

    text = ("2026-05-12T16:00:00.000000Z  INFO cuzk_daemon: cuzk-daemon starting\n"
            "TIMELINE,14640,GPU_END,winpost-1000-0a1b2c3d,worker=0,gpu_ms=1300\n")
    parser = LogParser(offline=True)
    logs = [e for i, line in enumerate(text.splitlines())
            for e in parser.parse_line(line, "x.log", i, 0.0)] + parser.flush()
    metrics, recorder = MetricsSink(), KeptRecords()
    session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), sinks=[recorder, metrics],
                      watch=CuzkWatch())
    heard: list[Gap | StateChange | Notice] = []
    session.subscribe(heard.append)
    for e in logs:
        session.on_log_event(e)
    session.finish()
    [notice] = [n for n in heard if isinstance(n, Notice)]
    assert notice.level == "warning" and "not known" in notice.message
    proofs = samples(list(families(metrics.copy_counts().prover)), "gapwatch_proofs_total")
    assert proofs[(("proof_kind", "winning-post"), ("verdict", "unknown"))] == 1
    assert proofs[(("proof_kind", "winning-post"), ("verdict", "ok"))] == 0
    assert proofs[(("proof_kind", "window-post"), ("verdict", "unknown"))] == 0  # from 0
    [recorded] = [r for r in recorder.records if isinstance(r, ProverEvent)]
    assert event_of(recorded) is None
    found = detect_records(HEADER, [], DetectorConfig(), logs, watch=CuzkWatch())
    report = summarise("rec.jsonl", found, ["x.log"])
    doc = to_json(report)["prover_events"]
    assert [p["proof"]["verdict"] for p in doc["proof"]] == ["unknown"]
    assert "1 not timed" in doc["summary"]
    out = format_text(report)
    assert "PoSt proof(s) (0 late, 0 at risk, 1 not timed (on time or late not known))" in out
    [row] = [x for x in out.splitlines() if x.startswith("    ") and "winpost-1000" in x]
    assert row.rstrip().endswith(" unknown")


def test_a_post_late_while_running_then_lost_in_a_restart_is_counted_late_once() -> None:
    """A WinningPoSt stuck past its deadline, then lost when the prover restarted: the alert
    GapwatchPoStLate fired, `--on-event` ran, yet `gapwatch_proofs_total{verdict="late"}`
    counts only proofs that ended, and the fleet's PoSt column, reading it, said "0 late"
    for that box. `gapwatch_proofs_late_total` counts each proof that went late once: this one
    (said late running, then lost), and post-late.log's (said late running, then ended late)."""
    lines = (DATA / "post-late.log").read_text().splitlines()
    cut = next(i for i, x in enumerate(lines) if "SYNTH_START" in x)
    stuck = [*lines[:cut + 1],  # its synthesis begun at 16:00:52, the log goes on a minute
             "2026-05-12T16:01:50.000000Z  INFO cuzk_core::engine: pinned pool checkout",
             "2026-05-12T16:02:00.000000Z  INFO cuzk_daemon: cuzk-daemon starting"]
    metrics = MetricsSink()
    session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), sinks=[metrics], watch=CuzkWatch())
    parser = LogParser(offline=True)
    for i, line in enumerate(stuck):
        for e in parser.parse_line(line, "cuzk.log", i, 0.0):
            session.on_log_event(e)
    session.finish()
    fams = list(families(metrics.copy_counts().prover))
    assert samples(fams, "gapwatch_prover_events_total")[
        (("kind", "proof"), ("level", "error"))] == 1  # late running, then lost: one proof
    assert samples(fams, "gapwatch_proofs_total")[
        (("proof_kind", "winning-post"), ("verdict", "late"))] == 0  # it never ended
    late = samples(fams, "gapwatch_proofs_late_total")
    assert late[(("proof_kind", "winning-post"),)] == 1
    assert late[(("proof_kind", "window-post"),)] == 0
    # Late while running, then ended late: one proof, once.
    _, _, _, metrics = session_over("post-late.log")
    fams = list(families(metrics.copy_counts().prover))
    assert samples(fams, "gapwatch_proofs_late_total")[(("proof_kind", "winning-post"),)] == 1


def test_a_post_proved_with_the_pipeline_off_reaches_the_metrics_and_the_report() -> None:
    """post-pipeline-off.log: a WinningPoSt proved by cuzk's monolithic worker, late behind a
    whole PoRep C2, and an on-time WindowPoSt. Counted by verdict, its latency and its two
    phases (queue, prove) observed, no synthesis or GPU phase said for it (not known)."""
    _, heard, _, metrics = session_over("post-pipeline-off.log")
    assert any(isinstance(n, Notice) and n.level == "error" and "winpost-1000-5e6f7a8b"
               in n.message for n in heard)
    fams = list(families(metrics.copy_counts().prover))
    proofs = samples(fams, "gapwatch_proofs_total")
    assert proofs[(("proof_kind", "winning-post"), ("verdict", "late"))] == 1
    assert proofs[(("proof_kind", "window-post"), ("verdict", "ok"))] == 1
    late = samples(fams, "gapwatch_proofs_late_total")
    assert late[(("proof_kind", "winning-post"),)] == 1
    last = samples(fams, "gapwatch_proof_last_seconds")
    assert last[(("proof_kind", "winning-post"),)] == pytest.approx(33.4, abs=0.01)
    sums = samples(fams, "gapwatch_proof_phase_seconds_sum")
    counts = samples(fams, "gapwatch_proof_phase_seconds_count")
    win = ("proof_kind", "winning-post")
    assert sums[(("phase", "prove"), win)] == pytest.approx(3.4, abs=0.01)
    assert sums[(("phase", "queue"), win)] == pytest.approx(30.0, abs=0.01)
    assert counts[(("phase", "gpu"), win)] == counts[(("phase", "synthesis"), win)] == 0

    found = detect_records(HEADER, [], DetectorConfig(), events_of("post-pipeline-off.log"),
                           watch=CuzkWatch())
    report = summarise("rec.jsonl", found, ["x.log"])
    text = format_text(report)
    assert "Prover events: 2 PoSt proof(s) (1 late, 0 at risk)" in text
    [row] = [x for x in text.splitlines() if "winpost-1000-5e6f7a8b" in x]
    assert row.split()[-4:] == ["3.4", "-", "30.0", "late"]  # prove, finalize, deadline
    [doc] = [p["proof"] for p in to_json(report)["prover_events"]["proof"]
             if p["job_id"] == "winpost-1000-5e6f7a8b" and p["proof"]["done"]]
    assert doc["one_step"] is True and doc["prove_s"] == pytest.approx(3.4, abs=0.01)
    assert doc["synth_s"] is None and doc["gpu_s"] is None


def test_a_failed_post_is_said_at_once_on_the_footer_metrics_report_and_on_event() -> None:
    """post-failed.log: a WinningPoSt whose `GPU prove start task panicked` names it
    (engine.rs:3302, in its GPU worker's span, after supraseal-c2's CUDA error panic). From that line on it leads the footer's alert line (FAILED, its
    error), is gone from the proofs running, counts in `gapwatch_proofs_total{verdict="failed"}`
    (the alert GapwatchPoStFailed) and not as a late proof (GapwatchPoStLate reads
    `gapwatch_proofs_late_total`) nor in the latency histograms, the report says it with its
    error, and `--on-event` runs `post_failed`. Before, it was an error event, then said LATE
    once its 30 s had passed, counted late everywhere."""
    from gapwatch.core.prover_watch import alert_line
    from gapwatch.engine.events import event_of

    job = "winpost-1000-3c4d5e6f"
    error = ('GPU prove start task panicked: task 41 panicked with message "cudaGetLastError()@'
             '/root/.cargo/registry/src/sppark-0.1.14/ntt/kernels/gs_mixed_radix_wide.cu:220 '
             'failed: \\"out of memory\\""')
    logs = events_of("post-failed.log")
    metrics, recorder = MetricsSink(), KeptRecords()
    session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), sinks=[recorder, metrics],
                      watch=CuzkWatch())
    heard: list[Gap | StateChange | Notice] = []
    session.subscribe(heard.append)
    upto = next(i for i, e in enumerate(logs) if e.name == "GPU prove start task panicked")
    for e in logs[:upto + 1]:
        session.on_log_event(e)
    found = session.store.prover_alert(300.0)
    assert found is not None
    alert, others = found
    assert others == 1  # its failure line's error event, said just before it
    assert alert_line(alert).startswith(
        f"prover proof FAILED at 21:00:12: WinningPoSt {job}: GPU prove start task panicked: "
        "task 41 panicked with message ")
    assert job not in [r.job_id for r in session.store.running_proofs()]
    [said] = [n for n in heard if isinstance(n, Notice) and n.message.startswith("prover proof")]
    assert said.level == "error" and f"{error} (after 2.5 s" in said.message
    hook = event_of(alert)
    assert hook is not None and (hook.kind, hook.state) == ("post_failed", "failed")
    assert hook.cause_words == error
    for e in logs[upto + 1:]:
        session.on_log_event(e)
    session.finish()

    fams = list(families(metrics.copy_counts().prover))
    proofs = samples(fams, "gapwatch_proofs_total")
    # Failed too: the other WinningPoSt, whose `synthesis failed` named no job, the one in
    # synthesis then (never late).
    assert proofs[(("proof_kind", "winning-post"), ("verdict", "failed"))] == 2
    assert proofs[(("proof_kind", "window-post"), ("verdict", "failed"))] == 0  # from 0
    assert proofs[(("proof_kind", "winning-post"), ("verdict", "late"))] == 0
    assert samples(fams, "gapwatch_proofs_late_total")[(("proof_kind", "winning-post"),)] == 0
    assert samples(fams, "gapwatch_proof_seconds_count")[(("proof_kind", "winning-post"),)] == 0
    assert (("proof_kind", "winning-post"),) not in samples(fams, "gapwatch_proof_last_seconds")
    recorded = [r for r in recorder.records if isinstance(r, ProverEvent) and r.job_id == job
                and r.kind == "proof"]
    assert [r.proof.verdict for r in recorded if r.proof is not None] == ["failed"]

    found_offline = detect_records(HEADER, [], DetectorConfig(), logs, watch=CuzkWatch())
    report = summarise("rec.jsonl", found_offline, ["x.log"])
    text = format_text(report)
    assert "Prover events: 2 PoSt proof(s) (2 failed, 0 late, 0 at risk)" in text
    assert f"      error: {error}" in text
    [doc] = [p["proof"] for p in to_json(report)["prover_events"]["proof"] if p["job_id"] == job]
    assert doc["verdict"] == "failed" and doc["error"] == error


def test_a_recording_from_before_failed_proofs_reads_as_it_did() -> None:
    """A `prover_event` written before `error` and the `failed` verdict: decoded with no
    error (None), its verdict as written; one written now reads back whole."""
    import msgspec

    old = (b'{"type":"prover_event","t_wall_s":1.0,"kind":"proof","level":"error","message":'
           b'"m","proof":{"proof_kind":"winning-post","total_s":40.0,"verdict":"late"}}')
    ev = msgspec.json.decode(old, type=ProverEvent)
    assert ev.proof is not None and ev.proof.verdict == "late" and ev.proof.error is None
    now = ProverEvent(t_wall_s=1.0, kind="proof", level="error", message="m",
                      proof=ProofTiming(proof_kind="winning-post", verdict="failed",
                                        error="proof failed: x"))
    again = msgspec.json.decode(msgspec.json.encode(now), type=ProverEvent)
    assert again == now and not again.proof.proved  # type: ignore[union-attr]


def test_the_reports_errors_are_listed_in_time_order_in_text_and_json(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The `post` scenario's panic is said once its message has ended, after the line that
    preceded it: the report's Errors listed `16:22:13.646` above `.594`."""
    from sim_recordings import recorded_once, report_of

    # Said in the order the watcher derives them (a panic once its message ended, after the
    # line before it), listed by time: the rule, on two errors said out of order.
    said = [ProverEvent(t_wall_s=t, kind="error", level="error", message=m)
            for t, m in ((13.646, "panicked"), (13.594, "GPU prove start task panicked"))]
    listed_said = prover_events.ProverEvents(said).in_time_order(("error",))
    assert [e.t_wall_s for e in listed_said] == [13.594, 13.646]
    # And end to end: the report's lists, text and JSON alike, in that order.
    rec = recorded_once(tmp_path_factory, "post", 100.0)  # test_time_window's too
    doc = json.loads(report_of(rec, "--json"))
    errors = doc["prover_events"]["error"]
    times = [e["t_wall_s"] for e in errors]
    assert len(times) >= 1 and times == sorted(times)
    text = report_of(rec).split("\n  Errors\n")[1].split("\n\n")[0]
    # A row starts with its time of day (the test read rows starting "    1": after 20:00 UTC
    # it read none).
    listed = [line[4:16] for line in text.splitlines()
              if re.match(r"    \d\d:\d\d:\d\d\.\d{3}", line)]
    assert listed == [datetime.fromtimestamp(t, UTC).strftime("%H:%M:%S.%f")[:12]
                      for t in times]


def _one_among_300_lost(job: str, running: ProofVerdict, ended: ProofVerdict,
                        others: ProofVerdict) -> list[ProverEvent]:
    """A WinningPoSt `job` said `running` while it runs, 300 said running meanwhile (`others`)
    and never again (their GPU jobs lost), then its end, `ended`."""
    def proof(t: float, job: str, verdict: ProofVerdict, done: bool) -> ProverEvent:
        return ProverEvent(t_wall_s=t, kind="proof", level="info", message="", job_id=job,
                           proof=ProofTiming("winning-post", verdict=verdict, done=done))
    return [proof(0.0, job, running, False),
            *(proof(1.0 + i, f"wp-lost-{i}", others, False) for i in range(300)),
            proof(400.0, job, ended, True)]


def test_the_troubles_and_the_summary_count_a_proof_by_the_same_last_word() -> None:
    """A WinningPoSt said at risk while running, then done on time, with 300 PoSt said running
    meanwhile whose GPU jobs were lost (never said again). The advice's troubles held 256
    running proofs, the summary's counts 4,096: the troubles let the first one go at its "at
    risk" word and "What to change" said 1 WinningPoSt at risk while the summary said none."""
    events = _one_among_300_lost("wp-risky", "at_risk", "ok", others="ok")
    log = prover_events.ProverEvents(events)
    assert log.proofs().at_risk == 0
    assert log.troubles() == []


def test_a_proof_said_late_while_hundreds_run_is_counted_once_and_hooked_once() -> None:
    """A WinningPoSt said late while running, 300 PoSt said running meanwhile whose GPU jobs
    were lost (never said again), then its end, late. `/metrics`' `ProofOnce` and `--on-event`'s
    `LateOnce` kept 256 running proofs: they had let it go, took its end for another proof's
    first word, and counted it twice (`gapwatch_prover_events_total{kind="proof"}` and
    `gapwatch_proofs_late_total` 2 for one proof; `post_late` run twice). They keep the proofs
    the report counts by (`LastWords`, one bound)."""
    events = _one_among_300_lost("wp-late", "late", "late", others="late")
    once, late = prover_watch.ProofOnce(), prover_watch.LateOnce()
    firsts = [e.job_id for e in events if once.first(e)]
    lates = [e.job_id for e in events if late.first(e)]
    assert firsts.count("wp-late") == lates.count("wp-late") == 1
    assert len(firsts) == len(lates) == 301


def test_the_post_advice_setting_is_on_metrics_as_a_bounded_label_set() -> None:
    """/metrics said of a box whose WinningPoSts went late that its GPUs were CHAINED, verdict
    `none`: the setting its report names for them was nowhere a fleet could read it.
    `gapwatch_proof_advice_info` says each kind, how it went wrong and the setting (`none`
    where no cuzk setting frees it: a failed one), none while no PoSt went wrong."""
    from gapwatch.sinks.prometheus import GapwatchCollector

    def advice(*names: str) -> list[dict[str, str]]:
        session, _, _, metrics = session_over(*names)
        fams = {f.name: f for f in GapwatchCollector(session, metrics).collect()}
        return [s.labels for s in fams["gapwatch_proof_advice"].samples]

    assert advice("post-late.log") == [{"proof_kind": "winning-post", "verdict": "late",
                                        "setting": "[pipeline] synthesis_concurrency"}]
    assert advice("post-failed.log") == [{"proof_kind": "winning-post", "verdict": "failed",
                                          "setting": "none"}]
    assert advice("restart.log") == []


def test_a_post_advice_that_cannot_be_built_costs_its_family_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The advice reads each proof's own figures: a failure there is counted with the
    verdict's and leaves its family out of that scrape; the rest is served."""
    from gapwatch.sinks import prometheus

    def broken(_snap: object) -> list[Metric]:
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setattr(prometheus, "proof_advice_families", broken)
    session, _, _, metrics = session_over("post-late.log")
    collector = prometheus.GapwatchCollector(session, metrics)
    fams = {f.name: f for f in collector.collect()}
    assert "gapwatch_proof_advice" not in fams and "gapwatch_proofs_late" in fams
    assert collector.verdict_errors == {"verdict": 0, "proof_advice": 1}
    # The scrape whose advice failed counts it itself (it was counted one scrape late).
    errors = fams["gapwatch_exporter_verdict_errors"]
    assert {s.labels["family"]: s.value for s in errors.samples
            if s.name.endswith("_total")} == {"verdict": 0.0, "proof_advice": 1.0}


# -- counts nothing read could give: not known, never 0 -------------------------------------------

def _status(t_s: float, uptime_s: float | None) -> ProverStatus:
    return ProverStatus("127.0.0.1:9821", int(t_s * 1e9), t_s, 1.0, uptime_s, {}, [], 0, 0, 0, 0)


def _pid(t_s: float, pid: int, name: str) -> ProcessMemory:
    return ProcessMemory(int(t_s * 1e9), t_s, 0, pid, name, 1 << 30, 1 << 20)


def test_a_restart_recorded_without_its_log_has_its_counts_not_known_and_its_pids_said() -> None:
    # The H200 recording of a stand-in prover (python3) killed and started again, no log
    # recorded: --json said "0 restart(s), 0 error(s)" while its Blind spots said pid 558
    # exited and pid 592 pinned its pool.
    from gapwatch.config import Config
    from gapwatch.offline.report import build_report

    case = Path(__file__).parent / "data" / "h200-restart" / "restart.jsonl.gz"
    report = build_report(case, Config(), workers=1)
    doc = to_json(report)["prover_events"]
    assert doc["counts"]["restart"] is None and doc["counts"]["proof"] is None
    assert doc["counts"]["error"] is None and doc["counts"]["lost_job"] is None
    assert doc["not_known"]["proof"] == "no cuzk log line read"
    summary = doc["summary"]
    assert "0 restart(s)" not in summary and "0 error(s)" not in summary
    assert "PoSt proofs, errors and lost GPU jobs not known: no cuzk log line read" in summary
    assert "restarts not known: no cuzk log line, /status uptime or process named cuzk" in summary
    shown = ("/proc readings show a new pid on a GPU: GPU 0 pid 592 (python3) first read at "
             "13:24:40, pid 558 (python3) last read at 13:24:33")
    assert doc["shown"] == [shown] and summary.endswith(shown)
    assert summary in format_text(report)  # the text says it too, though nothing was counted


def test_a_status_uptime_counts_restarts_where_no_log_was_read_and_nothing_else() -> None:
    recs = [_status(100.0 + i, 50.0 + i) for i in range(5)] + [_status(110.0, 1.0)]
    found = detect_records(HEADER, recs, DetectorConfig(), [], watch=CuzkWatch())
    doc = prover_events.prover_events_json(found.prover_events)
    assert doc["counts"]["restart"] == 1 and doc["counts"]["error"] is None
    assert doc["summary"] == ("Prover events: 1 restart(s); PoSt proofs, errors and lost GPU "
                              "jobs not known: no cuzk log line read")


def test_a_new_pid_of_cuzks_name_counts_restarts_and_one_of_another_name_is_only_said() -> None:
    cuzk = [_pid(100.0, 4242, "cuzk"), _pid(101.0, 4242, "cuzk"), _pid(130.0, 5151, "cuzk")]
    found = detect_records(HEADER, cuzk, DetectorConfig(), [], watch=CuzkWatch())
    doc = prover_events.prover_events_json(found.prover_events)
    assert doc["counts"]["restart"] == 1 and doc["shown"] == []
    # No pid of cuzk's name: nothing could count restarts; the readings' pids are said.
    other = [_pid(100.0, 4242, "python3"), _pid(130.0, 5151, "python3")]
    found = detect_records(HEADER, other, DetectorConfig(), [], watch=CuzkWatch())
    doc = prover_events.prover_events_json(found.prover_events)
    assert doc["counts"]["restart"] is None
    assert doc["shown"] == ["/proc readings show a new pid on a GPU: GPU 0 pid 5151 (python3) "
                            "first read at 00:02:10, pid 4242 (python3) last read at 00:01:40"]


def test_the_pids_of_a_gpus_first_round_are_not_new() -> None:
    both = [_pid(100.0, 1, "a"), _pid(100.0, 2, "b"), _pid(101.0, 1, "a"), _pid(101.0, 2, "b")]
    found = detect_records(HEADER, both, DetectorConfig(), [], watch=CuzkWatch())
    assert found.prover_events.unheard.shown == ()


def test_a_report_that_read_the_log_knows_every_count() -> None:
    found = detect_records(HEADER, [], DetectorConfig(), events_of(*ALL), watch=CuzkWatch())
    doc = to_json(summarise("rec.jsonl", found, ["x.log"]))["prover_events"]
    assert None not in doc["counts"].values() and doc["not_known"] == {} and doc["shown"] == []
    assert doc["counts"]["restart"] == 5 and doc["counts"]["proof"] == 3


def test_a_run_without_a_prover_watcher_knows_no_count() -> None:
    found = detect_records(HEADER, [], DetectorConfig(), events_of(*ALL), watch=None)
    doc = prover_events.prover_events_json(found.prover_events)
    assert set(doc["counts"].values()) == {None}
    assert "not known: no prover watcher (cuzk's rules off" in doc["summary"]
