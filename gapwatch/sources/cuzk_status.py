"""cuzk's `GET /status` as a live source: the JSON read into `ProverStatus` records, and the poller.

Who calls it: `gapwatch.engine.runtime` starts one `StatusPoller` per status URL (`--cuzk-status
URL`, `[cuzk] status_url`) beside the log follower; the simulator's speed-0 feed and the tests
call `parse_status` directly. The poller hands each snapshot to `Session.on_record`.

What the server is (`../shared/reference/cuzk-status.md`): a hand-written HTTP/1.1 server on raw
TCP, one request per connection, `Connection: close`. Building the snapshot takes the status
tracker's write lock, the same lock the GPU workers take on their hot path, so the poller asks
about once a second by default (`[cuzk] status_period_s`, floor 0.1 s) with a short timeout.

The poller runs on its own thread and never touches the session while a request is in flight:
a slow, refusing or broken server costs the poller its own time, never the 100 ms sampler's.
Every failed poll is counted by reason (`ERROR_REASONS`; `http_<code>` for a status other than
200), the first of each reason (and the recovery) becomes a notice, and polling goes on.

Parsing is lenient field by field: cuzk may omit a field, add new ones (ignored) or a future
version may change one's type; such a field is None (never 0) and counted (`dropped_fields`),
the rest of the snapshot is kept. Only a body that is not JSON, or not an object, is refused.
"""

from __future__ import annotations

import http.client
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from gapwatch.base.background import Background
from gapwatch.base.clock import Clock, SystemClock
from gapwatch.core.bounds import INT64_MAX, INT64_MIN, MAX_GPU_INDEX
from gapwatch.core.models import (
    PARTITION_STATES,
    WORKER_STATES,
    Notice,
    ProverPartition,
    ProverStatus,
    ProverWorker,
)

#: Why a poll failed (`http_<code>` is added for any status other than 200).
ERROR_REASONS: tuple[str, ...] = (
    "refused", "timeout", "connection", "truncated", "too_large", "bad_json", "bad_schema",
    "internal",
)
#: A larger answer is refused (`too_large`): cuzk's snapshot drops jobs done > 30 s ago, so a
#: real one is a few hundred KiB at most.
MAX_BODY_BYTES = 8 << 20

_T = TypeVar("_T")
# The bounds of `gapwatch.core.bounds` as pydantic reads them: this document is decoded by
# pydantic, records by the record codec (which reads the bounds' msgspec form).
I64 = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
GpuIndex = Annotated[int, Field(ge=0, le=MAX_GPU_INDEX)]


class StatusError(Exception):
    """A poll that gave no snapshot; `reason` is one of `ERROR_REASONS` or `http_<code>`."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _or_none(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    """A field that does not validate is None (and counted), so one odd field never costs the
    whole snapshot."""
    try:
        return handler(value)
    except ValidationError:
        ctx = info.context
        if isinstance(ctx, dict):
            ctx["dropped"] = ctx.get("dropped", 0) + 1
        return None


#: A field that may be missing or malformed: None then.
Lenient = Annotated[_T | None, WrapValidator(_or_none)]


class _Model(BaseModel):
    # Fields cuzk adds later are ignored; nothing here is required.
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Synthesis(_Model):
    max_concurrent: Lenient[I64] = None
    active: Lenient[I64] = None


class _Partition(_Model):
    index: Lenient[I64] = None
    state: Lenient[str] = None
    synth_ms: Lenient[I64] = None
    gpu_ms: Lenient[I64] = None


class _Pipeline(_Model):
    # A WindowPoSt job id holds spaces and brackets (`wdpost-1-2-[1 2 3]`): it is only a string.
    job_id: Lenient[str] = None
    proof_kind: Lenient[str] = None
    total_partitions: Lenient[I64] = None
    partitions_done: Lenient[I64] = None
    partitions: Lenient[list[Lenient[_Partition]]] = None


class _Worker(_Model):
    worker_id: Lenient[I64] = None
    gpu_ordinal: Lenient[GpuIndex] = None
    state: Lenient[str] = None
    current_job: Lenient[str] = None
    current_partition: Lenient[I64] = None
    busy_secs: Lenient[float] = None


class _Counters(_Model):
    total_completed: Lenient[I64] = None
    total_failed: Lenient[I64] = None
    queue_depth: Lenient[I64] = None


class StatusDocument(_Model):
    """The parts of cuzk's `/status` JSON that gapwatch reads (cuzk-status.md has all of it)."""

    uptime_secs: Lenient[float] = None
    synthesis: Lenient[_Synthesis] = None
    pipelines: Lenient[list[Lenient[_Pipeline]]] = None
    gpu_workers: Lenient[list[Lenient[_Worker]]] = None
    counters: Lenient[_Counters] = None


