"""MetricsServer: the HTTP server behind `/metrics`, built to stay up whatever its clients do.

Who calls it: `gapwatch.sinks.prometheus` (bound at startup before anything else is opened,
serving once the session exists, stopped at the end) and the tests. What it serves is
prometheus_client's own exposition: its `MetricsHandler` over a registry, so the text format,
content negotiation (OpenMetrics) and gzip are the library's, not ours.

Why not prometheus_client's `start_http_server`: it listens with a backlog of 5, gives every
connection a thread of its own with no timeout (1,000 idle sockets held 1,005 threads), and its
`shutdown()` waits out `serve_forever`'s 0.5 s poll. Here instead:
- the listening socket has a real backlog (`backlog`, 128);
- one selector thread accepts connections and holds them, without a thread each, until a
  connection has sent its whole request head (at most `MAX_HEAD_BYTES`); a connection that has
  not done so within `idle_timeout_s` is closed, and when `max_connections` are held the oldest
  is closed to make room, so that a scrape always gets in however many idle sockets there are;
- complete requests go to a bounded pool (`workers` threads, at most `max_queued` requests
  waiting; beyond that a connection is closed unanswered, and counted);
- a worker answers with the socket in blocking mode under `io_timeout_s` (a client that stops
  reading cannot hold a worker longer), one request per connection (HTTP/1.0, as
  prometheus_client's handler speaks);
- `stop()` wakes the selector through a socket pair and returns at once; a request in flight
  finishes on its worker (bounded by `io_timeout_s`).
"""

from __future__ import annotations

import errno
import io
import resource
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, cast

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import MetricsHandler

from gapwatch.base.watch import UNWATCHED, ThreadWatch

#: The longest request head accepted (request line and headers); a scrape sends ~200 bytes.
MAX_HEAD_BYTES = 8192
#: How long accepting is paused when the process runs out of file descriptors.
_EMFILE_PAUSE_S = 0.5


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """The server's bounds (docs/export.md lists them)."""

    backlog: int = 128
    workers: int = 4
    max_queued: int = 64
    max_connections: int = 256
    idle_timeout_s: float = 10.0
    io_timeout_s: float = 5.0


class _Pending:
    """A held connection: what it has sent so far, and when it was accepted."""

    __slots__ = ("accepted_mono", "head")

    def __init__(self, now: float) -> None:
        self.accepted_mono = now
        self.head = b""


class _Request:
    """What a handler gets as its `server`: the request head the selector already read."""

    def __init__(self, head: bytes) -> None:
        self.head = head


class _PreReadHandler(MetricsHandler):
    """prometheus_client's MetricsHandler, reading the head the selector already received."""

    def setup(self) -> None:
        super().setup()  # sets the socket timeout (`timeout`), builds wfile
        server = self.server  # the `_Request` the accept loop hands over
        self.rfile = io.BytesIO(server.head if isinstance(server, _Request) else b"")


class MetricsServer:
    """A bound `/metrics` server: `serve(registry)` starts answering, `stop()` ends it."""

    def __init__(self, host: str, port: int, limits: ServerLimits | None = None) -> None:
        """Bind and listen now (so that a taken port fails before anything else starts).

        Raises:
            OSError: the address cannot be bound.
        """
        self.limits = limits or ServerLimits()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family,
                                              backlog=self.limits.backlog)
        self._listener.setblocking(False)
        self.server_address: tuple[Any, ...] = self._listener.getsockname()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: Hears the selector thread die, and restarts it (the listener stays open).
        self.watch: ThreadWatch = UNWATCHED
        self._pool: ThreadPoolExecutor | None = None
        self._handler: type[_PreReadHandler] | None = None
        self._queued = 0
        self._queued_lock = threading.Lock()
        #: Connections closed unanswered (pool full, head too long, too many held), closed idle,
        #: answered, and failed while answering (client gone, write timeout). Read by benches.
        self.refused = 0
        self.timed_out = 0
        self.served = 0
        self.failed = 0

    def serve(self, registry: CollectorRegistry) -> None:
        """Start answering with `registry`'s metrics (a thread; returns at once)."""
        self._handler = type("GapwatchMetricsHandler", (_PreReadHandler,),
                             {"registry": registry, "timeout": self.limits.io_timeout_s})
        self._pool = ThreadPoolExecutor(self.limits.workers, thread_name_prefix="gapwatch-metrics")
        self._thread = self.watch.start("gapwatch-metrics-accept", self._loop, restart=True,
                                        stop=self._stop)

    def stop(self) -> None:
        """Stop answering, free the port; returns without waiting for requests in flight.
        Safe to call twice."""
        if self._stop.is_set():
            return
        self._stop.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(1.0)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()

    # -- the selector thread --------------------------------------------------------------------

    def _loop(self) -> None:
        sel = selectors.DefaultSelector()
        held = _Held(sel, _held_cap(self.limits.max_connections))
        sel.register(self._listener, selectors.EVENT_READ, "listen")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        paused_until = 0.0
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if paused_until and now >= paused_until:
                    sel.register(self._listener, selectors.EVENT_READ, "listen")
                    paused_until = 0.0
                for key, _ in sel.select(timeout=0.5):
                    if key.data == "wake":
                        return
                    if key.data == "listen":
                        if not self._accept(held, now):
                            sel.unregister(self._listener)
                            paused_until = now + _EMFILE_PAUSE_S
                    elif isinstance(key.fileobj, socket.socket):  # a held connection
                        self._on_readable(held, key.fileobj)
                for conn in held.expired(time.monotonic(), self.limits.idle_timeout_s):
                    self.timed_out += 1  # before the close, which the client may be waiting on
                    _close(conn)
        finally:
            held.close_all()
            sel.close()

    def _on_readable(self, held: _Held, conn: socket.socket) -> None:
        """One held connection has bytes (or its end) to read. It may have been closed earlier
        in this same `select()` batch (evicted to make room): then it is not touched. Whatever
        goes wrong with it costs that connection only, never the thread."""
        if conn not in held:
            return
        try:
            self._read_head(held, conn)
        except Exception:  # noqa: BLE001 - one client's fault closes its own connection only
            self.failed += 1
            held.drop(conn)

    def _accept(self, held: _Held, now: float) -> bool:
        """Accept what is waiting (a bounded batch); False when out of file descriptors."""
        for _ in range(64):
            try:
                conn, _addr = self._listener.accept()
            except BlockingIOError:
                return True
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE) and held:
                    self.refused += 1
                    held.evict_oldest()  # a held idle socket gives its descriptor to a scrape
                    continue
                return exc.errno not in (errno.EMFILE, errno.ENFILE)
            if held.full:
                self.refused += 1
                held.evict_oldest()
            if not held.add(conn, now):
                self.refused += 1
        return True

    def _read_head(self, held: _Held, conn: socket.socket) -> None:
        pending = held.pending(conn)
        try:
            data = conn.recv(MAX_HEAD_BYTES - len(pending.head))
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the client went away
            held.drop(conn)
            return
        pending.head += data
        complete = b"\r\n\r\n" in pending.head or b"\n\n" in pending.head
        if not complete and len(pending.head) < MAX_HEAD_BYTES:
            return
        held.release(conn)
        if not complete:
            self.refused += 1
            _close(conn)
            return
        self._dispatch(conn, pending.head)

    def _dispatch(self, conn: socket.socket, head: bytes) -> None:
        with self._queued_lock:
            full = self._queued >= self.limits.max_queued
            if not full:
                self._queued += 1
        if full or self._pool is None:
            self.refused += 1
            _close(conn)
            return
        try:
            self._pool.submit(self._answer, conn, head)
        except RuntimeError:  # the pool was shut down: we are stopping
            _close(conn)

    # -- the workers ----------------------------------------------------------------------------

    def _answer(self, conn: socket.socket, head: bytes) -> None:
        ok = False
        try:
            conn.setblocking(True)
            assert self._handler is not None
            # The handler only reads `server.head`: no socketserver.BaseServer is needed.
            self._handler(conn, conn.getpeername(), cast(Any, _Request(head)))
            ok = True
        except Exception:  # noqa: BLE001 - a client that misbehaves costs its own answer only
            pass
        finally:
            with self._queued_lock:
                self._queued -= 1
                if ok:
                    self.served += 1
                else:
                    self.failed += 1
            _close(conn, graceful=ok)



