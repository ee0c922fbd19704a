"""The copy-trace reader: datagrams in, CopyRecords out; bad input counted, never a crash, and a
sender that is never made to wait (gapwatch.sources.copytrace, gapwatch.copytrace.wire)."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gapwatch.base.clock import FakeClock
from gapwatch.copytrace import socket_path, wire
from gapwatch.core.models import CopyRecord, GpuInfo, Notice, Record
from gapwatch.sources import SourceUnavailable
from gapwatch.sources.copytrace import CopyTraceReader

UUID0 = bytes(range(0xA0, 0xB0))
UUID0_TEXT = "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf"
GPUS = [GpuInfo(index=0, uuid=UUID0_TEXT), GpuInfo(index=1, uuid="GPU-other")]
T0_NS = 1_796_000_000_000_000_000


def _taking(records: list[Record], done: threading.Event) -> Callable[[Record], None]:
    """An on_record that keeps each record and says one arrived."""
    def take(rec: Record) -> None:
        records.append(rec)
        done.set()
    return take


def copy(i: int = 0, *, kind: int = 1, src: int = 1, dst: int = 3, uuid: bytes = UUID0,
         device: int = 0, nbytes: int = 1 << 30, dur_ns: int = 300_000_000) -> wire.WireCopy:
    start = T0_NS + i * 1_000_000_000
    return wire.WireCopy(start, start + dur_ns, nbytes, device, 1, 13, 100 + i, kind, src, dst,
                         1, 1, uuid)


def copies_datagram(cs: list[wire.WireCopy], **header: int) -> bytes:
    return wire.encode_datagram(wire.TYPE_COPIES, records=[wire.encode_copy(c) for c in cs],
                                record_bytes=wire.COPY.size, **header)


def hello(flags: int = 0, **header: int) -> bytes:
    h = wire.WireHello(1, 130001, 130001, 100, flags, "cuzk")
    return wire.encode_datagram(wire.TYPE_HELLO, records=[wire.encode_hello(h)], **header)


class Collect:
    def __init__(self) -> None:
        self.records: list[Record] = []
        self.notices: list[Notice] = []

    def copies(self) -> list[CopyRecord]:
        return [r for r in self.records if isinstance(r, CopyRecord)]


def reader(tmp_path: Path, name: str = "ct.sock", gpus: list[GpuInfo] | None = None
           ) -> tuple[CopyTraceReader, Collect]:
    """A reader whose clock says the test's copies (from T0 on) are arriving live."""
    got = Collect()
    r = CopyTraceReader(str(tmp_path / name), GPUS if gpus is None else gpus,
                        got.records.append, got.notices.append,
                        clock=FakeClock(start_wall_s=T0_NS / 1e9 + 100))
    return r, got


def test_a_copy_datagram_becomes_copy_records_with_memory_kinds_and_the_nvml_gpu(
        tmp_path: Path) -> None:
    r, got = reader(tmp_path)
    r.feed(copies_datagram([copy(0, src=1), copy(1, kind=2, src=3, dst=2)], pid=42))
    a, b = got.copies()
    assert (a.direction, a.src_kind, a.dst_kind, a.host_kind) == ("h2d", "pageable", "device",
                                                                 "pageable")
    assert (b.direction, b.host_kind) == ("d2h", "pinned")
    assert a.gpu == 0 and a.pid == 42 and a.stream_id == 13 and a.bytes == 1 << 30
    assert a.start_wall_s == pytest.approx(T0_NS / 1e9)
    assert a.end_wall_s - a.start_wall_s == pytest.approx(0.3)
    assert r.status().copies == 2 and r.status().processes == 1


def test_a_device_whose_uuid_is_not_watched_is_unmapped_not_guessed(tmp_path: Path) -> None:
    r, got = reader(tmp_path)
    r.feed(copies_datagram([copy(0, uuid=b"\x01" * 16, device=0)]))
    assert got.copies()[0].gpu is None
    assert r.status().unmapped == 1


