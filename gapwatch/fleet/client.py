"""Prometheus's HTTP query API, asked with bounds: a deadline, a cap on what is read, typed
decoding of the answer. Every failure is a `PromError` whose message is for the footer.

Who calls it: `gapwatch.fleet.rows` (instant queries, every refresh), `gapwatch.fleet.targets`
(the targets API, `/api/v1/targets`, when a box is stale) and `gapwatch.fleet.detail` (range
queries, when a box is opened). Everything Prometheus sends is outside input: a body over
`max_bytes` is refused unread, an answer of more than MAX_SERIES series or MAX_POINTS points
is refused before any is built, JSON of another shape is refused by its schema (msgspec), label
values and a target's words are kept as text, cut where long with a mark that they were (the
screen shows them through `fmt.visible`): a name (`NAME_LABELS`) is never cut to where two
would read the same (`kept_name`); numbers that are not finite become None.

One home for the HTTP exchange, `_send`: one deadline for the whole of it (connect, request,
status line, headers, body), kept by a watchdog that shuts the socket when it passes, since a
socket timeout bounds each read only and a server dripping a byte at a time never trips it;
redirects are named, never followed (the API does not redirect, and following one turned the
POST into a bodyless GET to wherever the server said, with a fresh timeout per hop); whatever
http.client raises about a reply that is not HTTP is a `PromError`; a body shorter than its
Content-Length is said to be cut short. The host name is looked up, and each address
connected, within the same deadline (`gapwatch.base.host_connect`, shared with the cuzk
`/status` poller: `getaddrinfo` has no timeout of its own, and a resolver that does not answer
held a refresh for its own retries, 10-30 s), the answer kept for `RESOLVED_FOR_S`.

An address that is no Prometheus but a `/metrics` exporter (a box's own gapwatch, the likeliest
wrong `--prometheus`) is named so (`not_prometheus`): its query API answers 501 or 404, or its
answer is exposition text.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.client
import math
import re
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

import msgspec

# Read at each query (a monkeypatched value too): how long a looked-up address is used.
from gapwatch.base.host_connect import RESOLVED_FOR_S, Resolver, connect_any

#: What one answer may weigh: 200 GPUs' worth of series is ~100 KiB; 16 MiB leaves room for a
#: farm of thousands and still bounds memory when Prometheus (or what answers in its place)
#: sends without end.
MAX_BODY_BYTES = 16 * 1024 * 1024
#: The most series one answer may hold (a hostile or misconfigured server's millions of tiny
#: series would otherwise cost far more memory than their bytes).
MAX_SERIES = 100_000
#: The most points one range answer may hold, all its series together: a box's detail of 256
#: GPUs, 16 kinds of gaps each, over its 31 minutes is 127,000. Each point built costs ~140
#: bytes for its 8 bytes of JSON: 2,000,000 of them (16 MiB) were 474 MB at the peak.
MAX_POINTS = 500_000


#: The labels fleet reads (rows and detail); a series keeps only these. Prometheus sends every
#: label of a series, and a hostile or misconfigured one thousands of them: kept whole, 13 MB
#: of them cost 1.3 GB across a refresh's answers.
#: `verdict`: how a PoSt went wrong, of the PoSt advice (`rows.post_setting_of`); `job`: the
#: scrape jobs that have gapwatch's rows, asked when the selector picks none
#: (`queries.JOBS_WITH_ROWS`).
READ_LABELS = ("instance", "gpu", "state", "kind", "cause", "cause_words", "setting", "step",
               "verdict", "job")
#: What one label value of words (a cause's, a setting, a state) may keep; a longer one ends
#: in "…". A cause's words fit many times over.
MAX_LABEL_CHARS = 256
#: The labels that name a thing: a box, a GPU, a scrape job. Two values are two things, so a
#: name is never cut to where two would read the same (`kept_name`): cut at 256 characters
#: like the words, two boxes whose names differed past it were one row, and the detail asked
#: Prometheus about the cut name, matched nothing, and said "no gap closed".
NAME_LABELS = frozenset({"instance", "gpu", "job"})
#: What a name keeps whole: a DNS name of 253 characters and its port (259) fit four times.
#: A longer one is kept as its first MAX_NAME_CHARS characters, "…" and a digest of the whole
#: (`kept_name`): bounded, told apart, and known to be cut (`name_was_cut`).
MAX_NAME_CHARS = 1024
#: What a target's words (its `lastError`, `health`, `scrapeUrl`) may keep: Go's longest scrape
#: error (a URL, an address, the innermost cause) is ~150 characters; a longer one ends in "…".
MAX_TARGET_TEXT_CHARS = 256
#: How long a targets answer is used before the API is asked again: a box stale for the whole
#: `--lookback` kept a refresh every 5 s downloading every active target (up to 16 MiB, ~0.4 s
#: of decoding on 2 cores); a reason is then at most this old (three refreshes).
TARGETS_FOR_S = 15.0


#: What a query API answers where the address is no Prometheus: a `/metrics` exporter takes no
#: POST (prometheus_client's server, gapwatch's `--prometheus PORT`: 501 Unsupported method),
#: or serves no such path (404). Prometheus itself answers its query API with 200, or 400, 422
#: or 503 and its error JSON.
NOT_AN_API_STATUSES = (404, 501)
#: The start of Prometheus's exposition text (what a `/metrics` page is): a HELP or TYPE line.
_EXPOSITION = re.compile(rb"\s*# (?:HELP|TYPE) [a-zA-Z_:]")


class PromError(Exception):
    """A query failed; the message says how in a few words (timeout, HTTP 503, bad JSON...)."""


class _Labels(msgspec.Struct):
    """The labels of READ_LABELS; msgspec skips the others without building them."""

    instance: str | None = None
    gpu: str | None = None
    state: str | None = None
    kind: str | None = None
    cause: str | None = None
    cause_words: str | None = None
    setting: str | None = None
    step: str | None = None
    verdict: str | None = None
    job: str | None = None


#: The shape of an answer's `data`: query results, or the targets.
_D = TypeVar("_D")


class _Sample(msgspec.Struct):
    """One series of an answer; a range answer's points unbuilt (`msgspec.Raw`) until they
    are counted (`_points_in`)."""

    metric: _Labels
    value: tuple[float, str] | None = None
    values: msgspec.Raw = msgspec.Raw(b"null")  # a Raw takes no union: null is none


_POINTS_DECODER = msgspec.json.Decoder(list[tuple[float, str]] | None)


class _Data(msgspec.Struct):
    """An answer's series, unbuilt (`msgspec.Raw`: where each lies in the body): counted
    before any is built (`PromClient._ask`). 16 MiB of series of no label are 541,000 of
    them: built, 182 MB, before MAX_SERIES refused the answer; unbuilt, 31 MB."""

    resultType: str  # noqa: N815 - Prometheus's own field name
    result: list[msgspec.Raw]


class _Answer(msgspec.Struct, Generic[_D]):
    """Any answer of the API: its `data` (of the endpoint's own shape) or Prometheus's error."""

    status: str
    data: _D | None = None
    error: str | None = None
    errorType: str | None = None  # noqa: N815 - Prometheus's own field name


_DECODER = msgspec.json.Decoder(_Answer[_Data])
_SAMPLE_DECODER = msgspec.json.Decoder(_Sample)


class _Target(msgspec.Struct):
    """One of `/api/v1/targets`' `activeTargets`; its other fields (`discoveredLabels`, the
    biggest) are skipped unbuilt. `labels` is kept raw: only the ones asked for are decoded."""

    labels: msgspec.Raw
    health: str = "unknown"
    lastError: str = ""  # noqa: N815 - Prometheus's own field name
    lastScrape: str = ""  # noqa: N815 - Prometheus's own field name
    scrapeUrl: str = ""  # noqa: N815 - Prometheus's own field name


class _TargetsData(msgspec.Struct):
    activeTargets: list[_Target]  # noqa: N815 - Prometheus's own field name


_TARGETS_DECODER = msgspec.json.Decoder(_Answer[_TargetsData])


@dataclass(frozen=True, slots=True)
class Series:
    """One series of an answer: its labels, and its value (instant) or points (range)."""

    labels: dict[str, str]
    value: float | None = None
    points: tuple[tuple[float, float | None], ...] = ()


def _number(text: str) -> float | None:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


@dataclass(frozen=True, slots=True)
class Target:
    """One target Prometheus scrapes, as its targets API says: the labels asked for (kept as
    a series' names are, `kept_name`), its `health` ("up", "down", "unknown"), its `lastError`
    ("" when the last scrape went well), when it last tried (None: never, or a time that is
    not one) and the URL it scrapes. Its other texts are Prometheus's, cut to
    MAX_TARGET_TEXT_CHARS."""

    labels: dict[str, str]
    health: str
    last_error: str
    last_scrape_t_wall_s: float | None
    scrape_url: str


class PromClient:
    """Queries one Prometheus (`base_url`, e.g. http://prom:9090). Not thread-safe to share its
    counters; one refresh at a time uses it."""

    def __init__(self, base_url: str, timeout_s: float = 5.0,
                 max_bytes: int = MAX_BODY_BYTES) -> None:
        parsed = urllib.parse.urlsplit(base_url if "//" in base_url else f"http://{base_url}")
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"--prometheus {base_url!r}: give an http(s) URL, e.g. "
                             "http://127.0.0.1:9090")
        try:
            port = parsed.port  # a port that is not a number, or past 65535, raises here
        except ValueError:
            raise ValueError(f"--prometheus {base_url!r}: the port is not a number from 1 "
                             "to 65535") from None
        if parsed.username is not None or parsed.password is not None:
            # Said here rather than sent on as part of the host name (a DNS lookup of
            # "user:secret@prom"), and never shown on the screen's title.
            raise ValueError("--prometheus: a user or password in the URL is not supported")
        if not (parsed.netloc + parsed.path).isprintable() or " " in base_url:
            raise ValueError(f"--prometheus {base_url!r}: spaces and control characters are "
                             "not allowed in the URL (write a space as %20)")
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = port
        self._resolver = Resolver(parsed.hostname, port or (443 if self._https else 80),
                                  thread_name="gapwatch-fleet-dns")
        self._path = parsed.path.rstrip("/")
        self.base_url = urllib.parse.urlunsplit(
            (parsed.scheme, parsed.netloc, parsed.path.rstrip("/"), "", ""))
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        #: Seconds the last query spent waiting for Prometheus (request sent to body read).
        self.last_wait_s = 0.0
        #: The last targets answer: when it was read (monotonic), for which labels, the targets.
        self._targets: tuple[float, tuple[str, ...], list[Target]] | None = None
        #: Set by `abort`: no query starts, and those in flight are cut (see `abort`).
        self._aborted = threading.Event()
        #: The queries in flight, each by its watchdog: the screen's refresh and a box's
        #: detail ask from two threads at once.
        self._in_flight: set[_Watchdog] = set()
        self._in_flight_lock = threading.Lock()

    def abort(self) -> None:
        """End every query in flight now (its socket shut, as its deadline would; a lookup or
        a connect too) and refuse any later one: the screen's refresh runs on a thread Python
        waits for at exit, so a stop signal or `q` while Prometheus was slow left the process
        running until the refresh's deadline (`--timeout`), its terminal already given back.
        Safe from any thread."""
        with self._in_flight_lock:
            self._aborted.set()
            flying = list(self._in_flight)
        for watchdog in flying:
            watchdog.fire()

    def instant(self, expr: str, timeout_s: float | None = None) -> list[Series]:
        """`/api/v1/query` at now: one value per series."""
        return self._ask("query", {"query": expr}, timeout_s)

    def range(self, expr: str, start_s: float, end_s: float, step_s: float,
              timeout_s: float | None = None) -> list[Series]:
        """`/api/v1/query_range`: points per series (None where a value is not finite)."""
        return self._ask("query_range", {"query": expr, "start": f"{start_s:.3f}",
                                         "end": f"{end_s:.3f}", "step": f"{step_s:g}"},
                         timeout_s)

    def targets(self, label_names: tuple[str, ...], timeout_s: float | None = None
                ) -> list[Target]:
        """`/api/v1/targets?state=active`: every target Prometheus scrapes now, each with only
        the labels of `label_names` (a target has dozens; a hostile answer thousands). The API
        filters by no label: the caller picks its targets. At most MAX_SERIES of them. An answer
        read less than TARGETS_FOR_S ago is given again (`last_wait_s` 0)."""
        held = self._targets
        if held is not None and held[1] == label_names \
                and time.monotonic() - held[0] < TARGETS_FOR_S:
            self.last_wait_s = 0.0
            return held[2]
        # GET: the targets API takes no POST (405 Method Not Allowed).
        body = self._send("GET", "targets", {"state": "active"}, timeout_s)
        answer = self._answer(_TARGETS_DECODER, body)
        if answer.status != "success" or answer.data is None:
            raise _refusal(answer)
        found = answer.data.activeTargets
        if len(found) > MAX_SERIES:
            raise PromError(f"answer has {len(found)} targets (at most {MAX_SERIES})")
        labels_decoder = _labels_decoder(label_names)
        targets = [_target(t, label_names, labels_decoder) for t in found]
        self._targets = (time.monotonic(), label_names, targets)
        return targets

    def not_prometheus(self, status: int | None = None) -> str:
        """What to say of an address that answers like a `/metrics` exporter (gapwatch's own,
        its `--prometheus HOST:PORT`: the likeliest wrong address) where Prometheus's API
        should be: which it is, and where to point instead. `status`: the HTTP status its
        query API gave (None: it answered with exposition text)."""
        how = (f"HTTP {status} on /api/v1/query" if status is not None else
               "its answer is /metrics text")
        # A 404 is also what Prometheus served under a path prefix answers without it.
        prefix = " (with its path prefix, if it is served under one)" if status == 404 else ""
        return (f"{self.base_url} answers like a /metrics exporter, not Prometheus ({how}): "
                f"point --prometheus at the Prometheus server that scrapes it{prefix}")

    def _answer(self, decoder: msgspec.json.Decoder[Any], body: bytes) -> Any:
        """`body` decoded against its schema (`_decoded`), but exposition text (what any
        path of gapwatch's `/metrics` server answers to a GET) is said as the wrong address
        it is, not as "not Prometheus JSON"."""
        if _EXPOSITION.match(body):
            raise PromError(self.not_prometheus())
        return _decoded(decoder, body)

    def _ask(self, path: str, form: dict[str, str], timeout_s: float | None) -> list[Series]:
        answer = self._answer(_DECODER, self._send("POST", path, form, timeout_s))
        if answer.status != "success" or answer.data is None:
            raise _refusal(answer)
        result = answer.data.result
        if len(result) > MAX_SERIES:
            raise PromError(f"answer has {len(result)} series (at most {MAX_SERIES})")
        samples = [_decoded(_SAMPLE_DECODER, raw) for raw in result]
        points = sum(_points_in(s) for s in samples)
        if points > MAX_POINTS:
            raise PromError(f"answer has {points} points (at most {MAX_POINTS})")
        return [_series(s) for s in samples]

    def _send(self, method: str, api: str, form: dict[str, str], timeout_s: float | None
              ) -> bytes:
        """`form` to `/api/v1/<api>` (the body of a POST, the query of a GET); the body of a
        200 answer, read within `timeout_s` (the client's own when None) in all."""
        timeout = self.timeout_s if timeout_s is None else max(0.05, timeout_s)
        encoded = urllib.parse.urlencode(form)
        path = f"{self._path}/api/v1/{api}"
        if method == "GET":
            path, data = f"{path}?{encoded}", None
        else:
            data = encoded.encode()
        return self._exchange_within(method, path, data, timeout)

    def _exchange_within(self, method: str, path: str, data: bytes | None, timeout_s: float
                         ) -> bytes:
        """One request, its whole exchange within `timeout_s`; every failure a PromError."""
        conn: http.client.HTTPConnection
        tls = ssl.create_default_context() if self._https else None
        if tls is not None:
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=timeout_s,
                                               context=tls)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout_s)
        with self._in_flight_lock:  # `abort` sees this query, or this sees `abort`
            if self._aborted.is_set():
                raise PromError("stopped")
            watchdog = _Watchdog(timeout_s)
            self._in_flight.add(watchdog)
        started = time.monotonic()
        try:
            conn.sock = self._connect(started + timeout_s, timeout_s, tls, watchdog)
            return self._exchange(conn, method, path, data, watchdog)
        except PromError:
            raise  # said already (an error status keeps its words past the deadline)
        except TimeoutError:
            raise PromError("stopped" if self._aborted.is_set() else
                            f"no answer within {timeout_s:g} s") from None
        except (http.client.HTTPException, OSError, ValueError) as exc:
            if watchdog.fired:  # whatever the shut socket made the read say
                raise PromError("stopped" if self._aborted.is_set() else
                                f"no answer within {timeout_s:g} s") from None
            if isinstance(exc, http.client.HTTPException):
                # BadStatusLine, LineTooLong, too many headers, a bad chunk: not an OSError,
                # these escaped and `fleet --once` died with a traceback.
                raise PromError(f"not an HTTP answer ({type(exc).__name__}: "
                                f"{str(exc)[:80]!r})") from None
            if isinstance(exc, ssl.SSLError):
                raise PromError(f"TLS failed: {str(exc)[:120]}") from None
            if isinstance(exc, ConnectionRefusedError | socket.gaierror):
                raise PromError(f"cannot reach Prometheus: {str(exc)[:120]}") from None
            raise PromError(f"connection failed: {str(exc)[:120]}") from None
        finally:
            with self._in_flight_lock:
                self._in_flight.discard(watchdog)
            watchdog.cancel()
            conn.close()
            self.last_wait_s = time.monotonic() - started

    def _connect(self, deadline: float, timeout_s: float, tls: ssl.SSLContext | None,
                 watchdog: _Watchdog) -> socket.socket:
        """A socket connected to the host: its addresses (looked up by `deadline`) tried in
        turn, each within the time left; under TLS, wrapped for the host's name. What
        `HTTPConnection.connect` does, with the lookup bounded too, and both cut by `abort`
        (the lookup's wait ends, the connecting socket is `watchdog`'s: a firewall that drops
        the SYN, or a slow DNS, held a quit for the whole `--timeout`)."""
        try:
            addresses = self._resolver.addresses(deadline, self._aborted.is_set,
                                                 RESOLVED_FOR_S)
        except TimeoutError:
            if self._aborted.is_set():
                raise
            raise PromError(f"no answer within {timeout_s:g} s (looking up "
                            f"{self._host[:80]!r} took longer)") from None
        sock = connect_any(addresses, deadline, lambda: watchdog.fired, self._host)
        try:
            watchdog.watch(sock)  # shut at once if it fired meanwhile
            with contextlib.suppress(OSError):  # as http.client: best effort
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tls is not None:
                # The handshake takes the socket's timeout as its whole deadline: the time
                # left, not a fresh `timeout_s`. Watched from its start (the wrapped socket
                # is a new one: the plain one is detached from its descriptor). A failed
                # handshake tries no other address, as `HTTPSConnection.connect`.
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                sock = tls.wrap_socket(sock, server_hostname=self._host,
                                       do_handshake_on_connect=False)
                watchdog.watch(sock)
                sock.do_handshake()
            sock.settimeout(timeout_s)
            return sock
        except OSError:
            sock.close()
            raise

    def _exchange(self, conn: http.client.HTTPConnection, method: str, path: str,
                  data: bytes | None, watchdog: _Watchdog) -> bytes:
        # Handed over now: http.client sets `conn.sock` to None once a reply says it will
        # close, while the reply still reads through that socket.
        watchdog.watch(conn.sock)
        headers = {"Accept": "application/json", "Connection": "close"}
        if data is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path or "/", body=data, headers=headers)
        with conn.getresponse() as resp:  # closed on every way out: the socket with it
            return self._body(resp, watchdog, path)

    def _body(self, resp: http.client.HTTPResponse, watchdog: _Watchdog, path: str) -> bytes:
        if 300 <= resp.status < 400:
            where = resp.getheader("Location") or "nowhere"
            raise PromError(f"HTTP {resp.status}: redirected to {where[:120]!r}, not followed "
                            "(give --prometheus the URL that answers)")
        if resp.status in NOT_AN_API_STATUSES and "/api/v1/query" in path:
            raise PromError(self.not_prometheus(resp.status))
        if resp.status != 200:
            # Prometheus answers 400/422/503 with a JSON error: say its words when it has them.
            detail = _error_words(resp)
            raise PromError(f"HTTP {resp.status}{': ' + detail if detail else ''}")
        body = _read_capped(resp, self.max_bytes)
        if watchdog.fired:  # the shut socket ended the body early: not the answer
            raise PromError(f"no answer within {watchdog.timeout_s:g} s")
        declared = (resp.getheader("Content-Length") or "").strip()
        if declared.isdigit() and len(body) < int(declared):
            raise PromError(f"the answer was cut short: {len(body)} of {int(declared)} bytes")
        return body


class _Watchdog:
    """Shuts the watched socket when `timeout_s` has passed, unless cancelled first: the
    blocked read (of headers or body, plain or TLS) then returns at once. `fired` says it did.
    Until a socket is watched, connecting is bounded by `PromClient._connect` (the lookup and
    each try within the time left)."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._done = False
        self.fired = False
        self._timer = threading.Timer(timeout_s, self.fire)
        self._timer.daemon = True
        self._timer.start()

    def fire(self) -> None:
        """Shut the watched socket as the deadline does (the timer; `PromClient.abort` now)."""
        with self._lock:
            if self._done:
                return
            self.fired = True
            sock = self._sock
        self._shut(sock)

    def watch(self, sock: socket.socket | None) -> None:
        """From now on the deadline shuts `sock` (at once when it has passed already)."""
        with self._lock:
            self._sock = sock
            fired = self.fired
        if fired:
            self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket | None) -> None:
        if sock is not None:
            try:
                # The plain socket's shutdown, also under TLS: SSLSocket.shutdown would drop
                # the TLS state under the thread reading through it.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass  # already closed: the query ended as the deadline passed

    def cancel(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()


def _read_capped(resp: http.client.HTTPResponse, cap: int) -> bytes:
    """At most `cap` bytes of the body; more is an error (the rest is never read)."""
    read = resp.read
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = read(min(1 << 16, cap + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:
            raise PromError(f"answer larger than {cap // (1024 * 1024)} MiB: not read")


def _error_words(resp: http.client.HTTPResponse) -> str:
    try:
        body = resp.read(4096)
        answer = msgspec.json.decode(body, type=_Answer[Any])
    except Exception:  # noqa: BLE001 - any body at all: the status code says enough
        return ""
    return (answer.error or "")[:120]


#: What an answer's `errorType` (or a `status` other than "success") may keep: Prometheus's
#: are a word (`bad_data`, `timeout`, `execution`); a 3 MB one was a 3 MB line on stderr, in
#: `--json`'s errors and on the screen's footer.
MAX_ERROR_TYPE_CHARS = 40


def _refusal(answer: _Answer[Any]) -> PromError:
    """Prometheus's own "status": "error" answer (or one without data), in its words, each
    cut (shown through `fmt.visible` where it is said)."""
    kind = answer.errorType or answer.status
    return PromError(f"Prometheus said {_cut(kind, MAX_ERROR_TYPE_CHARS)}: "
                     f"{(answer.error or '')[:120]}")


def _decoded(decoder: msgspec.json.Decoder[Any], body: bytes) -> Any:
    """`body` decoded against its schema; any other shape is a PromError, not a guess."""
    try:
        return decoder.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise PromError(f"answer is not Prometheus JSON ({str(exc)[:80]})") from None


@functools.lru_cache(maxsize=8)
def _labels_decoder(names: tuple[str, ...]) -> msgspec.json.Decoder[Any]:
    """A decoder of a target's `labels` that builds only `names` (a struct of one field per
    name, renamed: a label may be called `class` or `def`) and skips the others unbuilt."""
    fields = [(f"l{i}", str | None, None) for i in range(len(names))]
    kind = msgspec.defstruct("_TargetLabels", fields,
                             rename={f"l{i}": name for i, name in enumerate(names)})
    return msgspec.json.Decoder(kind)


def _cut(text: str, limit: int = MAX_TARGET_TEXT_CHARS) -> str:
    # Said cut ("…"), not cut silently: a scrape error's end is its innermost cause.
    return text if len(text) <= limit else text[:limit - 1] + "…"


def kept_name(text: str) -> str:
    """A name label's value as fleet keeps it: whole up to MAX_NAME_CHARS characters, else
    its start, "…" and 16 hex digits of a digest of the whole, so that names that differ
    anywhere stay apart. Who calls it: `_series` and `_target` (a target's labels are matched
    to the rows' names)."""
    if len(text) <= MAX_NAME_CHARS:
        return text
    digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    return f"{text[:MAX_NAME_CHARS]}…{digest}"


def name_was_cut(name: str) -> bool:
    """Whether `name` (from `kept_name`) is not the whole name Prometheus has: only a cut one
    is longer than MAX_NAME_CHARS. Its rows are said cut and counted (`rows.Refresh`), and its
    detail is not asked for (`detail.box_lines`): no series has that name."""
    return len(name) > MAX_NAME_CHARS


def _label(name: str, text: str) -> str:
    """A label's value as kept: a name by `kept_name`, words cut to MAX_LABEL_CHARS with
    "…" (they were cut with nothing said)."""
    return kept_name(text) if name in NAME_LABELS else _cut(text, MAX_LABEL_CHARS)


def _target(t: _Target, names: tuple[str, ...], decoder: msgspec.json.Decoder[Any]) -> Target:
    labels = _decoded(decoder, t.labels)
    # Every one as a name: `instance` must be the rows' own, and the others are matched
    # against the selector's values (cut words would match where the whole does not).
    kept = {name: kept_name(text) for i, name in enumerate(names)
            if (text := getattr(labels, f"l{i}")) is not None}
    return Target(kept, _cut(t.health), _cut(t.lastError), _wall_s(t.lastScrape),
                  _cut(t.scrapeUrl))


def _wall_s(rfc3339: str) -> float | None:
    """Prometheus's time (RFC 3339, nanoseconds) as Unix seconds; None for Go's zero time (a
    target never scraped: year 1) and for anything that is not a time."""
    try:
        t = datetime.fromisoformat(rfc3339[:64]).timestamp()
    except (ValueError, OverflowError, OSError):
        return None
    return t if t > 0 else None


def _points_in(s: _Sample) -> int:
    """How many points a series' `values` holds, counted without building them: one `[`
    each. A number or its string holds none; a string that does (no Prometheus sends one) is
    counted more, and its answer refused the sooner."""
    return max(0, bytes(s.values).count(b"[") - 1)


def _series(s: _Sample) -> Series:
    value = _number(s.value[1]) if s.value is not None else None
    points = tuple((t, _number(v)) for t, v in _decoded(_POINTS_DECODER, s.values) or ())
    labels = {name: _label(name, text) for name in READ_LABELS
              if (text := getattr(s.metric, name)) is not None}
    return Series(labels, value, points)
