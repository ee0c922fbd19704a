"""The lines of a recording file, plain or gzip, in bounded memory: a line longer than any
record gapwatch writes is passed over without being held.

Who calls it: `gapwatch.sources.recording` (every recording: `report`, `export`, replay, the
parallel report's workers). The standard library's readers hand out a line whole however long
it is: a 4.2 MB gzip holding one 4 GiB line (or a plain file of one) was a MemoryError in every
reader. Here a file is read in large chunks, the lines of each piece split in one C call
(`io.BytesIO.readlines`, so iterating costs about as much as reading or inflating), and a line
that grows past `MAX_LINE_BYTES` is dropped as it is read, up to its newline; in its place the
reader hands out `TOO_LONG` (one object, told by identity), which the recording reader counts
as a bad record.

Gzip (`GzipLines`): inflated by `gapwatch.base.gzip_stream.inflated` (the same bytes and the
same end as `GzipFile`): a file cut inside a member (kill -9, a full disk) gives every whole line
inflated before the cut, then raises `EOFError` (the reader counts it "truncated"); the half
line is dropped. A plain file (`PlainLines`) is read `PLAIN_CHUNK_BYTES` at a time.

A gzip file cannot be seeked, but a windowed read (`gapwatch.sources.time_window`) need not split
or decode what lies before its window: `GzipLines.pass_pieces` inflates from the file's start and
drops whole inflated pieces that a judge says lie before it, counting their newlines (so that
every line after keeps its number), at the cost of inflating alone.
"""

from __future__ import annotations

import io
import re
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator
from itertools import chain
from typing import IO, Final

from gapwatch.base.gzip_stream import inflated

#: Bytes of a plain file read at a time.
PLAIN_CHUNK_BYTES = 1 << 20

#: The longest line read as a record. The longest gapwatch writes is a log event: a log line of
#: at most `logs.max_line_bytes` (4 MiB at most, 1 MiB by default) with the fields taken from
#: it, every byte escaped as `\\u00XX` at worst (x6 each: 48 MiB); a `/status` answer is at most
#: 8 MiB before it is parsed. 64 MiB holds either; a longer line is not a record.
MAX_LINE_BYTES: Final = 64 << 20
#: Handed out in place of a line longer than the limit (compare with `is`: no line read from a
#: file is this object).
TOO_LONG: Final = bytes(bytearray(b"<a line longer than MAX_LINE_BYTES>"))


def split_lines(chunks: Iterable[bytes], limit: int = MAX_LINE_BYTES
                ) -> Generator[list[bytes], None, None]:
    """Lists of whole lines (newlines kept) from `chunks` of bytes, in order; a line longer than
    `limit` is `TOO_LONG`, and never held beyond `limit` plus one chunk. The last line may lack
    its newline (the file's last line was written without one)."""
    #: The start of a line not yet ended, in pieces (a long line is joined once, not copied
    #: again with every chunk), and their length.
    tail: list[bytes] = []
    tail_bytes = 0
    discarding = False  # inside the rest of a line already found too long
    for out in chunks:
        if discarding:
            nl = out.find(b"\n")
            if nl < 0:
                continue
            discarding = False
            yield [TOO_LONG]
            out = out[nl + 1:]
        if b"\n" not in out:
            if tail_bytes + len(out) > limit:
                tail, tail_bytes, discarding = [], 0, True
            elif out:
                tail.append(out)
                tail_bytes += len(out)
            continue
        joined = bool(tail)
        if joined:
            tail.append(out)
            out = b"".join(tail)
            tail, tail_bytes = [], 0
        lines = io.BytesIO(out).readlines()
        del out
        if joined and len(lines[0]) > limit:
            lines[0] = TOO_LONG  # only the joined line can be longer than a chunk
        if not lines[-1].endswith(b"\n"):
            last = lines.pop()
            if len(last) > limit:
                discarding = True
            else:
                tail, tail_bytes = [last], len(last)
        if lines:
            yield lines
    if discarding:
        yield [TOO_LONG]
    elif tail:
        yield [b"".join(tail)]


