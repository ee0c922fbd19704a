"""The bounded host lookup (`gapwatch.base.host_connect.Resolver`): an answer that comes after
its caller gave up is kept for the next caller, not thrown away."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from gapwatch.base.host_connect import Resolver


def test_a_lookup_that_answers_after_its_callers_deadline_serves_the_next_caller(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolver a little slower than the poll's deadline (0.7 s against 0.5): the answer
    was kept only by a caller still waiting, so each poll started a lookup that ran past its
    deadline, and no poll ever got through (12 polls, 12 `lookup_timeout`, 13 lookups)."""
    answer = threading.Event()
    asked: list[str] = []

    def slow(host: str, port: int, *args: object, **kwargs: object) -> list[object]:
        asked.append(host)
        answer.wait(30)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    resolver = Resolver("cuzk.example", 9821)
    with pytest.raises(TimeoutError):
        resolver.addresses(time.monotonic() + 0.05, lambda: False)
    answer.set()  # the resolver answers once nobody waits
    pending = resolver._pending  # noqa: SLF001 - the lookup in flight, to wait for its end
    assert pending is not None and pending.done.wait(30)
    found = resolver.addresses(time.monotonic() + 0.05, lambda: False)
    assert [a[4] for a in found] == [("127.0.0.1", 9821)]
    assert asked == ["cuzk.example"]  # one lookup, its answer used
