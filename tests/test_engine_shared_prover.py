"""A live session keeps one prover: its detector feeds it, its store reads the pipeline facts
(issue 30: two pipeline-facts objects per session were kept, each fed on its own)."""

from __future__ import annotations

from ui_fakes import h200, header

from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.cuzk.prover import CuzkProver, view_of
from gapwatch.engine.session import Session
from gapwatch.engine.shared_prover import SharedProver
from gapwatch.engine.store import SeriesStore
from gapwatch.logs.parse import LogParser

#: curio e0294b0f pipeline.rs:302, as tests/test_advice.py quotes it.
POOL_FAILED = ("2026-11-30T09:06:30.000000Z  WARN cuzk_core::pipeline: pinned pool checkout "
               "FAILED \u2014 falling back to unpinned num_constraints=130278869 pool_free=0 "
               "pool_total_gib=11.6")


def test_the_store_shows_what_the_detector_fed_the_one_prover_counted_once() -> None:
    gpus = [h200(0)]
    prover = SharedProver(CuzkProver())
    store = SeriesStore(gpus, period_s=0.1, prover=prover)
    detector = GapDetector(DetectorConfig(), gpus, period_s=0.1, prover=prover)
    session = Session(header(gpus), store, detector=detector)
    for ev in LogParser().parse_line(POOL_FAILED, "stdout"):
        session.on_record(ev)
    pool = view_of(store.snapshot().pipeline).pool
    assert pool is not None and pool.checkout_failed == 1  # fed once, by the detector
    assert view_of(detector.prover.facts()).pool == pool


def test_a_store_without_a_detector_feeds_its_own_prover() -> None:
    gpus = [h200(0)]
    store = SeriesStore(gpus, period_s=0.1)
    Session(header(gpus), store)  # no detector
    for ev in LogParser().parse_line(POOL_FAILED, "stdout"):
        store.append_log(ev)
    pool = view_of(store.snapshot().pipeline).pool
    assert pool is not None and pool.checkout_failed == 1
