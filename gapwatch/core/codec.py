"""The record codec: records, the session header and every JSON output, to bytes and back.

Who calls it: the recorder (`encode_line`), the recording reader (`decode_record`,
`decode_json` then `header_from_fields`), the parallel report (`gpu_line_prefix`), and
every other JSON output: `report --json`, snapshots' `gaps.json`, the Perfetto export, `parse
--json` (`encode_json`, `gap_json`). Pure: no I/O.

One library does it all: msgspec encodes the record Structs of `gapwatch.core.models` directly
and decodes a line straight into the right one by its `"type"` tag, checking the bounds declared
on the fields (`gapwatch.core.bounds`) as it goes. Strict: JSON types only (no "5" for a number,
no 5.5 for an integer); what gapwatch writes always reads back.

The JSON of a record is its fields in declaration order after `"type"`. Nothing that reads a
recording depends on that order for being right; the parallel report uses the leading bytes of
a GPU sample's line only to pass over other workers' lines faster (`gpu_line_prefix`, pinned by
a test), and decodes whatever does not start that way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from gapwatch.core.bounds import fits_i64
from gapwatch.core.fmt import json_visible, link_fraction
from gapwatch.core.models import Gap, ProverUnchanged, Record, SessionHeader

#: What decoding raises for a line that is not a record (bad JSON, a bad type, a value out of
#: bounds, an unknown record type); its message says where.
DecodeError = msgspec.DecodeError

_encoder = msgspec.json.Encoder()
_encode = _encoder.encode
#: One recording line (bytes, with or without its newline) -> the record it holds. Raises
#: `DecodeError`.
decode_record: Callable[[bytes], Record] = msgspec.json.Decoder(Record).decode
#: The recorder's marker for an unchanged prover snapshot (`ProverUnchanged`) -> the marker.
decode_unchanged: Callable[[bytes], ProverUnchanged] = msgspec.json.Decoder(ProverUnchanged).decode
#: Any JSON document -> plain Python values (dicts, lists, str, int, float, bool, None).
decode_json: Callable[[bytes | str], Any] = msgspec.json.Decoder().decode


def decode_repaired(line: bytes) -> Record | None:
    """A line `decode_record` refused, once more with the one repair the reader makes: an
    integer beyond 64 bits in a log event's fields is read as a float (as a hand-made line may
    hold one; gapwatch's own parser keeps such a number as text). None when that was not what
    was wrong (the caller says the first refusal). Never raises: the reader runs with the cycle
    collector off, and an exception kept past its handler (re-raised from a frame that holds it)
    is a reference cycle per bad line."""
    try:
        data = decode_json(line)
    except (DecodeError, RecursionError):
        return None
    fields = data.get("fields") if isinstance(data, dict) and data.get("type") == "log" else None
    if not isinstance(fields, dict):
        return None
    big = [k for k, v in fields.items() if type(v) is int and not fits_i64(v)]
    if not big:
        return None
    for k in big:
        fields[k] = float(fields[k])
    try:
        record: Record = msgspec.convert(data, Record)
    except (DecodeError, RecursionError):
        return None
    return record


def encode_line(record: Record | SessionHeader | ProverUnchanged) -> bytes:
    """One record (or the header, or the recorder's marker for an unchanged prover snapshot)
    as one JSON Lines line, newline included."""
    return _encode(record) + b"\n"


def encode_json(doc: Any, *, indent: int = 0) -> bytes:
    """Any output document (plain values and records) as JSON; `indent` > 0 pretty-prints it
    for people (report --json, snapshots)."""
    out = _encode(doc)
    if indent:
        out = msgspec.json.format(out, indent=indent)
    # Any of these documents can reach a terminal (`report --json`, `compare --json`, `export
    # --out -`, `cat` of a snapshot's gaps.json), and JSON lets C1 controls (U+009B is a
    # one-byte CSI) and bidi overrides through raw: `report --json` of a log holding them sent
    # them to the terminal. Written as \uXXXX escapes: the same document, the same text.
    return out if out.isascii() and b"\x7f" not in out else json_visible(out.decode()).encode()


def to_plain(obj: Any) -> Any:
    """Records (and anything holding them) as plain dicts and lists, `"type"` included."""
    return msgspec.to_builtins(obj)


def gpu_line_prefix(gpu: int) -> bytes:
    """How the line of a GPU sample of `gpu` begins, as `encode_line` writes it."""
    return b'{"type":"gpu","gpu":%d,' % gpu


#: How a GPU sample's line ended in recordings written before this codec (orjson from the
#: dataclasses: the fields in order, the type last). Their lines began with
#: `gpu_line_prefix_type_last`, as those of states and link readings did: only the two together
#: say "a GPU sample of that GPU".
TYPE_LAST_GPU_SUFFIX = b',"type":"gpu"}\n'


def gpu_line_prefix_type_last(gpu: int) -> bytes:
    """How a GPU sample's line of `gpu` began in recordings written before this codec."""
    return b'{"gpu":%d,' % gpu


#: A gap's fields its JSON documents leave out: the typed facts its prover package's advice
#: reads (`Gap.prover_facts`), which `prover_evidence` says in words. Recordings hold them.
GAP_JSON_LEFT_OUT = ("prover_facts",)


def gap_json(gap: Gap) -> dict[str, Any]:
    """A gap as every output gives it: the record's own JSON (what a recording holds), plus the
    figures readers want beside it: `open`, and `link_fraction`, the dominant PCIe direction's
    rate as a share of the link (None without a rate or a link). Less `GAP_JSON_LEFT_OUT` (the
    documents' keys stay as docs/detection.md gives them)."""
    out: dict[str, Any] = msgspec.to_builtins(gap)
    for key in GAP_JSON_LEFT_OUT:
        out.pop(key, None)
    rx, tx, link = gap.pcie_rx_bytes_per_s, gap.pcie_tx_bytes_per_s, gap.link_bytes_per_s
    dominant = max(rx or 0.0, tx or 0.0) if (rx is not None or tx is not None) else None
    out["open"] = gap.is_open
    out["link_fraction"] = link_fraction(dominant, link)
    return out


def header_from_fields(fields: dict[str, Any]) -> SessionHeader:
    """The header from its fields (`"type": "header"` included). Raises `DecodeError` when a
    field is missing, unknown or of the wrong type."""
    return msgspec.convert(fields, SessionHeader)
