"""docs/export.md names every metric family the exporter serves, each by its whole name: the
pinned pool's `gapwatch_cuzk_pinned_pool_buffers` and `..._free_buffers` were written as
`..._buffers` beside `..._bytes`, and three of the process collector's families hid behind
"...": served, and nowhere a reader could grep for them. No test compared the two.

The names served are those of a session that has seen every kind of record
(`test_export_deploy._served_names`) and the prover's pinned-pool lines (their families
exist only once the log says)."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from test_export_deploy import _served_names

from evaluation.simulate import simulate
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.logs.parse import LogParser
from gapwatch.sinks.prometheus import start_exporter

DOC = Path(__file__).resolve().parent.parent / "docs" / "export.md"
NAME = re.compile(r"\bgapwatch_[a-z0-9_]*[a-z0-9]")
#: What prometheus-client adds to a family's name in its samples.
_SUFFIX = re.compile(r"_(bucket|count|sum|created|total)$")

#: curio e0294b0f pinned_pool.rs:212 and pipeline.rs:302 (their format strings), as
#: tests/test_cuzk_status_session.py feeds them.
POOL_LINES = (
    "2026-05-12T14:13:32.351090Z  INFO synthesize_partition{job_id=\"porep-1\" partition=3}: "
    "cuzk_core::pinned_pool: pinned pool: allocated new buffer size_gib=3.882612854242325 "
    "total_buffers=3 total_gib=11.647838562726974",
    "2026-05-12T14:13:33.351090Z  WARN synthesize_partition{job_id=\"porep-1\" partition=4}: "
    "cuzk_core::pipeline: pinned pool checkout FAILED \u2014 falling back to unpinned "
    "num_constraints=130278869 pool_free=0 pool_total_gib=11.647838562726974",
)


def _pool_names() -> set[str]:
    res = simulate("chained", duration_s=1)
    session = Session(res.header, SeriesStore(list(res.header.gpus), 0.1))
    parser = LogParser()
    for line in POOL_LINES:
        for ev in parser.parse_line(line, "stdout"):
            session.on_record(ev)
    handle = start_exporter("127.0.0.1:0", session)
    try:
        with urllib.request.urlopen(handle.url, timeout=5) as resp:
            text = resp.read().decode()
    finally:
        handle.stop()
    return {s.name for fam in text_string_to_metric_families(text) for s in fam.samples}


def _family(sample: str) -> str:
    return _SUFFIX.sub("", sample)


def test_every_family_served_is_named_whole_in_export_md() -> None:
    served = _served_names() | _pool_names()
    assert "gapwatch_cuzk_pinned_pool_free_buffers" in served  # the pool lines were read
    documented = {_family(n) for n in NAME.findall(DOC.read_text())}
    missing = sorted({_family(s) for s in served if s.startswith("gapwatch_")} - documented)
    assert missing == []