def bare_cr_as_lf(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """`chunks` with each CR that ends a line alone made a LF: a text file whose lines end in a
    bare CR (a classic Mac's, some spreadsheets' "CSV (Macintosh)") split as lines, one byte for
    one byte (line numbers and offsets unchanged). Split on LF alone, such a file was one line:
    every row lost, nothing said (or, past the line limit, "not a trace CSV"). A CRLF is left
    whole, and so are CRs right before it (`_LONE_CR`); the CRs that end a chunk wait for the
    next chunk's first byte (`_held_crs`)."""
    held = b""
    for chunk in chunks:
        if held:
            chunk, held = held + chunk, b""
        chunk, held = _held_crs(chunk)
        if chunk.count(b"\r") != chunk.count(b"\r\n"):
            chunk = _LONE_CR.sub(_as_lfs, chunk)
        if chunk:
            yield chunk
    if held:
        yield b"\n" * len(held)


#: CRs that end lines alone: a run of them not followed by a LF (each a line end). A line
#: ended `\r\r\n` (a CRLF file written again through a text mode that made each LF a CRLF,
#: Python's csv module on Windows without newline='') is one line, as `grep -n`, `sed -n` and
#: the reader before bare CRs ended lines count it: split at its first CR, every row after
#: the first was numbered twice its line in a bad row's message (":9:" for line 5). Matched
#: at a run's first CR, whole (possessive): linear in a run of any length.
_LONE_CR = re.compile(rb"(?<!\r)\r++(?!\n)")
#: The most CRs that end a chunk held back for the next chunk (`_held_crs`).
_HELD_CRS_MAX = 64


def _as_lfs(run: re.Match[bytes]) -> bytes:
    """A run of CRs that end lines alone, each made a LF."""
    return b"\n" * len(run.group())


def _held_crs(chunk: bytes) -> tuple[bytes, bytes]:
    """`chunk` without the CRs it ends with, and those CRs: whether each ends a line alone
    (`_LONE_CR`) is told by the bytes after them, in the next chunk. At most `_HELD_CRS_MAX`
    are held (a file of nothing but CRs is not held whole); CRs before them end lines alone."""
    kept = chunk.rstrip(b"\r")
    crs = len(chunk) - len(kept)
    if crs > _HELD_CRS_MAX:
        kept, crs = kept + b"\n" * (crs - _HELD_CRS_MAX), _HELD_CRS_MAX
    return kept, b"\r" * crs


class _Lines:
    """A file's lines (newlines kept), for `for line in ...` and `readline()`; with
    `bare_cr_ends_lines`, a CR alone ends a line too (`bare_cr_as_lf`)."""

    def __init__(self, raw: IO[bytes], limit: int = MAX_LINE_BYTES,
                 bare_cr_ends_lines: bool = False) -> None:
        self._raw = raw
        self._limit = limit
        self._bare_cr_ends_lines = bare_cr_ends_lines
        self._pieces_left = split_lines(self._text_chunks(), limit)
        self._lines: Iterator[bytes] = chain.from_iterable(self._pieces_left)

    def __iter__(self) -> Iterator[bytes]:
        return self._lines

    def readline(self) -> bytes:
        """The next line, or b"" at the end."""
        return next(self._lines, b"")

    def close(self) -> None:
        """Close the file and let go of the piece being read (its lines and bytes, a few MB):
        the generator refers back to this object, and while the report runs without the
        cycle collector nothing else would free them."""
        self._pieces_left.close()
        self._lines = iter(())
        self._raw.close()

    def _text_chunks(self) -> Iterator[bytes]:
        """The file's bytes as its lines are split: `_chunks`, bare CRs made LFs if asked."""
        return bare_cr_as_lf(self._chunks()) if self._bare_cr_ends_lines else self._chunks()

    def _chunks(self) -> Iterator[bytes]:
        raise NotImplementedError


class PlainLines(_Lines):
    """A plain file's lines."""

    def raw(self) -> IO[bytes]:
        """The file itself (a windowed read looks for where to start in it: `seek`)."""
        return self._raw

    def seek(self, offset: int) -> None:
        """Read on from byte `offset` (the start of a line), whatever was read before."""
        self._pieces_left.close()
        self._raw.seek(offset)
        self._pieces_left = split_lines(self._text_chunks(), self._limit)
        self._lines = chain.from_iterable(self._pieces_left)

    def _chunks(self) -> Iterator[bytes]:
        read = self._raw.read
        while data := read(PLAIN_CHUNK_BYTES):
            yield data


#: Judges a piece of inflated lines (`GzipLines.pass_pieces`): whether the whole lines of
#: `data[:end]` may be passed over unread.
PieceJudge = Callable[[bytes, int], bool]


class GzipLines(_Lines):
    """A gzip file's lines."""

    def pass_pieces(self, before: PieceJudge) -> int:
        """Read on, from the file's start, past the inflated pieces whose whole lines `before`
        says may be passed over (the first line, the header, read already, never again), and
        return how many lines were passed over, the header's included: the number of the line
        before the next one read. The pieces passed over are inflated, never split into lines.
        The first piece `before` refuses is read as usual from its first whole line on; so is a
        line longer than the longest record (`MAX_LINE_BYTES`: `split_lines` drops it). A file
        that cannot be read again from its start (a FIFO) is left as it is: 1. Damage met
        while passing over is met again by the next read (as the reader would have met it)."""
        if not self._raw.seekable():
            return 1
        self._raw.seek(0)
        self._pieces_left.close()
        chunks = self._text_chunks()
        lines, in_header = 0, True
        #: The line not yet ended where the pieces passed over stop, in pieces (a long one
        #: is never joined here), and its length.
        carry: list[bytes] = []
        carry_bytes = 0
        rest: Iterator[bytes]
        try:
            for out in chunks:
                if in_header:
                    nl = out.find(b"\n")
                    if nl < 0:
                        continue  # still inside the header (read whole before): dropped
                    out, lines, in_header = out[nl + 1:], 1, False
                end = out.rfind(b"\n") + 1
                if end == 0 and carry_bytes + len(out) <= self._limit:
                    carry.append(out)  # inside a line longer than a piece: wait for its end
                    carry_bytes += len(out)
                    continue
                # Judged by its own lines: the first may have begun in the carry, and shows
                # its true time all the same, or none.
                if end == 0 or not before(out, end):
                    rest = chain(carry, (out,), chunks)
                    break
                lines += out.count(b"\n")
                tail = out[end:]
                carry, carry_bytes = [tail], len(tail)
            else:
                rest = iter(carry)  # the end came within what was passed over
        except (EOFError, zlib.error, OSError) as exc:
            rest = _raising(exc)
        self._pieces_left = split_lines(rest, self._limit)
        self._lines = chain.from_iterable(self._pieces_left)
        return max(lines, 1)

    def _chunks(self) -> Iterator[bytes]:
        return inflated(self._raw)


def _raising(exc: BaseException) -> Iterator[bytes]:
    """Pieces that raise `exc` at the first read (damage met while passing over pieces)."""
    raise exc
    yield b""  # a generator: the raise comes at the first read, not here
