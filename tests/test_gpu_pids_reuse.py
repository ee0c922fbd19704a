"""A pid the kernel gives again to a process of another name is another process
(`gapwatch.core.gpu_pids`): the /proc readings of the second attack pass on the offline readers
(pid 558 `cuzk`, then pid 558 `other` on the same GPU) showed no new process at all."""

from __future__ import annotations

from gapwatch.core.gpu_pids import GpuPids
from gapwatch.core.models import ProcessMemory

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
