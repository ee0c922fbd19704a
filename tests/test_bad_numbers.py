"""Every number from outside is bounded: huge integers in log lines, NaN/inf, 1e30 GPU indices,
1e300 timestamps, BOMs, periods of 0 or -100 ms. Each is said (a counter, a problem line) and the
rest of the input is used; nothing raises."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest
from shared_files import sim_recording_bytes

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.config import build_config
from gapwatch.core.bounds import MAX_WALL_S
from gapwatch.core.models import LogEvent, SessionHeader
from gapwatch.logs.parse import LogParser
from gapwatch.sources.files import read_any
from gapwatch.sources.recording import HEADER_WALL_TIMES

DATA = Path(__file__).parent / "data"
BIG = "99999999999999999999"  # 20 digits: beyond 64 bits


def parse(text: str, config: object = None) -> list[object]:
    parser = LogParser(config)  # type: ignore[arg-type]
    events = parser.parse_line(text, "s", 1, 1_796_000_000.0)
    assert parser.counters["internal_errors"] == 0
    for e in events:
        msgspec.json.encode(e)  # every event can be written to a recording and exported
    return events  # type: ignore[return-value]


# -- log lines -------------------------------------------------------------------------------


def test_an_integer_beyond_64_bits_in_a_tracing_field_stays_as_text() -> None:
    # (A partition beyond 64 bits is no event at all: `test_a_tracing_line_whose_partition_...`.)
    (e,) = parse("2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: GPU_TIMING spawn_blocking "
                 f"prove_start worker_id=1 partition=Some(2) spawn_to_enter_ms={BIG}")
    assert e.fields["spawn_to_enter_ms"] == BIG  # type: ignore[attr-defined]
    assert e.worker == 1 and e.partition == 2  # type: ignore[attr-defined]


def test_64_bit_integers_that_fit_are_still_integers() -> None:
    (e,) = parse(f"CUZK_TIMING: a={2**63 - 1} b=-{2**63} c={2**63}")
    assert e.fields == {"a": 2**63 - 1, "b": -(2**63), "c": str(2**63)}  # type: ignore[attr-defined]


def test_an_infinite_float_and_foreign_digits_stay_as_text() -> None:
    (e,) = parse("CUZK_TIMING: x=1e999 y=²³ z=١٢")
    assert e.fields == {"x": "1e999", "y": "²³", "z": "١٢"}  # type: ignore[attr-defined]


def test_a_timeline_offset_beyond_64_bits_keeps_the_event_at_its_arrival_time() -> None:
    parser = LogParser()
    parser.parse_line("2026-11-30T09:06:26.553439Z  INFO cuzk_core::engine: starting cuzk engine",
                      "s", 1, 5.0)
    (e,) = parser.parse_line(f"TIMELINE,{BIG}000,GPU_START,j,worker=0,partition=2", "s", 2, 7.0)
    assert (e.t_wall_s, e.time_source, e.partition) == (7.0, "arrival", 2)
    assert e.fields["offset_ms"] == BIG + "000"
    msgspec.json.encode(e)


def test_a_timeline_offset_that_fits_but_lands_after_2262_is_a_bad_timestamp() -> None:
    parser = LogParser()
    parser.parse_line("2026-11-30T09:06:26.553439Z  INFO cuzk_core::engine: starting cuzk engine",
                      "s", 1, 5.0)
    (e,) = parser.parse_line(f"TIMELINE,{10**17},GPU_END,j,worker=0", "s", 2, 7.0)
    assert (e.t_wall_s, e.time_source) == (7.0, "arrival")
    assert parser.counters["bad_timestamp"] == 1


#: Past Python's 4,300 digits `int()` raises ValueError (its guard against quadratic conversion).
HUGE = "9" * 5000


def test_a_field_of_more_digits_than_int_reads_stays_text_and_the_line_keeps_its_other_fields(
        ) -> None:
    (e,) = parse("2026-11-30T09:06:26.553439Z  INFO cuzk_core::engine: starting pipeline: "
                 f"synthesis task + GPU workers (budget-gated) synth_worker_count={HUGE} "
                 f"offset=Some(-{'0' * 5000}7) max_partitions_in_budget=36")
    assert e.kind == "tracing"  # type: ignore[attr-defined]
    assert e.fields["synth_worker_count"] == HUGE  # type: ignore[attr-defined]
    assert e.fields["max_partitions_in_budget"] == 36  # type: ignore[attr-defined]
    assert e.fields["offset"] == -7  # type: ignore[attr-defined]


def test_a_timeline_line_with_thousands_of_digits_is_an_event_not_an_internal_error() -> None:
    parser = LogParser()
    (e,) = parser.parse_line(f"TIMELINE,{HUGE},GPU_START,j,worker={HUGE},partition=2", "s", 2, 7.0)
    assert (e.kind, e.name, e.t_wall_s, e.time_source) == ("timeline", "GPU_START", 7.0, "arrival")
    assert e.partition == 2 and e.worker is None and e.fields["worker"] == HUGE
    assert parser.counters["internal_errors"] == 0
    msgspec.json.encode(e)


def test_a_timestamp_with_thousands_of_fraction_digits_still_times_its_line() -> None:
    (e,) = parse(f"2026-11-30T09:06:26.5{'1' * 5000}Z  INFO cuzk_core::engine: starting cuzk "
                 "engine pipeline_enabled=true")
    assert e.kind == "tracing" and e.time_source == "line"  # type: ignore[attr-defined]
    assert e.t_wall_s == pytest.approx(1_796_029_586.511111)  # type: ignore[attr-defined]


def test_gpu_numbers_that_are_not_gpu_indices_stay_in_the_fields() -> None:
    (e,) = parse("CUZK_TIMING: d_a_cache allocated 4096 MiB on gpu 4096")
    assert e.gpu is None and e.fields["gpu"] == 4096  # type: ignore[attr-defined]
    (e,) = parse(f"CUZK_TIMING: d_a_cache allocated {BIG} MiB on gpu 1")
    assert e.gpu == 1 and e.fields["size_mib"] == BIG  # type: ignore[attr-defined]


def test_a_gpu_queue_line_whose_partition_does_not_read_is_no_lost_monolithic_job() -> None:
    """`GPU_QUEUE,porep-1-1,partition=99999999999999999999` (or `partition=abc`) names a
    partition gapwatch cannot read (`partition` None, the text kept): the GPU queue watch took
    it for a monolithic item (key (0, 0)), and the next pickup said it LOST, an error
    (`monolithic job porep-1-1 was queued for the GPU ... and never picked up`: a page, an
    `--on-event` command) of a partitioned job cuzk never lost."""
    from gapwatch.cuzk.gpu_queue import GpuQueueWatch

    parser, watch = LogParser(), GpuQueueWatch()
    lines = ["2026-05-12T15:00:00.030000Z  INFO cuzk_core::engine: starting cuzk engine",
             f"TIMELINE,10000,GPU_QUEUE,porep-1-1,partition={BIG}",
             "TIMELINE,10100,GPU_QUEUE,porep-1-2,partition=3",
             "TIMELINE,10200,GPU_PICKUP,porep-1-2,worker=0,partition=3",
             "TIMELINE,10300,GPU_QUEUE,porep-1-3,partition=abc",
             f"TIMELINE,10350,GPU_PICKUP,porep-1-3,worker=1,partition={BIG}",
             "TIMELINE,10400,GPU_QUEUE,porep-1-4,partition=1",
             "TIMELINE,10500,GPU_PICKUP,porep-1-4,worker=0,partition=1",
             # A monolithic item (no partition named) is still lost as before.
             "TIMELINE,10600,GPU_QUEUE,winpost-1-aa,monolithic",
             "TIMELINE,10700,GPU_QUEUE,porep-1-5,partition=2",
             "TIMELINE,10800,GPU_PICKUP,porep-1-5,worker=0,partition=2"]
    said = [out for i, line in enumerate(lines)
            for ev in parser.parse_line(line, "s", i, 1_778_598_000.0 + i)
            for out in watch.feed(ev)]
    assert [e.job_id for e in said] == ["winpost-1-aa"] and watch.lost == 1
    # The two queued and the pickup: no event (the parser's rule, `log_lines.partition_of`).
    assert parser.counters["timeline_partition_unread"] == 3


#: TIMELINE lines of a partitioned job whose `partition=` names none cuzk can write (it writes
#: a `usize`, engine.rs:1719-3196): beyond 64 bits, text, negative, a leading zero, bare.
UNREAD_PARTITIONS = (BIG, "abc", "-1", "007", "None")


def _unread_partition_lines(value: str) -> list[str]:
    """A run whose partition 0 of porep-1-1 is read, and whose porep-1-2's lines name a
    partition that does not read (`value`): queued, picked up, on the GPU (no GPU_END yet)."""
    return ["2026-05-12T15:00:00.030000Z  INFO cuzk_core::engine: starting cuzk engine",
            "TIMELINE,1000,SYNTH_START,porep-1-1,partition=0",
            "TIMELINE,2000,SYNTH_END,porep-1-1,partition=0,synth_ms=1000",
            "TIMELINE,2001,GPU_QUEUE,porep-1-1,partition=0",
            "TIMELINE,2002,GPU_PICKUP,porep-1-1,worker=0,partition=0",
            "TIMELINE,2003,GPU_START,porep-1-1,worker=0,partition=0",
            "TIMELINE,3000,GPU_END,porep-1-1,worker=0,partition=0,gpu_ms=997",
            f"TIMELINE,3100,SYNTH_START,porep-1-2,partition={value}",
            f"TIMELINE,4000,SYNTH_END,porep-1-2,partition={value},synth_ms=900",
            f"TIMELINE,4001,GPU_QUEUE,porep-1-2,partition={value}",
            f"TIMELINE,4002,GPU_PICKUP,porep-1-2,worker=1,partition={value}",
            f"TIMELINE,4003,GPU_START,porep-1-2,worker=1,partition={value}",
            f"TIMELINE,5000,GPU_END,porep-1-2,worker=1,partition={value},gpu_ms=997"]


def _parsed(lines: list[str]) -> tuple[LogParser, list[LogEvent]]:
    parser = LogParser(offline=True)
    events = [ev for i, line in enumerate(lines)
              for ev in parser.parse_line(line, "s", i, 1_778_598_000.0 + i)]
    return parser, events


@pytest.mark.parametrize("value", UNREAD_PARTITIONS)
def test_a_timeline_line_whose_partition_does_not_read_is_no_event_but_counted(
        value: str) -> None:
    """The one rule, where a TIMELINE line becomes an event: a line that names a partition
    that does not read is no monolithic job's line (those name none, `kind=`, `monolithic`,
    `worker=W` alone), and which partition it is cannot be known: it gives no timeline event
    (an `unparsed` one, its raw text kept), counted `timeline_partition_unread` (the report's
    Input line as `log_timeline_partition_unread`, `parse`'s summary). Its partition was None,
    and every consumer took it for a monolithic job's."""
    parser, events = _parsed(_unread_partition_lines(value))
    timeline = [e for e in events if e.kind == "timeline"]
    assert all(e.job_id == "porep-1-1" and e.partition == 0 for e in timeline)
    assert len(timeline) == 6
    assert parser.counters["timeline_partition_unread"] == 6
    unparsed = [e for e in events if e.kind == "unparsed"]
    assert len(unparsed) == 6 and all(f"partition={value}" in e.raw for e in unparsed)
    # A monolithic job's lines name no partition: read as before.
    _, mono = _parsed(["TIMELINE,10,SYNTH_START,winpost-1-a,kind=winning-post",
                       "TIMELINE,20,GPU_QUEUE,winpost-1-a,monolithic",
                       "TIMELINE,30,GPU_PICKUP,winpost-1-a,worker=0",
                       "TIMELINE,40,GPU_END,winpost-1-a,worker=0,gpu_ms=10"])
    assert [e.kind for e in mono] == ["timeline"] * 4


def test_timeline_lines_whose_partition_does_not_read_are_counted_where_a_user_sees(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`parse` says them in its summary and prints them as `unparsed` (`--json`: their raw
    text); the report's Input line counts them (`log_timeline_partition_unread`)."""
    log = tmp_path / "cuzk.log"
    log.write_text("\n".join(_unread_partition_lines(BIG)) + "\n")
    assert main(["parse", "--json", str(log)]) == 0
    out, err = capsys.readouterr()
    rows = [msgspec.json.decode(line) for line in out.splitlines()]
    assert [r["kind"] for r in rows].count("unparsed") == 6
    assert "6 unparsed" in err
    assert "6 TIMELINE line(s) name a partition that does not read" in err
    assert main(["report", str(_recording(tmp_path)), "--log", str(log)]) == 0
    out, _ = capsys.readouterr()
    assert re.search(r"^Input: .*log_timeline_partition_unread 6", out, re.M), out


def test_a_partition_that_does_not_read_is_no_monolithic_row_of_the_partition_table() -> None:
    """`GPU_START,porep-1-2,worker=1,partition=99999999999999999999` / its GPU_END: the table
    made a monolithic row of them (keyed by worker: `porep-1-2  -  monolithic`, GPU time and
    all), a job cuzk proved in partitions."""
    from gapwatch.cuzk.partitions import derive_timeline

    for value in UNREAD_PARTITIONS:
        _, events = _parsed(_unread_partition_lines(value))
        run = derive_timeline(events)
        assert [(p.job_id, p.partition) for p in run.partitions] == [("porep-1-1", 0)], value


def test_a_partition_that_does_not_read_is_no_monolithic_job_in_flight_of_the_pipeline() -> None:
    """The pipeline's facts took a pickup naming worker 1 and a partition that does not read
    for a monolithic job's (`monolithic porep-1-2` in flight: the view's list, which a gap's
    prover cause reads), which no GPU_END of its ends."""
    from gapwatch.cuzk.pipeline import PipelineFacts

    for value in UNREAD_PARTITIONS:
        facts = PipelineFacts()
        for ev in _parsed(_unread_partition_lines(value)[:-1])[1]:  # no GPU_END read yet
            facts.feed(ev)
        assert facts.view().monolithic_in_flight == (), value


def test_a_partition_that_does_not_read_is_no_whole_job_a_gpu_worker_holds() -> None:
    """A gap's worker holds said `worker 1: job porep-1-2 since ...` (a whole job: a
    monolithic one) of a pickup naming a partition that does not read."""
    from gapwatch.cuzk.gpu_workers import WorkerHolds

    for value in UNREAD_PARTITIONS:
        holds = WorkerHolds()
        for ev in _parsed(_unread_partition_lines(value)[:-1])[1]:
            holds.feed(ev, 0)
        assert [h.what() for h in holds.open.values()] == [], value


def test_a_partition_that_does_not_read_leaves_a_post_alone_on_the_gpu() -> None:
    """A finalizer's failure line naming no job (engine.rs:977 via 3257) fails the one PoSt on
    the GPU. A PoRep partition's GPU_START whose partition does not read was taken for a
    second whole job there: none was alone, the WinningPoSt that failed was said late."""
    from gapwatch.cuzk.watch import CuzkWatch

    log = Path(__file__).parent / "data" / "cuzk-upstream" / "post-behind-partitions.log"
    lines = log.read_text().splitlines()
    at = next(i for i, x in enumerate(lines) if "GPU_START,winpost" in x)
    for value in UNREAD_PARTITIONS:
        text = [*lines[:at + 1], f"TIMELINE,13345,GPU_START,porep-1000-13,worker=1,"
                                 f"partition={value}",
                "2026-05-12T15:00:13.400000Z ERROR cuzk_core::engine: GPU proving failed "
                "error=GPU proving failed: Unsatisfiable",
                "2026-05-12T15:01:00.000000Z  INFO cuzk_core::engine: pinned pool checkout"]
        watch = CuzkWatch()
        said = [out for ev in _parsed(text)[1] for out in watch.feed(ev)] + watch.finish()
        verdicts = [e.proof.verdict for e in said if e.kind == "proof"
                    and e.job_id == "winpost-1000-0a1b2c3d" and e.proof is not None]
        assert verdicts == ["failed"], value


def test_user_rule_groups_beyond_64_bits_and_absurd_timestamps_are_said_not_raised() -> None:
    cfg = build_config({"logs": {"rules": [{
        "name": "r", "regex": r"^(?P<timestamp>\S+) w=(?P<worker>\S+) g=(?P<gpu>\S+) n=(?P<n>\S+)"
    }]}}).logs
    parser = LogParser(cfg)
    (e,) = parser.parse_line(f"1e300 w={BIG} g=9999 n={BIG}", "s", 1, 42.0)
    assert e.kind == "user:r" and (e.t_wall_s, e.time_source) == (42.0, "arrival")
    assert e.worker is None and e.gpu is None
    assert e.fields == {"n": BIG, "worker": BIG, "gpu": "9999"}
    assert parser.counters["bad_timestamp"] == 1
    msgspec.json.encode(e)


def test_parse_json_prints_events_with_huge_integers(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "big.log"
    log.write_text("2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: GPU_TIMING spawn_blocking"
                   f" prove_start worker_id=1 spawn_to_enter_ms={BIG}\nTIMELINE,5,GPU_START,j\n")
    assert main(["parse", "--json", str(log)]) == 0
    events = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["fields"].get("spawn_to_enter_ms") for e in events] == [BIG, None]


# -- trace CSVs ------------------------------------------------------------------------------

def _csv_with(tmp_path: Path, bad_rows: list[str], bom: bool = False) -> Path:
    lines = (DATA / "pageable.csv").read_text().splitlines()
    out = lines[:40] + bad_rows + lines[40:]
    path = tmp_path / "trace.csv"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + ("\n".join(out) + "\n").encode())
    return path


BAD_ROWS = [
    "1796029583.4,1e30,50.0,50,1000,1000,0.6,0.0",  # gpu 1e30
    "1796029583.4,-1,50.0,50,1000,1000,0.6,0.0",  # negative gpu
    "1796029583.4,0.5,50.0,50,1000,1000,0.6,0.0",  # fractional gpu
    "1e300,0,50.0,50,1000,1000,0.6,0.0",  # timestamp 1e300
    "nan,0,50.0,50,1000,1000,0.6,0.0",  # NaN timestamp
    "inf,0,50.0,50,1000,1000,0.6,0.0",  # infinite timestamp
]


def test_csv_rows_with_absurd_gpu_or_time_are_skipped_counted_and_said(tmp_path: Path) -> None:
    rec = read_any(_csv_with(tmp_path, BAD_ROWS))
    records = list(rec.records)
    assert rec.counters["bad_records"] == len(BAD_ROWS)
    assert any(":41:" in p and "gpu 1e+30 is not a GPU index" in p for p in rec.problems)
    assert any("timestamp_s 1e+300 is not a usable Unix time" in p for p in rec.problems)
    assert [g.index for g in rec.header.gpus] == [0]
    assert len([r for r in records if r.type == "gpu"]) == 351  # the rest is used
    assert all(r.t_wall_s <= MAX_WALL_S for r in records)  # type: ignore[union-attr]


@pytest.mark.parametrize("command", [
    ["report", "--json"], ["report"], ["export", "--format", "csv"],
    ["export", "--format", "perfetto"], ["replay", "--headless", "--speed", "0"],
])
def test_every_command_reads_a_csv_with_absurd_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str],
) -> None:
    path = _csv_with(tmp_path, BAD_ROWS)
    extra = ["--out", str(tmp_path / "out.x")] if command[0] == "export" else []
    assert main([command[0], str(path), *command[1:], *extra]) == 0
    captured = capsys.readouterr()
    if command == ["report", "--json"]:
        doc = msgspec.json.decode(captured.out)
        assert doc["counters"]["bad_records"] == len(BAD_ROWS)
        assert len(doc["gaps"]) == 5  # the same gaps as the clean trace
    elif command == ["report"]:
        assert "bad row (gpu 1e+30 is not a GPU index" in captured.out


