"""StatusFooter: the machinery's own state (sampler period and lateness, signal source per GPU,
log following, recording, exporter), the keys, and the outcome of the last snapshot.

Who drives it: `GapwatchApp` calls `show_status(status)` about once a second (the runtime's
status is not part of the store's version) and `show_message(text, error)` after a snapshot.
`status_parts` is shared with the snapshot's summary.md.
"""

from __future__ import annotations

import os

from rich.console import Group
from rich.text import Text
from textual.widget import Widget

from gapwatch.engine.runtime import RuntimeStatus

_SOURCE_NAME = {"gpm": "GPM", "counters": "counters", "legacy": "legacy", "util": "util only",
                "sim": "sim", "trace": "trace", "none": "none"}

KEYS = "s snapshot  p pause  g GPU  w window  d detail  ? help  q quit"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def status_parts(status: RuntimeStatus) -> list[str]:
    """Short phrases describing the runtime, in the footer's order."""
    parts = [f"source {status.source}"]
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
    if status.recording_path:
        parts.append(f"rec {status.recording_path}")
    if status.prometheus_address:
        parts.append(f"metrics {status.prometheus_address}")
    if status.done:
        parts.append("source ended")
    return parts


class StatusFooter(Widget):
    """Two lines: runtime status, then keys and the last snapshot message."""

    COMPONENT_CLASSES = {"status-footer--keys", "status-footer--ok", "status-footer--error"}

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._status = "starting…"
        self._message = ""
        self._message_error = False

    def show_status(self, status: RuntimeStatus) -> None:
        text = " · ".join(status_parts(status))
        if text != self._status:
            self._status = text
            self.refresh()

    def show_message(self, message: str, *, error: bool = False) -> None:
        self._message = message
        self._message_error = error
        self.refresh()

    def render(self) -> Group:
        style = self.get_component_rich_style
        status = Text(self._status, no_wrap=True, overflow="ellipsis")
        keys = Text(no_wrap=True, overflow="ellipsis")
        if self._message:
            kind = "status-footer--error" if self._message_error else "status-footer--ok"
            keys.append(self._message, style(kind))
            keys.append("  ")
        keys.append(KEYS, style("status-footer--keys"))
        return Group(status, keys)
