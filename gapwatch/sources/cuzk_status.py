"""cuzk's `GET /status` as a live source: the JSON read into `ProverStatus` records, and the poller.

Who calls it: `gapwatch.engine.runtime` starts one `StatusPoller` per status URL (`--cuzk-status
URL`, `[cuzk] status_url`) beside the log follower; the simulator's speed-0 feed and the tests
call `gapwatch.cuzk.status.parse_status` directly. The poller hands each snapshot to
`Session.on_record`.

What the server is (`docs/cuzk-status.md`, from curio's `extern/cuzk/cuzk-daemon/src/main.rs`):
a hand-written HTTP/1.1 server on raw TCP, one request per connection, `Connection: close`.
Building the snapshot takes the status tracker's write lock, the same lock the GPU workers take
on their hot path, so the poller asks about once a second by default (`[cuzk] status_period_s`,
floor 0.1 s) with a short deadline: one deadline per request, for the host's lookup, the
connection and the whole answer, so a server that drips a byte at a time cannot hold a poll
(`fetch_status`), nor can a resolver that does not answer (`gapwatch.base.host_connect`: the
lookup in a thread of its own, `lookup_timeout`). A stop cuts a poll in flight short.

The poller runs on its own thread and never touches the session while a request is in flight:
a slow, refusing or broken server costs the poller its own time, never the 100 ms sampler's.
Every failed poll is counted by reason (`ERROR_REASONS`; `http_<code>` for a status other than
200), the first of each reason (and the recovery) becomes a notice, and polling goes on.

The document's schema and its reading into `ProverStatus` are cuzk's: `gapwatch.cuzk.status`.
"""

from __future__ import annotations

import http.client
import io
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import urlsplit

import msgspec

from gapwatch.base.background import Background
from gapwatch.base.clock import Clock, SystemClock
from gapwatch.base.host_connect import CUT_LOOK_S, Resolver, connect_any
from gapwatch.core import fmt
from gapwatch.core.bounds import MAX_PROVERS, keep_latest
from gapwatch.core.models import (
    Notice,
    NoticeLevel,
    ProverStatus,
    Record,
)
from gapwatch.cuzk.status import (
    MAX_PARTITIONS_PER_POLL,
    MAX_PIPELINES_PER_POLL,
    MAX_TEXT_CHARS,
    MAX_WORKERS_PER_POLL,
    StatusError,
    parse_status,
)

#: Why a poll failed (`http_<code>` is added for any status other than 200).
ERROR_REASONS: tuple[str, ...] = (
    "refused", "timeout", "lookup_timeout", "connection", "truncated", "too_large", "bad_json",
    "bad_schema", "internal",
)
#: The name of the thread a host's lookup runs in (`host_connect.Resolver`).
_LOOKUP_THREAD = "gapwatch-cuzk-status-dns"
#: A larger answer is refused (`too_large`): cuzk's snapshot drops jobs done > 30 s ago, so a
#: real one is a few KiB (5 KiB on the 8-GPU H200 trace), a few hundred KiB at most. Reading is
#: the poller's, but decoding holds the GIL (msgspec does not release it): 8 MiB, the cap
#: before, cost 40-50 ms a poll plus the records built from it, and the sampler ran 216 ms late.
MAX_BODY_BYTES = 1 << 20
#: Headers longer than this are not an HTTP answer cuzk would send (its are ~150 bytes).
MAX_HEADER_BYTES = 64 << 10
#: What a failure's message keeps of the server's own words (cuzk's reasons are a few words).
SAID_CHARS = 120
#: A refused connection where the URL never answered: nothing listens there, and the address
#: may be the wrong one (`refused_words`).
REFUSED_NEVER_ANSWERED = ("connection refused (is cuzk's [daemon] status_listen set to this "
                          "address?)")


def refused_words(answered: int, last_answer_wall_s: float | None) -> str:
    """Why a poll was refused, as what the URL answered before tells it: the one rule of the
    poller's warning (`StatusPoller._failed`) and of a replay's of a recording made before it
    (`RecordedRefusals`). Never answered: the address may be wrong (`REFUSED_NEVER_ANSWERED`).
    Answered before: the address was right and the prover stopped answering there (it exited,
    or is restarting): the H200 cuzk-status recording's 36 answered polls were followed by the
    address question when its prover exited."""
    if answered <= 0:
        return REFUSED_NEVER_ANSWERED
    last = (f" (the last at {fmt.clock(last_answer_wall_s)} UTC)"
            if last_answer_wall_s is not None else "")
    return (f"connection refused after {answered} answered poll{'s' if answered != 1 else ''}"
            f"{last}: the prover no longer answers at this address (it exited, or is "
            "restarting)")


def prover_name(url: str) -> str:
    """The short name of a status URL in records, metrics and the dashboard: `host:port`."""
    return urlsplit(url).netloc or url