def test_a_utf8_bom_does_not_hide_the_csv_header(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = _csv_with(tmp_path, [], bom=True)
    rec = read_any(path)
    assert sum(r.type == "gpu" for r in rec.records) == 351
    assert "bad_records" not in rec.counters
    assert main(["report", "--json", str(path)]) == 0
    assert len(msgspec.json.decode(capsys.readouterr().out)["gaps"]) == 5


def test_nan_and_inf_readings_in_a_csv_are_missing_readings(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("timestamp_s,gpu,sm_active_pct,pcie_rx_bytes_per_s\n"
                    "100.0,0,50,1e9\n100.1,0,nan,inf\n100.2,0,-inf,NaN\n")
    rec = read_any(path)
    samples = [r for r in rec.records if r.type == "gpu"]
    assert [(s.sm_active_pct, s.pcie_rx_bytes_per_s) for s in samples] == [
        (50.0, 1e9), (None, None), (None, None)]
    assert rec.counters == {}


# -- recordings ------------------------------------------------------------------------------

def _recording(tmp_path: Path, extra_lines: tuple[bytes, ...] = (),
               header: dict[str, object] | None = None, name: str = "r.jsonl") -> Path:
    path = tmp_path / name
    lines = sim_recording_bytes(seed=2, duration_s=60.0).splitlines(keepends=True)
    if header is not None:
        doc = msgspec.json.decode(lines[0])
        doc.update(header)
        # A 100-bit integer put in as text (the header's GPU index).
        lines[0] = msgspec.json.encode(doc).replace(b'"__BIG__"', b"1" + b"0" * 30) + b"\n"
    lines[100:100] = list(extra_lines)
    path.write_bytes(b"".join(lines))
    return path


GPU_LINE = (b'{"gpu":%s,"t_mono_ns":%s,"t_wall_s":%s,"interval_ns":100000000,'
            b'"sm_active_pct":50.0,"gpu_util_pct":50.0,"pcie_rx_bytes_per_s":1.0,'
            b'"pcie_tx_bytes_per_s":1.0,"sm_source":"sim","pcie_source":"sim",'
            b'"pcie_lower_bound":false,"lateness_ns":0,"type":"gpu"}\n')
BAD_RECORDS = (
    GPU_LINE % (b"1" + b"0" * 30, b"1000", b"1796000001.0"),  # gpu 1e30
    GPU_LINE % (b"4096", b"1000", b"1796000001.0"),  # gpu beyond any box
    GPU_LINE % (b"0", b"1000", b"1e300"),  # timestamp 1e300
    GPU_LINE % (b"0", b"1" + b"0" * 30, b"1796000001.0"),  # mono beyond 64 bits
    b'{"t_wall_s":1.0,"time_source":"line","kind":"x","name":"n","raw":"r","gpu":99999,'
    b'"type":"log"}\n',
)


@pytest.mark.parametrize("command", [
    ["report", "--json"], ["export", "--format", "csv"], ["export", "--format", "perfetto"],
    ["replay", "--headless", "--speed", "0"],
])
def test_recorded_records_with_absurd_numbers_are_bad_records_and_the_rest_is_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str],
) -> None:
    path = _recording(tmp_path, BAD_RECORDS)
    rec = read_any(path)
    list(rec.records)
    assert rec.counters["bad_records"] == len(BAD_RECORDS)
    extra = ["--out", str(tmp_path / "out.x")] if command[0] == "export" else []
    assert main([command[0], str(path), *command[1:], *extra]) == 0
    if command[0] == "report":
        doc = msgspec.json.decode(capsys.readouterr().out)
        assert doc["counters"]["bad_records"] == len(BAD_RECORDS) and doc["gaps"]