def test_without_a_uuid_the_cuda_ordinal_is_used_only_in_pci_bus_order(tmp_path: Path) -> None:
    r, got = reader(tmp_path)
    r.feed(copies_datagram([copy(0, uuid=bytes(16), device=1)], pid=7))
    assert got.copies()[-1].gpu is None  # nothing known of the process's device order
    r.feed(hello(wire.HELLO_PCI_BUS_ORDER, pid=7, seq=1))
    r.feed(copies_datagram([copy(1, uuid=bytes(16), device=1)], pid=7, seq=2))
    assert got.copies()[-1].gpu == 1
    r.feed(hello(wire.HELLO_PCI_BUS_ORDER | wire.HELLO_VISIBLE_SET, pid=7, seq=3))
    r.feed(copies_datagram([copy(2, uuid=bytes(16), device=1)], pid=7, seq=4))
    assert got.copies()[-1].gpu is None  # CUDA_VISIBLE_DEVICES renumbers: no guess


@pytest.mark.parametrize("mutate, reason", [
    (lambda d: d[:40], "short"),
    (lambda d: b"XXXX" + d[4:], "magic"),
    (lambda d: d[:4] + (2).to_bytes(2, "little") + d[6:], "version"),
    (lambda d: d[:8] + (9).to_bytes(2, "little") + d[10:], "type"),
    (lambda d: d[:-10], "truncated"),
    (lambda d: d[:10] + (8).to_bytes(2, "little") + d[12:], "record_size"),
], ids=["short", "garbage-magic", "unknown-version", "unknown-type", "truncated", "tiny-records"])
def test_bad_datagrams_are_counted_by_reason_and_dropped(tmp_path: Path, mutate, reason) -> None:  # type: ignore[no-untyped-def]
    r, got = reader(tmp_path)
    r.feed(mutate(copies_datagram([copy(0), copy(1)])))
    r.feed(copies_datagram([copy(2)]))  # the next good one is read as if nothing happened
    assert r.bad == {reason: 1}
    assert len(got.copies()) == 1
    assert any("bad datagram" in n.message for n in got.notices)


def test_random_garbage_never_raises(tmp_path: Path) -> None:
    r, got = reader(tmp_path)
    rnd = __import__("random").Random(3)
    good = copies_datagram([copy(0)])
    for _ in range(500):
        n = rnd.randrange(0, 300)
        junk = bytes(rnd.randrange(256) for _ in range(n))
        if rnd.random() < 0.5:  # valid header, scrambled body
            junk = good[:64] + junk
        r.feed(junk)
    assert r.status().bad + r.status().copies >= 1
    assert all(isinstance(c, CopyRecord) for c in got.records)


def test_a_message_cut_by_the_kernel_is_truncated_not_parsed(tmp_path: Path) -> None:
    r, got = reader(tmp_path)
    r.feed(copies_datagram([copy(0)]), truncated=True)
    assert r.bad == {"truncated": 1} and got.copies() == []


def test_impossible_copies_are_refused_one_by_one(tmp_path: Path) -> None:
    r, got = reader(tmp_path)
    backwards = wire.WireCopy(T0_NS + 10, T0_NS, 1, 0, 1, 1, 1, 1, 1, 3, 0, 1, UUID0)
    r.feed(copies_datagram([backwards, copy(1, kind=8), copy(2)]))  # 8 = device to device
    assert len(got.copies()) == 1
    assert r.bad == {"record_time": 1, "record_kind": 1}


def test_a_restarted_prover_is_a_new_sender_and_its_drops_count_from_when_we_heard_it(
        tmp_path: Path) -> None:
    r, got = reader(tmp_path)
    # The first prover had dropped 500 copies before gapwatch listened: not ours to report.
    r.feed(copies_datagram([copy(0)], pid=10, session_id=1, seq=20, dropped_send=500))
    r.feed(copies_datagram([copy(1)], pid=10, session_id=1, seq=22, dropped_send=503))
    r.feed(wire.encode_datagram(wire.TYPE_BYE, pid=10, session_id=1, seq=23, dropped_send=503))
    assert r.status().dropped_send == 3 and r.status().processes == 0
    # It restarts (same pid, new session), counting from 0 again: not a loss, not a reset.
    r.feed(copies_datagram([copy(2)], pid=10, session_id=2, seq=0, dropped_cupti=4))
    r.feed(copies_datagram([copy(3)], pid=10, session_id=2, seq=1, dropped_cupti=6))
    st = r.status()
    assert (st.dropped_send, st.dropped_cupti, st.processes, st.copies) == (3, 2, 1, 4)
    assert [n.message for n in got.notices if "attached" in n.message] == [
        "copy trace: pid 10 attached", "copy trace: pid 10 attached"]


