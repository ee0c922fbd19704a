"""Snapshot folders (gapwatch.sinks.snapshot, core part): complete, replayable, whole or absent."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import msgspec.structs
import pytest
from ui_fakes import HINT, WALL0_S, fill_breakdown, header, make_config, t_ns

from gapwatch.base import no_replace
from gapwatch.core.evidence_types import EventEvidence
from gapwatch.core.models import GpuSample, LogEvent
from gapwatch.core.verdict import WindowNow
from gapwatch.engine.store import SeriesStore
from gapwatch.sinks import snapshot as snapshot_mod
from gapwatch.sinks.snapshot import SnapshotError, write_snapshot
from gapwatch.sources.files import read_any


def filled_store() -> SeriesStore:
    store = SeriesStore(list(header().gpus), period_s=0.1, history_s=600)
    fill_breakdown(store)
    return store


def snapshot_into(folder: Path) -> Path:
    """A snapshot of `filled_store` written into `folder` with the default config."""
    return write_snapshot(folder, filled_store().snapshot(), header(), make_config(),
                          t_wall_s=WALL0_S)


def test_a_snapshot_folder_holds_svg_recording_gaps_and_summary(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    path = write_snapshot(tmp_path, filled_store().snapshot(), header(), config,
                          t_wall_s=WALL0_S + 61, svg="<svg/>", reason="by hand",
                          status_lines=["sampler 100 ms, late p99 0.9 ms"])
    assert path.name == "gapwatch-snapshot-prover-1-20261130T090722Z"
    assert sorted(p.name for p in path.iterdir()) == [
        "dashboard.svg", "gaps.json", "recording.jsonl.gz", "summary.md"]
    gaps = msgspec.json.decode((path / "gaps.json").read_bytes())
    assert [g["kind"] for g in gaps] == ["pcie_starved"] * 5
    summary = (path / "summary.md").read_text()
    assert "BREAKDOWN" in summary
    assert HINT in summary
    assert "63.0 GB/s per direction (Gen5 x16)" in summary
    assert "PSI memory some avg10 | 23.5%" in summary
    assert "unpinned: 1 line(s)" in summary
    assert "late p99 0.9 ms" in summary


def test_the_recording_replays_with_the_samples_and_log_events(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, filled_store().snapshot(), header(), make_config(tmp_path),
                          t_wall_s=WALL0_S + 61)
    rec = read_any(path / "recording.jsonl.gz")
    records = list(rec.records)
    assert rec.header.host == "prover-1"
    assert sum(isinstance(r, GpuSample) for r in records) == 601
    assert sum(isinstance(r, LogEvent) for r in records) == 4
    assert not rec.problems


def test_history_is_limited_to_the_configured_span(tmp_path: Path) -> None:
    config = make_config(tmp_path).model_copy(
        update={"snapshot": make_config(tmp_path).snapshot.model_copy(update={"history_s": 10.0})})
    records = snapshot_mod.history_records(filled_store().snapshot(), config.snapshot.history_s)
    samples = [r for r in records if isinstance(r, GpuSample)]
    assert len(samples) == 101  # 50.0 .. 60.0 s inclusive
    assert samples[0].t_wall_s == pytest.approx(WALL0_S + 50.0)


def test_two_snapshots_in_the_same_second_get_distinct_folders(tmp_path: Path) -> None:
    snap = filled_store().snapshot()
    a = write_snapshot(tmp_path, snap, header(), make_config(tmp_path), t_wall_s=WALL0_S)
    b = write_snapshot(tmp_path, snap, header(), make_config(tmp_path), t_wall_s=WALL0_S)
    assert a != b and a.is_dir() and b.is_dir()



def _meanwhile(monkeypatch: pytest.MonkeyPatch, act: Callable[[], object]) -> None:
    """Run `act` once while the next snapshot is being written (after its name was chosen, as
    another thread or process would)."""
    real = snapshot_mod.render_summary

    def acting(*args: Any, **kwargs: Any) -> str:
        monkeypatch.setattr(snapshot_mod, "render_summary", real)
        act()
        return real(*args, **kwargs)

    monkeypatch.setattr(snapshot_mod, "render_summary", acting)


@pytest.mark.parametrize("renameat2", [True, False], ids=["renameat2", "fallback"])
def test_a_snapshot_of_the_same_second_written_meanwhile_is_kept_beside_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, renameat2: bool
) -> None:
    """The dashboard's automatic snapshot and `--on-event`'s of one BREAKDOWN, or two
    gapwatches sharing a folder: the second's rename met the first's folder (ENOTEMPTY) and
    the snapshot was lost."""
    if not renameat2:
        monkeypatch.setattr(no_replace, "_renameat2", lambda: None)
    other: list[Path] = []
    _meanwhile(monkeypatch, lambda: other.append(snapshot_into(tmp_path)))
    mine = snapshot_into(tmp_path)
    assert other[0].name == "gapwatch-snapshot-prover-1-20261130T090621Z"
    assert mine.name == other[0].name + "-2"
    assert (mine / "summary.md").exists() and (other[0] / "summary.md").exists()


def test_an_empty_folder_made_at_the_name_meanwhile_is_never_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain rename(2) of a folder replaces an empty folder at its target: gapwatch removed
    a folder it did not make."""
    planted = tmp_path / "gapwatch-snapshot-prover-1-20261130T090621Z"
    _meanwhile(monkeypatch, planted.mkdir)
    mine = snapshot_into(tmp_path)
    assert planted.is_dir() and list(planted.iterdir()) == []
    assert mine.name == planted.name + "-2" and (mine / "summary.md").exists()