def _count(v: int | None) -> int | None:
    """A count or None: a negative count is not a reading."""
    return v if v is not None and v >= 0 else None


def _secs(v: float | None) -> float | None:
    return v if v is not None and 0 <= v < math.inf else None  # NaN fails both


def parse_status(body: bytes, prover: str, t_mono_ns: int, t_wall_s: float,
                 latency_ms: float, counters: dict[str, int] | None = None) -> ProverStatus:
    """cuzk's `/status` body -> one `ProverStatus`. Raises StatusError (`bad_json`,
    `bad_schema`). `counters["dropped_fields"]` counts fields that did not validate."""
    ctx: dict[str, int] = {}
    try:
        doc = StatusDocument.model_validate_json(body, context=ctx)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == "json_invalid":
            raise StatusError("bad_json", f"not JSON ({first['msg']})") from None
        raise StatusError("bad_schema", f"not a status object ({first['msg']})") from None
    if counters is not None and ctx.get("dropped"):
        counters["dropped_fields"] = counters.get("dropped_fields", 0) + ctx["dropped"]
    # Counts only when the document lists its pipelines at all (an empty list is 0 of each).
    counts: dict[str, int] = (dict.fromkeys(PARTITION_STATES, 0) if doc.pipelines is not None
                              else {})
    parts: list[ProverPartition] = []
    pipelines = [p for p in doc.pipelines or () if p is not None]
    for pipe in pipelines:
        for part in pipe.partitions or ():
            if part is None:
                continue
            # An unknown state (a newer cuzk) is counted as "other": label values stay bounded.
            state: str = part.state if part.state in PARTITION_STATES else "other"
            counts[state] = counts.get(state, 0) + 1
            if part.index is not None:
                parts.append(ProverPartition(
                    job_id=pipe.job_id or "?", index=part.index, state=state,
                    synth_ms=_count(part.synth_ms), gpu_ms=_count(part.gpu_ms),
                ))
    workers = [
        ProverWorker(
            worker_id=w.worker_id, gpu=_count(w.gpu_ordinal),
            state=w.state if w.state in WORKER_STATES else "other",
            job_id=w.current_job, partition=_count(w.current_partition),
            busy_s=_secs(w.busy_secs),
        )
        for w in doc.gpu_workers or () if w is not None and w.worker_id is not None
    ]
    syn, cnt = doc.synthesis, doc.counters
    return ProverStatus(
        prover=prover, t_mono_ns=t_mono_ns, t_wall_s=t_wall_s, latency_ms=latency_ms,
        uptime_s=_secs(doc.uptime_secs), partition_counts=counts, workers=workers,
        synthesis_active=_count(syn.active) if syn else None,
        synthesis_max=_count(syn.max_concurrent) if syn else None,
        queue_depth=_count(cnt.queue_depth) if cnt else None, jobs=len(pipelines),
        completed_total=_count(cnt.total_completed) if cnt else None,
        failed_total=_count(cnt.total_failed) if cnt else None, partitions=parts,
    )


def prover_name(url: str) -> str:
    """The short name of a status URL in records, metrics and the dashboard: `host:port`."""
    return urlsplit(url).netloc or url