def _host_port(url: str) -> tuple[str, int]:
    """The URL's host (127.0.0.1 when it names none) and port (80 when it names none, or one
    that is not a port: the URL's check at start says so, `cuzk.config`)."""
    parts = urlsplit(url)
    try:
        port = parts.port or 80
    except ValueError:
        port = 80
    return parts.hostname or "127.0.0.1", port


class _Answer(io.BytesIO):
    """The bytes of a whole answer, as the socket `http.client.HTTPResponse` parses from."""

    def makefile(self, *args: object, **kwargs: object) -> io.BytesIO:
        return self


def _words(text: str) -> str:
    """The server's own words in a failure (a reason phrase, a status line that is not HTTP),
    cut to `SAID_CHARS`: whole, a 60 KB reason went into the notice, to stderr, the toast and
    the recording, once for each of up to 900 `http_<code>` reasons."""
    return text if len(text) <= SAID_CHARS else text[:SAID_CHARS] + "…"


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return max(0, int(value.strip()))
            except ValueError:
                return None
    return None


def _connect(resolver: Resolver, host: str, deadline: float, timeout_s: float,
             stopped: Callable[[], bool]) -> socket.socket:
    """A socket connected to the host by `deadline`: its addresses (looked up within it)
    tried in turn. `socket.create_connection` looked up without any timeout (a resolver that
    did not answer held the poll, and every poll after it, for its own retries) and gave each
    address the whole timeout again. A lookup that ran out of time is `lookup_timeout`."""
    try:
        addresses = resolver.addresses(deadline, stopped)
    except TimeoutError:
        if stopped():
            raise
        raise StatusError("lookup_timeout", f"looking up {host[:80]!r} took longer than "
                                            f"{timeout_s:g} s (the system's resolver does "
                                            "not answer)") from None
    return connect_any(addresses, deadline, stopped, host)


def _receive(sock: socket.socket, deadline: float, max_bytes: int, timeout_s: float,
             stopped: Callable[[], bool]) -> bytes:
    """Everything the server sends, until it closes or the `Content-Length` is in, before
    `deadline` (monotonic seconds): one deadline for the whole answer, however it drips.
    Waited on in slices of `CUT_LOOK_S`, for `stopped()` too: a stop waited out the poll's
    deadline (`status_timeout_s`, up to 10 s) past its own 2 s."""
    buf = bytearray()
    head_end: int | None = None
    length: int | None = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise StatusError("timeout", f"no whole answer within {timeout_s:g} s "
                                         f"({len(buf)} bytes by then)")
        sock.settimeout(min(left, CUT_LOOK_S))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            if stopped():
                raise StatusError("stopped", "the poller was stopped") from None
            continue  # the deadline check above says it
        if not chunk:
            return bytes(buf)  # closed: cuzk always closes after its answer
        buf += chunk
        if head_end is None:
            i = buf.find(b"\r\n\r\n")
            if i < 0:
                if len(buf) > MAX_HEADER_BYTES:
                    raise StatusError("connection", f"no end of headers in {len(buf)} bytes")
                continue
            head_end = i + 4
            length = _content_length(bytes(buf[:i]))
            if length is not None and length > max_bytes:
                raise StatusError("too_large", f"answer of {length} bytes (over {max_bytes})")
        if len(buf) - head_end > max_bytes:
            raise StatusError("too_large", f"answer over {max_bytes} bytes")
        if length is not None and len(buf) - head_end >= length:
            return bytes(buf)


def fetch_status(url: str, timeout_s: float, max_bytes: int = MAX_BODY_BYTES,
                 resolver: Resolver | None = None,
                 stopped: Callable[[], bool] = lambda: False) -> bytes:
    """One `GET` of a status URL (a new connection, `Connection: close`, as cuzk serves it);
    the body of a 200 answer. `timeout_s` bounds the whole request: looking the host up
    (`resolver`, the poller's own: its answers are kept a while), connecting, sending and the
    whole answer (a server that drips a byte at a time is a `timeout`). `stopped()` cuts the
    lookup, the connect and the wait for the answer short (reason `stopped`). Raises
    StatusError."""
    deadline = time.monotonic() + timeout_s
    parts = urlsplit(url)
    path = parts.path or "/status"
    if parts.query:
        path += "?" + parts.query
    host, port = _host_port(url)
    netloc = f"[{host}]" if ":" in host else host
    request = (f"GET {path} HTTP/1.1\r\nHost: {netloc}:{port}\r\n"
               "Connection: close\r\nAccept: application/json\r\n\r\n").encode("latin-1")
    try:
        with _connect(resolver or Resolver(host, port, _LOOKUP_THREAD), host, deadline,
                      timeout_s, stopped) as sock:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.sendall(request)
            data = _receive(sock, deadline, max_bytes, timeout_s, stopped)
    except ConnectionRefusedError:
        raise StatusError("refused", REFUSED_NEVER_ANSWERED) from None
    except TimeoutError:
        if stopped():
            raise StatusError("stopped", "the poller was stopped") from None
        raise StatusError("timeout", f"no answer within {timeout_s:g} s") from None
    except OSError as exc:
        raise StatusError("connection", f"{type(exc).__name__}: {exc}") from None
    if not data:
        raise StatusError("connection", "the server closed the connection without answering")
    # HTTPResponse takes a socket but only calls its makefile(), which _Answer has.
    resp = http.client.HTTPResponse(cast(socket.socket, _Answer(data)))
    try:
        resp.begin()
        # With a Content-Length (cuzk always sends one), read() raises IncompleteRead when the
        # connection closed early; without one, the body is what came before the close.
        body = resp.read()
    except http.client.IncompleteRead as exc:
        raise StatusError("truncated", f"answer cut short ({len(exc.partial)} bytes, "
                                       f"{exc.expected} more expected)") from None
    except http.client.HTTPException as exc:
        raise StatusError("connection", f"{type(exc).__name__}: {_words(str(exc))}") from None
    if resp.status != 200:
        raise StatusError(f"http_{resp.status}",
                          f"HTTP {resp.status} {_words(resp.reason)}".rstrip())
    return body