def _held_cap(max_connections: int) -> int:
    """How many idle connections may be held: `max_connections`, but never more than a quarter
    of the process's file descriptors (`ulimit -n`), so that clients holding sockets open
    cannot take the descriptors the recording, the log tailers and the status pollers need
    (at `ulimit -n 24`, 40 idle sockets made the status poller time out)."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return max_connections
    if soft == resource.RLIM_INFINITY:
        return max_connections
    return max(1, min(max_connections, soft // 4))


class _Held:
    """The connections the selector holds until their request head is in, oldest first.

    Every way out (`drop`, `release`, `evict_oldest`, `expired`) removes a connection from
    the dict and from the selector together, so `conn in held` is the one test of whether a
    socket seen in a `select()` batch may still be touched."""

    def __init__(self, sel: selectors.BaseSelector, cap: int) -> None:
        self._sel = sel
        self.cap = cap
        self._held: dict[socket.socket, _Pending] = {}

    def __contains__(self, conn: object) -> bool:
        return conn in self._held

    def __bool__(self) -> bool:
        return bool(self._held)

    def __len__(self) -> int:
        return len(self._held)

    @property
    def full(self) -> bool:
        return len(self._held) >= self.cap

    def pending(self, conn: socket.socket) -> _Pending:
        return self._held[conn]

    def add(self, conn: socket.socket, now: float) -> bool:
        """Hold a new connection; False (and it is closed) when the selector refuses it."""
        try:
            conn.setblocking(False)
            self._sel.register(conn, selectors.EVENT_READ, "conn")
        except (OSError, ValueError):
            _close(conn)
            return False
        self._held[conn] = _Pending(now)
        return True

    def release(self, conn: socket.socket) -> None:
        """Stop holding `conn` without closing it (its request goes to a worker)."""
        del self._held[conn]
        try:
            self._sel.unregister(conn)
        except (KeyError, ValueError, OSError):
            pass

    def drop(self, conn: socket.socket) -> None:
        """Stop holding `conn` and close it."""
        if conn in self._held:
            self.release(conn)
        _close(conn)

    def evict_oldest(self) -> None:
        self.drop(next(iter(self._held)))

    def expired(self, now: float, limit_s: float) -> list[socket.socket]:
        """Stop holding the connections held `limit_s` or longer and return them (to close)."""
        out: list[socket.socket] = []
        while self._held:  # oldest first: stop at the first young one
            conn, pending = next(iter(self._held.items()))
            if now - pending.accepted_mono < limit_s:
                break
            self.release(conn)
            out.append(conn)
        return out

    def close_all(self) -> None:
        for conn in list(self._held):
            self.drop(conn)

def _close(conn: socket.socket, graceful: bool = False) -> None:
    try:
        if graceful:
            # End our side first: a plain close() with unread bytes from the client would reset
            # the connection and could discard the answer on its way.
            conn.shutdown(socket.SHUT_WR)
        conn.close()
    except OSError:
        conn.close()
