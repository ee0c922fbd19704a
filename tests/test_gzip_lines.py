"""The gzip reader gives the standard library's lines, and ends where it ends (cut, padded, bad)."""

from __future__ import annotations

import gzip
import inspect
import io
import zlib

import pytest

from gapwatch.base import gzip_stream
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
    monkeypatch.setattr(gzip_stream, "CHUNK_BYTES", 512)  # members and lines across chunks
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
    monkeypatch.setattr(gzip_stream, "CHUNK_BYTES", 64)
    monkeypatch.setattr(gzip_stream, "OUT_BYTES", 1000)
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
