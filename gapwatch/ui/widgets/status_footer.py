"""StatusFooter: what needs the user's attention (a log that cannot be read, the source ended, the
last snapshot), the machinery's own state (sampler period and lateness, signal source per GPU,
log following, recording, exporter), and the keys.

Who drives it: `GapwatchApp` calls `show_status(status)` about once a second (the runtime's
status is not part of the store's version) and `show_message(text, error)` after a snapshot.
`status_parts` is shared with the snapshot's summary.md.

Two lines, built for 80 columns:
- line 1: alerts first (`status_alerts`: a followed log that is missing or unreadable, the source
  ended), then the last message (snapshot written or failed), then as many status phrases as fit;
  whole phrases only (`ui.fit`); a replay's position (`replay 09:07:12 (+0:51) paused`) is kept
  and shown before a message that is not an error (a snapshot's path), playing or paused: it
  is what the replay keys move;
- line 2: the keys, `? help` and `q quit` first, so they are on screen whatever else is.
"""

from __future__ import annotations

import os

from rich.text import Text

from gapwatch.core.fmt import visible
from gapwatch.core.prover_watch import running_words
from gapwatch.engine.status import RuntimeStatus
from gapwatch.engine.summary import links_down_text
from gapwatch.ui.fit import fit_indices
from gapwatch.ui.widgets.text_lines import TextLines

_SOURCE_NAME = {"gpm": "GPM", "counters": "counters", "legacy": "legacy", "util": "util only",
                "sim": "sim", "trace": "trace", "none": "none"}

KEYS = "? help  q quit  s snapshot  p pause  g GPU  w window  d detail  t procs"

#: Proofs in flight said by name on the footer (the rest counted).
MAX_RUNNING_SAID = 3

#: Log states that are not a problem (the file is being read, was read whole by `replay --log`,
#: or stdin ended as it should).
_LOG_OK = ("following", "closed (end of input)", "read whole")


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def status_parts(status: RuntimeStatus) -> list[str]:
    """Short phrases describing the runtime, in the footer's order."""
    parts = [f"source {status.source}"]
    if status.replay:  # where the replay is, first: ←/→ [ ] Home End move it
        parts.insert(0, status.replay)
    # Proofs in flight on time so far, before the machinery (at risk: `status_alerts`; late:
    # their event's alert).
    calm = [r for r in status.running_proofs if r.timing.verdict not in ("at_risk", "late")]
    said = [running_words(r) for r in calm[:MAX_RUNNING_SAID]]
    if len(calm) > MAX_RUNNING_SAID:
        said.append(f"+{len(calm) - MAX_RUNNING_SAID} more proofs running")
    at = 1 if status.replay else 0
    parts[at:at] = said
    if status.sim_status_url:
        # Where to point `--cuzk-status` to try it: on the dashboard, not on stderr behind it.
        parts.append(f"sim /status at {status.sim_status_url}")
    late = status.lateness
    if late is not None:
        parts.append(
            f"sampler {status.period_ms:g} ms, late p50 {_ms(late.p50_ms)} p99 {_ms(late.p99_ms)}"
            f" max {_ms(late.max_ms)} ms"
            + (f", {late.skipped_ticks} skipped" if late.skipped_ticks else "")
        )
    else:
        parts.append(f"period {status.period_ms:g} ms (replayed)")
    parts.append(" ".join(f"GPU{i} {_SOURCE_NAME.get(s, s)}"
                          for i, s in sorted(status.gpu_sources.items())))
    if status.logs:
        parts.append(", ".join(f"log {os.path.basename(p)} {state}"
                               for p, state in status.logs.items()))
        unparsed = status.log_counters.get("unparsed", 0)
        if unparsed:
            parts.append(f"{unparsed} unparsed lines")
    else:
        parts.append("no log followed")
    ct = status.copytrace
    if ct is not None:
        parts.append(ct.summary())
    for p in status.provers:
        failed = sum(p.errors.values())
        if p.state == "ok":
            took = "" if p.last_latency_ms is None else f" {p.last_latency_ms:.0f} ms"
            parts.append(f"/status {p.prover} ok{took}" + (f", {failed} failed" if failed else ""))
        else:
            parts.append(f"/status {p.prover} {p.state.replace('_', ' ')} ({failed} failed)")
    # The GPU lines' "% of link" is of the maximum: say so where a link trained below it.
    links_down = links_down_text(status.links)
    if links_down:
        parts.append(links_down)
    if status.recording_path:
        parts.append(f"rec {status.recording_path}")
    if status.prometheus_address:
        parts.append(f"metrics {status.prometheus_address}")
    if status.blind:
        parts.append(status.blind)
    if status.done:
        parts.append("source ended")
    return parts


