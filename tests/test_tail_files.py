"""tail -F semantics, driven one poll at a time (no threads, no sleeps)."""

from __future__ import annotations

import os
from pathlib import Path

from gapwatch.engine.clock import FakeClock
from gapwatch.logs.tail import LineSplitter, Tailer


class Collect:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.notices: list[str] = []

    def line(self, source: str, text: str, mono: int, wall: float) -> None:
        self.lines.append(text)

    def notice(self, level: str, message: str) -> None:
        self.notices.append(message)


def tailer(path: Path, got: Collect, **kw: object) -> Tailer:
    return Tailer([str(path)], got.line, on_notice=got.notice, clock=FakeClock(), **kw)  # type: ignore[arg-type]


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def test_starts_at_the_end_by_default(tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"old 1\nold 2\n")
    got = Collect()
    t = tailer(log, got)
    t.poll_once()
    append(log, b"new 1\n")
    t.poll_once()
    assert got.lines == ["new 1"]
    assert t.status()[0].state == "following"


def test_from_start_reads_history(tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"old 1\nold 2\n")
    got = Collect()
    t = tailer(log, got, from_start=True)
    t.poll_once()
    assert got.lines == ["old 1", "old 2"]


def test_partial_line_is_kept_until_its_newline(tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"")
    got = Collect()
    t = tailer(log, got)
    t.poll_once()
    append(log, b"TIMELINE,1,GPU_")
    t.poll_once()
    assert got.lines == []
    append(log, b"START,j,worker=0\r\nnext")
    t.poll_once()
    assert got.lines == ["TIMELINE,1,GPU_START,j,worker=0\r"]


def test_file_that_does_not_exist_yet_is_read_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    got = Collect()
    t = tailer(log, got)
    assert t.status()[0].state == "waiting for file"
    t.poll_once()
    assert t.status()[0].state == "missing: no such file (waiting for it)"
    log.write_bytes(b"first\n")
    t.poll_once()
    assert got.lines == ["first"]
    assert t.status()[0].state == "following"


def test_a_missing_file_is_a_warning_once_like_tail_f_then_its_appearance_is_said(
    tmp_path: Path,
) -> None:
    log = tmp_path / "typo.log"
    notices: list[tuple[str, str]] = []
    t = Tailer([str(log)], lambda *a: None, on_notice=lambda lv, msg: notices.append((lv, msg)))
    for _ in range(3):
        t.poll_once()
    assert notices == [("warning", f"log {log}: cannot open for reading: No such file or "
                                   "directory; following it once it appears")]
    log.write_bytes(b"x\n")
    t.poll_once()
    assert notices[-1] == ("info", f"log {log}: has appeared; following it from its start")


def test_rotation_by_rename_drains_the_old_file_then_reads_the_new_one(tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"")
    got = Collect()
    t = tailer(log, got)
    t.poll_once()
    append(log, b"a\n")
    t.poll_once()
    append(log, b"b\nunterminated")  # written after our last read, before rotation
    os.rename(log, tmp_path / "cuzk.log.1")
    log.write_bytes(b"c\n")
    t.poll_once()
    assert got.lines == ["a", "b", "unterminated", "c"]
    st = t.status()[0]
    assert st.rotations == 1 and st.state == "following (rotated)"
    assert any("rotated" in n for n in got.notices)


def test_copytruncate_reads_again_from_the_start(tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"")
    got = Collect()
    t = tailer(log, got)
    t.poll_once()
    append(log, b"one line that is long enough\n")
    t.poll_once()
    with open(log, "r+b") as fh:  # copytruncate: same inode, size 0, then the writer goes on
        fh.truncate(0)
    append(log, b"x\n")
    t.poll_once()
    assert got.lines == ["one line that is long enough", "x"]
    assert t.status()[0].truncations == 1


def test_nul_padding_after_truncation_is_skipped(tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"")
    got = Collect()
    t = tailer(log, got)
    t.poll_once()
    # A writer without O_APPEND keeps its offset after copytruncate: the gap reads as NULs.
    log.write_bytes(b"\0" * 100 + b"after\n")
    t.poll_once()
    assert got.lines == ["after"]
    assert t.status()[0].nul_bytes == 100


def test_deleted_file_is_waited_for_and_followed_again(tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"")
    got = Collect()
    t = tailer(log, got)
    t.poll_once()
    append(log, b"before delete\n")
    log.unlink()
    t.poll_once()
    assert got.lines == ["before delete"]
    assert t.status()[0].state == "deleted, waiting for file"
    t.poll_once()
    log.write_bytes(b"recreated\n")
    t.poll_once()
    assert got.lines == ["before delete", "recreated"]


def test_unreadable_file_is_reported_not_raised(tmp_path: Path) -> None:
    log = tmp_path / "dir.log"
    log.mkdir()  # reading a directory fails with EISDIR
    got = Collect()
    t = tailer(log, got, from_start=True)
    t.poll_once()
    t.poll_once()
    assert got.lines == []
    assert t.status()[0].state.startswith(("error", "unreadable"))


def test_long_line_is_cut_and_counted_and_the_next_line_survives() -> None:
    s = LineSplitter(max_line_bytes=10)
    out = s.feed(b"x" * 25)  # no newline yet: cut as soon as it is too long
    out += s.feed(b"y" * 5 + b"\nshort\n" + b"z" * 12 + b"\n")
    assert out == ["x" * 10, "short", "z" * 10]
    assert s.cut_lines == 2


def test_invalid_utf8_is_replaced() -> None:
    s = LineSplitter()
    assert s.feed(b"ok \xff\xfe end\n") == ["ok \ufffd\ufffd end"]


def test_multibyte_character_split_across_reads_survives() -> None:
    s = LineSplitter()
    data = "µs — done\n".encode()
    assert s.feed(data[:2]) == [] and s.feed(data[2:]) == ["µs — done"]


def test_stdin_pipe_lines_and_end_of_input() -> None:
    read_fd, write_fd = os.pipe()
    got = Collect()
    t = Tailer(["-"], got.line, on_notice=got.notice, clock=FakeClock(), stdin_fd=read_fd)
    try:
        os.write(write_fd, b"line 1\nline")
        assert t.read_stdin_once(1.0) is True
        os.write(write_fd, b" 2\n")
        assert t.read_stdin_once(1.0) is True
        os.close(write_fd)
        assert t.read_stdin_once(1.0) is False
    finally:
        os.close(read_fd)
    assert got.lines == ["line 1", "line 2"]
    assert t.status()[0].state == "closed (end of input)"