@pytest.mark.parametrize("renameat2", [True, False], ids=["renameat2", "fallback"])
def test_a_dangling_link_at_the_name_is_left_and_the_snapshot_written_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, renameat2: bool
) -> None:
    """`exists()` follows links: a dangling one at the name was taken for a free name, and the
    rename onto it failed (`Not a directory`): no snapshot at all."""
    if not renameat2:
        monkeypatch.setattr(no_replace, "_renameat2", lambda: None)
    planted = tmp_path / "gapwatch-snapshot-prover-1-20261130T090621Z"
    planted.symlink_to(tmp_path / "nowhere")
    mine = snapshot_into(tmp_path)
    assert planted.is_symlink() and os.readlink(planted) == str(tmp_path / "nowhere")
    assert mine.name == planted.name + "-2" and (mine / "summary.md").exists()


def test_entries_planted_at_the_temporary_names_pid_and_time_foretell_block_no_snapshot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary folder was `.NAME.tmp-PID-N` (N counting from 0 in the process), NAME the
    host and the second: anyone who may write to the snapshot folder (a shared /tmp) could put
    a file or a link at the names of the seconds to come, and every snapshot then failed
    (`File exists`). Its name is random now, made without replacing anything (`mkdtemp`)."""
    monkeypatch.setattr(snapshot_mod, "_tmp_counter", itertools.count(), raising=False)
    name = "gapwatch-snapshot-prover-1-20261130T090621Z"
    for n in range(5):
        (tmp_path / f".{name}.tmp-{os.getpid()}-{n}").symlink_to(tmp_path / "elsewhere")
    mine = snapshot_into(tmp_path)
    assert mine.name == name and (mine / "summary.md").exists()
    assert not (tmp_path / "elsewhere").exists()
    # What was planted is left as it was, and no temporary of this snapshot is left beside it.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [name, *(f".{name}.tmp-{os.getpid()}-{n}" for n in range(5))])


def test_a_recordings_300_character_host_gives_a_snapshot_not_an_oserror(tmp_path: Path) -> None:
    """A replayed recording's host is anybody's text: its name made the folder's name over
    255 bytes, and `File name too long` escaped as an OSError past the callers (they catch
    `SnapshotError`: the dashboard's worker died with it)."""
    long_host = msgspec.structs.replace(header(), host="h" * 300)
    path = write_snapshot(tmp_path, filled_store().snapshot(), long_host, make_config(),
                          t_wall_s=WALL0_S)
    assert path.name == f"gapwatch-snapshot-{'h' * snapshot_mod.HOST_CHARS}-20261130T090621Z"
    assert read_any(path / "recording.jsonl.gz").header.host == "h" * 300


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_a_read_only_directory_raises_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "ro"
    target.mkdir()
    target.chmod(0o500)
    try:
        with pytest.raises(SnapshotError, match="snapshot not written"):
            snapshot_into(target)
    finally:
        target.chmod(0o700)


def test_a_failure_half_way_leaves_no_folder_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(*args: object, **kwargs: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshot_mod, "write_recording", disk_full)
    with pytest.raises(SnapshotError, match="No space left on device"):
        snapshot_into(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_link_put_at_the_temporary_folders_name_is_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot folder may be another user's (a shared /tmp): that user moved the
    temporary folder away once made and put a link to a folder of theirs choosing at its name;
    gapwatch run as root wrote the snapshot's files through it."""
    victim = tmp_path / "victim"
    victim.mkdir()
    real_mkdir = os.mkdir

    def then_swapped(path: str | os.PathLike[str], mode: int = 0o777) -> None:
        real_mkdir(path, mode)
        if ".tmp-" in os.fspath(path):
            os.rename(path, tmp_path / "moved-away")
            os.symlink(victim, path)

    monkeypatch.setattr(os, "mkdir", then_swapped)
    with pytest.raises(SnapshotError):
        snapshot_into(tmp_path)
    assert list(victim.iterdir()) == []


def test_a_temporary_folder_swapped_for_a_link_while_written_is_not_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Swapped after it was opened: the files still go into the folder gapwatch made (held
    open, written through the handle), and a snapshot whose folder was moved is not one."""
    victim = tmp_path / "victim"
    victim.mkdir()
    from gapwatch.sinks.recorder import write_recording as real_write

    def swap_then_write(path: Path, *args: object) -> int:
        (tmp_dir,) = [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
        os.rename(tmp_dir, tmp_path / "moved-away")
        os.symlink(victim, tmp_dir)
        return real_write(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshot_mod, "write_recording", swap_then_write)
    with pytest.raises(SnapshotError, match="moved or replaced"):
        snapshot_into(tmp_path)
    assert list(victim.iterdir()) == []
    assert (tmp_path / "moved-away" / "summary.md").exists()  # written where it was made
    assert not any(p.name.startswith("gapwatch-snapshot") for p in tmp_path.iterdir())


def test_a_snapshot_folder_has_the_mode_a_plain_folder_would_have(tmp_path: Path) -> None:
    """Made 0700 while it is written (nobody else can put files in it), then given the mode
    the umask gives any folder."""
    path = snapshot_into(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert path.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777


def test_a_target_that_is_a_file_raises_instead_of_crashing(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(SnapshotError):
        snapshot_into(blocker)


def test_the_summary_shows_the_live_busy_share_and_count_and_the_real_span(tmp_path: Path) -> None:
    """The state change said 81 % busy when it happened; the store's live value is 64 %: the
    summary says what the header and /metrics say. 60 s of data is 60 s, not "the last 300 s"."""
    store = filled_store()
    store.set_window(WindowNow(gpu=0, t_mono_ns=t_ns(60), end_wall_s=WALL0_S + 60,
                               window_s=30.0, gaps={"pcie_starved": 3}, starved_idle_s=2.5,
                               busy_fraction=0.64))
    path = write_snapshot(tmp_path, store.snapshot(), header(), make_config(tmp_path),
                          t_wall_s=WALL0_S + 61)
    summary = (path / "summary.md").read_text()
    assert "| GPU0 | NVIDIA H200 | BREAKDOWN | 09:07:06 | 64% |" in summary
    assert "81%" not in summary
    assert "Covers 60.0s of data, 09:06:21 to 09:07:21" in summary
    # What the state rests on now (3 starved gaps in the window as of the last sample), and
    # what it was entered on (the fake's state reason), each in its own column.
    # (Each cell Markdown text: `fmt.markdown`, the `_` escaped.)
    assert ("| 3 pcie\\_starved gaps (2.5 s idle) in the last 30 s, 09:06:51-09:07:21 | "
            "3 pcie\\_starved gaps in 30 s |") in summary
    assert "Covers the last 300" not in summary


def test_the_summary_gives_each_distinct_cause_once_with_a_count(tmp_path: Path) -> None:
    from msgspec.structs import replace
    from ui_fakes import gap

    store = SeriesStore(list(header().gpus), period_s=0.1, history_s=600)
    fill_breakdown(store)
    unpinned = [EventEvidence(0.0, "x", partition=p, warning="unpinned", raw="is_pinned=false")
                for p in (5, 6)]
    for i in range(15):  # 15 gaps, each with its own figures and partitions in the hint
        hint = (f"partitions {i}, {i + 1} were synthesised with is_pinned=false: a/b/c in "
                f"pageable memory?; SMs idle 0.{i} s while H2D ran at 2.{i} GB/s")
        store.upsert_gap(replace(gap(100 + i, 0, 2.0 * i, 2.0 * i + 0.5, hint=hint),
                                 log_events=unpinned))
    store.upsert_gap(gap(200, 0, 40.0, 41.0, kind="host_stall", hint="SMs idle 1.0 s with "
                         "PCIe quiet (2 MB/s): the GPU waited on the host"))
    path = write_snapshot(tmp_path, store.snapshot(), header(), make_config(tmp_path),
                          t_wall_s=WALL0_S + 61)
    summary = (path / "summary.md").read_text()
    hints = summary.split("## Hints")[1].split("\n## ")[0]
    bullets = [line for line in hints.splitlines() if line.startswith("- ")]
    assert len(bullets) == 3  # 15 unpinned starved gaps, the 5 plain starved ones, 1 host stall
    assert bullets[0].startswith("- **pcie\\_starved**, 15 gap(s) (GPU0 15)")  # Markdown text
    assert "is\\_pinned=false: a/b/c in pageable memory?" in bullets[0]
    assert "latest (" in hints and "partitions 14, 15" in hints


def test_a_snapshot_lists_the_gpu_error_a_flood_of_corrected_ecc_warnings_came_after(
        tmp_path: Path) -> None:
    """Its list of GPU errors read the latest 256 hardware events: 40 s of corrected ECC on 7
    GPUs pushed the XID out. The errors are all listed, the warnings the latest 20."""
    from gapwatch.core.models import HardwareEvent
    from gapwatch.sinks.snapshot import SNAPSHOT_WARNINGS

    store = filled_store()
    store.append(HardwareEvent(3, t_ns(10.0), WALL0_S + 10.0, "xid", code=79))
    for second in range(40):
        for gpu in (0, 1, 2, 4, 5, 6, 7):
            store.append(HardwareEvent(gpu, t_ns(10.5 + second), WALL0_S + 10.5 + second,
                                       "ecc_corrected", count=1))
    path = write_snapshot(tmp_path, store.snapshot(), header(), make_config(),
                          t_wall_s=WALL0_S + 61)
    summary = (path / "summary.md").read_text()
    assert "GPU 3: XID 79" in summary
    assert summary.count("corrected ECC") <= SNAPSHOT_WARNINGS + 1
    # The store keeps the latest 256 events (the XID apart): 236 warnings left out.
    assert f"and {256 - SNAPSHOT_WARNINGS} earlier warnings" in summary
