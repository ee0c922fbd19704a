"""TIMELINE placed without `--from-start`: cuzk's `/status` uptime counts from its status
tracker, created a few ms before TIMELINE's epoch (curio e0294b0f engine.rs `Engine::new`, then
`start()`), so poll time minus `uptime_secs` anchors TIMELINE's millisecond offsets when the
log's own anchor line (`starting cuzk engine`) was never read: live (the runtime hands the
poller's snapshots to the log followers) and in `report --log` (the recording's snapshots)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from cuzk_fakes import WAITS_ON_SYNTHESIS
from parsed_logs import parse_log_files

from gapwatch.config import build_config
from gapwatch.core.models import GpuInfo, GpuSample, LogEvent, ProverStatus
from gapwatch.cuzk.pipeline import timeline_epoch
from gapwatch.cuzk.status import parse_status
from gapwatch.engine.runtime import build_runtime
from gapwatch.engine.session import default_header
from gapwatch.logs.parse import LogParser
from gapwatch.offline.report import recorded_timeline_epoch
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources.cuzk_status_server import CuzkStatusServer

T_POLL = 1_796_000_100.0
LINE = "TIMELINE,12345,SYNTH_START,porep-1000-3,partition=4"
ANCHOR = "2026-12-01T10:00:00.000000Z  INFO cuzk_core::engine: starting cuzk engine " \
         "pipeline_enabled=true"


def _status(uptime_s: float, t_wall_s: float = T_POLL, latency_ms: float = 2.0) -> ProverStatus:
    doc = {**WAITS_ON_SYNTHESIS, "uptime_secs": uptime_s}
    return parse_status(json.dumps(doc).encode(), "p", 1, t_wall_s, latency_ms)


def test_poll_time_minus_uptime_is_timelines_epoch() -> None:
    st = _status(100.0)
    # Built somewhere within the request: half the latency after it was sent.
    assert timeline_epoch(st) == T_POLL + 0.001 - 100.0
    assert timeline_epoch(_status(0.0)) is not None
    no_uptime = parse_status(b'{"pipelines": []}', "p", 1, T_POLL, 1.0)
    assert timeline_epoch(no_uptime) is None


def test_a_status_epoch_places_timeline_lines_until_the_logs_own_anchor_is_read() -> None:
    parser = LogParser()
    (unplaced,) = parser.parse_line(LINE, "stderr", arrival_wall_s=T_POLL + 5)
    assert unplaced.time_source == "arrival"
    epoch = timeline_epoch(_status(100.0))
    assert epoch is not None
    parser.anchor_from_status(epoch)
    (placed,) = parser.parse_line(LINE, "stderr", arrival_wall_s=T_POLL + 5)
    assert placed.time_source == "timeline" and epoch is not None
    assert abs(placed.t_wall_s - (epoch + 12.345)) < 1e-6
    assert parser.counters["timeline_anchors_status"] == 1
    # The log's own anchor line wins over any later snapshot.
    parser.parse_line(ANCHOR, "stdout")
    parser.anchor_from_status(epoch)
    (logged,) = parser.parse_line(LINE, "stderr")
    assert parser.anchor_source == "log" and parser.anchor_wall_s is not None
    assert logged.t_wall_s == parser.anchor_wall_s + 12.345


def test_report_log_places_an_unanchored_log_by_the_recorded_uptime(tmp_path: Path) -> None:
    gpus = [GpuInfo(index=0)]
    header = default_header("test", gpus, 100.0)
    sample = GpuSample(0, 1_000_000_000, T_POLL, 100_000_000, 50.0, 50.0, 1.0, 1.0)
    rec = tmp_path / "r.jsonl"
    write_recording(rec, header, [sample, _status(100.0)])
    epoch = recorded_timeline_epoch(rec)
    assert epoch is not None and abs(epoch - (T_POLL + 0.001 - 100.0)) < 1e-6
    log = tmp_path / "stderr.log"
    log.write_text(LINE + "\n")
    # Without an epoch the line has no time of its own and cannot be placed: it is dropped.
    assert parse_log_files([str(log)], build_config({}))[0] == []
    (ev,), _ = parse_log_files([str(log)], build_config({}), epoch)
    assert ev.time_source == "timeline" and abs(ev.t_wall_s - (epoch + 12.345)) < 1e-6


def test_live_the_pollers_uptime_anchors_a_log_followed_from_its_end(tmp_path: Path) -> None:
    log = tmp_path / "cuzk-stderr.log"
    log.write_text("TIMELINE,1,SYNTH_START,porep-1000-0,partition=0\n")  # before gapwatch
    # A daemon whose tracker started 250 s ago: its uptime grows with the wall clock.
    started = time.time() - 250.0
    with CuzkStatusServer(lambda: {**WAITS_ON_SYNTHESIS,
                                   "uptime_secs": time.time() - started}) as server:
        cfg = build_config({"cuzk": {"status_period_s": 0.1, "status_url": server.url},
                            "logs": {"poll_ms": 20}})
        rt = build_runtime(cfg, "sim:host-stall", speed=1, duration_s=30, log_paths=[str(log)])
        rt.start()
        try:
            done = threading.Event()
            for _ in range(200):  # until a poll answered (a deadlock guard, not a timing test)
                if rt.pollers[0].status().ok:
                    break
                done.wait(0.05)
            with log.open("a") as fh:
                fh.write(LINE + "\n")
            placed: list[LogEvent] = []
            for _ in range(200):
                placed = [e for e in rt.store.snapshot().log_events
                          if e.job_id == "porep-1000-3"]
                if placed:
                    break
                done.wait(0.05)
        finally:
            rt.stop()
    (ev,) = placed
    assert ev.time_source == "timeline"
    # 250 s from the time it was read: placed by the daemon's epoch (to the poll's latency).
    assert abs(ev.t_wall_s - (started + 12.345)) < 1.0
