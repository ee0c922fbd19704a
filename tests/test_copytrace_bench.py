"""The scoring of bench/copytrace_h200.py, on a synthetic copy log and synthetic copy records
(the GPU run itself is the lead's; here is what decides whether it passed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from copytrace_fakes import GIB, copy, truth, write_case

from evaluation import copytrace_h200 as bench

ROOT = Path(__file__).parent.parent


def pageable_partition(shift_s: float = 0.0, kind: str = "pageable", nbytes: int = GIB) -> list[Any]:
    return [copy(a + shift_s, b + shift_s, kind, nbytes=nbytes, corr=i)
            for i, (a, b) in enumerate([(2.05, 2.65), (2.65, 3.25), (3.25, 3.85)])]


def test_copies_that_match_the_copy_log_pass() -> None:
    s = bench.score_copies(truth(), pageable_partition())
    assert s["passed"] and s["partitions_ok"] == 1 and s["extra_big_copies"] == 0
    assert s["start_error_ms_max"] < 2 and abs(s["rate_error_max"]) < 0.01


def test_the_wrong_memory_kind_fails() -> None:
    s = bench.score_copies(truth(), pageable_partition(kind="pinned"))
    assert not s["passed"] and s["failures"][0]["kinds"] == ["pinned"]


def test_copies_within_5_ms_of_the_log_pass_and_further_off_fail() -> None:
    assert bench.score_copies(truth(), pageable_partition(shift_s=0.002))["passed"]
    assert not bench.score_copies(truth(), pageable_partition(shift_s=0.02))["passed"]


def test_wrong_bytes_or_a_missing_copy_fail() -> None:
    assert not bench.score_copies(truth(), pageable_partition(nbytes=GIB // 2))["passed"]
    assert not bench.score_copies(truth(), pageable_partition()[:2])["passed"]


def test_small_copies_are_not_the_load_generators_and_are_ignored() -> None:
    small = [copy(2.1, 2.11, "pageable", nbytes=1 << 20, corr=99)]
    assert bench.score_copies(truth(), pageable_partition() + small)["passed"]


def test_a_copy_on_another_stream_is_not_taken_for_the_partitions() -> None:
    other = [copy(2.1, 2.2, "pinned", stream=99, nbytes=GIB, corr=98)]
    s = bench.score_copies(truth(), pageable_partition() + other)
    assert s["passed"] and s["extra_big_copies"] == 1


def test_a_copy_queued_behind_the_other_workers_copy_is_timed_from_when_the_engine_freed() -> None:
    """Seen on the H200: worker 1 issued its copies while worker 0's ran on the shared copy
    engine, and its first DMA started when worker 0's last one ended. Its start is judged
    against that moment, and its rate without the other stream's engine time."""
    t = truth()
    iv = t["intervals"][0]
    iv["copy_start"] -= 0.25  # issued 0.25 s before its first DMA could start
    other = [copy(1.80, 2.05, "pageable", stream=17, nbytes=GIB, corr=50)]
    s = bench.score_copies(t, pageable_partition() + other)
    assert s["passed"], s["failures"]
    assert s["queued_behind_other_stream"] == 1 and 240 < s["queued_ms_max"] < 260
    # Without the other stream's copy to explain it, the same wait is a failure.
    assert not bench.score_copies(t, pageable_partition())["passed"]


def test_delivery_lag_is_arrival_after_the_copys_end() -> None:
    from msgspec.structs import replace

    late = [replace(c, t_arrival_mono_ns=int((c.end_wall_s - 100.0 + 0.3) * 1e9))
            for c in pageable_partition()]
    lag = bench.delivery_lag(late, {"started_mono_ns": 0, "started_wall_s": 100.0})
    assert lag["n"] == 3 and abs(lag["p50_s"] - 0.3) < 1e-6


def test_hints_must_state_the_memory_kind_of_every_starved_gap() -> None:
    good = {"gaps": [{"kind": "pcie_starved", "hint": "SMs idle 2.0 s ...; 3.0 GiB copied from "
                      "pageable host memory at 1.8 GB/s on stream 13",
                      "copies": {"traced": True, "memory_kind": "pageable"}}]}
    assert bench.score_hints(good, "pageable")["passed"]
    bad = {"gaps": [{"kind": "pcie_starved", "hint": "a/b/c in pageable memory?",
                     "copies": {"traced": False}}]}
    assert not bench.score_hints(bad, "pageable")["passed"]


