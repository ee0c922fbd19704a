"""The Prometheus exporter: what /metrics says about a session fed with hand-made records.

A scripted detector stands in for the real one, so each test states exactly which gaps and
states the session saw; the metrics are read over real HTTP from the exporter's own server.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest
from conftest import DATA
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from gapwatch.core.models import (
    GAP_KINDS,
    CopyRecord,
    Gap,
    GpuHealth,
    GpuInfo,
    GpuSample,
    HardwareEvent,
    HostSample,
    LinkState,
    LogEvent,
    ProcessMemory,
    Record,
    SessionHeader,
    StateChange,
)
from gapwatch.core.verdict import WindowNow
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.sinks.prometheus import ExporterError, ExporterHandle, parse_listen, start_exporter


class ScriptedDetector:
    """Returns, for each GPU sample fed, the events queued for that sample's t_mono_ns."""

    def __init__(self) -> None:
        self.script: dict[int, list[Gap | StateChange]] = {}
        self.counters: dict[str, int] = {}

    def feed(self, record: Record) -> list[Gap | StateChange]:
        if isinstance(record, GpuSample):
            return self.script.pop(record.t_mono_ns, [])
        return []

    def feed_copies(self, copies: list[CopyRecord]) -> list[Gap | StateChange]:
        return []

    def finish(self) -> list[Gap | StateChange]:
        return []

    def window_now(self, gpu: int) -> WindowNow | None:
        return None


def _header() -> SessionHeader:
    return SessionHeader(
        gapwatch_version="test", host="box", source="sim", started_wall_s=1000.0,
        started_mono_ns=0, period_ms=100.0,
        gpus=[GpuInfo(index=0, name="H200", link_bytes_per_s=63.0e9, sm_source="gpm",
                      pcie_source="gpm"),
              GpuInfo(index=1, name="H200", link_bytes_per_s=None)],
    )


def _sample(gpu: int, t_ns: int, sm: float | None = 80.0, rx: float | None = 2.0e9,
            lateness_ns: int | None = None) -> GpuSample:
    return GpuSample(gpu=gpu, t_mono_ns=t_ns, t_wall_s=1000.0 + t_ns / 1e9, interval_ns=100_000_000,
                     sm_active_pct=sm, gpu_util_pct=90.0, pcie_rx_bytes_per_s=rx,
                     pcie_tx_bytes_per_s=1.0e8, sm_source="gpm", pcie_source="gpm",
                     lateness_ns=lateness_ns)


def _gap(gap_id: int, end: float | None, kind: str = "pcie_starved", dur: float = 1.5,
         retracted: bool = False) -> Gap:
    return Gap(gap_id=gap_id, gpu=0, kind=kind, start_mono_ns=0, start_s=1000.0,  # type: ignore[arg-type]
               end_mono_ns=None if end is None else int(end * 1e9), end_s=end, duration_s=dur,
               pcie_rx_bytes_per_s=2e9, pcie_tx_bytes_per_s=None, link_bytes_per_s=63e9,
               retracted=retracted)


@pytest.fixture()
def live() -> Iterator[tuple[Session, ScriptedDetector, ExporterHandle]]:
    header = _header()
    detector = ScriptedDetector()
    session = Session(header, SeriesStore(header.gpus, 0.1), detector)
    handle = start_exporter("127.0.0.1:0", session)
    yield session, detector, handle
    handle.stop()


def scrape(handle: ExporterHandle) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """name (with suffix) -> {sorted labels -> value}."""
    with urllib.request.urlopen(handle.url, timeout=5) as resp:
        text = resp.read().decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_bare_port_binds_loopback_and_explicit_hosts_are_kept() -> None:
    assert parse_listen("9400") == ("127.0.0.1", 9400)
    assert parse_listen(":9400") == ("127.0.0.1", 9400)
    assert parse_listen("0.0.0.0:9400") == ("0.0.0.0", 9400)
    assert parse_listen("[::1]:9400") == ("::1", 9400)


