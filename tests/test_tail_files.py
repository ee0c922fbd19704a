"""tail -F semantics, driven one poll at a time (no threads, no sleeps)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from gapwatch.base.clock import FakeClock
from gapwatch.config import LogsConfig
from gapwatch.logs.follow import LogFollower
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


def test_a_log_of_nothing_but_nuls_makes_no_line_and_counts_every_nul() -> None:
    """`--log /dev/zero` (or a link swapped to it, a NUL hole read where the filesystem cannot
    skip it): every NUL dropped and counted, the line around them kept. (What dropping them
    costs the sampler, 132 ms p99 late with `bytes.replace` against 4 ms now, is measured, not
    tested: docs/benchmarks.md, "NULs on a followed log".)"""
    splitter = LineSplitter()
    assert splitter.feed(bytes(1 << 20)) == []
    assert splitter.feed(bytes(1000) + b"kept\0 line\n") == ["kept line"]
    assert splitter.nul_bytes == (1 << 20) + 1001


def test_nul_bytes_followed_live_are_said_once_a_file_and_counted_by_the_follower(
        tmp_path: Path) -> None:
    """`record --log /dev/zero` (a link swapped to it, a NUL hole not skipped) ran with nothing
    said: 0 lines, its NULs counted only in the tailer's per-file status, which nothing showed.
    The first are said once a file (a warning: `record`'s stderr, the dashboard), the count
    reaches the runtime's log counters (`/metrics` `gapwatch_log_counter{name="nul_bytes"}`)."""
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"")
    got = Collect()
    t = Tailer([str(log), "/dev/zero"], got.line, on_notice=got.notice, clock=FakeClock())
    t.poll_once()
    append(log, b"\0" * 100 + b"after\n")
    t.poll_once()
    append(log, b"\0" * 5 + b"again\n")
    t.poll_once()
    said = [n for n in got.notices if "NUL bytes dropped" in n]
    assert got.lines == ["after", "again"] and len(said) == 2
    assert any(n.startswith(f"log {log}: 100 NUL bytes") and "copytruncate" in n for n in said)
    assert any(n.startswith("log /dev/zero:") and "/dev/zero?" in n for n in said)
    follower = LogFollower([str(log)], LogsConfig(from_start=True), lambda ev: None)
    follower.tailer.poll_once()
    assert follower.status().nul_bytes == 105


def test_a_followed_name_turned_into_a_link_loop_is_said_and_the_file_as_opened_read_on(
        tmp_path: Path) -> None:
    """A link loop put at the followed name (ELOOP; EACCES when the folder's permission is
    revoked, ENOTDIR): the name could not be looked at, which was only counted: the state
    said "following", nothing was said, and a rotation could never be seen again. Said once
    (a warning, an alert in the footer: its state is not "following"), the file as opened read
    on; said again when the name can be looked at."""
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"")
    got = Collect()
    t = tailer(log, got)
    t.poll_once()
    with open(log, "ab") as writer:
        writer.write(b"one\n")
        writer.flush()
        aside = tmp_path / "aside.log"
        log.rename(aside)
        log.symlink_to(log)  # ELOOP
        t.poll_once()
        writer.write(b"two\n")
        writer.flush()
        t.poll_once()
        t.poll_once()
        assert got.lines == ["one", "two"]
        said = [n for n in got.notices if "cannot be looked at" in n]
        assert len(said) == 1 and "Too many levels of symbolic links" in said[0]
        assert not t.status()[0].state.startswith("following")
        log.unlink()
        aside.rename(log)  # the same file back at its name
        writer.write(b"three\n")
        writer.flush()
        t.poll_once()
    assert got.lines == ["one", "two", "three"]
    assert got.notices[-1].endswith("its name can be looked at again")
    assert t.status()[0].state == "following" and t.status()[0].rotations == 0


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


def _following_a_folder(tmp_path: Path) -> tuple[Path, Collect, Tailer]:
    """A tailer of a path where a folder is, polled once: the path, what it said, the tailer."""
    log = tmp_path / "dir.log"
    log.mkdir()
    got = Collect()
    t = tailer(log, got)
    t.poll_once()
    return log, got, t


def test_a_directory_is_said_once_and_a_file_that_takes_its_place_is_followed(
    tmp_path: Path,
) -> None:
    log, got, t = _following_a_folder(tmp_path)
    t.poll_once()
    assert got.lines == []
    assert t.status()[0].state == "is a directory"
    assert sum("is a directory" in n for n in got.notices) == 1
    log.rmdir()
    log.write_bytes(b"now a file\n")
    t.poll_once()
    assert got.lines == ["now a file"] and t.status()[0].state == "following"
    # Its coming is said, as its awaiting was ("waiting in case a file takes its place").
    assert any(n.endswith("a regular file took the directory's place; following it")
               for n in got.notices)


