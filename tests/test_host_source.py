"""ProcHostSource against fake /proc and /sys trees: fields, rates, and None where absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from gapwatch.config import HostConfig
from gapwatch.core.models import HostSample
from gapwatch.sources.host import HostSource, ProcHostSource

MS = 1_000_000

MEMINFO = """MemTotal:       1000000 kB
MemFree:         100000 kB
MemAvailable:    250000 kB
Buffers:          10000 kB
SwapTotal:       200000 kB
SwapFree:        150000 kB
"""


def stat(busy: int, idle: int, iowait: int = 0) -> str:
    # user nice system idle iowait irq softirq steal guest guest_nice
    return f"cpu  {busy} 0 0 {idle} {iowait} 0 0 0 0 0\ncpu0 {busy} 0 0 {idle} {iowait} 0 0 0 0 0\n"


def psi(some_avg10: float, some_us: int, full_avg10: float, full_us: int) -> str:
    return (
        f"some avg10={some_avg10:.2f} avg60=0.00 avg300=0.00 total={some_us}\n"
        f"full avg10={full_avg10:.2f} avg60=0.00 avg300=0.00 total={full_us}\n"
    )


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write(tmp_path, "proc/meminfo", MEMINFO)
    write(tmp_path, "proc/stat", stat(busy=1000, idle=9000))
    write(tmp_path, "proc/pressure/memory", psi(1.5, 1_000_000, 0.5, 400_000))
    write(tmp_path, "proc/vmstat", "pgfault 999\npgmajfault 100\npgmajfault_x 5\n")
    return tmp_path


def test_first_reading_has_levels_but_no_rates(root: Path) -> None:
    s = ProcHostSource(root=str(root)).read(1000 * MS, 1_796_000_000.0)
    assert s.mem_used_pct == pytest.approx(75.0)
    assert s.mem_available_bytes == 250000 * 1024
    assert s.swap_used_bytes == 50000 * 1024
    assert (s.psi_mem_some_avg10, s.psi_mem_full_avg10) == (1.5, 0.5)
    assert s.interval_ns is None
    assert s.cpu_busy_pct is None and s.major_faults_per_s is None
    assert s.psi_mem_some_share is None and s.psi_mem_full_share is None


def test_second_reading_gives_per_interval_rates(root: Path) -> None:
    source = ProcHostSource(root=str(root))
    source.read(1000 * MS, 1_796_000_000.0)
    # 100 ms later: 30 busy of 100 jiffies, 20 ms "some" stall, 5 ms "full", 7 major faults.
    write(root, "proc/stat", stat(busy=1030, idle=9060, iowait=10))
    write(root, "proc/pressure/memory", psi(2.0, 1_020_000, 0.6, 405_000))
    write(root, "proc/vmstat", "pgfault 1200\npgmajfault 107\n")
    s = source.read(1100 * MS, 1_796_000_000.1)
    assert s.interval_ns == 100 * MS
    assert s.cpu_busy_pct == pytest.approx(30.0)
    assert s.psi_mem_some_share == pytest.approx(0.2)
    assert s.psi_mem_full_share == pytest.approx(0.05)
    assert s.major_faults_per_s == pytest.approx(70.0)
    assert s.psi_mem_some_avg10 == 2.0


def test_no_psi_and_no_resctrl_are_none_not_zero(root: Path) -> None:
    (root / "proc/pressure/memory").unlink()
    source = ProcHostSource(root=str(root))
    source.read(0, 0.0)
    s = source.read(100 * MS, 0.1)
    assert s.psi_mem_some_avg10 is None and s.psi_mem_full_avg10 is None
    assert s.psi_mem_some_share is None and s.psi_mem_full_share is None
    assert s.mem_bandwidth_bytes_per_s is None
    assert s.mem_used_pct is not None  # the rest still works


def test_psi_without_full_line_keeps_some(root: Path) -> None:
    write(root, "proc/pressure/memory", "some avg10=3.00 avg60=0.00 avg300=0.00 total=10\n")
    s = ProcHostSource(root=str(root)).read(0, 0.0)
    assert s.psi_mem_some_avg10 == 3.0 and s.psi_mem_full_avg10 is None


def test_resctrl_bandwidth_sums_l3_domains(root: Path) -> None:
    write(root, "sys/fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", "1000000000\n")
    write(root, "sys/fs/resctrl/mon_data/mon_L3_01/mbm_total_bytes", "500000000\n")
    source = ProcHostSource(root=str(root))
    assert source.read(0, 0.0).mem_bandwidth_bytes_per_s is None  # no previous reading yet
    write(root, "sys/fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", "3000000000\n")
    write(root, "sys/fs/resctrl/mon_data/mon_L3_01/mbm_total_bytes", "1500000000\n")
    s = source.read(500 * MS, 0.5)
    assert s.mem_bandwidth_bytes_per_s == pytest.approx(3e9 / 0.5)


def test_resctrl_unavailable_domain_or_disabled_gives_none(root: Path) -> None:
    write(root, "sys/fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", "1000\n")
    write(root, "sys/fs/resctrl/mon_data/mon_L3_01/mbm_total_bytes", "Unavailable\n")
    source = ProcHostSource(root=str(root))
    source.read(0, 0.0)
    assert source.read(100 * MS, 0.1).mem_bandwidth_bytes_per_s is None
    write(root, "sys/fs/resctrl/mon_data/mon_L3_01/mbm_total_bytes", "1000\n")
    off = ProcHostSource(HostConfig(resctrl=False), root=str(root))
    off.read(0, 0.0)
    assert off.read(100 * MS, 0.1).mem_bandwidth_bytes_per_s is None


def test_counter_going_backwards_gives_none_not_a_negative_rate(root: Path) -> None:
    source = ProcHostSource(root=str(root))
    source.read(0, 0.0)
    write(root, "proc/vmstat", "pgmajfault 3\n")
    assert source.read(100 * MS, 0.1).major_faults_per_s is None


def test_garbage_files_do_not_crash(root: Path) -> None:
    write(root, "proc/meminfo", "nonsense\n")
    write(root, "proc/stat", "intr 1 2 3\n")
    write(root, "proc/pressure/memory", "some avg10=x total=y\n")
    write(root, "proc/vmstat", "pgmajfault lots\n")
    source = ProcHostSource(root=str(root))
    source.read(0, 0.0)
    s = source.read(100 * MS, 0.1)
    assert (s.mem_used_pct, s.cpu_busy_pct, s.psi_mem_some_avg10, s.major_faults_per_s) == (
        None, None, None, None,
    )


def test_without_proc_every_host_field_is_missing_never_zero(tmp_path: Path) -> None:
    source = ProcHostSource(root=str(tmp_path))  # an empty tree: like a non-Linux system
    source.read(0, 0.0)
    s = source.read(100 * MS, 0.1)
    assert s.interval_ns == 100 * MS
    fields = ("mem_used_pct", "mem_available_bytes", "swap_used_bytes", "cpu_busy_pct",
              "psi_mem_some_avg10", "psi_mem_full_avg10", "psi_mem_some_share",
              "psi_mem_full_share", "major_faults_per_s", "mem_bandwidth_bytes_per_s")
    assert {f: getattr(s, f) for f in fields} == dict.fromkeys(fields)


def test_real_proc_reads(tmp_path: Path) -> None:
    if not Path("/proc/meminfo").exists():
        pytest.skip("not Linux")
    source = ProcHostSource()
    source.read(0, 0.0)
    s = source.read(100 * MS, 0.1)
    assert s.mem_used_pct is not None and s.mem_available_bytes is not None


def test_runtime_builds_it_from_the_host_config_section() -> None:
    source = HostSource(HostConfig())
    assert isinstance(source, ProcHostSource)
    assert source.read(0, 0.0).interval_ns is None


def test_cpu_psi_gives_the_share_of_the_interval_a_runnable_task_waited_for_a_cpu(
        root: Path) -> None:
    write(root, "proc/pressure/cpu", psi(40.0, 5_000_000, 0.0, 0))
    source = ProcHostSource(root=str(root))
    first = source.read(1000 * MS, 1_796_000_000.0)
    assert first.psi_cpu_some_share is None  # a rate needs a reading before it
    # 100 ms later the `some` total grew by 45 ms: runnable tasks waited 45 % of the interval.
    write(root, "proc/pressure/cpu", psi(41.0, 5_045_000, 0.0, 0))
    second = source.read(1100 * MS, 1_796_000_000.1)
    assert second.psi_cpu_some_share == pytest.approx(0.45)
    assert (first.psi_cpu_some_avg10, second.psi_cpu_some_avg10) == (40.0, 41.0)  # the host line


def test_a_kernel_without_cpu_psi_has_no_cpu_wait_not_zero(root: Path) -> None:
    source = ProcHostSource(root=str(root))  # the fixture's tree has no proc/pressure/cpu
    source.read(1000 * MS, 1_796_000_000.0)
    s = source.read(1100 * MS, 1_796_000_000.1)
    assert s.psi_cpu_some_share is None and s.psi_mem_some_share is not None
    assert s.psi_cpu_some_avg10 is None


def _host(cpu_wait_avg10: float | None) -> HostSample:
    return HostSample(t_mono_ns=1, t_wall_s=1.0, interval_ns=100 * MS, mem_used_pct=40.0,
                      mem_available_bytes=1 << 30, swap_used_bytes=0, cpu_busy_pct=90.0,
                      psi_mem_some_avg10=1.0, psi_mem_full_avg10=0.0, psi_mem_some_share=0.0,
                      psi_mem_full_share=0.0, major_faults_per_s=0.0,
                      psi_cpu_some_share=0.7, psi_cpu_some_avg10=cpu_wait_avg10)


@pytest.mark.parametrize(("avg10", "said", "flagged"),
                         [(25.0, "25.0%", True), (19.9, "19.9%", False), (None, "n/a", False)])
def test_the_host_line_says_cpu_wait_as_psis_avg10_flagged_from_a_fifth(
        avg10: float | None, said: str, flagged: bool) -> None:
    """The host line shows CPU PSI's avg10, smoothed as memory's PSI beside it (one tick's share,
    here 0.7, comes in bursts), flagged from the hint's 20 %; no reading is n/a, never 0."""
    from gapwatch.ui.widgets.host_panel import host_phrases

    (phrase,) = [p for p in host_phrases(_host(avg10)) if p[0] == "cpu wait "]
    assert phrase == ("cpu wait ", said, flagged)