@pytest.mark.parametrize("bad", ["", "host:", "host:port", "1.2.3.4:70000", "::1:9400"])
def test_malformed_listen_addresses_are_refused_with_a_message(bad: str) -> None:
    with pytest.raises(ExporterError, match="--prometheus"):
        parse_listen(bad)


@pytest.mark.parametrize("bad", ["127.0.0.1:\u0663\u0663", "127.0.0.1:9_400", "127.0.0.1:+9400",
                                 "127.0.0.1: 9400", "\u00b9\u00b2"])
def test_a_port_of_digits_other_than_ascii_is_refused_not_read_as_another_port(bad: str) -> None:
    """`int` reads Arabic-Indic digits, underscores, a sign and spaces: `listen = "127.0.0.1:٣٣"`
    served /metrics on port 33, an address nobody wrote."""
    with pytest.raises(ExporterError, match="expected HOST:PORT"):
        parse_listen(bad)


def test_a_port_in_use_is_a_clear_error(live: tuple[Session, ScriptedDetector,
                                                    ExporterHandle]) -> None:
    session, _, handle = live
    with pytest.raises(ExporterError, match="cannot listen"):
        start_exporter(handle.address, session)


def test_latest_sample_becomes_ratio_and_byte_gauges(live: tuple[Session, ScriptedDetector,
                                                                 ExporterHandle]) -> None:
    session, _, handle = live
    session.on_gpu_samples([_sample(0, 100_000_000, sm=20.0), _sample(0, 200_000_000, sm=75.0)])
    m = scrape(handle)
    assert m["gapwatch_gpu_sm_active_ratio"][(("gpu", "0"),)] == pytest.approx(0.75)
    assert m["gapwatch_gpu_pcie_rx_bytes_per_second"][(("gpu", "0"),)] == 2.0e9
    assert m["gapwatch_gpu_pcie_link_capacity_bytes_per_second"] == {(("gpu", "0"),): 63.0e9}
    assert m["gapwatch_gpu_samples_total"][(("gpu", "0"),)] == 2
    info = m["gapwatch_gpu_info"]
    assert info[(("gpu", "0"), ("name", "H200"), ("pcie_source", "gpm"), ("sm_source", "gpm"),
                 ("uuid", ""))] == 1


def test_the_datas_quality_and_gapwatchs_own_cost_are_exported(
        live: tuple[Session, ScriptedDetector, ExporterHandle]) -> None:
    """A fleet could not tell a box whose readings had holes (NVML blocked, GPM without new
    data, skipped ticks) from one read every period, nor what gapwatch itself cost: the
    seconds each GPU's samples covered, fine or merged, and gapwatch's process CPU and memory."""
    import msgspec

    session, _, handle = live
    merged = msgspec.structs.replace(_sample(0, 1_500_000_000), interval_ns=500_000_000)
    session.on_gpu_samples([_sample(0, (i + 1) * 100_000_000) for i in range(10)])
    session.on_gpu_samples([merged])  # 0.5 s at a 100 ms period: one average over it
    m = scrape(handle)
    sampled = m["gapwatch_gpu_sampled_seconds_total"]
    assert sampled[(("gpu", "0"), ("kind", "fine"))] == pytest.approx(1.0)
    assert sampled[(("gpu", "0"), ("kind", "merged"))] == pytest.approx(0.5)
    # Every GPU from the start, at 0: rate() sees the first seconds.
    assert sampled[(("gpu", "1"), ("kind", "fine"))] == 0.0
    assert m["gapwatch_self_process_cpu_seconds_total"][()] > 0
    assert m["gapwatch_self_process_resident_memory_bytes"][()] > 1 << 20