def test_a_note_from_the_library_becomes_a_warning(tmp_path: Path) -> None:
    r, got = reader(tmp_path)
    text = b"CUPTI is already in use by another tool: copy trace off in this process"
    r.feed(wire.encode_datagram(wire.TYPE_NOTE, pid=9, records=[text]))
    assert got.notices[-1].level == "warning" and "already in use" in got.notices[-1].message


def _live(tmp_path: Path) -> tuple[CopyTraceReader, Collect]:
    r, got = reader(tmp_path)
    r.open()
    return r, got


def _sender() -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.setblocking(False)
    return s


def test_a_reader_that_falls_behind_makes_the_sender_drop_and_count_never_wait(
        tmp_path: Path) -> None:
    r, got = _live(tmp_path)  # bound, but its thread not started: nobody drains the queue
    out = _sender()
    sent = dropped = 0
    seq = 0
    # Send until the queue is full and then some: every send returns at once.
    while dropped < 50:
        d = copies_datagram([copy(seq)], pid=5, seq=seq, dropped_send=dropped)
        seq += 1
        try:
            out.sendto(d, r.path)
            sent += 1
        except BlockingIOError:
            dropped += 1
    r.start()  # now it drains what was queued ...
    done = threading.Event()
    def take(rec: Record) -> None:
        got.records.append(rec)
        if len(got.records) >= sent + 1:
            done.set()

    r._on_record = take
    # ... and the next datagram tells it what the sender had to drop meanwhile.
    while True:
        try:
            out.sendto(copies_datagram([copy(seq)], pid=5, seq=seq, dropped_send=dropped),
                       r.path)
            break
        except BlockingIOError:
            continue
    assert done.wait(20)
    r.stop()
    st = r.status()
    assert st.copies == sent + 1
    assert st.dropped_send == dropped  # the first datagram's count (0) is the baseline
    assert sent > 0 and dropped == 50


def test_a_listening_reader_delivers_from_its_thread_and_removes_its_socket(
        tmp_path: Path) -> None:
    r, got = _live(tmp_path)
    done = threading.Event()
    r._on_record = _taking(got.records, done)
    r.start()
    _sender().sendto(copies_datagram([copy(0)]), r.path)
    assert done.wait(20)
    r.stop()
    assert not os.path.exists(r.path)
    assert r.status().state == "stopped"


def test_gapwatch_restarting_is_picked_up_by_the_next_send(tmp_path: Path) -> None:
    r, _ = _live(tmp_path)
    r.stop()
    out = _sender()
    with pytest.raises(OSError) as exc:  # nobody listens: the library counts a drop
        out.sendto(copies_datagram([copy(0)]), r.path)
    assert exc.value.errno in (errno.ENOENT, errno.ECONNREFUSED)
    r2, got2 = _live(tmp_path)
    done = threading.Event()
    r2._on_record = _taking(got2.records, done)
    r2.start()
    out.sendto(copies_datagram([copy(1)], seq=1, dropped_send=1), r2.path)
    assert done.wait(20)
    r2.stop()


def test_a_stale_socket_is_replaced_but_a_live_one_or_a_file_is_never_touched(
        tmp_path: Path) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(str(tmp_path / "ct.sock"))
    stale.close()  # the file stays, nobody listens: a gapwatch that died
    r, _ = _live(tmp_path)
    with pytest.raises(SourceUnavailable, match="another gapwatch is listening"):
        reader(tmp_path)[0].open()
    r.stop()
    (tmp_path / "plain").write_text("data")
    with pytest.raises(SourceUnavailable, match="not a socket"):
        reader(tmp_path, "plain")[0].open()
    assert (tmp_path / "plain").read_text() == "data"