def fetch_status(url: str, timeout_s: float, max_bytes: int = MAX_BODY_BYTES) -> bytes:
    """One `GET` of a status URL (a new connection, `Connection: close`, as cuzk serves it);
    the body of a 200 answer. Raises StatusError."""
    parts = urlsplit(url)
    path = parts.path or "/status"
    if parts.query:
        path += "?" + parts.query
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80,
                                      timeout=timeout_s)
    try:
        conn.request("GET", path, headers={"Connection": "close", "Accept": "application/json"})
        resp = conn.getresponse()
        if resp.length is not None and resp.length > max_bytes:
            raise StatusError("too_large", f"answer of {resp.length} bytes (over {max_bytes})")
        # With a Content-Length (cuzk always sends one), read() raises IncompleteRead when the
        # connection closes early; without one, read to the close, at most the limit.
        body = resp.read() if resp.length is not None else resp.read(max_bytes + 1)
        if len(body) > max_bytes:
            raise StatusError("too_large", f"answer over {max_bytes} bytes")
        if resp.status != 200:
            raise StatusError(f"http_{resp.status}",
                              f"HTTP {resp.status} {resp.reason}".rstrip())
        return body
    except ConnectionRefusedError:
        raise StatusError("refused", "connection refused (is cuzk's [daemon] status_listen "
                                     "set to this address?)") from None
    except TimeoutError:
        raise StatusError("timeout", f"no answer within {timeout_s:g} s") from None
    except http.client.IncompleteRead as exc:
        raise StatusError("truncated", f"answer cut short ({len(exc.partial)} bytes, "
                                       f"{exc.expected} more expected)") from None
    except (http.client.HTTPException, OSError) as exc:
        raise StatusError("connection", f"{type(exc).__name__}: {exc}") from None
    finally:
        conn.close()


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
            body = fetch_status(self.url, self.timeout_s)
            latency_ms = (time.perf_counter() - t0) * 1000.0
            dropped: dict[str, int] = {}
            status = parse_status(body, self.prover, t_mono, t_wall, latency_ms, dropped)
        except StatusError as exc:
            self._failed(exc, t_mono, t_wall)
            return None
        except Exception as exc:  # noqa: BLE001 - a poller bug must not stop polling
            self._failed(StatusError("internal", f"gapwatch could not read it: {exc!r}"),
                         t_mono, t_wall)
            return None
        with self._lock:
            for key, n in dropped.items():
                self.counters[key] = self.counters.get(key, 0) + n
            self.polls += 1
            self.ok += 1
            self._state = "ok"
            self._last_latency_ms = latency_ms
            self._last_ok_wall_s = t_wall
            recovered, self._failing_since = self._failing_since, None
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
        with self._lock:
            self.polls += 1
            first_of_kind = exc.reason not in self.errors
            self.errors[exc.reason] = self.errors.get(exc.reason, 0) + 1
            self._state = exc.reason
            self._failing_since = (self._failing_since or 0) + 1
        if first_of_kind:
            self._notice(t_mono, t_wall, "warning",
                         f"cuzk status {self.url}: {exc}; polling goes on, failures counted "
                         f"({exc.reason})")

    def _notice(self, t_mono: int, t_wall: float, level: str, message: str) -> None:
        if self._on_notice is not None:
            self._on_notice(Notice(t_mono_ns=t_mono, t_wall_s=t_wall,
                                   level=level, message=message))  # type: ignore[arg-type]

    def status(self) -> PollerStatus:
        with self._lock:
            return PollerStatus(
                url=self.url, prover=self.prover, period_s=self.period_ns / 1e9,
                state=self._state, polls=self.polls, ok=self.ok, errors=dict(self.errors),
                last_latency_ms=self._last_latency_ms, last_ok_wall_s=self._last_ok_wall_s,
                dropped_fields=self.counters.get("dropped_fields", 0),
            )
