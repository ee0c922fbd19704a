"""Prometheus's HTTP query API, asked with bounds: a timeout, a cap on what is read, typed
decoding of the answer. Every failure is a `PromError` whose message is for the footer.

Who calls it: `gapwatch.fleet.rows` (instant queries, every refresh) and `gapwatch.fleet.detail`
(range queries, when a box is opened). Everything Prometheus sends is outside input: a body over
`max_bytes` is refused unread, JSON of another shape is refused by its schema (msgspec), label
values are kept as text (the screen shows them through `fmt.visible`), numbers that are not
finite become None.
"""

from __future__ import annotations

import math
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

import msgspec

#: What one answer may weigh: 200 GPUs' worth of series is ~100 KiB; 16 MiB leaves room for a
#: farm of thousands and still bounds memory when Prometheus (or what answers in its place)
#: sends without end.
MAX_BODY_BYTES = 16 * 1024 * 1024
#: The most series one answer may hold (a hostile or misconfigured server's millions of tiny
#: series would otherwise cost far more memory than their bytes).
MAX_SERIES = 100_000


class PromError(Exception):
    """A query failed; the message says how in a few words (timeout, HTTP 503, bad JSON...)."""


class _Sample(msgspec.Struct):
    metric: dict[str, str]
    value: tuple[float, str] | None = None
    values: list[tuple[float, str]] | None = None


class _Data(msgspec.Struct):
    resultType: str  # noqa: N815 - Prometheus's own field name
    result: list[_Sample]


class _Answer(msgspec.Struct):
    status: str
    data: _Data | None = None
    error: str | None = None
    errorType: str | None = None  # noqa: N815 - Prometheus's own field name


_DECODER = msgspec.json.Decoder(_Answer)


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


class PromClient:
    """Queries one Prometheus (`base_url`, e.g. http://prom:9090). Not thread-safe to share its
    counters; one refresh at a time uses it."""

    def __init__(self, base_url: str, timeout_s: float = 5.0,
                 max_bytes: int = MAX_BODY_BYTES) -> None:
        parsed = urllib.parse.urlsplit(base_url if "//" in base_url else f"http://{base_url}")
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"--prometheus {base_url!r}: give an http(s) URL, e.g. "
                             "http://127.0.0.1:9090")
        self.base_url = urllib.parse.urlunsplit(
            (parsed.scheme, parsed.netloc, parsed.path.rstrip("/"), "", ""))
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        #: Seconds the last query spent waiting for Prometheus (request sent to body read).
        self.last_wait_s = 0.0

    def instant(self, expr: str, timeout_s: float | None = None) -> list[Series]:
        """`/api/v1/query` at now: one value per series."""
        return self._ask("query", {"query": expr}, timeout_s)

    def range(self, expr: str, start_s: float, end_s: float, step_s: float,
              timeout_s: float | None = None) -> list[Series]:
        """`/api/v1/query_range`: points per series (None where a value is not finite)."""
        return self._ask("query_range", {"query": expr, "start": f"{start_s:.3f}",
                                         "end": f"{end_s:.3f}", "step": f"{step_s:g}"},
                         timeout_s)

    def _ask(self, path: str, form: dict[str, str], timeout_s: float | None) -> list[Series]:
        timeout = self.timeout_s if timeout_s is None else max(0.05, timeout_s)
        body = self._post(f"{self.base_url}/api/v1/{path}", form, timeout)
        try:
            answer = _DECODER.decode(body)
        except (msgspec.DecodeError, RecursionError) as exc:
            raise PromError(f"answer is not Prometheus JSON ({str(exc)[:80]})") from None
        if answer.status != "success" or answer.data is None:
            raise PromError(f"Prometheus said {answer.errorType or answer.status}: "
                            f"{(answer.error or '')[:120]}")
        result = answer.data.result
        if len(result) > MAX_SERIES:
            raise PromError(f"answer has {len(result)} series (at most {MAX_SERIES})")
        return [_series(s) for s in result]

    def _post(self, url: str, form: dict[str, str], timeout: float) -> bytes:
        data = urllib.parse.urlencode(form).encode()
        request = urllib.request.Request(url, data=data, method="POST", headers={
            "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310
                body = _read_capped(resp, self.max_bytes)
        except urllib.error.HTTPError as exc:
            # Prometheus answers 400/422/503 with a JSON error: say its words when it has them.
            detail = _error_words(exc)
            raise PromError(f"HTTP {exc.code}{': ' + detail if detail else ''}") from None
        except TimeoutError:
            raise PromError(f"no answer within {timeout:g} s") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise PromError(f"no answer within {timeout:g} s") from None
            raise PromError(f"cannot reach Prometheus: {str(reason)[:120]}") from None
        except (OSError, ValueError) as exc:  # reset mid-body, bad status line, ...
            raise PromError(f"connection failed: {str(exc)[:120]}") from None
        finally:
            self.last_wait_s = time.monotonic() - started
        return body


def _read_capped(resp: Any, cap: int) -> bytes:
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


def _error_words(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read(4096)
        answer = msgspec.json.decode(body, type=_Answer)
    except Exception:  # noqa: BLE001 - any body at all: the status code says enough
        return ""
    return (answer.error or "")[:120]


def _series(s: _Sample) -> Series:
    value = _number(s.value[1]) if s.value is not None else None
    points = tuple((t, _number(v)) for t, v in (s.values or ()))
    return Series(dict(s.metric), value, points)
