"""The built-in cuzk rules: TIMELINE, CUZK_TIMING, CUZK_NTT_H, warnings, time sources."""

from __future__ import annotations

import pytest

from gapwatch.core.models import LogEvent
from gapwatch.logs.parse import LogParser

ANCHOR = "2026-05-12T14:00:00.000412Z  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true"
ANCHOR_S = 1778594400.000412  # 2026-05-12T14:00:00.000412Z


def parse(parser: LogParser, line: str, wall: float = 1_800_000_000.0) -> list[LogEvent]:
    return parser.parse_line(line, "stderr", 123, wall)


def test_timeline_detail_with_commas_is_split_on_at_most_four_commas() -> None:
    (e,) = parse(LogParser(), "TIMELINE,845366,GPU_END,porep-1234-5678,worker=1,partition=3,gpu_ms=3356")
    assert (e.kind, e.name, e.job_id, e.worker, e.partition) == (
        "timeline", "GPU_END", "porep-1234-5678", 1, 3)
    assert e.fields["gpu_ms"] == 3356
    assert e.fields["offset_ms"] == 845366


def test_timeline_offset_is_anchored_to_the_starting_cuzk_engine_line() -> None:
    p = LogParser()
    parse(p, ANCHOR)
    (e,) = parse(p, "TIMELINE,812345,SYNTH_START,porep-1234-5678,partition=3")
    assert e.time_source == "timeline"
    assert e.t_wall_s == pytest.approx(ANCHOR_S + 812.345)


def test_timeline_without_anchor_falls_back_to_arrival_time() -> None:
    (e,) = parse(LogParser(), "TIMELINE,812345,SYNTH_START,porep-1234-5678,partition=3", 42.5)
    assert (e.time_source, e.t_wall_s) == ("arrival", 42.5)


def test_monolithic_and_kind_details_and_old_chan_send() -> None:
    p = LogParser()
    (q,) = parse(p, "TIMELINE,10,GPU_QUEUE,wdpost-1-2-[1 2 3],monolithic")
    assert q.fields["monolithic"] is True and q.job_id == "wdpost-1-2-[1 2 3]"
    (s,) = parse(p, "TIMELINE,11,SYNTH_START,winpost-1-ab,kind=winning-post")
    assert s.fields["kind"] == "winning-post" and s.partition is None
    (c,) = parse(p, "TIMELINE,12,CHAN_SEND,porep-1-2,partition=4")
    assert (c.kind, c.name, c.partition) == ("chan_send", "CHAN_SEND", 4)
    (empty,) = parse(p, "TIMELINE,13,CHAN_SEND,porep-1-2,")
    assert empty.kind == "chan_send"


def test_a_numeric_job_id_of_a_tracing_line_is_the_text_its_timeline_lines_give() -> None:
    """`job_id=12345` (an id a client chose) is an int among the fields: the event's job is
    '12345', as `TIMELINE,..,12345` names it, not None; `job_id=true` names no job."""
    p = LogParser()
    (t,) = parse(p, "TIMELINE,10,GPU_END,12345,worker=0,partition=0,gpu_ms=5")
    (e,) = parse(p, "2026-05-12T14:00:01.000000Z  INFO cuzk_core::scheduler: job enqueued "
                    "job_id=12345 proof_kind=porep-c2 priority=Normal queue_position=0")
    assert e.job_id == t.job_id == "12345"
    (z,) = parse(p, "2026-05-12T14:00:01.000000Z  INFO cuzk_core::scheduler: job enqueued "
                    "job_id=007 proof_kind=porep-c2 priority=Normal queue_position=0")
    (tz,) = parse(p, "TIMELINE,11,GPU_END,007,worker=0,partition=0,gpu_ms=5")
    assert z.job_id == tz.job_id == "007"  # made 7, it named no job its TIMELINE lines name
    (b,) = parse(p, "2026-05-12T14:00:01.000000Z  INFO cuzk_core::scheduler: job enqueued "
                    "job_id=true proof_kind=porep-c2")
    assert b.job_id is None


@pytest.mark.parametrize("line", ["TIMELINE,", "TIMELINE,abc,GPU_START,x", "TIMELINE,12,,x"])
def test_malformed_timeline_is_unparsed_not_an_error(line: str) -> None:
    p = LogParser()
    (e,) = parse(p, line)
    assert e.kind == "unparsed" and e.raw == line
    assert p.counters["unparsed"] == 1


def test_cuzk_timing_name_skips_gpu_tid_and_values_are_ints() -> None:
    p = LogParser()
    (e,) = parse(p, "CUZK_TIMING: gpu_tid=0 tail_msm_ms=83 gpu_total_ms=1527")
    assert (e.kind, e.name) == ("cuzk_timing", "tail_msm_ms")
    assert e.fields == {"gpu_tid": 0, "tail_msm_ms": 83, "gpu_total_ms": 1527}
    assert e.time_source == "arrival" and e.job_id is None and e.worker is None


