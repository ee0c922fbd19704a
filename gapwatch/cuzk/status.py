"""cuzk's `GET /status` document: its schema as msgspec Structs and its reading into `ProverStatus`.

Who calls it: the status poller (`gapwatch.sources.cuzk_status.StatusPoller`, per answer), the
simulator's speed-0 feed and the tests (`parse_status` directly).

Decoding mirrors the serde structs of `extern/cuzk/cuzk-core/src/status.rs` as msgspec Structs
(`StatusDocument`), leniently: fields cuzk adds later are ignored, a field it omits is None; a
field of the wrong type (or a number its Rust type cannot hold: a negative `u64`) is None and
counted (`dropped_fields`), the rest of the snapshot is kept. A real answer decodes in one pass;
only one with a bad field is walked field by field (`_lenient`). Only a body that is not JSON,
or not an object, is refused. One answer is read up to the per-poll bounds below (the rest
counted `cut_items`): what a poll costs, and adds to the recording, stays bounded whatever the
prover sends.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin, get_type_hints

import msgspec

from gapwatch.core.bounds import (
    INT64_MAX,
    MAX_GPU_INDEX,
    MAX_SNAPSHOT_JOBS,
    MAX_SNAPSHOT_PARTITIONS,
    MAX_SNAPSHOT_SRS,
    MAX_SNAPSHOT_WORKERS,
    Count,
    DurationS,
)
from gapwatch.core.models import (
    PARTITION_STATES,
    WORKER_STATES,
    ProverPartition,
    ProverStatus,
    ProverWorker,
)
from gapwatch.core.sizes import TEXT_CHARS, cut_text

#: What one poll reads of a snapshot, at most (the rest is counted, `cut_items`, and said once
#: by the poller). A real snapshot holds a few dozen partitions and one worker per GPU; a
#: 5.5 MB answer of partitions cost the sampler 216 ms and the recording 6.5 MB/s.
#: The bounds of a recorded snapshot (`bounds.MAX_SNAPSHOT_*`): what a poll writes reads back.
MAX_PIPELINES_PER_POLL = MAX_SNAPSHOT_JOBS
MAX_PARTITIONS_PER_POLL = MAX_SNAPSHOT_PARTITIONS
MAX_WORKERS_PER_POLL = MAX_SNAPSHOT_WORKERS
MAX_SRS_PER_POLL = MAX_SNAPSHOT_SRS
#: Characters kept of each text the document gives (a job id, a proof kind, an SRS circuit id),
#: as of a log line's job id (`sizes.TEXT_CHARS`; the rest counted `text_cut`). A job id is
#: written into each of its partitions: a 900 KB one over 1,024 partitions of a 1 MiB answer
#: was a 920 MB record each poll.
MAX_TEXT_CHARS = TEXT_CHARS


class StatusError(Exception):
    """A poll that gave no snapshot; `reason` is one of `ERROR_REASONS` or `http_<code>`."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# -- the document, as status.rs's serde structs serialise it ---------------------------------
# Rust's unsigned integers (u32, u64, usize) and durations cannot be negative; a value outside
# them is not a reading (`bounds.Count`). Seconds are f64 (`as_secs_f64`): a duration
# (`bounds.DurationS`). The snapshot gapwatch records is read back by the same types
# (`models.ProverStatus`).
Ordinal = Annotated[int, msgspec.Meta(ge=0, le=MAX_GPU_INDEX)]


# Unknown fields are ignored (msgspec's default); every field may be missing (None).
class MemoryStatus(msgspec.Struct, frozen=True):
    total_bytes: Count | None = None
    used_bytes: Count | None = None
    available_bytes: Count | None = None


class SynthesisStatus(msgspec.Struct, frozen=True):
    #: `total_bytes / SNAP_PARTITION_FULL_BYTES`: NOT how many syntheses can run.
    max_concurrent: Count | None = None
    #: +1 at synthesis start, -1 on success only: drifts upward after failed syntheses.
    active: Count | None = None


class PartitionSnapshot(msgspec.Struct, frozen=True):
    index: Count | None = None
    state: str | None = None
    synth_ms: Count | None = None
    gpu_ms: Count | None = None


class PipelineSnapshot(msgspec.Struct, frozen=True):
    # A WindowPoSt job id holds spaces and brackets (`wdpost-1-2-[1 2 3]`): it is only a string.
    job_id: str | None = None
    proof_kind: str | None = None
    started_secs_ago: DurationS | None = None
    total_partitions: Count | None = None
    partitions_done: Count | None = None
    partitions: list[PartitionSnapshot | None] | None = None


class GpuWorkerSnapshot(msgspec.Struct, frozen=True):
    worker_id: Count | None = None
    gpu_ordinal: Ordinal | None = None
    state: str | None = None
    current_job: str | None = None
    current_partition: Count | None = None
    busy_secs: DurationS | None = None


class AllocationEntry(msgspec.Struct, frozen=True):
    circuit_id: str | None = None
    bytes: Count | None = None
    last_used_secs_ago: DurationS | None = None
    evictable: bool | None = None


