"""Floods are information once: notices of one kind are said a few times per interval and the
rest counted and summed up (gapwatch.core.ratelimit, gapwatch.engine.session)."""

from __future__ import annotations

from evaluation.simulate import ListSink
from gapwatch.core.models import GpuInfo, GpuSample, Notice
from gapwatch.core.ratelimit import RateLimit, message_kind
from gapwatch.engine.session import NOTICE_BURST, NOTICE_INTERVAL_S, Session, default_header
from gapwatch.engine.store import SeriesStore

S = 1_000_000_000
GPUS = [GpuInfo(index=0)]


def test_a_flood_of_notices_is_said_a_few_times_per_interval_then_summed_up() -> None:
    sink = ListSink()
    store = SeriesStore(GPUS, 0.1)
    session = Session(default_header("test", GPUS, 100.0), store, sinks=[sink])
    for k in range(1000):  # 100 a second of the same kind, numbers aside
        session.on_notice(Notice(k * S // 100, 1.0, "error", f"GPU source failed: tick {k}"))
    session.on_notice(Notice(5 * S, 1.0, "warning", "log x.log: has appeared"))  # another kind
    said = [r for r in sink.records if isinstance(r, Notice)]
    assert [n.message for n in said] == [f"GPU source failed: tick {k}"
                                         for k in range(NOTICE_BURST)] + ["log x.log: has appeared"]
    # The next GPU sample after the interval sums up what was held back, at its own time.
    session.on_record(GpuSample(0, int(NOTICE_INTERVAL_S * S), 2.0, 100, 1.0, 1.0, 1.0, 1.0))
    summary = [r for r in sink.records if isinstance(r, Notice)][-1]
    assert summary.level == "error" and summary.t_mono_ns == int(NOTICE_INTERVAL_S * S)
    assert summary.message.startswith(f"{1000 - NOTICE_BURST} more notices like this in the last "
                                      "10 s (only counted; the latest: GPU source failed: tick "
                                      "999)")
    assert store.snapshot().counters["notices_held"] == 1000 - NOTICE_BURST


def test_what_is_held_at_the_end_is_summed_up_when_the_session_finishes() -> None:
    sink = ListSink()
    session = Session(default_header("test", GPUS, 100.0), SeriesStore(GPUS, 0.1), sinks=[sink])
    for k in range(NOTICE_BURST + 3):
        session.on_notice(Notice(k, 1.0, "warning", "same"))
    session.close()
    assert [r.message for r in sink.records if isinstance(r, Notice)][-1].startswith(
        "3 more notices like this")


def test_kinds_beyond_the_limit_share_one_count_and_memory_stays_bounded() -> None:
    limit = RateLimit(10 * S, burst=1, max_kinds=4)
    said = [limit.offer(message_kind("info", f"{chr(65 + i)} thing"), 0, "m") for i in range(10)]
    # 4 kinds of their own, the 5th starts "(other)" (said once), the rest are held.
    assert said == [True] * 5 + [False] * 5 and len(limit._kinds) == 5
    assert [(h.kind, h.count) for h in limit.due(10 * S)] == [("(other)", 5)]