def test_a_gpu_read_at_50_ms_on_the_h200_counts_as_read_all_along() -> None:
    """Fine was "at most two periods": at 50 ms GPM's ~100 ms readings jitter across that
    cut, and half the H200's 50 ms recording counted as merged (the fleet's D on every GPU of
    such a box; at 10-30 ms every sample). Recorded intervals that overlap or lie (2**62 ns)
    count no time twice, and a GPU the header did not list gets both series."""
    import msgspec

    from gapwatch.sinks.metrics import MetricsSink
    from gapwatch.sources.files import read_any

    rec = read_any(str(DATA / "h200-sampler-50ms.jsonl.gz"))
    sink = MetricsSink()
    sink.on_header(rec.header)
    samples = [r for r in rec.records if isinstance(r, GpuSample)]
    for r in samples:
        sink.on_record(r)
    last = samples[-1]
    sink.on_record(msgspec.structs.replace(last, t_mono_ns=last.t_mono_ns + 100_000_000,
                                           interval_ns=2**62))
    sink.on_record(msgspec.structs.replace(last, gpu=9))
    got = sink.copy_counts().sampled_s
    fine, merged = got[(0, "fine")], got[(0, "merged")]
    span_s = (last.t_mono_ns - samples[0].t_mono_ns) / 1e9
    assert fine / (fine + merged) > 0.99 and fine + merged <= span_s + 0.4
    assert set(got) >= {(9, "fine"), (9, "merged")}


def test_samples_without_an_interval_or_out_of_order_count_no_time_lost_or_twice() -> None:
    """A sample without an interval (NVML kept the older reading: the next covers both ticks)
    moved the GPU's last time, and the next was cut to one tick: counters at 50 ms moving
    every 100 ms read as half the time, D on every GPU. A stray sample from the past let the
    next interval count time twice."""
    import msgspec

    from gapwatch.sinks.metrics import MetricsSink

    header = msgspec.structs.replace(_header(), period_ms=50.0)
    sink = MetricsSink()
    sink.on_header(header)
    for i in range(1, 201):  # 10 s: every other tick no new reading, then one of 100 ms
        t = i * 50_000_000
        sink.on_record(msgspec.structs.replace(_sample(0, t), interval_ns=None if i % 2
                                               else 100_000_000))
    sink.on_record(msgspec.structs.replace(_sample(0, 5_000_000_000), interval_ns=50_000_000))
    sink.on_record(msgspec.structs.replace(_sample(0, 10_100_000_000),
                                           interval_ns=1_000_000_000))
    got = sink.copy_counts().sampled_s
    assert got[(0, "fine")] == pytest.approx(10.0)  # every 100 ms reading whole
    assert got[(0, "merged")] == pytest.approx(0.1)  # no further back than 10.0 s


def test_the_trained_link_and_the_provers_proc_memory_are_gauges_missing_fields_absent(
        live: tuple[Session, ScriptedDetector, ExporterHandle]) -> None:
    session, _, handle = live
    session.on_record(LinkState(0, 1, 1000.0, 3, 8, 5, 16, 7.88e9, 63.0e9))
    session.on_record(ProcessMemory(1, 1000.0, 0, 4242, "cuzk", 12 << 30, 180 << 30))
    session.on_record(ProcessMemory(1, 1000.0, 0, 31, "", None, None))
    m = scrape(handle)
    assert m["gapwatch_gpu_pcie_link_trained_capacity_bytes_per_second"] == {
        (("gpu", "0"),): 7.88e9}
    assert m["gapwatch_gpu_pcie_link_trained_down"] == {(("gpu", "0"),): 1.0}
    # The pid whose /proc could not be read is absent, never 0.
    assert m["gapwatch_process_pinned_host_memory_bytes"] == {
        (("gpu", "0"), ("name", "cuzk"), ("pid", "4242")): float(12 << 30)}
    assert m["gapwatch_process_heap_host_memory_bytes"] == {
        (("gpu", "0"), ("name", "cuzk"), ("pid", "4242")): float(180 << 30)}