def test_a_recorded_log_field_beyond_64_bits_reads_as_a_float_that_can_be_written(
    tmp_path: Path,
) -> None:
    line = (b'{"t_wall_s":1.0,"time_source":"line","kind":"x","name":"n","raw":"r",'
            b'"fields":{"a":' + BIG.encode() + b'},"type":"log"}\n')
    rec = read_any(_recording(tmp_path, (line,)))
    (event,) = [r for r in rec.records if r.type == "log"]
    assert event.fields["a"] == float(BIG)
    msgspec.json.encode(event)


@pytest.mark.parametrize("period", [0, -100, 1e300])
def test_a_header_period_that_is_not_a_period_is_replaced_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], period: float,
) -> None:
    path = _recording(tmp_path, header={"period_ms": period})
    clean = _recording(tmp_path, name="clean.jsonl")
    rec = read_any(path)
    assert rec.header.period_ms == 100.0
    assert rec.counters["bad_header"] == 1
    assert "is not a sampling period; using 100 ms" in rec.problems[0]
    assert main(["report", "--json", str(path)]) == 0
    doc = msgspec.json.decode(capsys.readouterr().out)
    assert main(["report", "--json", str(clean)]) == 0
    assert doc["gaps"] == msgspec.json.decode(capsys.readouterr().out)["gaps"]  # the data is all used
    assert all(g["active_s"] > 0 for g in doc["gpus"])
    assert main(["replay", "--headless", "--speed", "0", str(path)]) == 0
    assert "pcie_starved" in capsys.readouterr().err