class AllocationsSnapshot(msgspec.Struct, frozen=True):
    srs: list[AllocationEntry | None] | None = None
    pce: list[AllocationEntry | None] | None = None


class CountersSnapshot(msgspec.Struct, frozen=True):
    total_completed: Count | None = None
    total_failed: Count | None = None
    queue_depth: Count | None = None


class StatusDocument(msgspec.Struct, frozen=True):
    """The parts of cuzk's `/status` JSON that gapwatch reads (status.rs `StatusSnapshot`)."""

    uptime_secs: DurationS | None = None
    memory: MemoryStatus | None = None
    synthesis: SynthesisStatus | None = None
    pipelines: list[PipelineSnapshot | None] | None = None
    gpu_workers: list[GpuWorkerSnapshot | None] | None = None
    allocations: AllocationsSnapshot | None = None
    counters: CountersSnapshot | None = None


_decode_strict = msgspec.json.Decoder(StatusDocument).decode
# The walk's decoder keeps every number it can: a float as the Decimal of its text (`1e999`
# overflows a float, and the strict decoder's error would cost the whole snapshot).
_decode_any = msgspec.json.Decoder(float_hook=Decimal).decode
_HINTS: dict[type, dict[str, Any]] = {}


def _optional_inner(tp: Any) -> Any:
    """`X | None` -> X (the only unions the document uses)."""
    if get_origin(tp) is Union or type(tp).__name__ == "UnionType":
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def _lenient(value: Any, tp: Any, dropped: list[int]) -> Any:
    """`value` as `tp`, keeping every part that fits: a Struct field or a list item that does
    not is None, and `dropped[0]` counts it."""
    try:
        return msgspec.convert(value, tp)
    except msgspec.ValidationError:
        pass
    inner = _optional_inner(tp)
    if isinstance(inner, type) and issubclass(inner, msgspec.Struct) and isinstance(value, dict):
        hints = _HINTS.get(inner)
        if hints is None:
            hints = _HINTS[inner] = get_type_hints(inner, include_extras=True)
        return inner(**{name: _lenient(value[name], hints[name], dropped)
                        for name in inner.__struct_fields__ if name in value})
    if get_origin(inner) is list and isinstance(value, list):
        (item,) = get_args(inner)
        return [_lenient(v, item, dropped) for v in value]
    dropped[0] += 1
    return None


_T = TypeVar("_T")


def _first(items: list[_T], most: int, cut: list[int]) -> list[_T]:
    """The first `most` of `items`; `cut[0]` counts the rest (a per-poll bound)."""
    if len(items) <= most:
        return items
    cut[0] += len(items) - max(most, 0)
    return items[:max(most, 0)]


def _cut_raw(raw: dict[str, Any], cut: list[int]) -> None:
    """The per-poll bounds (`MAX_..._PER_POLL`) applied to a decoded but unchecked document, in
    place; `cut[0]` counts what goes. The partitions' bound is per pipeline here: the walk
    only has to be bounded, `parse_status` applies the total."""
    lists: list[tuple[Any, str, int]] = [(raw, "pipelines", MAX_PIPELINES_PER_POLL),
                                         (raw, "gpu_workers", MAX_WORKERS_PER_POLL)]
    alloc = raw.get("allocations")
    if isinstance(alloc, dict):
        lists += [(alloc, "srs", MAX_SRS_PER_POLL), (alloc, "pce", MAX_SRS_PER_POLL)]
    for owner, key, most in lists:
        value = owner.get(key)
        if isinstance(value, list):
            owner[key] = _first(value, most, cut)
    for pipe in raw.get("pipelines") or ():
        if isinstance(pipe, dict) and isinstance(pipe.get("partitions"), list):
            pipe["partitions"] = _first(pipe["partitions"], MAX_PARTITIONS_PER_POLL, cut)


def decode_status(body: bytes, counters: dict[str, int] | None = None) -> StatusDocument:
    """cuzk's `/status` body -> `StatusDocument`. Raises StatusError (`bad_json`,
    `bad_schema`). `counters["dropped_fields"]` counts fields that did not fit."""
    try:
        try:
            return _decode_strict(body)
        except msgspec.ValidationError:
            pass  # JSON, but some part does not fit: read it part by part below
        raw = _decode_any(body)
    except msgspec.DecodeError as exc:
        raise StatusError("bad_json", f"not JSON ({exc})") from None
    except RecursionError:
        # msgspec's own depth guard, in either reading (arrays nested ~100,000 deep fit in 1
        # MiB): the answer's fault, not gapwatch's (it was counted `internal`, "gapwatch could
        # not read it").
        raise StatusError("bad_json", "JSON nested too deep") from None
    if not isinstance(raw, dict):
        raise StatusError("bad_schema", f"not a status object (a JSON {type(raw).__name__})")
    cut = [0]
    _cut_raw(raw, cut)  # the walk below is Python, item by item: bounded before it starts
    if counters is not None and cut[0]:
        counters["cut_items"] = counters.get("cut_items", 0) + cut[0]
    dropped = [0]
    doc: StatusDocument = _lenient(raw, StatusDocument, dropped)
    if counters is not None and dropped[0]:
        counters["dropped_fields"] = counters.get("dropped_fields", 0) + dropped[0]
    return doc


