"""A pid the kernel gives again to a process of another name is another process
(`gapwatch.core.gpu_pids`): the /proc readings of the second attack pass on the offline readers
(pid 558 `cuzk`, then pid 558 `other` on the same GPU) showed no new process at all."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from gapwatch.core.gpu_pids import GpuPids
from gapwatch.core.models import ProcessMemory
from gapwatch.offline.report import to_json

T0 = 1_700_000_000.0


def _read(pids: GpuPids, second: int, pid: int, name: str) -> object:
    """One /proc reading of `pid` on GPU 0 at `second` (its own round), found in /proc."""
    return pids.feed(ProcessMemory(t_mono_ns=second * 10**9, t_wall_s=T0 + second, gpu=0,
                                   pid=pid, name=name, rss_shmem_bytes=1, rss_anon_bytes=1))


def test_a_pid_reused_by_a_process_of_another_name_is_a_new_process() -> None:
    pids = GpuPids()
    for s in range(30):
        _read(pids, s, 558, "cuzk")
    for s in range(30, 60):
        _read(pids, s, 558, "other")
    assert [(n.pid, n.first_s) for n in pids.new] == [(558, T0 + 30)]
    words = pids.words()
    assert words is not None and "pid 558 (other) first read at" in words
    assert "pid 558 (cuzk) last read at" in words, words
    # The cuzk process is gone from the GPU: a new pid of its name replaces it, last read
    # alive where `cuzk` was last read (not where `other` was).
    rep = _read(pids, 60, 600, "cuzk")
    assert rep is not None and getattr(rep, "old_pid", None) == 558
    assert getattr(rep, "alive_s", None) == T0 + 29


def test_the_same_name_read_again_on_its_pid_is_the_same_process() -> None:
    pids = GpuPids()
    for s in range(10):
        _read(pids, s, 558, "cuzk")
    assert pids.new == [] and pids.words() is None


def _reaped(pids: GpuPids, second: int, pid: int) -> object:
    """One reading of `pid` on GPU 0 at `second` that NVML still lists but /proc no longer has
    (reaped at once, under systemd: no name, no RSS lines read)."""
    return pids.feed(ProcessMemory(t_mono_ns=second * 10**9, t_wall_s=T0 + second, gpu=0,
                                   pid=pid, name="", rss_shmem_bytes=None,
                                   rss_anon_bytes=None))


def test_a_reaped_process_read_without_a_name_is_its_pid_gone_not_a_new_process() -> None:
    """A cuzk that exits under systemd is reaped at once while NVML still lists its pid (the
    driver freeing its pinned memory): /proc is gone and the reading's name is "". Keyed by pid
    and name, that was a new process `(558, "")`: "3 new pids" where one came, and the restart
    said "then no longer listed by NVML" where /proc showed it gone."""
    pids = GpuPids()
    for s in range(10):
        _read(pids, s, 558, "cuzk")
    for s in range(10, 13):
        assert _reaped(pids, s, 558) is None
    rep = _read(pids, 20, 592, "cuzk")
    assert [(n.pid, n.first_s) for n in pids.new] == [(592, T0 + 20)]
    assert pids.new_count == 1
    words = pids.words()
    assert words is not None and words.startswith("/proc readings show a new pid"), words
    assert "pid 592 (cuzk) first read at" in words and "pid 558 (cuzk) last read at" in words
    assert rep is not None and getattr(rep, "old_pid", None) == 558
    assert getattr(rep, "gone_s", None) == T0 + 10
    rep_words = getattr(rep, "words", lambda: "")()
    assert "last read alive at" in rep_words and "and gone from /proc at" in rep_words, rep_words
    assert "no longer listed by NVML" not in rep_words
    # The new pid reaped in its turn: still one process, and a third cuzk replaces it.
    for s in range(21, 30):
        _read(pids, s, 592, "cuzk")
    for s in range(30, 33):
        _reaped(pids, s, 592)
    rep2 = _read(pids, 40, 600, "cuzk")
    assert pids.new_count == 2 and [n.pid for n in pids.new] == [592, 600]
    assert rep2 is not None and getattr(rep2, "old_pid", None) == 592
    assert getattr(rep2, "gone_s", None) == T0 + 30
    assert [(r.name, r.old_pid, r.new_pid) for r in pids.replaced] == [
        ("cuzk", 558, 592), ("cuzk", 592, 600)]


def test_a_real_restart_whose_exited_process_was_reaped_says_one_new_pid_gone_from_proc(
        tmp_path: Path) -> None:
    """tests/data/h200-restart with the name "" on each reading /proc had no fields for (what a
    reaped process reads as: under systemd the exited prover is reaped at once, while NVML still
    lists it): the report said "3 new pids" where one came, and each gap's restart "then no
    longer listed by NVML" where /proc showed pid 558 gone at 13:24:32.218."""
    from gapwatch.config import Config
    from gapwatch.offline.report import build_report

    case = Path(__file__).parent / "data" / "h200-restart" / "restart.jsonl.gz"
    lines = []
    blanked = 0
    with gzip.open(case, "rt") as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "procmem" and rec.get("rss_shmem_bytes") is None \
                    and rec.get("rss_anon_bytes") is None:
                rec["name"] = ""
                blanked += 1
            lines.append(json.dumps(rec))
    assert blanked > 0  # the recording has readings of a process gone from /proc
    reaped = tmp_path / "reaped.jsonl"
    reaped.write_text("\n".join(lines) + "\n")
    report = build_report(reaped, Config(), workers=1)
    shown = to_json(report)["prover_events"]["shown"]
    assert shown == ["/proc readings show a new pid on a GPU: GPU 0 pid 592 (python3) first read "
                     "at 13:24:40, pid 558 (python3) last read at 13:24:33"], shown
    hints = [g.hint for g in report.gaps if g.prover_cause == "restart"]
    assert len(hints) == 3
    for hint in hints:
        assert "pid 558 (python3), last read alive at 13:24:31.118 and gone from /proc at " \
               "13:24:32.218; a new one, pid 592 (python3)" in hint, hint