#: How the poller's failure notices begin and end (`StatusPoller._failed`).
_SAID_HEAD = "cuzk status "
_REFUSED_TAIL = "; polling goes on, failures counted (refused)"


class RecordedRefusals:
    """A replay's view of a recording made before `refused_words`: every refused poll was said
    as the address question, also after the URL had answered (the H200 cuzk-status recording:
    36 snapshots, then its prover exited). Fed the replayed records in order, it counts each
    prover's snapshots and says such a notice by the one rule, from the snapshots recorded
    before it (`said`); any other record is handed back as it is. Who calls it: the replay
    driver (`gapwatch.engine.replay`), a new one each pass of the file."""

    def __init__(self) -> None:
        #: Each prover's snapshots so far, and the wall time of its latest (bounded: names
        #: come from the recording).
        self._answered: dict[str, tuple[int, float]] = {}

    def said(self, record: Record) -> Record:
        """`record`, or the refusal notice it is said again by the one rule."""
        if type(record) is ProverStatus:
            n, _ = self._answered.get(record.prover, (0, 0.0))
            keep_latest(self._answered, record.prover, (n + 1, record.t_wall_s), MAX_PROVERS)
            return record
        if type(record) is not Notice:
            return record
        message = record.message
        middle = f": {REFUSED_NEVER_ANSWERED}{_REFUSED_TAIL}"
        if not (message.startswith(_SAID_HEAD) and message.endswith(middle)):
            return record
        url = message[len(_SAID_HEAD):-len(middle)]
        answered = self._answered.get(prover_name(url))
        if answered is None:
            return record  # it never answered (as far as recorded): the hint stands
        words = refused_words(*answered)
        return msgspec.structs.replace(
            record, message=f"{_SAID_HEAD}{url}: {words}{_REFUSED_TAIL}")


@dataclass(frozen=True, slots=True)
class PollerStatus:
    """What the footer, `/metrics` and `record`'s summary say about one status URL."""

    url: str
    prover: str
    period_s: float
    #: "ok", "starting", or the reason of the last failure.
    state: str
    polls: int
    ok: int
    errors: dict[str, int] = field(default_factory=dict)
    last_latency_ms: float | None = None
    last_ok_wall_s: float | None = None
    dropped_fields: int = 0