def test_cuzk_one_off_prose_lines_carry_their_gpu() -> None:
    p = LogParser()
    (a,) = parse(p, "CUZK_TIMING: d_a_cache allocated 4096 MiB on gpu 1")
    assert (a.name, a.gpu, a.fields["size_mib"]) == ("d_a_cache_allocated", 1, 4096)
    (b,) = parse(p, "CUZK_TIMING: set pool release threshold to MAX on gpu 0")
    assert (b.name, b.gpu) == ("pool_release_threshold", 0)


def test_cuzk_ntt_h_values_lose_their_ms_suffix_into_the_key() -> None:
    (e,) = parse(LogParser(), "CUZK_NTT_H: d_b_alloc=0ms ntt_kernels=3ms coset_intt_sync=241ms "
                              "msm_init=1ms msm_invoke=436ms msm_dtor=2ms total=683ms")
    assert e.kind == "cuzk_ntt_h"
    assert e.fields["ntt_kernels_ms"] == 3 and e.fields["total_ms"] == 683


@pytest.mark.parametrize(("line", "warning"), [
    ('2026-05-12T14:14:00.760912Z  INFO synthesize_partition{job_id="porep-1-2" partition=3}: '
     "cuzk_core::pipeline: partition synthesis complete partition=3 synth_ms=28413 is_pinned=false",
     "unpinned"),
    ("2026-05-12T14:14:00.760912Z  WARN cuzk_core::pipeline: pinned pool checkout FAILED — falling "
     "back to unpinned num_constraints=130278869 pool_free=0 pool_total_gib=46", "pinned_pool_fallback"),
    ("2026-05-12T14:14:00.760912Z  WARN cuzk_core::pinned_pool: pinned pool: cudaHostAlloc failed "
     "size_gib=3.88", "cuda_host_alloc_failed"),
    ("2026-05-12T14:14:00.760912Z  INFO cuzk_core::pipeline: partition synthesis complete "
     "partition=3 synth_ms=28413 is_pinned=true", None),
])
def test_gap_explaining_warnings_are_surfaced(line: str, warning: str | None) -> None:
    (e,) = parse(LogParser(), line)
    assert e.kind == "tracing" and e.warning == warning


def test_ansi_colours_and_crlf_are_stripped_before_parsing() -> None:
    esc = "\x1b"
    line = (f"{esc}[2m2026-05-12T14:14:02.010377Z{esc}[0m {esc}[32m INFO{esc}[0m "
            f"{esc}[1mgpu_worker{esc}[0m{esc}[1m{{{esc}[0m{esc}[3mworker_id{esc}[0m{esc}[2m={esc}[0m1 "
            f"{esc}[3mpartition{esc}[0m{esc}[2m={esc}[0mSome(3){esc}[1m}}{esc}[0m{esc}[2m:{esc}[0m "
            f"{esc}[2mcuzk_core::engine{esc}[0m{esc}[2m:{esc}[0m GPU_TIMING hot_path pre-prove overhead "
            f"{esc}[3mstatus_ms{esc}[0m{esc}[2m={esc}[0m0\r")
    p = LogParser()
    (e,) = parse(p, line)
    assert (e.kind, e.name, e.worker, e.partition) == (
        "tracing", "GPU_TIMING hot_path pre-prove overhead", 1, 3)
    assert e.fields["status_ms"] == 0 and e.raw == line
    assert p.counters["ansi_stripped"] == 1
    (t,) = parse(p, "TIMELINE,1,GPU_START,j,worker=0,partition=1\r")
    assert t.partition == 1


def test_worker_to_gpu_mapping_fills_gpu_of_later_events() -> None:
    p = LogParser()
    parse(p, "2026-05-12T14:00:00.032190Z  INFO cuzk_core::engine: pipeline GPU worker started "
             "worker_id=3 gpu=1 sub_id=1")
    (e,) = parse(p, "TIMELINE,842010,GPU_START,porep-1-2,worker=3,partition=3")
    assert e.gpu == 1
    assert p.worker_gpu == {3: 1}


def test_blank_lines_make_no_event() -> None:
    p = LogParser()
    assert parse(p, "") == [] and parse(p, "   \r") == []
    assert p.counters["blank"] == 2 and p.counters["unparsed"] == 0


def test_the_pacers_quoted_figures_become_numbers() -> None:
    # curio e0294b0f engine.rs:1658: ema_waiting, gpu_proc_ms, gpu_eff_ms, ema_synth_ms and
    # integral are format!() results, so tracing writes them quoted.
    (ev,) = LogParser().parse_line(
        '2026-05-12T14:14:41.002515Z  INFO cuzk_core::engine: pacer: status total=45 '
        'in_flight=12 waiting=8 ema_waiting="7.9" gpu_proc_ms="3356" gpu_eff_ms="1678" '
        'ema_synth_ms="2400" interval_ms=1650 integral="-0.12" bootstrap=false rebootstraps=0')
    assert ev.name == "pacer: status"
    f = ev.fields
    assert (f["ema_waiting"], f["gpu_proc_ms"], f["gpu_eff_ms"], f["ema_synth_ms"],
            f["integral"]) == (7.9, 3356, 1678, 2400, -0.12)
    assert (f["waiting"], f["interval_ms"], f["bootstrap"]) == (8, 1650, False)
