"""A host's lookup and a TCP connect, each bounded by a deadline and cut short by a stop.

Who calls it: `gapwatch.fleet.client.PromClient` (Prometheus's HTTP API, cut by `abort`) and
`gapwatch.sources.cuzk_status.fetch_status` (cuzk's `/status`, cut by the poller's `stop`).

Why: `getaddrinfo` has no timeout of its own and cannot be interrupted. A resolver that does not
answer held a fleet refresh, and one `/status` poll (no other poll came meanwhile: the prover's
pipeline view went stale without a word), for as long as the system's resolver retried (10-30 s).
Here the lookup runs in a daemon thread, one at a time per host (a resolver that never answers
costs one thread, not one a query), its answer kept a while; the caller waits only until its
deadline or its stop. `socket.create_connection` has the same flaw for connecting (a timeout per
address, and a shutdown from another thread misses a socket not yet connecting):
`connect_within` connects without blocking, looking at the deadline and the stop as it waits;
`connect_any` tries a host's addresses in turn within the one deadline.
"""

from __future__ import annotations

import errno
import os
import select
import socket
import threading
import time
from collections.abc import Callable

#: How long a looked-up address is used before it is looked up again, unless the caller says
#: (a refresh asks several queries, a poller asks every second; the system resolver's own
#: cache, where there is one, is not Python's).
RESOLVED_FOR_S = 30.0
#: How often a caller waiting on a lookup or a connect looks whether it was stopped.
CUT_LOOK_S = 0.05

#: One address `getaddrinfo` gives: family, type, protocol, canonical name, address.
AddrInfo = tuple[socket.AddressFamily, socket.SocketKind, int, str, tuple[object, ...]]


class Resolver:
    """The addresses of one host, looked up in a thread of its own so that a caller waits
    only until its deadline. One lookup at a time: a caller that comes while one is still out
    waits for that one; an answer is kept `kept_for_s` (each call says how long)."""

    def __init__(self, host: str, port: int, thread_name: str = "gapwatch-dns") -> None:
        self._host, self._port = host, port
        self._thread_name = thread_name
        self._lock = threading.Lock()
        self._pending: _Lookup | None = None
        self._kept: list[AddrInfo] = []
        self._kept_at = 0.0

    def addresses(self, deadline: float, stopped: Callable[[], bool],
                  kept_for_s: float = RESOLVED_FOR_S) -> list[AddrInfo]:
        """The host's addresses; `TimeoutError` when the lookup has not answered by
        `deadline` (monotonic seconds), or `stopped()` says so first; `socket.gaierror` (an
        OSError) when it answered that there are none."""
        with self._lock:
            self._keep_finished()
            if self._kept and time.monotonic() - self._kept_at < kept_for_s:
                return self._kept
            lookup = self._pending
            if lookup is None or lookup.done.is_set():
                lookup = self._pending = _Lookup(self._host, self._port, self._thread_name)
        # Looked at in slices, for `stopped` too (one Event cannot wait on two); a lookup
        # still out when the caller gives up goes on in its daemon thread.
        while not lookup.done.wait(min(CUT_LOOK_S, max(0.0, deadline - time.monotonic()))):
            if stopped() or time.monotonic() >= deadline:
                raise TimeoutError
        if lookup.error is not None:
            raise lookup.error
        with self._lock:
            self._keep_finished()
        return lookup.found

    def _keep_finished(self) -> None:
        """A lookup that answered is kept, timed from its answer, whoever was waiting (under
        the lock): one that answered after its caller's deadline was thrown away, and with a
        resolver a little slower than the deadline every poll started a lookup that ran past
        it, for ever."""
        done = self._pending
        if done is not None and done.done.is_set() and done.error is None and done.found \
                and done.answered_at > self._kept_at:
            self._kept, self._kept_at = done.found, done.answered_at


class _Lookup:
    """One `getaddrinfo`, run in a daemon thread (one that never returns keeps no exit
    waiting); `done` is set once it answered."""

    def __init__(self, host: str, port: int, thread_name: str) -> None:
        self.done = threading.Event()
        self.found: list[AddrInfo] = []
        self.error: OSError | None = None
        #: When it answered (monotonic seconds; set before `done`).
        self.answered_at = 0.0
        threading.Thread(target=self._run, args=(host, port), daemon=True,
                         name=thread_name).start()

    def _run(self, host: str, port: int) -> None:
        try:
            self.found = [(f, k, p, n, tuple(a)) for f, k, p, n, a in
                          socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]
        except OSError as exc:
            self.error = exc
        except UnicodeError as exc:  # a name IDNA cannot encode
            self.error = socket.gaierror(f"{host!r}: {exc}")
        finally:
            self.answered_at = time.monotonic()
            self.done.set()


def connect_within(sock: socket.socket, address: tuple[object, ...], deadline: float,
                   stopped: Callable[[], bool]) -> None:
    """Connect `sock` by `deadline` (monotonic seconds), unless `stopped()` says so first
    (`TimeoutError` either way; a refusal is the OSError `connect` raises). Not blocking in
    `connect`: a shutdown from another thread does not reach a socket not yet connecting, so a
    stop that came just before the call was missed, and the connect held it to the deadline.
    The socket is left non-blocking: the caller sets the timeout it reads with."""
    sock.setblocking(False)
    err = sock.connect_ex(address)
    if err and err not in (errno.EINPROGRESS, errno.EWOULDBLOCK):
        raise OSError(err, os.strerror(err))
    if err:
        poller = select.poll()
        poller.register(sock, select.POLLOUT)
        while not poller.poll(1000 * min(CUT_LOOK_S, max(0.0, deadline - time.monotonic()))):
            if stopped() or time.monotonic() >= deadline:
                raise TimeoutError
        err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            raise OSError(err, os.strerror(err))
    if stopped():
        raise TimeoutError


def connect_any(addresses: list[AddrInfo], deadline: float, stopped: Callable[[], bool],
                what: str) -> socket.socket:
    """A socket connected to the first of `addresses` that takes it, each tried with what is
    left of the one `deadline` (`connect_within`): `TimeoutError` once the deadline passes or
    `stopped()` says so (for all the addresses, not the one); else the last refusal (or
    failure to make a socket of that family), or an OSError saying `what` has no address."""
    failure: OSError = OSError(f"no address for {what[:80]!r}")
    for family, kind, proto, _name, address in addresses:
        try:
            # Made inside the try, as `socket.create_connection` does: a family this kernel
            # cannot make (IPv6 disabled at boot: EAFNOSUPPORT for `localhost`'s ::1, listed
            # first) is one address that failed, not the host unreachable.
            sock = socket.socket(family, kind, proto)
        except OSError as exc:
            failure = exc
            continue
        try:
            connect_within(sock, address, deadline, stopped)
            return sock
        except TimeoutError:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            failure = exc
    raise failure
