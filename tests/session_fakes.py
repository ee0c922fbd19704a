"""A session's stand-ins for tests of what the store, the sinks and `/metrics` make of records:
a detector that finds nothing, so that only the records themselves count; a sink that keeps what
it is handed; one scrape."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from gapwatch.engine.session import Session
from gapwatch.sinks.prometheus import start_exporter


class KeptRecords:
    """A sink keeping every record the session hands on, in the order it does."""

    def __init__(self) -> None:
        self.records: list[object] = []

    def on_header(self, header: object) -> None:
        pass

    def on_record(self, record: object) -> None:
        self.records.append(record)

    def close(self) -> None:
        pass


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


@contextmanager
def serving(session: Session) -> Iterator[Callable[[], str]]:
    """`/metrics` served for `session` from now on (its counting sink registered: records fed
    after this are counted), as a function that scrapes it once; stopped at the end."""
    handle = start_exporter("127.0.0.1:0", session)

    def scrape() -> str:
        with urllib.request.urlopen(handle.url, timeout=5) as resp:
            body: bytes = resp.read()
        return body.decode()

    try:
        yield scrape
    finally:
        handle.stop()


def metrics_body(session: Session) -> str:
    """One scrape of `/metrics` served for `session` (what the session holds, not what a sink
    would have counted: `serving` for that)."""
    with serving(session) as scrape:
        return scrape()