def test_a_fifo_that_takes_a_directorys_place_is_said_and_followed(tmp_path: Path) -> None:
    """A folder at the log path, then a FIFO in its place: followed without a word (the
    folder was said, with "waiting in case a file takes its place")."""
    log, got, t = _following_a_folder(tmp_path)
    log.rmdir()
    os.mkfifo(log)
    t.poll_once()
    assert t.status()[0].state == "following (stream)"
    assert any(n.endswith("a FIFO took the directory's place; following it")
               for n in got.notices)


def test_copytruncate_refilled_past_the_old_offset_within_one_poll_loses_nothing(
    tmp_path: Path,
) -> None:
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"")
    got = Collect()
    t = tailer(log, got)
    t.poll_once()
    append(log, b"line 1\n")
    t.poll_once()
    (tmp_path / "cuzk.log.1").write_bytes(log.read_bytes())  # cp
    with open(log, "r+b") as fh:  # truncate -s0
        fh.truncate(0)
    append(log, b"line 2\nline 3\nline 4\n")  # before the next poll: past the old offset
    t.poll_once()
    assert got.lines == ["line 1", "line 2", "line 3", "line 4"]
    assert t.status()[0].truncations == 1


def test_copytruncate_refilled_to_the_same_size_is_seen_by_its_bytes(tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"")
    got = Collect()
    t = tailer(log, got)
    t.poll_once()
    append(log, b"TIMELINE,1,GPU_START,j,worker=0\n")
    t.poll_once()
    with open(log, "r+b") as fh:
        fh.truncate(0)
    append(log, b"TIMELINE,2,GPU_END,j,worker=0\n")  # same length, other bytes
    t.poll_once()
    assert got.lines == ["TIMELINE,1,GPU_START,j,worker=0", "TIMELINE,2,GPU_END,j,worker=0"]


def test_growth_without_truncation_is_never_read_twice(tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"")
    got = Collect()
    t = tailer(log, got)
    for i in range(50):
        append(log, b"same line\n" * (i % 3))
        t.poll_once()
    assert got.lines == ["same line"] * sum(i % 3 for i in range(50))
    assert t.status()[0].truncations == 0


def test_copytruncate_with_a_writer_at_its_old_offset_skips_the_hole(tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"")
    got = Collect()
    t = tailer(log, got)
    t.poll_once()
    with open(log, "r+b", buffering=0) as writer:  # no O_APPEND: keeps its offset
        writer.write(b"x" * 5000 + b"\n")
        t.poll_once()
        os.truncate(log, 0)
        writer.write(b"after the cut\n")  # at offset 5001: a hole before it
        t.poll_once()
    assert got.lines == ["x" * 5000, "after the cut"]
    assert t.status()[0].truncations == 1


def _poll_in_thread(t: Tailer) -> bool:
    """Run one poll on a thread; True if it returned (a blocking open would never return)."""
    done = threading.Thread(target=t.poll_once, daemon=True)
    done.start()
    done.join(10.0)
    return not done.is_alive()


@pytest.mark.parametrize("from_start", [False, True])
def test_a_fifo_without_a_writer_blocks_nothing(tmp_path: Path, from_start: bool) -> None:
    fifo, other = tmp_path / "fifo.log", tmp_path / "other.log"
    os.mkfifo(fifo)
    other.write_bytes(b"")
    got = Collect()
    t = Tailer([str(fifo), str(other)], got.line, on_notice=got.notice, clock=FakeClock(),
               from_start=from_start)
    assert _poll_in_thread(t)  # opens both: must not wait for a writer
    append(other, b"the other file\n")
    assert _poll_in_thread(t)
    assert got.lines == ["the other file"]
    assert [s.state for s in t.status()] == ["following (stream)", "following"]