def status_alerts(status: RuntimeStatus) -> list[str]:
    """What the user must not miss, in words: a thread of gapwatch's that died, a recording that
    is not being written, a PoSt in flight past its at-risk share, a recent GPU error (XID,
    uncorrected ECC, GPU lost), the prover's worst recent
    warning or error (a late PoSt, a restart, an error), logs that are not being read, the
    source ended."""
    alerts: list[str] = []
    dead = status.dead_threads_text()
    if dead:
        alerts.append(f"THREAD DIED: {dead}")
    if status.blind_recent:
        # A blank in the charts with its reason: gapwatch did not hang, NVML did not answer.
        alerts.append(status.blind_recent)
    # A PoSt running past its at-risk share: an operator has until its deadline to look. One
    # still running past its deadline is said by its own event while that is the prover's
    # alert (`prover_alert`: "still running ... LATE"), not twice on the one line; else by
    # its running line: the event is the alert for 5 minutes of data, and a WindowPoSt, or a
    # WinningPoSt stuck, still running late after that was said nowhere on the footer.
    alert_job = status.prover_alert_job_id if status.prover_alert else None
    urgent = [r for r in status.running_proofs if r.timing.verdict == "at_risk"
              or (r.timing.verdict == "late" and r.job_id != alert_job)]
    alerts += [running_words(r) for r in urgent[:MAX_RUNNING_SAID]]
    if status.gpu_error_alert:
        # An XID, uncorrected ECC errors, a GPU lost: the work on it may be lost or wrong.
        alerts.append(status.gpu_error_alert)
    if status.prover_alert:
        # A late PoSt, a restart, an error, a lost GPU job: stays while recent.
        alerts.append(status.prover_alert)
    rec = status.recording
    if rec is not None and rec.state == "failing":
        lost = f", {rec.records_dropped} records lost" if rec.records_dropped else ""
        alerts.append(f"RECORDING FAILING: {rec.error or 'write error'} "
                      f"({rec.records_pending} waiting{lost}; retrying)")
    alerts += [f"log {path}: {state}" for path, state in status.logs.items()
               if not state.startswith(_LOG_OK)]
    if status.done:
        alerts.append("source ended")
    return alerts


class StatusFooter(TextLines):
    """Two lines: alerts, message and status; then the keys."""

    COMPONENT_CLASSES = {"status-footer--keys", "status-footer--ok", "status-footer--error",
                         "status-footer--alert"}

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._parts: list[str] = ["starting…"]
        #: Where a replay is (`RuntimeStatus.replay`), one of `_parts`; None: a live source.
        self._replay: str | None = None
        self._alerts: list[str] = []
        self._message = ""
        self._message_error = False

    def show_status(self, status: RuntimeStatus) -> None:
        parts = status_parts(status)
        alerts = status_alerts(status)
        if parts != self._parts or alerts != self._alerts:
            self._parts = parts
            self._replay = status.replay
            self._alerts = alerts
            self.set_rows(self.build_rows())  # the keys' line stays as it is

    def show_message(self, message: str, *, error: bool = False) -> None:
        self._message = message
        self._message_error = error
        self.set_rows(self.build_rows())

    def build_rows(self) -> list[Text]:
        style = self.component_style
        width = self.size.width or 80
        # (priority, text, style class) in display order.
        items: list[tuple[int, str, str]] = [(0, a, "status-footer--alert") for a in self._alerts]
        kind = "status-footer--error" if self._message_error else "status-footer--ok"
        if self._message and self._message_error:
            # Why a key could not (`the replay has ended`) before all but the alerts.
            items.append((1, self._message, kind))
        # A replay's position before a message that is not an error, shown and kept (a
        # snapshot's path took its place at 80 columns once `paused` made it 3 cells longer:
        # a paused replay said nowhere where it was; playing, the path came first): where
        # it is leads the line whether it plays or not. The rest of the status after both.
        parts = [p for p in self._parts if p not in self._alerts]
        items += [(1, p, "") for p in parts if p == self._replay]
        if self._message and not self._message_error:
            items.append((2, self._message, kind))
        items += [(3 + i, p, "") for i, p in enumerate(parts) if p != self._replay]
        # One rule for the whole line: a message or an alert may quote outside text (a
        # `[snapshot] dir`, a log's or a recording's path, an OS error's words), shown written
        # out, never sent to the terminal raw (`visible` leaves safe text as it is); before
        # fitting, so the widths are those shown.
        items = [(p, visible(t), c) for p, t, c in items]
        first = Text(no_wrap=True, overflow="ellipsis")
        for n, i in enumerate(fit_indices([(p, t) for p, t, _ in items], width, " · ")):
            if n:
                first.append(" · ")
            _, text, cls = items[i]
            first.append(text, style(cls) if cls else "")
        keys = Text(no_wrap=True, overflow="ellipsis")
        keys.append(KEYS, style("status-footer--keys"))
        return [first, keys]
