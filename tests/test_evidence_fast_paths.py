"""The evidence buffer's shortcuts give what its plain rules give: the events a new gap takes
from the buffer found by bisection while the buffer is in time order (a report's `--log`
events come sorted), the walk back otherwise; an event reaches the open gaps of the GPU it
names (or every open gap) through the gaps kept by GPU (`gapwatch.core.evidence`)."""

from __future__ import annotations

import random

import pytest
from msgspec.structs import replace

from gapwatch.core.evidence import (
    MAX_EVENTS_KEPT,
    ORDER_SLACK_S,
    TAKES_ANY,
    TAKES_NONE,
    TAKES_WARNINGS,
    EvidenceBuffer,
    GapEvidence,
)
from gapwatch.core.models import LogEvent
from gapwatch.core.prover import NoProver


def _event(t: float, gpu: int | None, i: int) -> LogEvent:
    return LogEvent(t, "line", "tracing", f"e{i}", "", gpu=gpu)


def _walked_back(events: list[LogEvent], lo: float, gpu: int) -> list[LogEvent]:
    """`_events_since`'s rule for a buffer out of order: the events after the newest one more
    than `ORDER_SLACK_S` before `lo`, those from `lo` on that concern `gpu`."""
    stop = next((i for i in range(len(events) - 1, -1, -1)
                 if events[i].t_wall_s < lo - ORDER_SLACK_S), -1)
    return [e for e in events[stop + 1:] if e.t_wall_s >= lo and EvidenceBuffer.relevant(e, gpu)]


