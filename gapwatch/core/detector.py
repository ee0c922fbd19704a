"""GapDetector: finds GPU idle gaps as they happen, names their cause, tracks the chaining state.

Who calls it: `gapwatch.engine.session.Session` (live, simulated and replayed data alike) and
`gapwatch.offline.report` (which drives the same class over a recording). Pure: no I/O, no clocks,
no threads; one instance per session, fed from one thread (the Session's lock).

Per GPU, a small state machine over "data segments" (stretches without a hole):

    PRE --busy--> BUSY --idle--> IDLE --busy--> BUSY      (IDLE -> BUSY closes a gap if long enough)
     ^                                |
     +------ hole / no reading -------+  (an open gap is retracted: idle before a hole, or at the
                                          end of the data, is idle after the last busy, not a gap)

Edges are placed inside samples: a sample at t with interval d covers [t-d, t]. The last busy
sample before a gap is taken to be busy at its start for the share `level / peak` of its interval
(peak = highest level of that busy run), the first busy sample after a gap busy at its end for
the same share. With 100 ms GPM samples this puts edges within tens of ms, not a whole period.

The per-sample path is the hot loop of `gapwatch report` over 24 h x 8 GPUs x 10 Hz (~7 M
samples): plain attribute access on a slotted track, no allocation unless something happens,
the 30 s window kept as one-second buckets (no per-sample tuple), and the chaining state
re-evaluated cheaply (a busy sample with no gap in the window cannot change a CHAINED GPU).
See docs/detection.md for the definitions, defaults and the state rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gapwatch.core.config import DetectorConfig
from gapwatch.core.evidence import EvidenceBuffer, GapEvidence, make_hint
from gapwatch.core.models import (
    ChainState,
    CopyRecord,
    Gap,
    GpuInfo,
    GpuSample,
    HostSample,
    LinkState,
    LogEvent,
    ProcessMemory,
    StateChange,
)
from gapwatch.core.track import BUSY as _BUSY
from gapwatch.core.track import DEFAULT_PERIOD_NS, GpuTotals, median_int, valid
from gapwatch.core.track import IDLE as _IDLE
from gapwatch.core.track import PRE as _PRE
from gapwatch.core.track import Track as _Track

_NS = 1_000_000_000
_NEVER = 1 << 62
#: An open gap is re-published at most this often (data time), or when its kind changes.
UPDATE_EVERY_NS = 500_000_000
#: Signal sources whose all-exactly-zero readings are GPM staleness, not idleness (nvml-facts).
_GPM_LIKE = ("gpm", "trace")


class GapDetector:
    """Streaming gap detector implementing `gapwatch.engine.session.Detector`.

    Args:
        config: thresholds (see `DetectorConfig`).
        gpus: what is known of each GPU; the link capacity judges PCIe rates.
        period_s: the sampling period, a floor for the expected sample spacing (holes are
            spacings above `nodata_after_periods` x expected). None: learnt from the data.
        live: publish open gaps (and their updates and retractions). Off for offline reports,
            which only keep final versions: building ~2 open versions per gap with evidence and
            hint is most of the cost of a long report. States are identical either way.
    """

    def __init__(
        self, config: DetectorConfig, gpus: list[GpuInfo], period_s: float | None = None,
        live: bool = True,
    ) -> None:
        self.config = config
        self._live = live
        self._infos = {g.index: g for g in gpus}
        self._tracks: dict[int, _Track] = {}
        self._thr_sm = config.idle_sm_pct
        self._thr_util = config.idle_util_pct
        self._min_gap_ns = int(config.min_gap_ms * 1e6)
        self._window_ns = int(config.window_s * _NS)
        self._n_buckets = max(1, math.ceil(config.window_s))
        self._nodata = config.nodata_after_periods
        self._period_floor_ns = int(period_s * _NS) if period_s else 0
        self._gpm_lag_ns = int(config.gpm_lag_ms * 1e6)
        self._ev = EvidenceBuffer(config.evidence_before_s)
        self._next_id = 1
        self._pending: list[Gap | StateChange] = []
        self._now_s = 0.0
        #: Called with each gap id as it is assigned (ids count up in data order). The parallel
        #: report (`gapwatch.offline.report_parallel`) uses it to renumber its workers' gaps.
        self.on_gap_id: Callable[[int], None] | None = None
        #: Inputs skipped or noticed, by reason (out_of_order, stale_gpm, no_data, holes).
        self.counters: dict[str, int] = {
            "out_of_order": 0, "stale_gpm": 0, "no_data": 0, "holes": 0, "retracted": 0,
        }  # fmt: skip

    # -- inputs -------------------------------------------------------------------------------

    def feed_host(self, sample: HostSample) -> None:
        self._ev.add_host(sample)

    def feed_log(self, event: LogEvent) -> None:
        if self._ev.add_log(event):
            for acc in self._ev.take_dirty_closed():
                self._republish(acc)
        self._ev.prune(self._now_s)

    def feed_copy(self, copy: CopyRecord) -> list[Gap | StateChange]:
        """A copy from the copy trace: evidence for the gaps it overlaps. Copies arrive after
        they end (a flush period or more), so one may land in a gap already closed: that gap
        is re-published at once with it (and any late log events)."""
        out = self._pending
        self._pending = []
        if self._ev.add_copy(copy):
            for acc in self._ev.take_dirty_closed():
                self._republish(acc)
            out.extend(self._pending)
            self._pending = []
        return out

    def feed_procmem(self, reading: ProcessMemory) -> None:
        self._ev.add_procmem(reading)

    def feed_link(self, link: LinkState) -> None:
        self._ev.add_link(link)

    def feed_gpu(self, s: GpuSample) -> list[Gap | StateChange]:
        # The hot path (~7 M calls in a 24 h report): fields read once into locals, the track's
        # bucket lists bound locally, no helper call unless something happens.
        tr = self._tracks.get(s.gpu)
        if tr is None:
            tr = self._new_track(s.gpu)
        lag = tr.lag_ns
        if lag is None:
            lag = tr.lag_ns = self._gpm_lag_ns if s.sm_source in _GPM_LIKE else 0
        # A GPM reading describes activity that ended about `gpm_lag_ms` before it was read:
        # place it there, so that gap edges (and the log lines tied to them) are on the GPU's
        # real timeline. The recorded sample keeps the time it was taken.
        t = s.t_mono_ns - lag
        last = tr.last_t
        if last is not None and t <= last:
            self.counters["out_of_order"] += 1
            return []
        out: list[Gap | StateChange] = self._pending
        if out:
            self._pending = []
        else:
            out = []
        n_out = len(out)
        wall = s.t_wall_s - lag / _NS
        self._now_s = wall

        level = s.sm_active_pct
        # NaN fails v == v; negative percentages are not readings (as `_valid`).
        if level is not None and (level != level or level < 0):
            level = None
        thr = self._thr_sm
        low = False
        if level is not None:
            tr.has_sm = True
            if level == 0.0 and s.sm_source in _GPM_LIKE and s.pcie_rx_bytes_per_s == 0.0 \
                    and s.pcie_tx_bytes_per_s == 0.0:
                # A stale GPM reading (every metric exactly 0.0): the next reading carries this
                # interval. Skipping it must not open a gap.
                self.counters["stale_gpm"] += 1
                return out
        elif not tr.has_sm:
            level = valid(s.gpu_util_pct)
            thr = self._thr_util
            low = True
        if level is None:
            # No reading (a GPU with SM activity missed one, or nothing at all): no data.
            self.counters["no_data"] += 1
            tr.last_t = t
            self._end_segment(tr, out)
            self._set_state(tr, "NO_DATA", t, wall, out, "no SM activity reading")
            return out

        # Hole test against the expected spacing (robust median of recent ones).
        if last is None:
            spacing = -1
        else:
            spacing = t - last
            tr.spacings.append(spacing)
            n_seen = tr.n_seen = tr.n_seen + 1
            if n_seen >= 5 and (n_seen <= 8 or n_seen % 16 == 0):
                tr.expected_ns = self._expected(median_int(tr.spacings))
        exp = tr.expected_ns
        d = s.interval_ns
        if d is None or d <= 0:
            d = spacing if spacing > 0 else exp
        if spacing < 0 or spacing > self._nodata * exp:
            if spacing > 0:
                self.counters["holes"] += 1
            self._end_segment(tr, out)
            c0 = t - (d if d < exp else exp)
        else:
            c0 = t - d
            if c0 < last:  # type: ignore[operator]
                c0 = last  # type: ignore[assignment]
        tr.last_t = t
        cover = t - c0

        # One-second buckets for the window's busy fraction.
        k = t // _NS
        i = k % self._n_buckets
        b_ids = tr.b_ids
        if b_ids[i] != k:
            b_ids[i] = k
            tr.b_busy[i] = 0
            tr.b_cover[i] = cover
        else:
            tr.b_cover[i] += cover
        cover_total = tr.cover_total = tr.cover_total + cover
        tr.last_wall = wall

        off = wall - t / _NS
        phase = tr.phase
        if level >= thr:  # busy
            tr.b_busy[i] += cover
            tr.busy_total += cover
            tr.cover_last_busy = cover_total
            if phase == _BUSY:
                if level > tr.peak:
                    tr.peak = level
            else:
                if phase == _IDLE:
                    self._close(tr, t, cover, level, off, low, out)
                elif tr.cover_first_busy is None:
                    tr.cover_first_busy = cover_total - cover
                    tr.first_busy_s = c0 / _NS + off
                tr.phase = _BUSY
                tr.peak = level
            tr.lb_t = t
            tr.lb_c0 = c0
            tr.lb_level = level
            tr.lb_off = off
            tr.last_busy_s = wall
            if not tr.closed and tr.state == "CHAINED":
                return out
            idle = False
        else:
            idle = True
            if phase == _BUSY:
                # Busy -> idle: the gap candidate starts inside the last busy sample.
                f = tr.lb_level / tr.peak if tr.peak > 0 else 1.0
                start = tr.lb_c0 + int((tr.lb_t - tr.lb_c0) * (f if f < 1.0 else 1.0))
                tr.phase = _IDLE
                tr.g_start_ns = start
                tr.g_start_s = start / _NS + tr.lb_off
                tr.g_low = low
                tr.rx_sum = tr.tx_sum = 0.0
                tr.rx_w = tr.tx_w = tr.g_cover = 0
                tr.k_quiet = tr.k_starved = tr.k_fast = 0
            elif phase != _IDLE:
                if tr.state == "IDLE":
                    return out
            if phase != _PRE:
                # One idle sample inside a gap candidate (inline: most samples of a BREAKDOWN
                # are these). Classify it by its dominant PCIe direction, so that one fast
                # 80 ms copy inside a 1.5 s quiet wait is not averaged into a "trickle".
                rate = -1.0
                rx = s.pcie_rx_bytes_per_s
                if rx is not None and rx == rx and rx >= 0:
                    tr.rx_sum += rx * cover
                    tr.rx_w += cover
                    rate = rx
                tx = s.pcie_tx_bytes_per_s
                if tx is not None and tx == tx and tx >= 0:
                    tr.tx_sum += tx * cover
                    tr.tx_w += cover
                    if tx > rate:
                        rate = tx
                if rate >= 0:
                    if rate < tr.quiet_thr:
                        tr.k_quiet += cover
                    elif rate < tr.starved_thr:
                        tr.k_starved += cover
                    else:
                        tr.k_fast += cover
                if low:
                    tr.g_low = True
                tr.g_cover += cover
                tr.g_last_t = t
                tr.g_last_off = off
                if t - tr.g_start_ns >= self._min_gap_ns:
                    self._gap_long_enough(tr, t, out)
        # Re-evaluate the state only when something happened or the window says so: in a
        # BREAKDOWN most samples are neither, and this keeps the per-sample cost flat.
        if len(out) != n_out or tr.phase != phase or t >= tr.recheck_ns or phase == _PRE:
            self._update_state(tr, t, wall, idle, out)
        return out

    def finish(self) -> list[Gap | StateChange]:
        """End of data: an open gap is idle after the last busy period, so it is retracted."""
        out: list[Gap | StateChange] = self._pending
        self._pending = []
        for tr in self._tracks.values():
            if tr.phase == _IDLE and tr.gap_id is not None:
                gid = tr.gap_id
                self._end_segment(tr, out)
                t = tr.last_t or 0
                self._set_state(
                    tr, "IDLE", t, t / _NS + tr.g_last_off, out,
                    f"end of data: idle after the last busy period, gap {gid} retracted",
                )
        return out

    def totals(self) -> list[GpuTotals]:
        """Whole-run figures per GPU, in GPU order."""
        out = []
        for gpu in sorted(self._tracks):
            tr = self._tracks[gpu]
            first = tr.cover_first_busy
            active = (tr.cover_last_busy - first) if first is not None else 0
            out.append(GpuTotals(
                gpu=gpu, link_bytes_per_s=tr.link, data_s=tr.cover_total / _NS,
                busy_s=tr.busy_total / _NS, active_s=active / _NS,
                first_busy_s=tr.first_busy_s, last_busy_s=tr.last_busy_s,
                last_wall_s=tr.last_wall, confidence="high" if tr.has_sm else "low",
                final_state=tr.state,
            ))  # fmt: skip
        return out

    # -- gaps ---------------------------------------------------------------------------------

    def _gap_long_enough(self, tr: _Track, t: int, out: list[Gap | StateChange]) -> None:
        """An idle sample of a stretch already `min_gap_ms` long: open the gap, or re-publish
        it when its kind changed or `UPDATE_EVERY_NS` passed (live only)."""
        kind = self._kind(tr)
        if tr.gap_id is None:
            self._open_gap(tr)
        elif kind == tr.kind and t - tr.last_emit_t < UPDATE_EVERY_NS:
            return
        tr.kind = kind
        tr.last_emit_t = t
        tr.recheck_ns = 0  # the state may change on this very sample (BREAKDOWN on opening)
        if self._live:
            out.append(self._gap(tr, None, None, t))

    def _close(
        self, tr: _Track, t: int, cover: int, level: float, off: float, low: bool,
        out: list[Gap | StateChange],
    ) -> None:
        """Idle -> busy: place the end edge inside this sample; publish if long enough."""
        ref = tr.peak if tr.peak > level else level
        end = t - int(cover * (level / ref if ref > 0 else 1.0))
        if end < tr.g_last_t:
            end = tr.g_last_t
        # The busy samples around the idle stretch were counted busy whole; the edges say
        # which part of them was idle.
        partial = end - tr.g_start_ns - tr.g_cover
        if partial > 0:
            tr.busy_total -= partial
        if end - tr.g_start_ns < self._min_gap_ns:
            return
        if low:
            tr.g_low = True
        tr.kind = self._kind(tr)
        if tr.gap_id is None:
            self._open_gap(tr)
        end_s = end / _NS + off
        gap = self._gap(tr, end, end_s, end)
        out.append(gap)
        if tr.acc is not None:
            tr.acc.published = gap
            self._ev.close_gap(tr.acc, end_s)
        tr.closed.append((end, tr.g_start_ns, tr.kind))
        if tr.kind == "pcie_starved":
            tr.n_starved += 1
        tr.gap_id = None
        tr.acc = None

    def _open_gap(self, tr: _Track) -> None:
        """The idle stretch just became a gap: give it the next id and start its evidence."""
        gid = tr.gap_id = self._next_id
        self._next_id += 1
        tr.acc = self._ev.open_gap(tr.gpu, tr.g_start_s)
        if self.on_gap_id is not None:
            self.on_gap_id(gid)

    def _end_segment(self, tr: _Track, out: list[Gap | StateChange]) -> None:
        """A hole or the end of data: idle since the last busy period was not a gap."""
        if tr.phase == _IDLE and tr.gap_id is not None:
            if self._live:
                gap = self._gap(tr, tr.g_last_t, tr.g_last_t / _NS + tr.g_last_off, tr.g_last_t)
                out.append(_retract(gap))
            self.counters["retracted"] += 1
            if tr.acc is not None:
                self._ev.drop_gap(tr.acc)
            tr.gap_id = None
            tr.acc = None
        tr.phase = _PRE
        tr.peak = 0.0

    @staticmethod
    def _kind(tr: _Track) -> str:
        """The PCIe class that covers most of the idle time (ties: starved, then transfer)."""
        q, st, f = tr.k_quiet, tr.k_starved, tr.k_fast
        if q == st == f == 0:
            return "unknown"
        if st >= f and st >= q:
            return "pcie_starved"
        if f >= q:
            return "transfer_bound"
        return "host_stall"

    def _gap(self, tr: _Track, end_ns: int | None, end_s: float | None, now_ns: int) -> Gap:
        assert tr.gap_id is not None
        rx = tr.rx_sum / tr.rx_w if tr.rx_w else None
        tx = tr.tx_sum / tr.tx_w if tr.tx_w else None
        duration_s = ((end_ns if end_ns is not None else now_ns) - tr.g_start_ns) / _NS
        confidence = "low" if tr.g_low else "high"
        acc = tr.acc
        host = acc.host_dict() if acc is not None else {}
        # No events (every gap of a recording without logs): skip event_dicts' sorting.
        events = acc.event_dicts() if acc is not None and acc.events else []
        g_end_s = end_s if end_s is not None else tr.g_start_s + duration_s
        copies = (self._ev.copies_dict(acc, tr.g_start_s, g_end_s, tr.kind, events)
                  if acc is not None else {})
        link_down = self._link_down(tr.gpu)
        hint = make_hint(
            tr.kind, duration_s, rx, tx, tr.link, confidence, host, events,
            is_open=end_ns is None, copies=copies, link_down=link_down,
        )
        return Gap(
            gap_id=tr.gap_id, gpu=tr.gpu, kind=tr.kind,  # type: ignore[arg-type]
            start_mono_ns=tr.g_start_ns, start_s=tr.g_start_s, end_mono_ns=end_ns, end_s=end_s,
            duration_s=duration_s, pcie_rx_bytes_per_s=rx, pcie_tx_bytes_per_s=tx,
            link_bytes_per_s=tr.link, confidence=confidence,  # type: ignore[arg-type]
            hint=hint, host=host, log_events=events, copies=copies,
            link_current_bytes_per_s=link_down["bytes_per_s"] if link_down else None,
        )  # fmt: skip

    def _link_down(self, gpu: int) -> dict[str, Any] | None:
        link = self._ev.links_down.get(gpu)
        if link is None:
            return None
        return {"gen": link.gen, "width": link.width, "max_gen": link.max_gen,
                "max_width": link.max_width, "bytes_per_s": link.bytes_per_s}

    def _republish(self, acc: GapEvidence) -> None:
        """A late log event reached a closed gap: publish it again with the richer evidence."""
        old = acc.published
        if old is None:
            return
        events = acc.event_dicts()
        end_s = old.end_s if old.end_s is not None else old.start_s + old.duration_s
        copies = self._ev.copies_dict(acc, old.start_s, end_s, old.kind, events)
        link_down = self._link_down(old.gpu)
        hint = make_hint(
            old.kind, old.duration_s, old.pcie_rx_bytes_per_s, old.pcie_tx_bytes_per_s,
            old.link_bytes_per_s or self.config.default_link_bytes_per_s, old.confidence,
            old.host, events, copies=copies, link_down=link_down,
        )  # fmt: skip
        new = replace(_replace_evidence(old, hint, events), copies=copies)
        acc.published = new
        self._pending.append(new)

    # -- chaining state -----------------------------------------------------------------------

    def _update_state(
        self, tr: _Track, t: int, wall: float, idle: bool, out: list[Gap | StateChange]
    ) -> None:
        lo = t - self._window_ns
        closed = tr.closed
        while closed and closed[0][0] < lo:
            if closed.popleft()[2] == "pcie_starved":
                tr.n_starved -= 1
        # Next time the window alone can matter: the oldest gap starts sliding out, or an
        # idle stretch grows as long as the window.
        recheck = closed[0][0] + self._window_ns + 1 if closed else _NEVER
        if tr.phase == _IDLE and tr.g_start_ns + self._window_ns < recheck:
            recheck = tr.g_start_ns + self._window_ns
        tr.recheck_ns = recheck
        open_starved = tr.gap_id is not None and tr.kind == "pcie_starved"
        n = tr.n_starved + (1 if open_starved else 0)
        cfg = self.config
        if n:
            if n >= cfg.breakdown_min_starved_gaps:
                why = f"{n} pcie_starved gaps in the last {cfg.window_s:g} s"
                self._set_state(tr, "BREAKDOWN", t, wall, out, why)
                return
            # The idle-fraction rule is in play: it changes as soon as the oldest gap starts
            # sliding out of the window.
            if closed and closed[0][1] + self._window_ns < tr.recheck_ns:
                tr.recheck_ns = closed[0][1] + self._window_ns
            starved_ns = 0
            for end, start, kind in closed:
                if kind == "pcie_starved":
                    starved_ns += end - (start if start > lo else lo)
            if open_starved:
                starved_ns += t - (tr.g_start_ns if tr.g_start_ns > lo else lo)
            threshold_ns = cfg.breakdown_idle_frac * self._window_ns
            if open_starved and t + threshold_ns - starved_ns < tr.recheck_ns:
                # The open gap meets the idle rule at this data time, if it lasts.
                tr.recheck_ns = int(t + threshold_ns - starved_ns)
            if starved_ns >= threshold_ns:
                why = (f"idle {starved_ns / _NS:.1f} s of the last {cfg.window_s:g} s "
                       "in pcie_starved gaps")
                self._set_state(tr, "BREAKDOWN", t, wall, out, why)
                return
        has_gaps = bool(closed) or tr.gap_id is not None
        if idle and tr.phase == _PRE:
            # Idle with no busy period since the data (re)started: not gaps, just idle.
            self._set_state(tr, "IDLE", t, wall, out, "idle, no busy period since the data started")
        elif (
            # A gap candidate younger than the window has busy time in it by construction.
            idle
            and t - tr.g_start_ns >= self._window_ns
            and self._window_busy(tr, t)[0] == 0
        ):
            why = f"no busy sample in the last {cfg.window_s:g} s"
            self._set_state(tr, "IDLE", t, wall, out, why)
        elif has_gaps:
            why = "idle gaps, not pcie_starved enough for BREAKDOWN"
            self._set_state(tr, "GAPS", t, wall, out, why)
        else:
            self._set_state(tr, "CHAINED", t, wall, out, "busy, no gaps in the window")

    def busy_fraction(self, gpu: int) -> float | None:
        """Busy share of the chaining window for `gpu` as of its latest sample (None before any
        reading). Cheap (one pass over ~30 one-second buckets): the session asks for it about
        once a second per GPU for the dashboard header and the exporter, which would otherwise
        only see the value frozen at the last state change."""
        tr = self._tracks.get(gpu)
        if tr is None or tr.last_t is None:
            return None
        busy, cover = self._window_busy(tr, tr.last_t)
        return busy / cover if cover > 0 else None

    def _window_busy(self, tr: _Track, t: int) -> tuple[int, int]:
        k = t // _NS
        nb = self._n_buckets
        busy = cover = 0
        ids = tr.b_ids
        for i in range(nb):
            if k - ids[i] < nb:
                busy += tr.b_busy[i]
                cover += tr.b_cover[i]
        return busy, cover

    def _set_state(
        self, tr: _Track, state: ChainState, t: int, wall: float, out: list[Gap | StateChange],
        reason: str,
    ) -> None:
        if tr.state == state:
            return
        tr.state = state
        busy, cover = self._window_busy(tr, t)
        out.append(StateChange(
            gpu=tr.gpu, t_mono_ns=t, t_wall_s=wall, state=state,
            busy_fraction=busy / cover if cover else None, reason=reason,
        ))  # fmt: skip

    def _expected(self, median_spacing_ns: int) -> int:
        """Expected spacing: the recent median, at least the sampling period; with a known
        period, at most 4 periods (stale-GPM merging makes 2-3), so holes cannot teach it."""
        floor = self._period_floor_ns
        if not floor:
            return median_spacing_ns
        return min(max(median_spacing_ns, floor), 4 * floor)

    def _new_track(self, gpu: int) -> _Track:
        info = self._infos.get(gpu)
        link = info.link_bytes_per_s if info is not None and info.link_bytes_per_s else None
        has_sm = info is not None and info.sm_source in ("gpm", "sim", "trace")
        tr = _Track(gpu, link or self.config.default_link_bytes_per_s, has_sm, self._n_buckets)
        tr.quiet_thr = self.config.quiet_below_link_frac * tr.link
        tr.starved_thr = self.config.starved_below_link_frac * tr.link
        tr.expected_ns = max(DEFAULT_PERIOD_NS if not self._period_floor_ns else 0,
                             self._period_floor_ns)
        self._tracks[gpu] = tr
        return tr


def _retract(gap: Gap) -> Gap:
    return _replace_evidence(gap, gap.hint, gap.log_events, retracted=True)


def _replace_evidence(
    gap: Gap, hint: str, events: list[dict[str, Any]], retracted: bool = False
) -> Gap:
    return replace(gap, hint=hint, log_events=events, retracted=retracted or gap.retracted)
