"""A session's stand-ins for tests of what the store, the sinks and `/metrics` make of records:
a detector that finds nothing, so that only the records themselves count, and one scrape."""

from __future__ import annotations

import urllib.request

from gapwatch.engine.session import Session
from gapwatch.sinks.prometheus import start_exporter


class NoDetector:
    """Takes every record and finds no gap or state (the `GapDetector` calls a `Session` makes)."""

    def feed(self, record: object) -> list[object]:
        return []

    def feed_copies(self, copies: object) -> list[object]:
        return []

    def finish(self) -> list[object]:
        return []

    def window_now(self, gpu: int) -> None:
        return None


def metrics_body(session: Session) -> str:
    """One scrape of `/metrics` served for `session` (an exporter started and stopped for it)."""
    handle = start_exporter("127.0.0.1:0", session)
    try:
        with urllib.request.urlopen(handle.url, timeout=5) as resp:
            body: bytes = resp.read()
    finally:
        handle.stop()
    return body.decode()
