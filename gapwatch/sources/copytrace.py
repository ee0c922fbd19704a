"""The copy-trace source: listens for the datagrams of the library injected into the prover and
turns them into `CopyRecord`s (and `Notice`s), live.

Who calls it: `gapwatch.engine.runtime` builds one for `--copytrace [PATH]` (or `[copytrace]
enabled`), `open()`s it (a path it cannot listen on stops the command with exit 2), then
`start()`/`stop()` beside the log follower; `status()` feeds the dashboard footer, `record`'s
summary and /metrics. Records go to `on_record` (the session's), from this source's own thread.

What it does with what arrives (wire format: `gapwatch.copytrace.wire`):
- every datagram is validated on its own; garbage, truncated datagrams, unknown versions and
  impossible records are counted by reason and dropped (the first of each reason is a notice),
  never a crash and never a stop. Every number is bounded where it is decoded
  (`gapwatch.core.bounds`): a copy's size (at most a TiB) and times (ending within ten minutes
  before and a minute after it arrives), the pid, the senders' counters, and how many senders
  are followed (`MAX_SENDERS`): any process that may write to the socket can send anything;
- the library's NOTE datagrams (its own warnings) are cut to `NOTE_CHARS` and said at most once
  per `NOTE_INTERVAL_S` per sender, the rest counted and summed up (`gapwatch.core.ratelimit`);
- senders are told apart by (pid, session): a prover that restarts is a new sender, its new
  sequence numbers are not losses, and the old one is forgotten after `FORGET_AFTER_S`;
- drops are what the senders report in-band (could not deliver, or CUPTI's own buffer drops),
  counted from the first datagram heard from each sender: drops before gapwatch listened are
  not gapwatch's business;
- the CUDA device of each copy is mapped to an NVML index by UUID (the library sends each
  device's UUID with every copy; NVML's `GpuInfo.uuid`). Fallback when the UUID is not known:
  the CUDA ordinal, but only where it is the NVML index (the prover set
  CUDA_DEVICE_ORDER=PCI_BUS_ID and no CUDA_VISIBLE_DEVICES, as its HELLO says); otherwise the
  copy keeps `gpu` None and is counted as unmapped.

The socket: a Unix datagram socket bound at `path`, mode 0600 unless told otherwise. The default
path is in a folder only its owner can write to (`gapwatch.copytrace.socket_path`: the runtime
folder, else `$TMPDIR/gapwatch-UID`, made 0700 here and refused, naming who holds it, when it
belongs to another user, is a link or others may write to it). A stale socket file left by a
gapwatch that died is replaced; a live one (another gapwatch listening), a socket of another
user (named) or a file that is not a socket is an error, never deleted.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gapwatch.base.clock import Clock, SystemClock
from gapwatch.base.watch import UNWATCHED, ThreadWatch
from gapwatch.copytrace import wire
from gapwatch.copytrace.socket_path import default_socket_path, make_private_folder, user_name
from gapwatch.core.blind import bye_message
from gapwatch.core.bounds import (
    MAX_PID,
    MAX_SENDER_COUNTER,
    MAX_SENDERS,
    copy_bytes_ok,
    copy_times_problem,
    pid_ok,
    sender_counter_ok,
)
from gapwatch.core.models import CopyRecord, GpuInfo, Notice, Record
from gapwatch.core.ratelimit import RateLimit
from gapwatch.core.sizes import cut_text
from gapwatch.sources import SourceUnavailable

#: Largest datagram read whole (the library sends at most 64 x 64 bytes + a header).
MAX_DATAGRAM = 65536
#: A sender not heard from for this long no longer counts as attached.
ATTACHED_FOR_S = 60.0
#: A sender's state is dropped this long after its last datagram (bounded memory).
FORGET_AFTER_S = 600.0
#: Characters of a NOTE's text kept (the library writes one line; 60 KB is not a note).
NOTE_CHARS = 512
#: A sender's NOTEs are said at most once per this interval; the rest are counted and summed up.
NOTE_INTERVAL_S = 60.0


@dataclass(frozen=True, slots=True)
class CopyTraceStatus:
    """What the footer, `record`'s summary and /metrics show about the copy trace."""

    path: str
    #: "listening", "stopped", or "error: ..." (the thread died: said, never silent).
    state: str
    #: Provers heard from in the last `ATTACHED_FOR_S` (and not gone with a BYE).
    processes: int
    #: Copies handed to the session.
    copies: int
    #: Copies the provers could not deliver (no listener, queue full) since gapwatch heard them.
    dropped_send: int
    #: Records CUPTI itself dropped (its buffers were full), idem.
    dropped_cupti: int
    #: Datagrams and records refused (garbage, truncated, unknown version, impossible values).
    bad: int
    #: Copies whose CUDA device matched no watched GPU (`gpu` None).
    unmapped: int

    @property
    def dropped(self) -> int:
        return self.dropped_send + self.dropped_cupti

    def summary(self) -> str:
        """`copytrace listening, 2 provers, 1234 copies, 5 dropped` (the footer, `record`)."""
        if self.state != "listening":
            return f"copytrace {self.state}"
        bits = [f"{self.processes} prover{'s' if self.processes != 1 else ''}",
                f"{self.copies} copies"]
        if self.dropped:
            bits.append(f"{self.dropped} dropped")
        if self.bad:
            bits.append(f"{self.bad} bad")
        if self.unmapped:
            bits.append(f"{self.unmapped} of unwatched GPUs")
        return "copytrace listening, " + ", ".join(bits)


