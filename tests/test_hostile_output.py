"""Hostile text from outside (a prover log, a hand-written recording) in what gapwatch prints or
exports: JSON documents, /metrics, stderr lines, the partition table, the Perfetto trace. It is
shown, never obeyed, never adds a line or a series, and is cut to the sizes of
`gapwatch.core.sizes` (see docs/bad-input.md)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from session_fakes import NoDetector, metrics_body
from ui_fakes import header, log_event

from gapwatch.cli import main
from gapwatch.core.models import GpuInfo, LogEvent, ProcessMemory, SessionHeader
from gapwatch.core.sizes import TEXT_CHARS
from gapwatch.engine.console import Console
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.offline.perfetto import TraceBuilder

HOSTILE = Path(__file__).parent / "data" / "hostile"
#: A one-byte CSI (C1), a right-to-left override, an isolate: what JSON lets through raw.
C1_BIDI = "\u009b2J\u202eevil\u2066"
OSC_CLIPBOARD = "\x1b]52;c;ZXZpbA==\x07"
#: A line that would pass for gapwatch's own, were a newline obeyed.
FORGED = "\ngapwatch record: stopped; 0 records in /dev/null; gaps: none\n"


def _raw_controls(text: str) -> set[str]:
    """The characters in `text` a terminal would act on (newline and tab aside)."""
    return {c for c in text if (ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0
            or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"}


def _recording(tmp_path: Path, host: str, notice: str | None = None) -> Path:
    """A short simulated recording whose header names `host` (and its GPU `GPU` + `host`),
    with a notice saying `notice` after the header: a hand-edited file."""
    rec = tmp_path / "r.jsonl"
    assert main(["record", "--source", "sim:pageable", "--speed", "0", "--duration", "5",
                 "--quiet", "--out", str(rec)]) == 0
    lines = rec.read_text().splitlines()
    head = json.loads(lines[0])
    head["host"] = host
    head["gpus"][0]["name"] = "GPU" + host
    lines[0] = json.dumps(head)
    if notice is not None:
        first = json.loads(lines[1])
        lines.insert(1, json.dumps({"type": "notice", "t_mono_ns": first["t_mono_ns"],
                                    "t_wall_s": first["t_wall_s"], "level": "warning",
                                    "message": notice}))
    rec.write_text("\n".join(lines) + "\n")
    return rec


def test_a_host_name_with_a_c1_csi_and_a_bidi_override_reaches_no_terminal_through_report_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`report --json` (and every JSON output: `export --out -`) passed U+009B and U+202E from
    a recording's header to the terminal raw; `parse --json` alone escaped them."""
    host = f"box{C1_BIDI}"
    rec = _recording(tmp_path, host)
    capsys.readouterr()
    assert main(["report", str(rec), "--json"]) == 0
    out = capsys.readouterr().out
    assert not _raw_controls(out)
    doc = json.loads(out)  # the same document, holding the same text
    assert doc["host"] == host and doc["gpus"][0]["name"] == "GPU" + host
    trace = tmp_path / "t.json"
    assert main(["export", str(rec), "--out", str(trace)]) == 0
    assert not _raw_controls(trace.read_text())
    json.loads(trace.read_text())


def test_a_notice_holding_a_newline_forges_no_line_on_stderr(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A recorded notice (or a copy-trace NOTE, a log path) holding a newline started a line of
    its own on stderr: a forged closing line. Each `say` is one line."""
    rec = _recording(tmp_path, "box", notice=f"bad{FORGED}{OSC_CLIPBOARD}")
    capsys.readouterr()
    assert main(["replay", "--headless", str(rec)]) == 0
    err = capsys.readouterr().err
    assert not any(line.startswith("gapwatch record:") for line in err.splitlines()), err
    assert "bad\\x0agapwatch record: stopped" in err and not _raw_controls(err)
    stream = io.StringIO()
    assert Console(stream).say(f"warning: {FORGED}", "second")
    assert stream.getvalue().count("\n") == 2


def test_a_gpu_or_process_name_with_cr_and_osc_52_adds_no_line_to_metrics() -> None:
    """Label values went out with only backslash, quote and LF escaped: a CR (a new line to any
    reader splitting on it, Python's text mode among them) and OSC 52 (obeyed by the terminal
    of `curl /metrics`) went out raw, and a 1 MB name whole on every scrape."""
    name = f"H200\rgapwatch_gaps_total{{gpu=\"0\",kind=\"pcie_starved\"}} 1e9\r{OSC_CLIPBOARD}"
    head = SessionHeader(gapwatch_version="test", host="box", source="sim",
                         started_wall_s=1000.0, started_mono_ns=0, period_ms=100.0,
                         gpus=[GpuInfo(index=0, name=name, link_bytes_per_s=63.0e9)])

    session = Session(head, SeriesStore(head.gpus, 0.1), NoDetector())  # type: ignore[arg-type]
    session.on_record(ProcessMemory(1, 1000.0, 0, 4242, "x" * 1_000_000, 1 << 30, 1 << 30))
    body = metrics_body(session)
    assert "\r" not in body and not _raw_controls(body)
    assert "H200\\\\x0dgapwatch_gaps_total" in body  # written out, inside the label
    assert not any(line.endswith(" 1e9") for line in body.splitlines())  # no forged series
    assert max(map(len, body.splitlines())) < 2 * TEXT_CHARS


def test_a_16_kib_job_id_is_cut_in_the_partition_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The timeline kept job ids as the rules read them (up to 16 KiB): every partition row of
    `parse --timeline` and the report was as wide; they are cut as the detector's are."""
    job = "J" * 1_000_000
    log = tmp_path / "big-job.log"
    log.write_text("\n".join([
        "2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: starting cuzk engine",
        *(f"TIMELINE,{10 + 2000 * p},SYNTH_START,{job},partition={p}" for p in range(3)),
        *(f"TIMELINE,{900 + 2000 * p},SYNTH_END,{job},partition={p},synth_ms=890"
          for p in range(3)),
        *(f"TIMELINE,{901 + 2000 * p},GPU_START,{job},partition={p},worker=0" for p in range(3)),
        *(f"TIMELINE,{1800 + 2000 * p},GPU_END,{job},partition={p},worker=0" for p in range(3)),
    ]) + "\n")
    assert main(["parse", "--timeline", str(log)]) == 0
    out = capsys.readouterr().out
    assert "JJJJ… [cut" in out
    assert max(map(len, out.splitlines())) < 2 * TEXT_CHARS


def test_a_megabyte_warning_line_and_job_id_are_cut_in_the_perfetto_trace() -> None:
    """The trace took log events whole: a recorded 1 MiB line with a warning went into its
    instant's args, a long job id into every slice; cut as the detector's copy is."""
    builder = TraceBuilder(header())
    ev: LogEvent = log_event(1.0, "W" * 1_000_000, "unpinned")
    builder.add(ev)
    out = io.BytesIO()
    builder.write(out)
    trace = json.loads(out.getvalue())
    assert max(len(json.dumps(e)) for e in trace["traceEvents"]) < 8 * 1024