def _text(value: str | None, cut: list[int]) -> str | None:
    """`value` cut to `MAX_TEXT_CHARS` (`cut[0]` counts each text cut); None stays None."""
    if value is None or len(value) <= MAX_TEXT_CHARS:
        return value
    cut[0] += 1
    return cut_text(value, MAX_TEXT_CHARS)


def _srs_total(entries: list[AllocationEntry], dropped: list[int]) -> int | None:
    """The bytes of the SRS entries read, summed; None (`dropped[0]` counts it) where the sum is
    beyond what a count holds: each entry is a `u64` cuzk may send up to 2^63-1 (`Count`), but
    three such summed past 64 bits, a total the recording's reader refuses (`ProverStatus`'s
    `srs_bytes` is a `Count`): every snapshot of the run was a bad record offline."""
    total = sum(e.bytes or 0 for e in entries)
    if total > INT64_MAX:
        dropped[0] += 1
        return None
    return total


def parse_status(body: bytes, prover: str, t_mono_ns: int, t_wall_s: float,
                 latency_ms: float, counters: dict[str, int] | None = None) -> ProverStatus:
    """cuzk's `/status` body -> one `ProverStatus`. Raises StatusError (`bad_json`,
    `bad_schema`). `counters["dropped_fields"]` counts fields that did not fit, `cut_items`
    what is past the per-poll bounds, `text_cut` texts cut to `MAX_TEXT_CHARS`."""
    doc = decode_status(body, counters)
    cut, texts = [0], [0]
    # Counts only when the document lists its pipelines at all (an empty list is 0 of each).
    counts: dict[str, int] = (dict.fromkeys(PARTITION_STATES, 0) if doc.pipelines is not None
                              else {})
    parts: list[ProverPartition] = []
    kinds: dict[str, str] = {}
    pipelines = _first([p for p in doc.pipelines or () if p is not None],
                       MAX_PIPELINES_PER_POLL, cut)
    budget = MAX_PARTITIONS_PER_POLL
    for pipe in pipelines:
        job = _text(pipe.job_id, texts) or "?"
        if pipe.proof_kind is not None:
            kinds[job] = _text(pipe.proof_kind, texts) or "?"
        for part in _first(pipe.partitions or [], budget, cut):
            if part is None:
                continue
            budget -= 1
            # An unknown state (a newer cuzk) is counted as "other": label values stay bounded.
            state: str = part.state if part.state in PARTITION_STATES else "other"
            counts[state] = counts.get(state, 0) + 1
            if part.index is not None:
                parts.append(ProverPartition(job_id=job, index=part.index, state=state,
                                             synth_ms=part.synth_ms, gpu_ms=part.gpu_ms))
    workers = [
        ProverWorker(
            worker_id=w.worker_id, gpu=w.gpu_ordinal,
            state=w.state if w.state in WORKER_STATES else "other",
            job_id=_text(w.current_job, texts), partition=w.current_partition, busy_s=w.busy_secs,
        )
        for w in _first(doc.gpu_workers or [], MAX_WORKERS_PER_POLL, cut)
        if w is not None and w.worker_id is not None
    ]
    syn, cnt, mem = doc.synthesis, doc.counters, doc.memory
    srs = doc.allocations.srs if doc.allocations is not None else None
    srs_entries = [e for e in _first(srs or [], MAX_SRS_PER_POLL, cut) if e is not None]
    if counters is not None and cut[0]:
        counters["cut_items"] = counters.get("cut_items", 0) + cut[0]
    circuits = None if srs is None else [_text(e.circuit_id, texts) or "?" for e in srs_entries]
    dropped = [0]
    srs_bytes = None if srs is None else _srs_total(srs_entries, dropped)
    if counters is not None and dropped[0]:
        counters["dropped_fields"] = counters.get("dropped_fields", 0) + dropped[0]
    if counters is not None and texts[0]:
        counters["text_cut"] = counters.get("text_cut", 0) + texts[0]
    return ProverStatus(
        prover=prover, t_mono_ns=t_mono_ns, t_wall_s=t_wall_s, latency_ms=latency_ms,
        uptime_s=doc.uptime_secs, partition_counts=counts, workers=workers,
        synthesis_active=syn.active if syn else None,
        synthesis_max=syn.max_concurrent if syn else None,
        queue_depth=cnt.queue_depth if cnt else None,
        # A `pipelines` cuzk did not send as a list says nothing about jobs: unknown, not 0.
        jobs=len(pipelines) if doc.pipelines is not None else None,
        completed_total=cnt.total_completed if cnt else None,
        failed_total=cnt.total_failed if cnt else None, partitions=parts,
        memory_total_bytes=mem.total_bytes if mem else None,
        memory_used_bytes=mem.used_bytes if mem else None,
        memory_available_bytes=mem.available_bytes if mem else None,
        srs_circuits=circuits,
        srs_bytes=srs_bytes,
        job_kinds=kinds,
    )