@dataclass(slots=True)
class _Sender:
    pid: int
    session_id: int
    last_seq: int
    first_dropped_send: int
    first_dropped_cupti: int
    dropped_send: int = 0
    dropped_cupti: int = 0
    last_heard_ns: int = 0
    flags: int | None = None
    comm: str = ""
    gone: bool = False
    missing_datagrams: int = 0
    #: Its HELLO said CUPTI of another release than the library was built for.
    other_release: bool = False


class CopyTraceReader:
    """Listens on `path`; `feed()` is the whole parser (the thread only receives)."""

    def __init__(
        self,
        path: str | None,
        gpus: list[GpuInfo],
        on_record: Callable[[Record], None],
        on_notice: Callable[[Notice], None] | None = None,
        *,
        clock: Clock | None = None,
        socket_mode: int = 0o600,
        rcvbuf_bytes: int = 1 << 20,
        on_copies: Callable[[list[CopyRecord]], None] | None = None,
    ) -> None:
        #: True when `path` is the default (its folder is made and checked before listening).
        self.default_path = not path
        self.path = path or default_socket_path()
        self.clock: Clock = clock or SystemClock()
        self._on_record = on_record
        #: A datagram's copies together (`Session.on_copies`), else one by one to `on_record`.
        self._on_copies = on_copies
        self._on_notice = on_notice
        self._socket_mode = socket_mode
        self._rcvbuf = rcvbuf_bytes
        self._by_uuid = {g.uuid.lower(): g.index for g in gpus if g.uuid}
        self._indices = {g.index for g in gpus}
        self._sock: socket.socket | None = None
        self._inode: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        #: Hears the receiving thread die, and restarts it (the socket and senders stay).
        self.watch: ThreadWatch = UNWATCHED
        self._lock = threading.Lock()
        self._senders: dict[tuple[int, int], _Sender] = {}
        self._said: set[str] = set()
        self._notes = RateLimit(int(NOTE_INTERVAL_S * 1e9), burst=1, max_kinds=MAX_SENDERS)
        self._state = "stopped"
        self.copies = 0
        self.unmapped = 0
        #: Refused datagrams and records by reason (short, magic, version, truncated, record...).
        self.bad: dict[str, int] = {}
        #: Dropped totals of senders already forgotten (so the totals never go down).
        self._forgotten_send = 0
        self._forgotten_cupti = 0

    # ---------------------------------------------------------------- life cycle

    def open(self) -> None:
        """Bind the socket. Raises SourceUnavailable with a message for the user."""
        path = self.path
        if self.default_path:
            folder = os.path.dirname(path)
            why = make_private_folder(folder)
            if why is not None:
                raise SourceUnavailable(
                    f"--copytrace: the default socket's folder {folder} {why}; gapwatch listens "
                    "only where no other user can bind first (remove it, or give --copytrace "
                    "PATH in a folder of yours)")
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise SourceUnavailable(f"--copytrace {path}: {exc.strerror or exc}") from None
        if st is not None:
            if not stat.S_ISSOCK(st.st_mode):
                raise SourceUnavailable(f"--copytrace {path}: exists and is not a socket; "
                                        "not touching it (give another path)")
            listens = _someone_listens(path)
            if st.st_uid != os.getuid():
                raise SourceUnavailable(
                    f"--copytrace {path}: held by user {user_name(st.st_uid)}"
                    f"{', who listens there' if listens else ' (a socket left there)'}; not "
                    "touching it (give another path)")
            if listens:
                raise SourceUnavailable(f"--copytrace {path}: another gapwatch is listening "
                                        "there (one listener per socket)")
            try:
                os.unlink(path)  # stale: its gapwatch died without removing it
            except OSError as exc:
                raise SourceUnavailable(f"--copytrace {path}: stale socket cannot be removed "
                                        f"({exc.strerror or exc})") from None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._rcvbuf)
            # The socket is made with its mode by the umask, never set by its name afterwards:
            # in a folder another user may write to (the prover's own, where root's gapwatch
            # listens for it), a link put at the name right after the bind made
            # `chmod(path, 0o666)` open the link's target, any file root owns, to everyone.
            old_umask = os.umask(0o777 & ~self._socket_mode)
            try:
                sock.bind(path)
            finally:
                os.umask(old_umask)
            sock.settimeout(0.2)
            st2 = os.lstat(path)
        except OSError as exc:
            sock.close()
            raise SourceUnavailable(f"--copytrace {path}: cannot listen ({exc.strerror or exc})"
                                    ) from None
        if not stat.S_ISSOCK(st2.st_mode) or st2.st_uid != os.geteuid():
            # Replaced between the bind and this look: whatever is there now is not ours to
            # remove, and a socket moved away is no path a prover sends to.
            sock.close()
            raise SourceUnavailable(
                f"--copytrace {path}: replaced by another file as it was made (by user "
                f"{user_name(st2.st_uid)}); not touching it (give a path in a folder only you "
                "can write to)")
        self._sock = sock
        self._inode = (st2.st_dev, st2.st_ino)
        self._state = "listening"

    def start(self) -> None:
        if self._sock is None:
            self.open()
        # Restarted after it died: the socket and the senders' state live in this object.
        self._thread = self.watch.start("gapwatch-copytrace", self._loop, restart=True,
                                        stop=self._stop)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(2.0)
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
        self._say_held_notes(flush=True)
        self._remove_own_socket()
        if not self._state.startswith("error"):
            self._state = "stopped"

    def _remove_own_socket(self) -> None:
        """Unlink the path only if it is still the socket we bound (not a successor's)."""
        if self._inode is None:
            return
        try:
            st = os.stat(self.path)
            if (st.st_dev, st.st_ino) == self._inode:
                os.unlink(self.path)
        except OSError:
            pass
        self._inode = None

    def _loop(self) -> None:
        """The receiving thread's loop, under `watch` (which says it when it dies): bad input
        is refused in `feed`, never raised, so only a bug or a failing socket ends it."""
        sock = self._sock
        assert sock is not None
        self._state = "listening"
        while not self._stop.is_set():
            try:
                data, _anc, flags, _addr = sock.recvmsg(MAX_DATAGRAM)
            except TimeoutError:
                self._expire()
                self._say_held_notes()
                continue
            except OSError as exc:
                if self._stop.is_set():
                    return
                self._state = f"error: {exc!r}"
                raise
            try:
                self.feed(data, truncated=bool(flags & socket.MSG_TRUNC))
            except Exception as exc:
                self._state = f"error: {exc!r}"
                raise

    # ---------------------------------------------------------------- parsing

    def feed(self, data: bytes, truncated: bool = False) -> None:
        """Parse one datagram and hand on what it holds. Never raises for bad input."""
        try:
            dg = wire.parse_datagram(data, truncated)
        except wire.WireError as exc:
            self._refuse(exc.reason, str(exc))
            return
        if not pid_ok(dg.pid):
            self._refuse("pid", f"pid {dg.pid} is not a process (1..{MAX_PID})")
            return
        counters = (dg.seq, dg.copies_seen, dg.dropped_send, dg.dropped_cupti)
        if not all(map(sender_counter_ok, counters)):
            self._refuse("counter", f"pid {dg.pid}: counters {counters} are not counts "
                                    f"(0..{MAX_SENDER_COUNTER})")
            return
        now = self.clock.monotonic_ns()
        sender = self._sender(dg, now)
        if sender is None:
            self._refuse("senders", f"pid {dg.pid} would be sender number {MAX_SENDERS + 1}; "
                                    f"at most {MAX_SENDERS} are followed at once")
            return
        if dg.type == wire.TYPE_HELLO and dg.hello is not None:
            sender.flags, sender.comm = dg.hello.flags, dg.hello.comm
            self._check_release(dg.pid, sender, dg.hello)
        elif dg.type == wire.TYPE_NOTE and dg.note:
            self._note(dg.pid, dg.session_id, dg.note, now)
        elif dg.type == wire.TYPE_BYE:
            sender.gone = True
            # Worded where blind spots read it back (a prover's exit blocks NVML meanwhile).
            self._notice("info", bye_message(dg.pid, sender.comm))
        if sender.other_release and dg.copies:
            self._refuse("layout", f"pid {dg.pid}: copies read by a library built for another "
                                   "CUPTI release than the one loaded")
            return
        wall = self.clock.wall_s()
        records = [rec for c in dg.copies if (rec := self._copy(c, sender, now, wall)) is not None]
        if self._on_copies is not None:
            self._on_copies(records)
        else:
            for rec in records:
                self._on_record(rec)

    def _check_release(self, pid: int, sender: _Sender, hello: wire.WireHello) -> None:
        """The library reads CUPTI records in the layouts of the release it was built for
        (major AND minor: 13.2 deprecated Device5, 13.4 Memcpy6); it refuses another release
        itself. A library that did not (built before it checked the minor) would send copies
        read in the wrong layout: they are refused here, said once."""
        built, loaded = hello.cupti_api_built // 100, hello.cupti_api_loaded // 100
        if built == loaded or sender.other_release:
            return
        sender.other_release = True
        self._notice("warning", f"copy trace: pid {pid}: CUPTI {loaded // 100}.{loaded % 100} "
                                f"loaded, the library reads the record layouts of "
                                f"{built // 100}.{built % 100}: its copies are refused")

    def _note(self, pid: int, session_id: int, text: str, now: int) -> None:
        """The library's own warning: said once per `NOTE_INTERVAL_S` per sender, cut."""
        message = f"copy trace: pid {pid}: {cut_text(text, NOTE_CHARS)}"
        with self._lock:
            say = self._notes.offer(f"{pid}:{session_id}", now, message)
        if say:
            self._notice("warning", message)

    def _say_held_notes(self, flush: bool = False) -> None:
        """Sum up the NOTEs held back over intervals that ended (all of them, with `flush`)."""
        with self._lock:
            held = self._notes.due(self.clock.monotonic_ns(), flush)
        for h in held:
            self._notice("warning", h.text("notes from this prover"))

    def _sender(self, dg: wire.Datagram, now: int) -> _Sender | None:
        """The datagram's sender (new ones are added); None when `MAX_SENDERS` are followed
        already and none of them can be forgotten."""
        key = (dg.pid, dg.session_id)
        with self._lock:
            s = self._senders.get(key)
            new = s is None
            if s is None and len(self._senders) >= MAX_SENDERS:
                self._forget_quiet(now)
                if len(self._senders) >= MAX_SENDERS:
                    return None
            if s is None:
                # Its counters so far are the baseline: what it dropped before we heard it
                # (gapwatch not started yet, or restarting) is not counted against us.
                s = self._senders[key] = _Sender(
                    dg.pid, dg.session_id, dg.seq - 1, dg.dropped_send, dg.dropped_cupti)
            if dg.seq > s.last_seq + 1:
                s.missing_datagrams += dg.seq - s.last_seq - 1
            s.last_seq = max(s.last_seq, dg.seq)
            s.dropped_send = max(0, dg.dropped_send - s.first_dropped_send)
            s.dropped_cupti = max(0, dg.dropped_cupti - s.first_dropped_cupti)
            s.last_heard_ns = now
            if dg.type != wire.TYPE_BYE:
                s.gone = False
        if new:
            self._notice("info", f"copy trace: pid {dg.pid} attached")
        return s

    def _copy(self, c: wire.WireCopy, sender: _Sender, now: int, wall_s: float
              ) -> CopyRecord | None:
        direction = wire.COPY_KIND_DIRECTION.get(c.copy_kind)
        if direction is None:
            self._refuse("record_kind", f"copy kind {c.copy_kind} is not host<->device")
            return None
        if not copy_bytes_ok(c.bytes):
            self._refuse("record_bytes", f"a copy of {c.bytes} bytes is not a copy")
            return None
        why = copy_times_problem(c.start_ns, c.end_ns, wall_s)
        if why is not None:
            self._refuse("record_time", f"copy from {c.start_ns} to {c.end_ns} ns is not a live "
                                        f"copy ({why})")
            return None
        gpu = self._gpu(c, sender)
        with self._lock:
            self.copies += 1
            if gpu is None:
                self.unmapped += 1
        return CopyRecord(
            start_wall_s=c.start_ns / 1e9, end_wall_s=c.end_ns / 1e9, bytes=c.bytes,
            direction=direction,
            src_kind=wire.memory_kind(c.src_kind),
            dst_kind=wire.memory_kind(c.dst_kind),
            gpu=gpu, cuda_device=c.device_id, stream_id=c.stream_id, context_id=c.context_id,
            correlation_id=c.correlation_id, pid=sender.pid, t_arrival_mono_ns=now,
        )

    def _gpu(self, c: wire.WireCopy, sender: _Sender) -> int | None:
        """NVML index of the copy's device: by UUID, else by ordinal where that is safe."""
        uuid = wire.uuid_text(c.device_uuid)
        if uuid is not None:
            return self._by_uuid.get(uuid.lower())
        flags = sender.flags
        if flags is not None and flags & wire.HELLO_PCI_BUS_ORDER \
                and not flags & wire.HELLO_VISIBLE_SET and c.device_id in self._indices:
            return c.device_id
        return None

    def _refuse(self, reason: str, message: str) -> None:
        with self._lock:
            self.bad[reason] = self.bad.get(reason, 0) + 1
        if reason not in self._said:
            self._said.add(reason)
            self._notice("warning", f"copy trace: dropped a bad datagram ({message}); "
                                    "further ones of this kind are only counted")

    def _expire(self) -> None:
        now = self.clock.monotonic_ns()
        with self._lock:
            self._forget(lambda s: now - s.last_heard_ns > FORGET_AFTER_S * 1e9)

    def _forget_quiet(self, now: int) -> None:
        """Under _lock, when the sender table is full: forget those gone (BYE) or not heard
        from for `ATTACHED_FOR_S`."""
        self._forget(lambda s: s.gone or now - s.last_heard_ns > ATTACHED_FOR_S * 1e9)

    def _forget(self, stale: Callable[[_Sender], bool]) -> None:
        """Under _lock: drop the senders `stale` picks, keeping their drops in the totals."""
        for key, s in list(self._senders.items()):
            if stale(s):
                self._forgotten_send += s.dropped_send
                self._forgotten_cupti += s.dropped_cupti
                del self._senders[key]

    def _notice(self, level: Literal["info", "warning", "error"], message: str) -> None:
        if self._on_notice is not None:
            self._on_notice(Notice(self.clock.monotonic_ns(), self.clock.wall_s(), level,
                                   message))

    # ---------------------------------------------------------------- status

    def status(self) -> CopyTraceStatus:
        now = self.clock.monotonic_ns()
        with self._lock:
            senders = list(self._senders.values())
            attached = sum(1 for s in senders if not s.gone
                           and now - s.last_heard_ns <= ATTACHED_FOR_S * 1e9)
            return CopyTraceStatus(
                path=self.path, state=self._state, processes=attached, copies=self.copies,
                dropped_send=self._forgotten_send + sum(s.dropped_send for s in senders),
                dropped_cupti=self._forgotten_cupti + sum(s.dropped_cupti for s in senders),
                bad=sum(self.bad.values()), unmapped=self.unmapped,
            )


def _someone_listens(path: str) -> bool:
    """True when a socket at `path` has a live listener (a connect succeeds)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()