def test_overhead_passes_within_one_percent_or_the_spread() -> None:
    assert bench.overhead_summary([1.0, 1.01, 0.99], [0.998, 1.0, 0.995])["passed"]
    assert not bench.overhead_summary([1.0, 1.0, 1.0], [0.95, 0.96, 0.95])["passed"]
    assert not bench.overhead_summary([None], [1.0])["passed"]


def test_a_case_folder_is_rescored_from_its_recording_and_truth(tmp_path: Path) -> None:
    check = bench.case_check(write_case(tmp_path / "pageable"))
    assert check["copies"]["passed"] and check["hints"]["passed"]
    assert check["hints"]["pcie_starved_gaps"] >= 1
    assert check["n_copies"] == 6


# ---------------------------------------------------------------- the slow readings


def procmem(shmem: int | None, anon: int | None, pid: int = 4242) -> dict[str, Any]:
    return {"pid": pid, "name": "python3", "rss_shmem_bytes": shmem, "rss_anon_bytes": anon,
            "vm_locked_bytes": 0, "vm_pinned_bytes": 0}


PINNED_TRUTH = {"params": {"pinned": True, "abc_mib": 512, "synth_threads": 3, "pool_slots": 0}}
PAGEABLE_TRUTH = {"params": {"pinned": False, "abc_mib": 1536, "synth_threads": 3}}


def test_the_pinned_preset_passes_when_every_reading_holds_the_whole_pool_in_rss_shmem() -> None:
    pool = 5 * 3 * 512 << 20  # (3 synthesis threads + 2) slots x a/b/c of 512 MiB = 7.5 GiB
    s = bench.score_procmem(PINNED_TRUTH, [procmem(pool + (90 << 20), 3 * GIB)] * 4, 4242)
    assert s["passed"] and s["pinned_pool_gib"] == 7.5 and s["readings"] == 4
    short = [procmem(pool + (90 << 20), GIB), procmem(pool - (1 << 20), GIB)]
    assert not bench.score_procmem(PINNED_TRUTH, short, 4242)["passed"]


def test_the_pageable_preset_needs_an_abc_set_in_rss_anon_and_not_in_rss_shmem() -> None:
    abc_set = 3 * 1536 << 20
    assert bench.score_procmem(PAGEABLE_TRUTH, [procmem(64 << 20, abc_set + GIB)])["passed"]
    assert not bench.score_procmem(PAGEABLE_TRUTH, [procmem(64 << 20, abc_set - GIB)])["passed"]
    assert not bench.score_procmem(PAGEABLE_TRUTH, [procmem(abc_set, abc_set + GIB)])["passed"]


def test_readings_without_fields_or_of_another_pid_do_not_pass() -> None:
    assert not bench.score_procmem(PINNED_TRUTH, [procmem(None, None)] * 3, 4242)["passed"]
    other = [procmem(100 * GIB, GIB, pid=1)]
    s = bench.score_procmem(PINNED_TRUTH, other, 4242)
    assert not s["passed"] and s["readings"] == 0
    # Without a pid, the largest process listed is taken.
    assert bench.score_procmem(PINNED_TRUTH, other)["pid"] == 1


def link(gen: int, width: int) -> dict[str, Any]:
    return {"gen": gen, "width": width, "max_gen": 5, "max_width": 16}


def test_the_link_passes_at_gen5_x16_and_fails_trained_down_or_unread() -> None:
    assert bench.score_links([link(5, 16)])["passed"]
    assert not bench.score_links([link(5, 16), link(3, 8)])["passed"]
    assert not bench.score_links([])["passed"]
    assert bench.parse_link("") is None and bench.parse_link("Gen4x16") == (4, 16)
    assert bench.score_links([link(5, 16)], bench.parse_link(""))["passed"]
    assert not bench.score_links([link(5, 16)], (4, 16))["passed"]


def test_the_slow_readings_costs_are_timed_through_the_nvml_module(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from fake_pynvml import FakeDevice, install
    from proc_fakes import PROVER_STATUS, fake_proc

    from evaluation.slow_readings_cost import slow_reading_costs

    fake = install(monkeypatch, [FakeDevice(processes=[4242])])
    c = slow_reading_costs(fake.module, 0, 4242, str(fake_proc(tmp_path, {4242: PROVER_STATUS})),
                           n=5)
    assert c["processes_listed"] == [4242] and c["pid_listed_by_nvml"]
    assert c["proc_status_problem"] is None
    assert set(c) >= {"processes_us_median", "link_gen_and_width_us_max", "proc_status_us_median"}
