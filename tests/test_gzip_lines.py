"""The gzip reader gives the standard library's lines, and ends where it ends (cut, padded, bad)."""

from __future__ import annotations

import gc
import gzip
import inspect
import io
import threading
import zlib

import pytest
from faults import wait_for

from gapwatch.sources import gzip_lines
from gapwatch.sources.gzip_lines import GzipLines


def _members(*parts: bytes) -> bytes:
    """Gzip members, one per part, each ending with a sync flush as the recorder writes."""
    out = []
    for part in parts:
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        out.append(z.compress(part) + z.flush(zlib.Z_SYNC_FLUSH) + z.flush())
    return b"".join(out)


def _lines(reader: object) -> tuple[list[bytes], str | None]:
    """Every line until the end, and the class of what ended it early (None: a clean end)."""
    got: list[bytes] = []
    try:
        for line in reader:  # type: ignore[attr-defined]
            got.append(line)
    except (EOFError, OSError, zlib.error) as exc:
        return got, type(exc).__name__
    return got, None


def _both(data: bytes) -> tuple[tuple[list[bytes], str | None], tuple[list[bytes], str | None]]:
    ours = _lines(GzipLines(io.BytesIO(data)))
    theirs = _lines(gzip.GzipFile(fileobj=io.BytesIO(data)))
    return ours, theirs


BODY = b"".join(b'{"type":"gpu","gpu":%d,"t_mono_ns":%d}\n' % (i % 8, i) for i in range(3000))


def test_the_lines_of_many_members_are_the_standard_librarys(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gzip_lines, "CHUNK_BYTES", 512)  # members and lines across chunks
    data = _members(BODY[:10_000], BODY[10_000:10_001], BODY[10_001:])
    ours, theirs = _both(data)
    assert ours == theirs == (BODY.splitlines(keepends=True), None)


def test_a_file_cut_anywhere_gives_the_whole_lines_before_the_cut_then_ends_early() -> None:
    data = _members(BODY[:40_000], BODY[40_000:])
    for cut in range(10, len(data) - 1, 97):
        ours, theirs = _both(data[:cut])
        assert ours == theirs, cut
        assert ours[1] is not None and ours[0] == BODY.splitlines(keepends=True)[:len(ours[0])]


def test_zero_padding_between_members_is_passed_over() -> None:
    data = _members(b"a\n") + b"\x00" * 100 + _members(b"b\n") + b"\x00" * 7
    assert _both(data) == ((([b"a\n", b"b\n"]), None),) * 2


def test_a_last_line_without_its_newline_is_still_a_line() -> None:
    assert _both(_members(b"a\nb")) == (([b"a\n", b"b"], None),) * 2


def test_data_that_is_not_gzip_after_a_member_ends_the_file_as_an_os_error() -> None:
    ours, theirs = _both(_members(b"a\n") + b"PK\x03\x04 not gzip")
    assert ours == theirs == ([b"a\n"], "BadGzipFile")


def test_a_long_line_and_a_highly_compressed_stretch_are_inflated_in_steps(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gzip_lines, "CHUNK_BYTES", 64)
    monkeypatch.setattr(gzip_lines, "OUT_BYTES", 1000)
    body = b"x" * 200_000 + b"\n" + b"\n" * 5000 + b"end\n"
    ours, theirs = _both(_members(body))
    assert ours == theirs == (body.splitlines(keepends=True), None)


def test_readline_reads_the_first_line_and_iteration_goes_on_from_there() -> None:
    reader = GzipLines(io.BytesIO(_members(b"head\nrest\n", b"more\n")))
    assert reader.readline() == b"head\n"
    assert list(reader) == [b"rest\n", b"more\n"]
    assert reader.readline() == b""


def test_closing_lets_go_of_the_piece_being_read_and_ends_the_lines() -> None:
    raw = io.BytesIO(_members(BODY))
    reader = GzipLines(raw)
    assert reader.readline() == BODY.splitlines(keepends=True)[0]
    reader.close()
    assert raw.closed and reader.readline() == b"" and list(reader) == []
    assert inspect.getgeneratorstate(reader._pieces_left) == "GEN_CLOSED"  # its locals gone


def _inflating(before: frozenset[threading.Thread] = frozenset()) -> list[threading.Thread]:
    """The inflating threads alive now, but those in `before` (another test's, in this worker
    process)."""
    return [t for t in threading.enumerate()
            if t.name == "gapwatch-gzip-inflate" and t not in before]


def _now() -> frozenset[threading.Thread]:
    return frozenset(_inflating())


def test_reading_the_header_starts_no_thread_and_the_rest_is_inflated_ahead_on_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gzip_lines, "CHUNK_BYTES", 512)  # many pieces
    before = _now()
    reader = GzipLines(io.BytesIO(_members(BODY)))
    assert reader.readline() == BODY.splitlines(keepends=True)[0]
    assert _inflating(before) == []  # the parallel report forks after reading a header
    lines = BODY.splitlines(keepends=True)
    it = iter(reader)
    assert [next(it) for _ in range(1, 2000)] == lines[1:2000]
    assert len(_inflating(before)) == 1
    assert list(it) == lines[2000:]
    wait_for("the inflating thread to end with the file", lambda: _inflating(before) == [])


def test_closing_mid_file_stops_the_inflating_thread_before_the_file_closes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gzip_lines, "CHUNK_BYTES", 256)
    monkeypatch.setattr(gzip_lines, "AHEAD_PIECES", 1)  # the producer waits on a full queue
    before = _now()
    raw = io.BytesIO(_members(BODY))
    reader = GzipLines(raw)
    it = iter(reader)
    for _ in range(200):
        next(it)
    assert len(_inflating(before)) == 1
    reader.close()
    assert _inflating(before) == [] and raw.closed


def test_a_reader_dropped_without_closing_stops_its_thread_once_collected(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gzip_lines, "CHUNK_BYTES", 256)
    before = _now()
    reader = GzipLines(io.BytesIO(_members(BODY)))
    it = iter(reader)
    for _ in range(200):
        next(it)
    assert len(_inflating(before)) == 1
    del reader, it
    gc.collect()  # the reader and its generator refer to each other; the thread to neither
    wait_for("the dropped reader's thread to end", lambda: _inflating(before) == [])


def test_a_cut_found_by_the_inflating_thread_reaches_the_reader_after_every_whole_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gzip_lines, "CHUNK_BYTES", 512)
    data = _members(BODY)
    ours, theirs = _both(data[: len(data) * 3 // 4])
    assert ours == theirs and ours[1] == "EOFError" and len(ours[0]) > 1000