def test_the_default_socket_is_in_a_runtime_folder_only_when_it_is_private(
        tmp_path: Path) -> None:
    uid = os.getuid()
    run_user = tmp_path / "run"
    (run_user / str(uid)).mkdir(parents=True, mode=0o700)
    env = {"TMPDIR": str(tmp_path / "t")}
    assert socket_path.default_socket_path(uid, env=env, run_user=str(run_user)) == str(
        run_user / str(uid) / "gapwatch-copytrace.sock")
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    assert socket_path.default_socket_path(
        uid, env={**env, "XDG_RUNTIME_DIR": str(xdg)}, run_user=str(run_user)) == str(
        xdg / "gapwatch-copytrace.sock")
    # Without a private runtime folder: gapwatch's own folder under TMPDIR, never /tmp itself.
    # TMPDIR short enough for a socket path (108 bytes): pytest's tmp_path may not be (under
    # xdist it has a popen-gwN level more), and a longer TMPDIR rightly falls back to /tmp.
    (run_user / str(uid)).chmod(0o777)
    xdg.chmod(0o755 | 0o020)
    short = tempfile.mkdtemp(prefix="gw-", dir="/tmp")
    try:
        fallback = os.path.join(short, f"gapwatch-{uid}", "copytrace.sock")
        assert socket_path.default_socket_path(
            uid, env={"TMPDIR": short, "XDG_RUNTIME_DIR": str(xdg)},
            run_user=str(run_user)) == fallback
    finally:
        os.rmdir(short)
    assert socket_path.default_socket_path(uid, env={}, run_user=str(run_user)) == \
        f"/tmp/gapwatch-{uid}/copytrace.sock"


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A TMPDIR short enough for the default socket's path (107 bytes): pytest's tmp_path is
    not always (`/tmp/pytest-of-root/pytest-1133/popen-gw3/test_..._0`: once its run counter
    reached four digits, gapwatch rightly fell back to /tmp/gapwatch-UID, which another
    gapwatch on the box, or another test run, may hold, and these tests failed)."""
    short = Path(tempfile.mkdtemp(prefix="gw-", dir="/tmp"))
    try:
        yield short
    finally:
        shutil.rmtree(short, ignore_errors=True)


def _default_reader(tmpdir: Path, monkeypatch: pytest.MonkeyPatch) -> CopyTraceReader:
    """A reader on the default path, on a box without /run/user/UID or XDG_RUNTIME_DIR, with
    TMPDIR `tmpdir`."""
    from functools import partial

    from gapwatch.sources import copytrace as source

    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setattr(source, "default_socket_path", partial(
        socket_path.default_socket_path, run_user=str(tmpdir / "no-run-user")))
    r = CopyTraceReader(None, GPUS, lambda r: None, None)
    assert r.path == str(tmpdir / f"gapwatch-{os.getuid()}" / "copytrace.sock")
    return r


def test_without_a_runtime_folder_the_default_socket_is_in_a_folder_made_private(
        short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = _default_reader(short_tmp, monkeypatch)
    folder = short_tmp / f"gapwatch-{os.getuid()}"
    assert r.path == str(folder / "copytrace.sock")
    r.open()
    try:
        st = folder.lstat()
        assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700
        assert stat.S_ISSOCK(os.lstat(r.path).st_mode)
    finally:
        r.stop()


@pytest.mark.parametrize("plant", ["others may write", "a link"])
def test_a_default_folder_someone_else_could_have_made_is_refused_saying_why(
        tmp_path: Path, short_tmp: Path, monkeypatch: pytest.MonkeyPatch, plant: str) -> None:
    r = _default_reader(short_tmp, monkeypatch)
    folder = short_tmp / f"gapwatch-{os.getuid()}"
    if plant == "a link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "elsewhere")
    else:
        folder.mkdir()
        folder.chmod(0o777)
    with pytest.raises(SourceUnavailable, match="is a symbolic link" if plant == "a link"
                       else r"can be written by others \(mode 0777\)"):
        r.open()
    assert not os.path.exists(r.path)


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root can hand a file to "
                                "another user")


@needs_root
def test_a_default_folder_or_a_socket_of_another_user_is_refused_naming_who_holds_it(
        tmp_path: Path, short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = _default_reader(short_tmp, monkeypatch)
    folder = short_tmp / f"gapwatch-{os.getuid()}"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, -1)
    with pytest.raises(SourceUnavailable, match=r"belongs to user \w+ \(uid 65534\)"):
        r.open()
    # An explicit path where another user's socket is: neither replaced nor listened on.
    theirs = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    theirs.bind(str(tmp_path / "ct.sock"))
    os.chown(tmp_path / "ct.sock", 65534, -1)
    try:
        with pytest.raises(SourceUnavailable, match=r"held by user \w+ \(uid 65534\), who "
                           "listens there"):
            reader(tmp_path)[0].open()
    finally:
        theirs.close()
    with pytest.raises(SourceUnavailable, match=r"\(a socket left there\)"):
        reader(tmp_path)[0].open()
    assert stat.S_ISSOCK(os.lstat(tmp_path / "ct.sock").st_mode)  # never removed


def test_uuid_bytes_are_spelled_as_nvml_spells_them() -> None:
    assert wire.uuid_text(UUID0) == UUID0_TEXT
    assert wire.uuid_text(bytes(16)) is None


def test_copies_of_impossible_sizes_or_times_are_refused_one_by_one(tmp_path: Path) -> None:
    r, got = reader(tmp_path)  # its clock: 100 s after T0
    hour_ns = 3600 * 1_000_000_000
    bad = [
        copy(0, nbytes=2**63),  # used to kill the sampler (the gap's sum overflowed 64 bits)
        copy(1, nbytes=(1 << 40) + 1),
        wire.WireCopy(1, 2, 1 << 20, 0, 1, 13, 1, 1, 1, 3, 1, 1, UUID0),  # 1970
        wire.WireCopy(  # ended an hour before it arrived
            T0_NS - hour_ns, T0_NS - hour_ns + 1000, 1 << 20, 0, 1, 13, 2, 1, 1, 3, 1, 1, UUID0),
        copy(300),  # ends 200 s after it arrived
    ]
    r.feed(copies_datagram([*bad, copy(3, nbytes=1 << 40)]))
    assert [c.bytes for c in got.copies()] == [1 << 40]
    assert r.bad == {"record_bytes": 2, "record_time": 3}
    said = [n.message for n in got.notices if "bad datagram" in n.message]
    assert len(said) == 2  # once per reason
    assert "2^63" not in said[0] and str(2**63) in said[0]


def test_a_datagram_whose_counters_are_no_counts_or_whose_pid_is_no_process_is_refused(
        tmp_path: Path) -> None:
    r, got = reader(tmp_path)
    r.feed(copies_datagram([copy(0)], pid=7, dropped_send=18_000_000_000_000_000_000))
    r.feed(copies_datagram([copy(1)], pid=7, seq=2**60))
    r.feed(copies_datagram([copy(2)], pid=0))
    r.feed(copies_datagram([copy(3)], pid=2**31))
    assert got.copies() == [] and r.bad == {"counter": 2, "pid": 2}
    r.feed(copies_datagram([copy(4)], pid=7, dropped_send=5))
    assert len(got.copies()) == 1 and r.status().dropped_send == 0


def test_a_flood_of_fake_senders_is_followed_up_to_the_limit_and_the_rest_refused(
        tmp_path: Path) -> None:
    from gapwatch.core.bounds import MAX_SENDERS

    r, got = reader(tmp_path)
    for pid in range(1, 9_850):
        r.feed(copies_datagram([copy(0)], pid=pid))
    st = r.status()
    assert st.processes == MAX_SENDERS and len(r._senders) == MAX_SENDERS
    assert r.bad == {"senders": 9_849 - MAX_SENDERS}
    assert sum("at most 64 are followed" in n.message for n in got.notices) == 1
    # A sender that said goodbye makes room for a new one.
    r.feed(wire.encode_datagram(wire.TYPE_BYE, pid=1, seq=1))
    r.feed(copies_datagram([copy(1)], pid=50_000))
    assert got.copies()[-1].pid == 50_000


def test_a_flood_of_notes_is_said_once_per_interval_cut_and_counted(tmp_path: Path) -> None:
    from gapwatch.sources.copytrace import NOTE_CHARS, NOTE_INTERVAL_S

    r, got = reader(tmp_path)
    note = ("x" * 60_000).encode()
    for seq in range(3_332):
        r.feed(wire.encode_datagram(wire.TYPE_NOTE, pid=9, seq=seq, records=[note]))
    warnings = [n for n in got.notices if n.level == "warning"]
    assert len(warnings) == 1
    assert len(warnings[0].message) < NOTE_CHARS + 100 and "[cut 59488 chars]" in \
        warnings[0].message
    assert isinstance(r.clock, FakeClock)
    r.clock.advance_ns(int(NOTE_INTERVAL_S * 1e9))
    r._say_held_notes()  # the reader's thread does this whenever it waits for a datagram
    summary = [n for n in got.notices if n.level == "warning"][1:]
    assert len(summary) == 1 and "3331 more notes from this prover" in summary[0].message
    r._say_held_notes()
    assert len([n for n in got.notices if n.level == "warning"]) == 2


def test_copies_from_a_library_reading_another_cupti_release_are_refused_and_said_once(
        tmp_path: Path) -> None:
    """Issue 29, item 13: only the major was compared, so a library of 13.0 over CUPTI 13.2 (an
    older build, before the library checked the minor itself) had its copies believed."""
    r, got = reader(tmp_path)
    h = wire.WireHello(1, 130001, 130200, 100, 0, "cuzk")
    r.feed(wire.encode_datagram(wire.TYPE_HELLO, records=[wire.encode_hello(h)], pid=9))
    r.feed(copies_datagram([copy(0)], pid=9, seq=1))
    r.feed(wire.encode_datagram(wire.TYPE_HELLO, records=[wire.encode_hello(h)], pid=9, seq=2))
    assert got.copies() == []
    said = [n.message for n in got.notices if "record layouts" in n.message]
    assert len(said) == 1 and "CUPTI 13.2 loaded" in said[0] and "13.0" in said[0]
    assert r.status().bad == 1


def test_another_update_of_the_same_cupti_release_is_read(tmp_path: Path) -> None:
    r, got = reader(tmp_path)
    h = wire.WireHello(1, 130001, 130002, 100, 0, "cuzk")
    r.feed(wire.encode_datagram(wire.TYPE_HELLO, records=[wire.encode_hello(h)], pid=9))
    r.feed(copies_datagram([copy(0)], pid=9, seq=1))
    assert len(got.copies()) == 1
    assert not [n for n in got.notices if n.level != "info"]


def test_a_datagrams_copies_reach_the_session_together(tmp_path: Path) -> None:
    """So that a closed gap they reach is re-published once (`Session.on_copies`)."""
    batches: list[list[CopyRecord]] = []
    r = CopyTraceReader(str(tmp_path / "ct.sock"), GPUS, Collect().records.append, None,
                        clock=FakeClock(start_wall_s=T0_NS / 1e9 + 100), on_copies=batches.append)
    r.feed(copies_datagram([copy(0), copy(1), copy(2)], pid=42))
    r.feed(copies_datagram([copy(3)], pid=42, seq=1))
    assert [len(b) for b in batches] == [3, 1]


def test_a_link_swapped_in_for_the_socket_as_it_is_bound_is_never_chmodded_through(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--copytrace PATH` in a folder the prover's user owns (root's gapwatch, the prover's
    socket where the prover runs): that user can put a link at PATH the instant after the bind.
    The socket's mode was then set by its name (`os.chmod(path, socket_mode)`), through the
    link: with `socket_mode = 0o666` (so that the prover may send) the link's target, any file
    root owns, became writable by everyone."""
    victim = tmp_path / "victim"
    victim.write_text("root's file")
    victim.chmod(0o600)
    path = tmp_path / "ct.sock"

    class Swapped(socket.socket):  # made before the module's name is patched: the real class
        def bind(self, address: str) -> None:  # type: ignore[override]
            super().bind(address)
            os.unlink(address)  # the other user wins the race: a link where the socket was
            os.symlink(victim, address)

    monkeypatch.setattr("gapwatch.sources.copytrace.socket.socket", Swapped)
    r = CopyTraceReader(str(path), GPUS, lambda rec: None, socket_mode=0o666)
    with pytest.raises(SourceUnavailable, match="replaced"):
        r.open()
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert victim.read_text() == "root's file"
    assert path.is_symlink()  # whatever the other user put there is left as it is


def test_the_socket_is_made_with_the_mode_asked_for(tmp_path: Path) -> None:
    for mode in (0o600, 0o666, 0o660):
        r = CopyTraceReader(str(tmp_path / f"ct{mode:o}.sock"), GPUS, lambda rec: None,
                            socket_mode=mode)
        r.open()
        st = os.lstat(r.path)
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == mode
        r.stop()