def test_missing_readings_are_absent_never_zero(live: tuple[Session, ScriptedDetector,
                                                            ExporterHandle]) -> None:
    session, _, handle = live
    session.on_gpu_samples([_sample(0, 100_000_000, sm=None, rx=None)])
    m = scrape(handle)
    assert m.get("gapwatch_gpu_sm_active_ratio", {}) == {}
    assert m.get("gapwatch_gpu_pcie_rx_bytes_per_second", {}) == {}
    # Host gauges appear only once a host sample exists, and only for fields it has.
    assert "gapwatch_host_memory_used_ratio" not in m
    session.on_record(HostSample(t_mono_ns=1, t_wall_s=1000.0, interval_ns=None,
                                      mem_used_pct=40.0, mem_available_bytes=None,
                                      swap_used_bytes=None, cpu_busy_pct=None,
                                      psi_mem_some_avg10=12.5, psi_mem_full_avg10=None,
                                      psi_mem_some_share=None, psi_mem_full_share=None,
                                      major_faults_per_s=None, psi_cpu_some_avg10=25.0))
    m = scrape(handle)
    assert m["gapwatch_host_memory_used_ratio"][()] == pytest.approx(0.40)
    assert m["gapwatch_host_memory_pressure_some_avg10_ratio"][()] == pytest.approx(0.125)
    assert m["gapwatch_host_cpu_pressure_some_avg10_ratio"][()] == pytest.approx(0.25)
    assert "gapwatch_host_memory_available_bytes" not in m
    assert "gapwatch_host_cpu_stall_some_ratio" not in m  # no share read: absent, never 0


def test_a_lost_gpus_last_readings_are_absent_and_its_loss_is_counted(
        live: tuple[Session, ScriptedDetector, ExporterHandle]) -> None:
    # A GPU that fell off the bus: its last sample and health stayed in the store, and
    # /metrics went on saying 80 % busy at 52 degrees and 450 W for as long as gapwatch ran.
    session, _, handle = live
    session.on_gpu_samples([_sample(0, 100_000_000), _sample(1, 100_000_000)])
    for gpu in (0, 1):
        session.on_record(GpuHealth(gpu, 100_000_000, 1000.1, temperature_c=52.0,
                                    power_w=450.0, clocks_event_mask=0x20))
        session.on_record(ProcessMemory(100_000_000, 1000.1, gpu, 4242, "cuzk", 1 << 30,
                                        2 << 30, gpu_memory_bytes=3 << 30))
    session.on_record(HardwareEvent(1, 200_000_000, 1000.2, "gpu_lost", code=15))
    m = scrape(handle)
    for name in ("gapwatch_gpu_sm_active_ratio", "gapwatch_gpu_pcie_rx_bytes_per_second",
                 "gapwatch_gpu_temperature_celsius", "gapwatch_gpu_power_watts",
                 "gapwatch_process_gpu_memory_bytes"):
        assert {dict(k)["gpu"] for k in m[name]} == {"0"}, name
    assert {dict(k)["gpu"] for k in m["gapwatch_gpu_clocks_event_reason"]} == {"0"}
    # How stale it is, and that it is lost, stay.
    assert m["gapwatch_gpu_last_sample_timestamp_seconds"][(("gpu", "1"),)] == 1000.1
    assert m["gapwatch_gpu_hardware_events_total"][(("gpu", "1"), ("kind", "gpu_lost"))] == 1
    assert m["gapwatch_gpu_hardware_events_total"][(("gpu", "0"), ("kind", "gpu_lost"))] == 0


def _helps(handle: ExporterHandle) -> dict[str, str]:
    """Each metric family's HELP on the live `/metrics` page, as `curl /metrics` shows it."""
    with urllib.request.urlopen(handle.url, timeout=5) as resp:
        text = resp.read().decode()
    return {f.name: f.documentation for f in text_string_to_metric_families(text)}


def test_the_hardware_events_help_names_a_lost_gpu_among_its_kinds(
        live: tuple[Session, ScriptedDetector, ExporterHandle]) -> None:
    # `gpu_lost` is a kind of the family (and the alert pages on it), while its HELP, what
    # `curl /metrics` shows beside it, said only "XID critical errors, ECC errors, PCIe replays".
    words = _helps(live[2])["gapwatch_gpu_hardware_events"]
    for said in ("XID", "ECC", "PCIe replay", "GPU lost"):
        assert said in words, said