@pytest.mark.parametrize("key", HEADER_WALL_TIMES)
@pytest.mark.parametrize("t_wall_s", [-1.0, 1e300])
def test_a_header_wall_time_that_is_no_time_is_said_and_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, t_wall_s: float,
) -> None:
    """A snapshot's `snapshot_wall_s` of 1e300 was an `OverflowError` traceback in `report`
    (its "taken at" line); -1 was reported as "taken at 23:59:59.000". Every wall time of the
    header is checked alike: said (`bad_header`), ignored, the records all used."""
    path = _recording(tmp_path, header={key: t_wall_s})
    rec = read_any(path)
    assert rec.counters["bad_header"] == 1
    assert f"header {key} {t_wall_s:g} is not a usable time; ignored" in rec.problems[0]
    assert getattr(rec.header, key) in (0.0, None)
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "taken at" not in out and f"header {key}" in out


def test_every_wall_time_of_a_header_is_checked() -> None:
    """A header field that is a Unix time (`*_wall_s`) and not in `HEADER_WALL_TIMES` would be
    read unchecked, as `snapshot_wall_s` was."""
    assert set(HEADER_WALL_TIMES) == {f for f in SessionHeader.__struct_fields__
                                      if f.endswith("_wall_s")}


def test_a_header_gpu_entry_with_an_absurd_index_is_dropped_and_said(tmp_path: Path) -> None:
    sim = simulate("chained", seed=1, duration_s=1)
    gpus = [msgspec.to_builtins(g) for g in sim.header.gpus] + [{"index": "__BIG__"}]
    rec = read_any(_recording(tmp_path, header={"gpus": gpus}))
    assert [g.index for g in rec.header.gpus] == [0]
    assert any("GPU index 1e+30 is not a GPU" in p for p in rec.problems)