@pytest.mark.parametrize("seed", range(4))
def test_a_gap_finds_the_same_events_by_bisection_as_by_walking_back(seed: int) -> None:
    rng, pick = random.Random(seed), random.Random(-seed)
    buf = EvidenceBuffer(before_s=2.0, log_maxlen=300)
    t = 1000.0
    bisected = 0
    for i in range(3000):
        t += rng.choice((0.0, 0.0, 0.01, 0.2, 1.5))  # equal times too
        out_of_order = (i // 600) % 2 == 1 and rng.random() < 0.02  # in stretches
        buf.add_log(_event(t - 3.0 if out_of_order else t, rng.choice((None, 0, 1)), i))
        if i % 7:
            continue
        in_order = buf._log_disorder_at <= buf._logged - len(buf._log) + 1
        times = [e.t_wall_s for e in buf._log]
        assert in_order == all(a <= b for a, b in zip(times, times[1:], strict=False))
        bisected += in_order
        # The latest kept times, some older ones drawn at random (each and just past it), and
        # beyond either end (every kept time at every step cost the suite 7 CPU-s).
        events = list(buf._log)
        some = [*times[-8:], *pick.sample(times, min(8, len(times)))]
        for lo in (*some, *(x + 0.001 for x in some), t + 1, times[0] - 1):
            for gpu in (0, 1):
                assert buf._events_since(lo, gpu) == _walked_back(events, lo, gpu)
    assert 50 < bisected < 3000 // 7 - 50  # both ways were taken


def test_an_event_reaches_the_open_gaps_relevant_says() -> None:
    rng = random.Random(3)
    buf = EvidenceBuffer(before_s=2.0)
    gaps = [buf.open_gap(gpu, 1000.0 + k) for k, gpu in enumerate((0, 1, 2, 1))]
    buf.drop_gap(gaps[1])
    sent = [_event(995.0 + i * 0.01, rng.choice((None, 0, 1, 2, 3)), i) for i in range(1500)]
    for ev in sent:
        buf.add_log(ev)
    for acc in gaps[0], gaps[2], gaps[3]:
        want = [e.name for e in sent
                if EvidenceBuffer.relevant(e, acc.gpu) and e.t_wall_s >= acc.from_s - 2.0]
        assert [e.name for e in acc.events] == want[:64] and len(want) > 64
    assert gaps[1].events == []


def _gap_holding(kept: list[LogEvent]) -> GapEvidence:
    acc = GapEvidence(0, 0.0, NoProver().open_gap(0, 0.0))
    for ev in kept:  # at most 64: each is appended
        acc.add_event(ev)
    acc.dirty = False
    return acc


def _one_by_one(kept: list[LogEvent], evs: list[LogEvent]) -> tuple[list[str], bool]:
    acc = _gap_holding(kept)
    for ev in evs:
        acc.add_event(ev)
    return [e.name for e in acc.events], acc.dirty


def _takes(acc: GapEvidence) -> int:
    """What `add_event` would still take, from the events themselves."""
    if len(acc.events) < MAX_EVENTS_KEPT:
        return TAKES_ANY
    return TAKES_WARNINGS if any(e.warning is None for e in acc.events) else TAKES_NONE


@pytest.mark.parametrize("seed", range(3))
def test_events_taken_at_once_are_those_taken_one_by_one(seed: int) -> None:
    """`add_events` against `add_event` in turn: lists kept before of every length (empty,
    nearly full, full of warnings, of ordinary events), runs of warnings and none."""
    rng = random.Random(seed)
    n = 0

    def events(count: int, warn_share: float) -> list[LogEvent]:
        nonlocal n
        out = []
        for _ in range(count):
            n += 1
            warning = "unpinned" if rng.random() < warn_share else None
            out.append(LogEvent(float(n), "line", "tracing", f"e{n}", "", warning=warning))
        return out

    for _ in range(400):
        kept = events(rng.choice((0, 1, 40, 63, 64, MAX_EVENTS_KEPT)), rng.random())
        evs = events(rng.choice((0, 1, 2, 5, 63, 64, 65, 130, 300)), rng.choice((0.0, 0.05, 0.5, 1.0)))
        acc = _gap_holding(kept)
        assert [e.name for e in acc.events] == [e.name for e in kept]
        acc.add_events(evs)
        assert ([e.name for e in acc.events], acc.dirty) == _one_by_one(kept, evs)
        # What it can still take, said by the gap, is what its events say (after each way).
        assert acc.takes == _takes(acc)
        assert acc.plain == sum(e.warning is None for e in acc.events)
        one = _gap_holding(kept)
        for ev in evs:
            one.add_event(ev)
            assert (one.takes, one.plain) == (_takes(one), sum(e.warning is None for e in one.events))


def test_open_and_closed_gaps_take_what_every_offer_would_give_them() -> None:
    """The buffer offers an event only to the open gaps that can take it (`takes`) and looks
    at closed gaps only when the event is not newer than all their ends: each gap ends with
    the events `add_event` leaves when offered every relevant event in its window, and an
    event reports reaching a closed gap just when one is in reach."""
    rng = random.Random(7)
    buf = EvidenceBuffer(before_s=2.0)
    closed = [buf.open_gap(gpu, 900.0 + gpu) for gpu in (0, 1, 2)]
    for k, acc in enumerate(closed):
        buf.close_gap(acc, 960.0 + 10 * k)  # ends 960, 970, 980
    opened = [buf.open_gap(gpu, 1000.0 + k) for k, gpu in enumerate((0, 1, 2, 1))]
    every = closed + opened
    want: dict[int, GapEvidence] = {id(a): _gap_holding([]) for a in every}
    t = 940.0
    for i in range(3000):
        t += rng.choice((0.0, 0.02, 0.05))
        warning = "unpinned" if rng.random() < rng.choice((0.02, 0.5)) else None
        ev = LogEvent(t, "line", "tracing", f"e{i}", "", gpu=rng.choice((None, 0, 1, 2, 3)),
                      warning=warning)
        if i < 3:  # at the closed gaps' very ends first (an end is in reach)
            ev = replace(ev, t_wall_s=960.0 + 10 * i, gpu=None)
        reached = buf.add_log(ev)
        in_reach = False
        for acc in every:
            until = acc.until_s if acc.until_s is not None else float("inf")
            if EvidenceBuffer.relevant(ev, acc.gpu) and acc.from_s - 2.0 <= t <= until:
                want[id(acc)].add_event(ev)
                in_reach |= acc in closed
        assert reached == in_reach
    assert t > 1000.0
    for acc in every:
        assert [e.name for e in acc.events] == [e.name for e in want[id(acc)].events]
    assert {a.takes for a in opened} >= {TAKES_WARNINGS} and any(a.events for a in closed)