class StatusPoller(Background):
    """Polls one status URL every `period_s` (deadline-scheduled, like the sampler) and hands
    each snapshot to `on_status`. A side source of the runtime: `start()`, `stop()`, `status()`."""

    thread_name = "gapwatch-cuzk-status"

    def __init__(self, url: str, period_s: float, timeout_s: float,
                 on_status: Callable[[ProverStatus], None],
                 on_notice: Callable[[Notice], None] | None = None,
                 clock: Clock | None = None, prover: str | None = None) -> None:
        super().__init__()
        self.url = url
        self.prover = prover or prover_name(url)
        self.period_ns = int(period_s * 1e9)
        self.timeout_s = timeout_s
        self.clock: Clock = clock or SystemClock()
        self._on_status = on_status
        self._on_notice = on_notice
        self._lock = threading.Lock()  # guards the counters below (status() reads them)
        self.polls = 0
        self.ok = 0
        self.errors: dict[str, int] = {}
        self.counters: dict[str, int] = {}
        self._state = "starting"
        self._last_latency_ms: float | None = None
        self._last_ok_wall_s: float | None = None
        self._failing_since: int | None = None  # errors in a row, once a failure was said
        #: A refusal after answered polls was said since the last answer (said once a stop).
        self._refused_said_since_ok = False
        #: The host's addresses, looked up within each poll's deadline and kept a while.
        self._resolver = Resolver(*_host_port(url), _LOOKUP_THREAD)

    def _loop(self) -> None:
        start = self.clock.monotonic_ns()
        deadline = start
        while not self.stop_event.is_set():
            if not self.clock.sleep_until_ns(deadline, self.stop_event):
                return
            self.poll_once()
            deadline += self.period_ns
            now = self.clock.monotonic_ns()
            if now - deadline >= self.period_ns:
                # A poll that ran past whole periods (a slow server): skip them, no burst.
                deadline += (now - deadline) // self.period_ns * self.period_ns

    def poll_once(self) -> ProverStatus | None:
        """One request, parsed and handed on; None (counted, maybe said) when it failed."""
        t_mono, t_wall = self.clock.monotonic_ns(), self.clock.wall_s()
        t0 = time.perf_counter()
        try:
            body = fetch_status(self.url, self.timeout_s, resolver=self._resolver,
                                stopped=self.stop_event.is_set)
            latency_ms = (time.perf_counter() - t0) * 1000.0
            dropped: dict[str, int] = {}
            status = parse_status(body, self.prover, t_mono, t_wall, latency_ms, dropped)
        except StatusError as exc:
            if exc.reason != "stopped":  # cut by `stop`: no failure of the server's
                self._failed(exc, t_mono, t_wall)
            return None
        except Exception as exc:  # noqa: BLE001 - a poller bug must not stop polling
            self._failed(StatusError("internal", f"gapwatch could not read it: {exc!r}"),
                         t_mono, t_wall)
            return None
        if dropped.get("cut_items") and not self.counters.get("cut_items"):
            self._notice(t_mono, t_wall, "warning",
                         f"cuzk status {self.url}: an answer listing more than gapwatch reads "
                         f"per poll ({MAX_PIPELINES_PER_POLL} jobs, {MAX_PARTITIONS_PER_POLL} "
                         f"partitions, {MAX_WORKERS_PER_POLL} workers); the first are read, "
                         "the rest counted (cut_items), said once")
        if dropped.get("text_cut") and not self.counters.get("text_cut"):
            self._notice(t_mono, t_wall, "warning",
                         f"cuzk status {self.url}: a job id or other text over "
                         f"{MAX_TEXT_CHARS} characters; kept cut, counted (text_cut), said once")
        with self._lock:
            for key, n in dropped.items():
                self.counters[key] = self.counters.get(key, 0) + n
            self.polls += 1
            self.ok += 1
            self._state = "ok"
            self._last_latency_ms = latency_ms
            self._last_ok_wall_s = t_wall
            recovered, self._failing_since = self._failing_since, None
            self._refused_said_since_ok = False
        if recovered:
            self._notice(t_mono, t_wall, "info",
                         f"cuzk status {self.url}: answering again after {recovered} failed "
                         "polls")
        try:
            self._on_status(status)
        except Exception as exc:  # noqa: BLE001 - a failing consumer must not stop polling
            self._notice(t_mono, t_wall, "error", f"cuzk status consumer failed: {exc!r}")
        return status

    def _failed(self, exc: StatusError, t_mono: int, t_wall: float) -> None:
        """A failed poll counted, and said where it is the first of its reason, or a refusal
        after the URL had answered (the prover stopped answering: said each time, with what
        it had answered, never as a question about the address: `refused_words`)."""
        said = str(exc)
        with self._lock:
            self.polls += 1
            say = exc.reason not in self.errors
            self.errors[exc.reason] = self.errors.get(exc.reason, 0) + 1
            self._state = exc.reason
            self._failing_since = (self._failing_since or 0) + 1
            if exc.reason == "refused" and self.ok:
                said = refused_words(self.ok, self._last_ok_wall_s)
                say = not self._refused_said_since_ok
                self._refused_said_since_ok = True
        if say:
            self._notice(t_mono, t_wall, "warning",
                         f"{_SAID_HEAD}{self.url}: {said}; polling goes on, failures counted "
                         f"({exc.reason})")

    def _notice(self, t_mono: int, t_wall: float, level: NoticeLevel, message: str) -> None:
        if self._on_notice is not None:
            self._on_notice(Notice(t_mono_ns=t_mono, t_wall_s=t_wall,
                                   level=level, message=message))

    def status(self) -> PollerStatus:
        with self._lock:
            return PollerStatus(
                url=self.url, prover=self.prover, period_s=self.period_ns / 1e9,
                state=self._state, polls=self.polls, ok=self.ok, errors=dict(self.errors),
                last_latency_ms=self._last_latency_ms, last_ok_wall_s=self._last_ok_wall_s,
                dropped_fields=self.counters.get("dropped_fields", 0),
            )