def test_a_prover_status_with_numbers_beyond_64_bits_keeps_the_rest() -> None:
    from gapwatch.cuzk.status import parse_status

    body = (b'{"uptime_secs": 1e999, "synthesis": {"active": ' + BIG.encode() + b', '
            b'"max_concurrent": 4}, "gpu_workers": [{"worker_id": 0, "gpu_ordinal": 4096, '
            b'"state": "idle"}, {"worker_id": 1, "gpu_ordinal": 1, "state": "idle"}], '
            b'"counters": {"total_completed": 7}}')
    counters: dict[str, int] = {}
    status = parse_status(body, "cuzk", 1, 1_796_000_000.0, 1.0, counters)
    msgspec.json.encode(status)  # recordable
    assert status.synthesis_active is None and status.synthesis_max == 4
    assert [w.gpu for w in status.workers] == [None, 1]
    assert status.uptime_s is None and status.completed_total == 7
    # The count beyond 64 bits, the GPU 4096 and the uptime that overflows a float.
    assert counters["dropped_fields"] == 3


def test_srs_sizes_that_sum_past_64_bits_are_no_total_and_the_snapshot_reads_back() -> None:
    """Three SRS entries of 2^63-1 bytes each (every one a `u64` cuzk can send) summed to
    2.8e19: the poller recorded that total, which the recording's own reader refuses (a count
    fits 64 bits), so each snapshot of the run, and every `prover_same` after it, was a bad
    record offline: `report` read no /status at all (13 of 13 polls lost, nothing said live)."""
    from gapwatch.core.codec import decode_record, encode_line
    from gapwatch.cuzk.status import parse_status

    most = 2**63 - 1
    srs = ", ".join(f'{{"circuit_id": "c{i}", "bytes": {most}}}' for i in range(3))
    body = ('{"uptime_secs": 5, "allocations": {"srs": [' + srs + "]}}").encode()
    counters: dict[str, int] = {}
    status = parse_status(body, "cuzk", 1, 1_796_000_000.0, 1.0, counters)
    assert decode_record(encode_line(status)) == status  # the recording reads it back
    assert status.srs_bytes is None and status.srs_circuits == ["c0", "c1", "c2"]
    assert status.uptime_s == 5.0
    assert counters["dropped_fields"] == 1  # the total, no size a box's SRS can have
    # Sizes that sum within 64 bits are summed as before.
    fits = parse_status(b'{"allocations": {"srs": [{"bytes": 47000000000}, {"bytes": 5}]}}',
                        "cuzk", 1, 1_796_000_000.0, 1.0)
    assert fits.srs_bytes == 47_000_000_005