def test_a_fifo_is_read_as_a_stream_across_writers(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    got = Collect()
    t = tailer(fifo, got, from_start=True)
    t.poll_once()  # the reader end is open: a writer's open returns at once
    writer = os.open(fifo, os.O_WRONLY)
    os.write(writer, b"first\nsecond with")
    t.poll_once()
    os.write(writer, b"out end")
    os.close(writer)  # the writer's last line is complete when it closes
    t.poll_once()
    writer = os.open(fifo, os.O_WRONLY)
    os.write(writer, b"next writer\n")
    t.poll_once()
    os.close(writer)
    t.poll_once()
    assert got.lines == ["first", "second without end", "next writer"]
    st = t.status()[0]
    assert st.state == "following (stream)" and st.errors == 0 and st.truncations == 0


def test_a_character_device_is_read_as_a_stream(tmp_path: Path) -> None:
    got = Collect()
    t = tailer(Path(os.devnull), got)
    t.poll_once()
    t.poll_once()
    st = t.status()[0]
    assert (st.state, st.errors, got.lines) == ("following (stream)", 0, [])


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


def test_a_path_that_cannot_be_opened_is_said_and_retried(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_bytes(b"")
    got = Collect()
    t = tailer(blocker / "cuzk.log", got)
    t.poll_once()
    t.poll_once()
    st = t.status()[0]
    assert st.state == "unreadable: Not a directory" and st.errors == 1
    assert sum("cannot open" in n for n in got.notices) == 1


def test_from_start_only_the_lines_held_when_following_began_are_backlog(tmp_path: Path) -> None:
    """`--from-start`: the lines the file held are read at once, their arrival no time of their
    writing (`on_backlog`); what is written after, and a file re-created or rotated in, or one
    that appears later, holds new lines (`on_line`)."""
    log, later = tmp_path / "cuzk.log", tmp_path / "later.log"
    log.write_bytes(b"old 1\nold 2\n")
    backlog, live = Collect(), Collect()
    t = Tailer([str(log), str(later)], live.line, on_backlog=backlog.line,
               on_notice=live.notice, clock=FakeClock(), from_start=True)
    t.poll_once()
    append(log, b"new 1\n")
    append(later, b"later 1\n")
    t.poll_once()
    os.unlink(log)
    t.poll_once()
    log.write_bytes(b"re-created 1\n")
    t.poll_once()
    assert backlog.lines == ["old 1", "old 2"]
    assert live.lines == ["new 1", "later 1", "re-created 1"]

    # Followed from its end (the default), nothing is backlog, a re-created file neither.
    quiet, seen = Collect(), Collect()
    log.write_bytes(b"old\n")
    t = Tailer([str(log)], seen.line, on_backlog=quiet.line, clock=FakeClock())
    t.start()
    t.stop()
    os.unlink(log)
    t.poll_once()
    log.write_bytes(b"fresh\n")
    t.poll_once()
    assert quiet.lines == [] and seen.lines == ["fresh"]


def _numbered(first: int, n: int) -> bytes:
    return b"".join(b"line %06d\n" % i for i in range(first, first + n))


def test_the_backlogs_last_read_stops_at_its_end_and_a_rotation_loses_no_old_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A poll reads at most so much (8 MiB; 1,000 bytes here). (1) The read that reached the
    end of the backlog went on into lines written after following began, and delivered them
    as backlog. (2) A file rotated while more than one read of it was left: one read of the
    old file was all it got (a 20 MiB file rotated after the first poll lost 41,942 lines),
    and the old file's backlog lines came as new ones with the new file's."""
    import gapwatch.logs.tail as tail

    monkeypatch.setattr(tail, "_MAX_READ_PER_POLL", 1000)
    monkeypatch.setattr(tail, "_READ_CHUNK", 100)
    log = tmp_path / "cuzk.log"
    log.write_bytes(_numbered(0, 150))  # 1,800 bytes: two reads
    backlog, live = Collect(), Collect()
    t = Tailer([str(log)], live.line, on_backlog=backlog.line, clock=FakeClock(),
               from_start=True)
    t.poll_once()
    append(log, b"LIVE 1\n")
    for _ in range(3):
        t.poll_once()
    assert backlog.lines == [f"line {i:06d}" for i in range(150)]
    assert live.lines == ["LIVE 1"]

    log.unlink()
    log.write_bytes(_numbered(0, 300))  # 3,600 bytes: four reads
    backlog, live = Collect(), Collect()
    t = Tailer([str(log)], live.line, on_backlog=backlog.line, clock=FakeClock(),
               from_start=True)
    t.poll_once()
    os.rename(log, tmp_path / "cuzk.log.1")
    log.write_bytes(b"NEW 1\n")
    for _ in range(6):
        t.poll_once()
    assert backlog.lines == [f"line {i:06d}" for i in range(300)]  # every one, in order
    assert live.lines == ["NEW 1"]
    assert t.status()[0].rotations == 1