def test_the_gap_counters_help_names_their_kind_label_not_a_cause(
        live: tuple[Session, ScriptedDetector, ExporterHandle]) -> None:
    # `gapwatch_gaps_total`'s label is `kind` (the detector's gap kinds); its HELP said "by
    # GPU and cause", and the prover's causes are another family's label
    # (`gapwatch_gaps_by_prover_cause_total{cause}`).
    help_text = _helps(live[2])
    for family in ("gapwatch_gaps", "gapwatch_gap_seconds"):
        words = help_text[family]
        assert "by GPU and kind" in words and "cause" not in words, words
    assert all(kind in help_text["gapwatch_gaps"] for kind in GAP_KINDS)


def test_gap_seconds_count_once_when_the_gap_closes(live: tuple[Session, ScriptedDetector,
                                                                ExporterHandle]) -> None:
    session, detector, handle = live
    detector.script[1] = [_gap(7, None, dur=0.4)]
    detector.script[2] = [_gap(7, None, dur=0.9)]
    session.on_gpu_samples([_sample(0, 1), _sample(0, 2)])
    m = scrape(handle)
    key = (("gpu", "0"), ("kind", "pcie_starved"))
    assert m["gapwatch_gaps_total"][key] == 0
    assert m["gapwatch_gpu_open_gap_seconds"][key] == pytest.approx(0.9)
    detector.script[3] = [_gap(7, 1001.5, dur=1.5)]
    detector.script[4] = [_gap(7, 1001.5, dur=1.5)]  # re-published closed version
    detector.script[5] = [_gap(8, 1003.0, kind="host_stall", dur=0.5)]
    session.on_gpu_samples([_sample(0, 3), _sample(0, 4), _sample(0, 5)])
    m = scrape(handle)
    assert m["gapwatch_gaps_total"][key] == 1
    assert m["gapwatch_gap_seconds_total"][key] == pytest.approx(1.5)
    assert m["gapwatch_gap_seconds_total"][(("gpu", "0"), ("kind", "host_stall"))] == 0.5
    assert m["gapwatch_gpu_open_gap_seconds"][key] == 0
    # Every GPU and kind exists from the start, so rate() works before the first gap.
    assert m["gapwatch_gaps_total"][(("gpu", "1"), ("kind", "transfer_bound"))] == 0


def test_retracted_gaps_are_not_counted(live: tuple[Session, ScriptedDetector,
                                                    ExporterHandle]) -> None:
    session, detector, handle = live
    detector.script[1] = [_gap(3, 1002.0, retracted=True)]
    session.on_gpu_samples([_sample(0, 1)])
    assert scrape(handle)["gapwatch_gaps_total"][(("gpu", "0"), ("kind", "pcie_starved"))] == 0


def test_breakdown_is_a_zero_one_gauge_beside_the_state_set(
        live: tuple[Session, ScriptedDetector, ExporterHandle]) -> None:
    session, detector, handle = live
    m = scrape(handle)
    assert m["gapwatch_gpu_breakdown"][(("gpu", "0"),)] == 0
    assert m["gapwatch_gpu_chain_state"][(("gpu", "0"), ("state", "NO_DATA"))] == 1
    detector.script[1] = [StateChange(gpu=0, t_mono_ns=1, t_wall_s=1000.0, state="BREAKDOWN",
                                      busy_fraction=0.62)]
    session.on_gpu_samples([_sample(0, 1)])
    m = scrape(handle)
    assert m["gapwatch_gpu_breakdown"][(("gpu", "0"),)] == 1
    assert m["gapwatch_gpu_breakdown"][(("gpu", "1"),)] == 0
    assert m["gapwatch_gpu_chain_state"][(("gpu", "0"), ("state", "BREAKDOWN"))] == 1
    assert m["gapwatch_gpu_chain_state"][(("gpu", "0"), ("state", "CHAINED"))] == 0
    assert m["gapwatch_gpu_busy_ratio"][(("gpu", "0"),)] == pytest.approx(0.62)