def _copy_line(start: float, nbytes: int) -> bytes:
    return (b'{"start_wall_s":%.3f,"end_wall_s":%.3f,"bytes":%d,"direction":"h2d",'
            b'"src_kind":"pageable","dst_kind":"device","gpu":0,"cuda_device":0,"stream_id":13,'
            b'"context_id":1,"correlation_id":1,"pid":42,"type":"copy"}\n'
            % (1_796_000_000 + start, 1_796_000_000 + start + 0.5, nbytes))


def test_recorded_copies_beyond_any_copy_size_are_bad_records_and_report_json_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # Two copies of 2**62 bytes in one gap summed beyond 64 bits: `report --json` crashed.
    copies = tuple(_copy_line(t, 2**62) for t in (30.0, 30.5, 40.0, 40.5, 50.0))
    path = _recording(tmp_path, (*copies, _copy_line(31.0, 1 << 30)))
    assert main(["report", "--json", str(path)]) == 0
    doc = msgspec.json.decode(capsys.readouterr().out)
    assert doc["counters"]["bad_records"] == len(copies) and doc["gaps"]


def _with_raw_header(tmp_path: Path, config_json: str, name: str = "r.jsonl",
                     **fields: str) -> Path:
    """A recording whose header holds raw JSON text (numbers no JSON writer writes: 1e999)."""
    path = _recording(tmp_path, name=name)
    lines = path.read_bytes().splitlines(keepends=True)
    head = lines[0].decode()
    head = head.replace('"config":{"seed":2}', f'"config":{config_json}')
    for key, raw in fields.items():
        head = re.sub(rf'"{key}":[^,}}]+', f'"{key}":{raw}', head)
    lines[0] = head.encode()
    path.write_bytes(b"".join(lines))
    return path


