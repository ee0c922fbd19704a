"""/proc/PID/status readings (gapwatch.sources.procmem): parsing, and every way a read fails."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest
from proc_fakes import GIB, KIB, PROVER_STATUS, deny, fake_proc

from gapwatch.sources.procmem import ProcStatusReader, parse_status, problem_text


def test_rss_shmem_is_the_pinned_pool_and_rss_anon_the_heap() -> None:
    st = parse_status(PROVER_STATUS.encode())
    assert st.name == "cuzk-daemon"
    assert st.rss_shmem_bytes == 12 * GIB
    assert st.rss_anon_bytes == 180 * GIB
    assert (st.vm_locked_bytes, st.vm_pinned_bytes) == (0, 0)
    assert st.vm_rss_bytes == 201000000 * KIB


def test_a_kernel_without_rss_lines_gives_none_never_zero() -> None:
    old = "Name:\tprover\nVmLck:\t0 kB\nVmRSS:\t1000 kB\n"
    st = parse_status(old.encode())
    assert st.rss_shmem_bytes is None and st.rss_anon_bytes is None
    assert st.vm_pinned_bytes is None  # VmPin came later too
    assert st.vm_rss_bytes == 1000 * KIB


def test_garbage_lines_are_ignored_not_fatal() -> None:
    st = parse_status(b"RssShmem:\tlots kB\n\xff\xfe\nRssAnon:\n:::\nName:\t\xffx\n")
    assert st.rss_shmem_bytes is None and st.rss_anon_bytes is None
    assert st.name == "\ufffdx"


def test_the_reader_reads_a_process_from_the_proc_root(tmp_path: Path) -> None:
    reader = ProcStatusReader(str(fake_proc(tmp_path, {4242: PROVER_STATUS})))
    r = reader.read(4242)
    assert r.problem is None and r.status is not None
    assert r.status.rss_shmem_bytes == 12 * GIB
    assert reader.counts == {"read": 1}


def test_a_pid_that_vanished_is_counted_with_no_status(tmp_path: Path) -> None:
    reader = ProcStatusReader(str(fake_proc(tmp_path, {})))
    r = reader.read(999)
    assert (r.status, r.problem) == (None, "vanished")
    assert reader.counts["vanished"] == 1


def test_a_zombie_without_an_address_space_counts_as_vanished(tmp_path: Path) -> None:
    reader = ProcStatusReader(str(fake_proc(tmp_path, {7: "Name:\tprover\nState:\tZ (zombie)\n"})))
    r = reader.read(7)
    assert r.problem == "vanished" and r.status is not None and r.status.rss_anon_bytes is None


def test_a_kernel_without_rss_shmem_is_its_own_problem(tmp_path: Path) -> None:
    reader = ProcStatusReader(str(fake_proc(tmp_path, {7: "Name:\tprover\nVmRSS:\t10 kB\n"})))
    r = reader.read(7)
    assert r.problem == "no_rss_fields" and r.status is not None and r.status.name == "prover"
    assert reader.counts["no_rss_fields"] == 1


def test_permission_denied_is_counted_and_named_with_the_fix(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    reader = ProcStatusReader(str(fake_proc(tmp_path, {4242: PROVER_STATUS})))
    deny(monkeypatch, 4242)
    r = reader.read(4242)
    assert (r.status, r.problem) == (None, "denied")
    assert reader.counts["denied"] == 1
    assert "run gapwatch as that user or as root" in problem_text("denied", 4242)


def test_other_errors_are_unreadable_and_esrch_is_vanished(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    reader = ProcStatusReader(str(fake_proc(tmp_path, {5: PROVER_STATUS, 6: PROVER_STATUS})))
    deny(monkeypatch, 5, errno.EIO)
    assert reader.read(5).problem == "unreadable"
    monkeypatch.undo()
    deny(monkeypatch, 6, errno.ESRCH)
    assert reader.read(6).problem == "vanished"


def test_the_vanished_words_name_the_container_case() -> None:
    text = problem_text("vanished", 31)
    assert "another PID namespace" in text and "--pid=host" in text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux /proc")
def test_this_very_process_reads_with_heap_from_the_real_proc() -> None:
    r = ProcStatusReader().read(os.getpid())
    assert r.status is not None
    if r.problem is None:  # kernels >= 4.5
        assert (r.status.rss_anon_bytes or 0) > 0
