"""The copy trace's wire format: one Unix datagram = a 64-byte header + fixed-size records.

Who uses it: `gapwatch.sources.copytrace` (parses what the library in the prover sends), the tests
(build datagrams, good and bad) and `gapwatch copytrace build` (compares the compiled library's
layout with `LAYOUT`). The writer is `gapwatch_copytrace.c`; the two must agree byte for byte, and
`tests/test_copytrace_build.py` checks that they do.

Why a fixed binary struct rather than JSON lines: the writer runs inside the prover on CUPTI's
thread, so it must not allocate, format floats or escape strings; a fixed little-endian layout is a
`memcpy` there and one `struct.unpack_from` here. Records are few (tens of copies per partition),
so the size is no concern; the header carries a magic, a version and its own and the records'
sizes, so garbage, truncation and unknown versions are told apart and refused (never a crash),
and a later version may append fields without breaking this reader.

Why datagrams: each one is validated on its own, so a bad one never desynchronises the stream
(a byte stream with a bad length would); the sender needs no connection, so a restarted gapwatch
is picked up at the next send and a restarted prover is simply a new sender; and the kernel
bounds the queue, so a slow reader makes the sender drop (and count), never wait.
"""

from __future__ import annotations

import builtins
import struct
from dataclasses import dataclass, field

from gapwatch.core.models import CopyDirection, MemoryKind

MAGIC = 0x54435747  # b"GWCT" read as a little-endian u32
VERSION = 1

#: u32 magic, u16 version, u16 header_bytes, u16 type, u16 record_bytes, u16 n_records,
#: u16 reserved, u32 pid, u32 reserved, u64 session_id, u64 seq, u64 copies_seen,
#: u64 dropped_send, u64 dropped_cupti
HEADER = struct.Struct("<IHHHHHHIIQQQQQ")
#: u64 start_ns, u64 end_ns, u64 bytes, u32 device_id, u32 context_id, u32 stream_id,
#: u32 correlation_id, u8 copy_kind, u8 src_kind, u8 dst_kind, u8 flags, u32 copy_count,
#: 16 bytes device uuid
COPY = struct.Struct("<QQQIIIIBBBBI16s")
#: u32 lib_version, u32 cupti_api_built, u32 cupti_api_loaded, u32 flush_ms, u32 flags,
#: u32 reserved, 16 bytes comm, u64 reserved
HELLO = struct.Struct("<IIIIII16sQ")

TYPE_COPIES, TYPE_HELLO, TYPE_NOTE, TYPE_BYE = 1, 3, 4, 5
_TYPES = (TYPE_COPIES, TYPE_HELLO, TYPE_NOTE, TYPE_BYE)

#: HELLO flags.
HELLO_REALTIME = 1
HELLO_PCI_BUS_ORDER = 2
HELLO_VISIBLE_SET = 4

#: CUpti_ActivityMemcpyKind values the library forwards (host<->device, arrays included).
COPY_KIND_DIRECTION: dict[int, CopyDirection] = {1: "h2d", 2: "d2h", 3: "h2d", 4: "d2h"}
#: CUpti_ActivityMemoryKind, by value.
MEMORY_KINDS: tuple[MemoryKind, ...] = (
    "unknown", "pageable", "pinned", "device", "array", "managed", "device_static",
    "managed_static",
)

#: What `gapwatch_copytrace_layout()` of a correct build reports: the CUDA 13 record offsets
#: the C code reads, and this wire format's sizes.
LAYOUT: dict[str, int] = {
    "memcpy6.copyKind": 4, "memcpy6.srcKind": 5, "memcpy6.dstKind": 6, "memcpy6.flags": 7,
    "memcpy6.bytes": 8, "memcpy6.start": 16, "memcpy6.end": 24, "memcpy6.deviceId": 32,
    "memcpy6.contextId": 36, "memcpy6.streamId": 40, "memcpy6.correlationId": 44,
    "wire.version": VERSION, "wire.header": HEADER.size, "wire.copy": COPY.size,
    "wire.hello": HELLO.size,
}