def test_a_recording_whose_header_holds_1e999_still_reports_its_gaps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # Every command refused the whole file ("not a gapwatch recording").
    clean = _recording(tmp_path, name="clean.jsonl")
    path = _with_raw_header(tmp_path, '{"seed":2,"detector":{"min_gap_ms":1e999}}')
    rec = read_any(path)
    assert rec.header.config["detector"]["min_gap_ms"] == 300.0  # the key's default
    assert rec.counters["bad_header"] == 1 and "min_gap_ms is inf" in rec.problems[0]
    assert main(["report", "--json", str(path)]) == 0
    doc = msgspec.json.decode(capsys.readouterr().out)
    assert main(["report", "--json", str(clean)]) == 0
    assert doc["gaps"] and doc["gaps"] == msgspec.json.decode(capsys.readouterr().out)["gaps"]


@pytest.mark.parametrize("fields,said", [
    ({"period_ms": "1e999"}, "period_ms is inf"),
    ({"started_wall_s": "-1e999"}, "started_wall_s is -inf"),
    ({"host": "17"}, "header host cannot be read"),
    ({"link_gen": '"five"'}, "GPU entry 0 cannot be read"),
])
def test_a_header_value_that_cannot_be_read_falls_back_and_the_records_are_kept(
    tmp_path: Path, fields: dict[str, str], said: str,
) -> None:
    path = _with_raw_header(tmp_path, '{"seed":2}', **fields)
    rec = read_any(path)
    assert any(said in p for p in rec.problems), rec.problems
    assert sum(r.type == "gpu" for r in rec.records) == 600