def test_tick_lateness_is_observed_once_per_tick(live: tuple[Session, ScriptedDetector,
                                                             ExporterHandle]) -> None:
    session, _, handle = live
    # One tick, two GPUs: one observation, though NVML stamps each GPU when it read it (GPU 1
    # 3 ms into the tick: counted as a tick of its own, the histogram counted ticks x GPUs).
    # A replayed sample (no lateness): none.
    session.on_gpu_samples([_sample(0, 100_000_000, lateness_ns=3_000_000),
                            _sample(1, 103_000_000, lateness_ns=3_000_000)])
    session.on_gpu_samples([_sample(0, 200_000_000, lateness_ns=300_000_000),
                            _sample(0, 300_000_000)])
    m = scrape(handle)
    assert m["gapwatch_sampler_tick_lateness_seconds_count"][()] == 2
    assert m["gapwatch_sampler_tick_lateness_seconds_bucket"][(("le", "0.005"),)] == 1
    assert m["gapwatch_sampler_tick_lateness_seconds_bucket"][(("le", "0.5"),)] == 2
    assert m["gapwatch_sampler_tick_lateness_seconds_sum"][()] == pytest.approx(0.303)
    assert m["gapwatch_sampler_period_seconds"][()] == pytest.approx(0.1)


def test_log_events_and_unparsed_lines_are_counted(live: tuple[Session, ScriptedDetector,
                                                               ExporterHandle]) -> None:
    session, _, handle = live
    for kind in ("timeline", "timeline", "unparsed"):
        session.on_log_event(LogEvent(t_wall_s=1000.0, time_source="line", kind=kind,
                                      name="GPU_START", raw="x"))
    m = scrape(handle)
    assert m["gapwatch_prover_log_events_total"] == {(("kind", "timeline"),): 2}
    assert m["gapwatch_log_unparsed_lines_total"][()] == 1


def test_the_global_registry_is_left_alone(live: tuple[Session, ScriptedDetector,
                                                       ExporterHandle]) -> None:
    names = {m.name for m in REGISTRY.collect()}
    assert not any(n.startswith("gapwatch_") for n in names)


def test_two_exporters_in_one_process_do_not_collide() -> None:
    header = _header()
    handles = []
    for _ in range(2):
        session = Session(header, SeriesStore(header.gpus, 0.1))
        handles.append(start_exporter(":0", session))
    try:
        assert handles[0].address != handles[1].address
        assert all(h.address.startswith("127.0.0.1:") for h in handles)
        assert "gapwatch_gaps_total" in scrape(handles[1])
    finally:
        for h in handles:
            h.stop()


class _Status:
    logs = {"/var/log/cuzk.log": "following"}
    log_counters = {"lines": 10, "parsed": 7, "unparsed": 3, "cut_lines": 1}


def test_runtime_status_feeds_log_file_and_line_metrics() -> None:
    header = _header()
    session = Session(header, SeriesStore(header.gpus, 0.1))
    handle = start_exporter(":0", session, status_fn=_Status)
    try:
        m = scrape(handle)
    finally:
        handle.stop()
    assert m["gapwatch_log_file_info"] == {(("path", "/var/log/cuzk.log"),
                                            ("state", "following")): 1}
    assert m["gapwatch_log_lines_total"][()] == 10
    assert m["gapwatch_log_unparsed_lines_total"][()] == 3
    assert m["gapwatch_log_counter_total"][(("name", "cut_lines"),)] == 1


def test_a_failing_status_is_counted_and_the_scrape_still_answers() -> None:
    def broken() -> object:
        raise RuntimeError("runtime stopping")

    header = _header()
    session = Session(header, SeriesStore(header.gpus, 0.1))
    handle = start_exporter(":0", session, status_fn=broken)
    try:
        scrape(handle)
        m = scrape(handle)
    finally:
        handle.stop()
    assert m["gapwatch_exporter_status_errors_total"][()] == 2
    assert "gapwatch_gaps_total" in m