class WireError(ValueError):
    """A datagram that is not a valid copy-trace datagram. `reason` is a short counter name:
    short, magic, version, header, type, record_size, truncated."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class WireCopy:
    start_ns: int
    end_ns: int
    bytes: int  # noqa: A003 - the wire field's name
    device_id: int
    context_id: int
    stream_id: int
    correlation_id: int
    copy_kind: int
    src_kind: int
    dst_kind: int
    flags: int
    copy_count: int
    device_uuid: builtins.bytes


@dataclass(frozen=True, slots=True)
class WireHello:
    lib_version: int
    cupti_api_built: int
    cupti_api_loaded: int
    flush_ms: int
    flags: int
    comm: str


@dataclass(frozen=True, slots=True)
class Datagram:
    type: int
    pid: int
    session_id: int
    seq: int
    #: Cumulative counters of the sender since it started.
    copies_seen: int
    dropped_send: int
    dropped_cupti: int
    copies: list[WireCopy] = field(default_factory=list)
    hello: WireHello | None = None
    note: str | None = None


def parse_datagram(data: bytes, truncated: bool = False) -> Datagram:
    """Validate and decode one datagram. `truncated`: the kernel cut it (MSG_TRUNC).

    Raises:
        WireError: anything that is not a whole, known datagram.
    """
    if truncated:
        raise WireError("truncated", f"datagram cut by the receive buffer ({len(data)} bytes)")
    if len(data) < HEADER.size:
        raise WireError("short", f"{len(data)} bytes, shorter than a header ({HEADER.size})")
    (magic, version, header_bytes, dtype, record_bytes, n_records, _r0, pid, _r1, session_id,
     seq, copies_seen, dropped_send, dropped_cupti) = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise WireError("magic", f"bad magic 0x{magic:08x}: not a copy-trace datagram")
    if version != VERSION:
        raise WireError("version", f"wire version {version} (this gapwatch reads {VERSION}): "
                                   "rebuild the library with this gapwatch's `copytrace build`")
    if header_bytes < HEADER.size or header_bytes > len(data):
        raise WireError("header", f"header of {header_bytes} bytes in a {len(data)}-byte datagram")
    if dtype not in _TYPES:
        raise WireError("type", f"unknown datagram type {dtype}")
    need = {TYPE_COPIES: COPY.size, TYPE_HELLO: HELLO.size, TYPE_NOTE: 1, TYPE_BYE: 0}[dtype]
    if n_records and record_bytes < need:
        raise WireError("record_size", f"type {dtype} records of {record_bytes} bytes "
                                       f"(at least {need})")
    body = header_bytes + n_records * record_bytes
    if len(data) < body:
        raise WireError("truncated", f"{len(data)} bytes, header says {body}")
    out = Datagram(dtype, pid, session_id, seq, copies_seen, dropped_send, dropped_cupti)
    if dtype == TYPE_COPIES:
        for i in range(n_records):
            out.copies.append(WireCopy(*COPY.unpack_from(data, header_bytes + i * record_bytes)))
    elif dtype == TYPE_HELLO and n_records:
        lib, built, loaded, flush_ms, flags, _r, comm, _r2 = HELLO.unpack_from(data, header_bytes)
        name = comm.split(b"\0", 1)[0].decode("utf-8", "replace")
        out = Datagram(dtype, pid, session_id, seq, copies_seen, dropped_send, dropped_cupti,
                       hello=WireHello(lib, built, loaded, flush_ms, flags, name))
    elif dtype == TYPE_NOTE and n_records:
        text = data[header_bytes:header_bytes + record_bytes].decode("utf-8", "replace")
        out = Datagram(dtype, pid, session_id, seq, copies_seen, dropped_send, dropped_cupti,
                       note=text)
    return out


def encode_datagram(dtype: int, *, pid: int = 1, session_id: int = 1, seq: int = 0,
                    copies_seen: int = 0, dropped_send: int = 0, dropped_cupti: int = 0,
                    records: list[bytes] | None = None, record_bytes: int | None = None) -> bytes:
    """A datagram as the library writes it (tests and the bench's checks build them here)."""
    recs = records or []
    size = record_bytes if record_bytes is not None else (len(recs[0]) if recs else 0)
    return HEADER.pack(MAGIC, VERSION, HEADER.size, dtype, size, len(recs), 0, pid, 0,
                       session_id, seq, copies_seen, dropped_send, dropped_cupti) + b"".join(recs)


def encode_copy(c: WireCopy) -> bytes:
    return COPY.pack(c.start_ns, c.end_ns, c.bytes, c.device_id, c.context_id, c.stream_id,
                     c.correlation_id, c.copy_kind, c.src_kind, c.dst_kind, c.flags,
                     c.copy_count, c.device_uuid)


def encode_hello(h: WireHello) -> bytes:
    return HELLO.pack(h.lib_version, h.cupti_api_built, h.cupti_api_loaded, h.flush_ms, h.flags,
                      0, h.comm.encode()[:15], 0)


def uuid_text(raw: bytes) -> str | None:
    """NVML's spelling of a device UUID (`GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`) from CUDA's 16
    bytes; None for all zeros (the library did not know the device's UUID yet)."""
    if len(raw) != 16 or not any(raw):
        return None
    h = raw.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def memory_kind(code: int) -> MemoryKind:
    return MEMORY_KINDS[code] if 0 <= code < len(MEMORY_KINDS) else "unknown"


def parse_layout(text: str) -> dict[str, int]:
    """`name=value` pairs of `gapwatch_copytrace_layout()` as a dict."""
    out: dict[str, int] = {}
    for part in text.split():
        name, sep, value = part.partition("=")
        if sep:
            try:
                out[name] = int(value)
            except ValueError:
                continue
    return out


def layout_mismatches(reported: dict[str, int]) -> list[str]:
    """Each field whose compiled offset or size differs from `LAYOUT` (empty: they agree)."""
    return [f"{k}: library {reported.get(k)}, reader {v}" for k, v in LAYOUT.items()
            if reported.get(k) != v]