def test_csv_numbers_are_ascii_decimals_not_full_width_digits_or_underscores(
    tmp_path: Path,
) -> None:
    rows = [
        "1796029583.4,\uff11,50.0,50,1000,1000,0.6,0.0",  # a full-width 1: it became GPU 1
        "1796029583.4,\u0661,50.0,50,1000,1000,0.6,0.0",  # an Arabic-Indic 1
        "1796029583.4,0,1_0.0,50,1000,1000,0.6,0.0",  # an underscore: it was 10.0
        "1_796_029_583.4,0,50.0,50,1000,1000,0.6,0.0",
    ]
    rec = read_any(_csv_with(tmp_path, rows))
    records = list(rec.records)
    assert rec.counters["bad_records"] == len(rows)
    assert [g.index for g in rec.header.gpus] == [0]
    assert len([r for r in records if r.type == "gpu"]) == 351
    assert any("'\uff11' is not a number" in p for p in rec.problems)


def test_a_recorded_gpu_error_with_a_negative_count_or_code_is_a_bad_record(
    tmp_path: Path,
) -> None:
    """`count: -5` was read as "-5 uncorrected ECC errors" in the report and summed into the
    store's GPU error counts (`gapwatch_gpu_hardware_events_total` on a replay with
    `--prometheus`: a counter going down); an XID code of -2^63 was shown as such. NVML's
    are unsigned."""
    lines = tuple(
        b'{"gpu":0,"t_mono_ns":1000,"t_wall_s":1796000001.0,"kind":"%s",%s"type":"hw_event"}\n'
        % (kind, extra) for kind, extra in (
            (b"ecc_uncorrected", b'"count":-5,'), (b"xid", b'"code":-9223372036854775808,'),
            (b"pcie_replay", b'"count":-1,')))
    rec = read_any(_recording(tmp_path, lines))
    records = list(rec.records)
    assert rec.counters["bad_records"] == 3
    # None reaches the store's counts, the report's GPU errors or /metrics.
    assert not [r for r in records if r.type == "hw_event"]


def _gpu_worker_error(partition: str) -> str:
    """An ERROR in a GPU worker's span, its partition the Debug of cuzk's `Option<usize>`
    (engine.rs:3005-3012, 3057)."""
    return ("2026-05-12T14:14:02.010377Z ERROR gpu_worker{worker_id=1 gpu=0 "
            f"job_id=porep-1-2 proof_kind=porep-c2 batch_size=1 partition={partition}}}: "
            "cuzk_core::engine: GPU proving failed")


@pytest.mark.parametrize("value", [f"Some({BIG})", "-1", "abc", "Some(-3)", "true"])
def test_a_tracing_line_whose_partition_does_not_read_is_no_event_but_counted(
        value: str) -> None:
    """`tracing_partition_of`, the TIMELINE rule's for cuzk's tracing fields: an ERROR in a
    partition's GPU worker span whose partition does not read had partition None, and the
    pipeline's facts took it for a monolithic job's failure (`PipelineFacts._tracing` ends a
    monolithic job on any ERROR naming no partition). No event, counted; `partition=None` (a
    monolithic job's span) and `Some(3)` are read as before."""
    parser, events = _parsed([_gpu_worker_error(value)])
    assert [e.kind for e in events] == ["unparsed"]
    assert parser.counters["tracing_partition_unread"] == 1
    _, read = _parsed([_gpu_worker_error("None"), _gpu_worker_error("Some(3)")])
    assert [(e.kind, e.partition) for e in read] == [("tracing", None), ("tracing", 3)]


def test_parse_says_the_tracing_lines_whose_partition_does_not_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "cuzk.log"
    log.write_text("\n".join(_unread_partition_lines(BIG)
                             + [_gpu_worker_error(f"Some({BIG})"), _gpu_worker_error("Some(1)")])
                   + "\n")
    assert main(["parse", str(log)]) == 0
    _, err = capsys.readouterr()
    assert ("(6 TIMELINE line(s) and 1 tracing line(s) name a partition that does not read: "
            "no event of them)") in err
