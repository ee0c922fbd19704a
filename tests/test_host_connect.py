"""The bounded host lookup (`gapwatch.base.host_connect.Resolver`): an answer that comes after
its caller gave up is kept for the next caller, not thrown away."""

from __future__ import annotations

import errno
import os
import socket
import threading
import time

import pytest

from gapwatch.base.host_connect import AddrInfo, Resolver, connect_any


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


def test_an_address_whose_family_the_kernel_cannot_make_is_passed_over_for_the_next(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A box booted with `ipv6.disable=1`: `getaddrinfo` (no AI_ADDRCONFIG) still gives
    `localhost` as ::1 first, and making an AF_INET6 socket fails (EAFNOSUPPORT). That
    failure escaped `connect_any` before 127.0.0.1 was tried (`socket.create_connection`
    tries the next address): fleet and the `/status` poller could not reach a server that
    answered on IPv4."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    real_socket = socket.socket

    def no_ipv6(family: int = socket.AF_INET, *args: object) -> socket.socket:
        if family == socket.AF_INET6:
            raise OSError(errno.EAFNOSUPPORT, os.strerror(errno.EAFNOSUPPORT))
        return real_socket(family, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "socket", no_ipv6)
    addresses: list[AddrInfo] = [
        (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", port, 0, 0)),
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)),
    ]
    with listener, connect_any(addresses, time.monotonic() + 30, lambda: False,
                               "localhost") as sock:
        assert sock.getpeername() == ("127.0.0.1", port)
