"""Prover log lines parsed for tests: whole files into one time-sorted list, for tests that
compare against it (gapwatch itself spools them: `gapwatch.offline.report.spool_logs`), and a
few lines in order, as one parser reads them (`events_of_lines`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

from gapwatch.config import Config
from gapwatch.core.evidence_types import EventEvidence, HostEvidence
from gapwatch.core.models import Gap, LogEvent, ProverEvent
from gapwatch.cuzk.pipeline import PipelineFacts
from gapwatch.cuzk.prover import CuzkGap
from gapwatch.cuzk.watch import CuzkWatch
from gapwatch.logs.files import log_file_events
from gapwatch.logs.parse import LogParser


def parse_log_files(paths: Iterable[str], config: Config,
                    timeline_epoch_s: float | None = None
                    ) -> tuple[list[LogEvent], dict[str, int]]:
    """The events of `paths` sorted by time (equal times in the order parsed) and the parser's
    counters, as `log_file_events` gives them. Raises OSError."""
    counters: dict[str, int] = {}
    events = sorted(log_file_events(paths, config, timeline_epoch_s, counters),
                    key=lambda e: e.t_wall_s)
    return events, counters


def events_of_lines(lines: Iterable[str]) -> list[LogEvent]:
    """The events of cuzk's `lines` in order, read by one parser: TIMELINE lines from stderr
    (engine.rs:352), every other line from stdout, as the daemon writes them."""
    parser = LogParser()
    return [ev for text in lines
            for ev in parser.parse_line(text, "stderr" if text.startswith("TIMELINE") else "stdout")]


class _Fed(Protocol):
    def feed(self, ev: LogEvent) -> object: ...


F = TypeVar("F", bound=_Fed)


def fed(consumer: F, lines: Iterable[str]) -> F:
    """`consumer` (a tracker of cuzk's lines: `PostTracker`, `PipelineFacts`, ...) fed the
    events of `lines` (`events_of_lines`), returned for the test to read."""
    for ev in events_of_lines(lines):
        consumer.feed(ev)
    return consumer


def watched_events(events: Iterable[LogEvent]) -> list[ProverEvent]:
    """What one `CuzkWatch` says of `events`, fed in order, and at their end."""
    watch = CuzkWatch()
    out: list[ProverEvent] = []
    for e in events:
        out += watch.feed(e)
    return out + watch.finish()


def offline_events(lines: Iterable[str]) -> list[LogEvent]:
    """The events of `lines`, all of one stream, as a report's offline parser reads a file (the
    line's number its arrival), with the panic still being read at the end."""
    parser = LogParser(offline=True)
    out: list[LogEvent] = []
    for i, text in enumerate(lines):
        out += parser.parse_line(text, "stdout", i, 0.0)
    return out + parser.flush()


def offline_facts(lines: Iterable[str]) -> PipelineFacts:
    """A `PipelineFacts` fed `offline_events(lines)`."""
    facts = PipelineFacts()
    for e in offline_events(lines):
        facts.feed(e)
    return facts


def starved_gap(facts: PipelineFacts, start_s: float, lookback_s: float = 120.0) -> Gap:
    """A 2 s pcie_starved gap of GPU 0 at `start_s` (a pinned-pool fallback among its events),
    with what cuzk's prover gives it from `facts` (its evidence reaching `lookback_s` back)."""
    view = CuzkGap(0, start_s, facts).view(start_s + 2.0, start_s, "pcie_starved",
                                           start_s - lookback_s)
    return Gap(gap_id=1, gpu=0, kind="pcie_starved", start_mono_ns=0, start_s=start_s,
               end_mono_ns=2 * 10**9, end_s=start_s + 2.0, duration_s=2.0,
               pcie_rx_bytes_per_s=2e9, pcie_tx_bytes_per_s=1e6, link_bytes_per_s=63e9,
               host=HostEvidence(),
               log_events=[EventEvidence(0.0, "", partition=3, warning="pinned_pool_fallback")],
               prover_cause=view.cause, prover_evidence=view.evidence,
               prover_facts=view.facts)
