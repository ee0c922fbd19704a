"""gapwatch deletes only files it wrote itself, and says the truth about what it kept: `--keep`
removes a segment only if it is a regular file of this user, not a link, whose header names this
recording set and whose lock nobody holds; a second `record` never removes or clobbers a running
one's segments; a name planted where the next segment goes is skipped; a recording deleted
mid-run is written again (gapwatch.sinks.segments, gapwatch.sinks.recorder). Issue 29, items 2
and 10."""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import DATA
from faults import records_of
from msgspec import structs

from evaluation.simulate import SimResult, simulate
from gapwatch.cli import main
from gapwatch.core.models import Notice
from gapwatch.sinks.recorder import Recorder, write_recording
from gapwatch.sinks.segments import check_segments, removable, segment_name, segments_of
from gapwatch.sources.files import read_any

HOSTILE = DATA / "hostile"
SIM = ["--source", "sim:pageable", "--speed", "0", "--quiet"]


@functools.cache
def _sim_records() -> SimResult:
    """100 s of the simulated prover, recorded plain: about 700 KB, so 1 MiB segments rotate
    every ~150 s (made when a test first asks, not in every worker's collection)."""
    return simulate("pageable", seed=1, duration_s=100)


def _half_recorded(path: Path) -> tuple[Recorder, list[Notice], int]:
    """A recorder writing `path`, the first half of `_sim_records` written and flushed: the
    recorder, the notices it gives, how many records are in the file."""
    notices: list[Notice] = []
    rec = Recorder(path, on_problem=notices.append)
    rec.on_header(_sim_records().header)
    half = len(_sim_records().records) // 2
    for r in _sim_records().records[:half]:
        rec.on_record(r)
    rec.flush()
    return rec, notices, half


def _record_the_rest(rec: Recorder, half: int) -> None:
    """The records of `_sim_records` after the first `half`, and the recorder closed."""
    for r in _sim_records().records[half:]:
        rec.on_record(r)
    rec.close()


def _record(out: Path, duration: int, keep: int) -> int:
    return main(["record", *SIM, "--duration", str(duration), "--out", str(out),
                 "--rotate-size", "1MiB", "--keep", str(keep)])


def _closing(err: str) -> str:
    return next(line for line in err.splitlines() if "gapwatch record: stopped" in line)


def test_keep_never_removes_a_text_file_a_link_another_users_file_or_another_sets_segment(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Each of these was removed as "older, to keep the budget" (issue 29, item 2).
    shutil.copy(HOSTILE / "notes-named-like-a-segment.jsonl", tmp_path / "gw.000001.jsonl")
    target = tmp_path / "precious.txt"
    target.write_text("not gapwatch's\n")
    (tmp_path / "gw.000002.jsonl").symlink_to(target)
    other_user = tmp_path / "gw.000003.jsonl"
    shutil.copy(HOSTILE / "segment-of-another-set.jsonl", other_user)
    if os.geteuid() == 0:
        os.chown(other_user, 65534, 65534)  # nobody's
    shutil.copy(HOSTILE / "segment-of-another-set.jsonl", tmp_path / "gw.000004.jsonl")
    shutil.copy(HOSTILE / "nested-first-line.jsonl", tmp_path / "gw.000005.jsonl")
    planted = {p.name: p.read_bytes() for p in tmp_path.iterdir() if not p.is_symlink()}
    assert _record(tmp_path / "gw.jsonl", 250, keep=1) == 0
    err = capsys.readouterr().err
    for name, data in planted.items():
        assert (tmp_path / name).read_bytes() == data, name
    assert (tmp_path / "gw.000002.jsonl").is_symlink() and target.read_text() == "not gapwatch's\n"
    for n, why in [(1, "not a gapwatch recording"), (2, "a symbolic link"),
                   (4, "a segment of another recording set"), (5, "not a gapwatch recording")]:
        said = [ln for ln in err.splitlines() if f"gw.00000{n}.jsonl is named like a segment" in ln]
        assert len(said) == 1 and why in said[0], (n, said)  # said once, and why
    if os.geteuid() == 0:
        assert "gw.000003.jsonl is named like a segment of this recording but is owned by" in err
    # Our own older segments were removed all the same: the budget holds for what is ours.
    ours = [n for n, _ in segments_of(tmp_path / "gw.jsonl") if n > 5]
    assert ours == [ours[-1]] and "older removed to keep the budget" in _closing(err)


def test_a_second_record_on_the_same_base_never_removes_a_running_gapwatchs_segment(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A running gapwatch writes gw.000001.jsonl; a file planted at gw.000002.jsonl made it
    # look idle (only the newest segment's lock was checked), and a second `record --keep 1`
    # removed the live segment: the whole recording lost.
    base = tmp_path / "gw.jsonl"
    running = Recorder(check_segments(base, 1 << 20, None, 1))
    running.on_header(_sim_records().header)
    for r in _sim_records().records[:200]:
        running.on_record(r)
    running.flush()
    shutil.copy(HOSTILE / "notes-named-like-a-segment.jsonl", tmp_path / "gw.000002.jsonl")
    assert _record(base, 20, keep=1) == 2
    assert "gw.000001.jsonl is being written by another process" in capsys.readouterr().err
    # Even past the start checks (two starting at once), a locked segment is never removable.
    verdict = removable(tmp_path / "gw.000001.jsonl", running.segments.set_id
                        if running.segments else "")
    assert verdict.why_not is not None and "being written by another process" in verdict.why_not
    running.close()
    assert len(records_of(tmp_path / "gw.000001.jsonl")) == 200


def test_the_closing_line_counts_only_records_in_segments_that_still_exist(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # It claimed every record of the run "in gw.000004.jsonl", the older segments removed.
    out = tmp_path / "gw.jsonl"
    assert _record(out, 400, keep=2) == 0
    line = _closing(capsys.readouterr().err)
    kept = segments_of(out)
    assert len(kept) == 2
    in_files = sum(len(records_of(p)) for _, p in kept)
    m = re.search(r"; (\d+) records in (\S+) \.\. (\S+) \(2 files\)", line)
    assert m, line
    assert int(m.group(1)) == in_files
    assert (m.group(2), m.group(3)) == (str(kept[0][1]), str(kept[1][1]))
    removed = re.search(r"older removed to keep the budget \(with (\d+) records of this run\)",
                        line)
    assert removed and int(removed.group(1)) > 0


def test_a_file_planted_at_the_next_segments_name_is_skipped_and_said_once(
        tmp_path: Path) -> None:
    # It blocked rotation for ever (the segment grew past its limit), with "recording failed
    # ... give --force" and "recording resumed; nothing was lost" at every flush.
    notices: list[Notice] = []
    base = tmp_path / "gw.jsonl"
    rec = Recorder(check_segments(base, 64 << 10, None, 0), on_problem=notices.append)
    planted = tmp_path / "gw.000002.jsonl"
    shutil.copy(HOSTILE / "notes-named-like-a-segment.jsonl", planted)
    rec.on_header(_sim_records().header)
    for r in _sim_records().records:
        rec.on_record(r)
        rec.flush()
    rec.close()
    assert planted.read_bytes() == (HOSTILE / "notes-named-like-a-segment.jsonl").read_bytes()
    numbers = [n for n, _ in segments_of(base)]
    assert numbers[:3] == [1, 2, 3] and len(numbers) > 5
    for n, path in segments_of(base):
        if n != 2:
            assert path.stat().st_size < (64 << 10) + (256 << 10)
    said = [n.message for n in notices]
    assert len([m for m in said if "gw.000002.jsonl exists" in m]) == 1
    assert not [m for m in said if "failed" in m or "resumed" in m]
    got = [r for n, p in segments_of(base) if n != 2 for r in records_of(p)]
    assert got == list(_sim_records().records)


@pytest.mark.parametrize("name", ["gw", "gw.json"])
def test_an_out_without_a_recording_suffix_prunes_with_keep_and_the_next_run_starts(
        tmp_path: Path, name: str) -> None:
    # `--out gw` never pruned (its segments were not found), and the next run refused to start
    # ("gw.000001 exists"). Two runs, each through the start checks `record` makes.
    out = tmp_path / name
    for _ in range(2):
        rec = Recorder(check_segments(out, 64 << 10, None, 2))
        rec.on_header(_sim_records().header)
        for r in _sim_records().records:
            rec.on_record(r)
            rec.flush()
        rec.close()
    segs = segments_of(out)
    assert len(segs) == 2 and all(p.name.endswith(".jsonl") for _, p in segs)
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for _, p in segs]


def test_a_recording_deleted_mid_run_is_said_and_created_again(tmp_path: Path) -> None:
    # It was written on into the deleted inode, and the closing line named a file that did not
    # exist, with records that were nowhere.
    path = tmp_path / "gw.jsonl"
    rec, notices, half = _half_recorded(path)
    path.unlink()
    _record_the_rest(rec, half)
    assert records_of(path) == list(_sim_records().records[half:])  # its own header first
    said = [n.message for n in notices if "was deleted" in n.message]
    assert len(said) == 1 and f"{half} records of this run lost" in said[0]
    summary = rec.status().summary()
    assert summary.startswith(f"{len(_sim_records().records) - half} records in {path}")
    assert f"{half} records lost with gw.jsonl" in summary


def test_a_recording_replaced_mid_run_leaves_the_new_file_and_records_beside_it(
        tmp_path: Path) -> None:
    path = tmp_path / "gw.jsonl"
    rec = Recorder(path)
    rec.on_header(_sim_records().header)
    for r in _sim_records().records[:100]:
        rec.on_record(r)
    rec.flush()
    path.unlink()
    path.write_text("someone else's\n")
    for r in _sim_records().records[100:]:
        rec.on_record(r)
    rec.close()
    assert path.read_text() == "someone else's\n"
    assert records_of(tmp_path / "gw.1.jsonl") == list(_sim_records().records[100:])
    assert rec.status().path == str(tmp_path / "gw.1.jsonl")


def test_a_segment_deleted_mid_run_is_said_and_the_next_one_started(tmp_path: Path) -> None:
    notices: list[Notice] = []
    base = tmp_path / "gw.jsonl"
    rec = Recorder(check_segments(base, 1 << 20, None, 0), on_problem=notices.append)
    rec.on_header(_sim_records().header)
    for r in _sim_records().records[:100]:
        rec.on_record(r)
    rec.flush()
    (tmp_path / "gw.000001.jsonl").unlink()
    for r in _sim_records().records[100:]:
        rec.on_record(r)
    rec.close()
    assert [n for n, _ in segments_of(base)] == [2]
    assert records_of(tmp_path / "gw.000002.jsonl") == list(_sim_records().records[100:])
    assert any("gw.000001.jsonl was deleted" in n.message for n in notices)
    status = rec.status()
    assert status.records_lost == 100 and status.files_kept == 1


def test_a_link_planted_at_the_last_segment_number_does_not_stop_the_next_run(
        tmp_path: Path) -> None:
    # The next run numbered on after any name, and refused to start after gw.999999.jsonl.
    (tmp_path / "gw.999999.jsonl").symlink_to("/etc/passwd")
    (tmp_path / "gw.000001.jsonl").symlink_to("/etc/passwd")
    plan = check_segments(tmp_path / "gw.jsonl", 1 << 20, None, 1)
    assert plan.first == 2
    assert (tmp_path / "gw.999999.jsonl").is_symlink()


@pytest.mark.parametrize("planted", ["text", "copy"])
def test_a_users_own_file_or_copy_planted_at_the_last_segment_number_does_not_stop_the_next_run(
        tmp_path: Path, planted: str) -> None:
    # A file of this user at gw.999999.jsonl (notes, or a copy of a recording) was counted as
    # the last segment: the next run had no number left and refused to start.
    out = tmp_path / "gw.jsonl"
    assert _record(out, 200, keep=5) == 0
    written = segments_of(out)[-1][0]
    last = tmp_path / "gw.999999.jsonl"
    if planted == "text":
        last.write_text("my notes\n")
    else:
        shutil.copyfile(segments_of(out)[0][1], last)
    plan = check_segments(out, 1 << 20, None, 5)
    assert plan.first == written + 1
    assert last.exists()


def _set_of(path: Path) -> str | None:
    return read_any(path).header.set_id


@pytest.mark.parametrize("where", ["beside", "over_the_newest"])
def test_a_copy_of_another_recording_planted_among_the_segments_is_never_removed_or_continued(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    # A copy of another recording of this host and user, planted at gw.000050.jsonl (or over
    # the newest segment): the next run took its set for its own (the newest segment's),
    # removed it as "older" and called the real segments "another recording set; never
    # removed": 4 segments against --keep 2.
    out = tmp_path / "gw.jsonl"
    assert _record(out, 200, keep=2) == 0
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert main(["record", *SIM, "--duration", "20", "--out", str(other / "base.jsonl")]) == 0
    ours = _set_of(segments_of(out)[0][1])
    planted = tmp_path / "gw.000050.jsonl" if where == "beside" else segments_of(out)[-1][1]
    shutil.copyfile(other / "base.jsonl", planted)  # into the segment's own inode, as cp does
    capsys.readouterr()
    assert _record(out, 200, keep=2) == 0
    err = capsys.readouterr().err
    assert planted.read_bytes() == (other / "base.jsonl").read_bytes()
    mine = [p for _, p in segments_of(out) if p != planted]
    assert len(mine) == 2 and {_set_of(p) for p in mine} == {ours}
    said = [ln for ln in err.splitlines() if f"{planted.name} is named like a segment" in ln]
    # Over the newest segment the copy is among those the budget looks at: said once, left.
    # Beside them, at gw.000050, it is past the run's numbers (it numbers on after its own
    # segments): never in the way, nothing to say.
    assert len(said) == (1 if where == "over_the_newest" else 0)
    assert all("left as it is, never removed" in line for line in said)
    assert "older removed to keep the budget" in _closing(err)


def _planted_set(path: Path, set_id: str) -> None:
    """A recording of this host and user in set `set_id`, written without the inode stamp
    (as gapwatch wrote before it, or a conversion): only its set id says whose it is."""
    sim = _sim_records()
    write_recording(path, structs.replace(sim.header, set_id=set_id), sim.records[:50])


@pytest.mark.parametrize("sets, continued", [(["a", "b"], None), (["a", "a", "b"], "a")])
def test_segments_of_several_sets_continue_the_one_most_belong_to_and_never_remove_the_rest(
        tmp_path: Path, sets: list[str], continued: str | None) -> None:
    # Files without the stamp (made before it) are judged by their set id alone: the run
    # continues the set most of them belong to, and a tie continues none (a new set): a file
    # of a set not continued is never removed, and never decides the set.
    base = tmp_path / "gw.jsonl"
    for n, name in enumerate(sets, 1):
        _planted_set(segment_name(base, n), name * 16)
    others = {p: p.read_bytes() for _, p in segments_of(base) if continued is None
              or _set_of(p) != continued * 16}
    notices: list[Notice] = []
    rec = Recorder(check_segments(base, 64 << 10, None, 1), on_problem=notices.append)
    rec.on_header(_sim_records().header)
    for r in _sim_records().records:
        rec.on_record(r)
        rec.flush()
    rec.close()
    assert all(p.read_bytes() == data for p, data in others.items())
    run = rec.segments.set_id if rec.segments else None
    left = {p for _, p in segments_of(base)} - set(others)
    assert len(left) == 1 and {_set_of(p) for p in left} == {run}  # within --keep 1
    assert run == continued * 16 if continued else run not in ("a" * 16, "b" * 16)
    said = [n.message for n in notices if "belong to 2 recording sets" in n.message]
    assert len(said) == 1
    assert ("starts a new set" if continued is None else f"continues set {continued * 16}") \
        in said[0]


@pytest.mark.parametrize("put_in_its_place", ["nothing", "a_fifo"])
def test_a_recording_moved_away_goes_on_at_the_next_name_and_counts_the_moved_records(
        tmp_path: Path, put_in_its_place: str) -> None:
    # `mv gw.jsonl a.jsonl; mkfifo gw.jsonl`: it said "no new file can be made ... writing on
    # into the deleted file" (the FIFO refused as a --rotate base), never tried gw.1.jsonl,
    # and closed with "0 records in no file ..., 225 records lost" while a.jsonl held them
    # all. A plain mv went on, but its records were in no count of the closing line.
    path = tmp_path / "gw.jsonl"
    rec, notices, half = _half_recorded(path)
    path.rename(tmp_path / "a.jsonl")
    if put_in_its_place == "a_fifo":
        os.mkfifo(path)
    _record_the_rest(rec, half)
    after = tmp_path / ("gw.1.jsonl" if put_in_its_place == "a_fifo" else "gw.jsonl")
    assert records_of(tmp_path / "a.jsonl") == list(_sim_records().records[:half])
    assert records_of(after) == list(_sim_records().records[half:])
    said = [n.message for n in notices if "gw.jsonl was moved away" in n.message]
    assert len(said) == 1 and f"recording again into {after}" in said[0]
    assert not [n.message for n in notices if "no new file can be made" in n.message]
    summary = rec.status().summary()
    assert summary.startswith(f"{len(_sim_records().records) - half} records in {after},")
    assert f"{half} records written to gw.jsonl (now a.jsonl), moved away" in summary
    assert "lost" not in summary
    if put_in_its_place == "a_fifo":
        assert stat.S_ISFIFO(os.lstat(path).st_mode)  # left as it is


def test_a_recording_whose_folder_is_moved_away_writes_on_into_it_and_counts_it_moved(
        tmp_path: Path) -> None:
    # No new file can be made where the recording was (its folder renamed): the records go on
    # into the moved file, said as moved (it said "the deleted file"), and the closing line
    # counts them there, not "lost" in "no file".
    folder = tmp_path / "d"
    folder.mkdir()
    path = folder / "gw.jsonl"
    notices: list[Notice] = []
    rec = Recorder(path, on_problem=notices.append)
    rec.on_header(_sim_records().header)
    for r in _sim_records().records[:100]:
        rec.on_record(r)
    rec.flush()
    folder.rename(tmp_path / "d2")
    for r in _sim_records().records[100:]:
        rec.on_record(r)
    rec.close()
    assert records_of(tmp_path / "d2" / "gw.jsonl") == list(_sim_records().records)
    said = [n.message for n in notices if "no new file can be made" in n.message]
    assert len(said) == 1 and "was moved away" in said[0] and "the moved file" in said[0]
    summary = rec.status().summary()
    assert f"{len(_sim_records().records)} records written to gw.jsonl (no longer in its " \
        "folder), moved away" in summary and "lost" not in summary


def test_a_hard_link_planted_at_the_next_segment_number_is_one_file_never_counted_twice(
        tmp_path: Path) -> None:
    # `ln gw.000006.jsonl gw.000009.jsonl` while gw.000008.jsonl is written (--keep 3): the
    # file counted twice against the budget, so the newer gw.000007 and gw.000008 were removed
    # and segment 6's records kept under the name gw.000009; its second name was said to be
    # "being written by another process" (the lock was the pruning run's own); and the
    # closing line counted segment 6's records, still in gw.000009, as removed.
    notices: list[Notice] = []
    base = tmp_path / "gw.jsonl"
    rec = Recorder(check_segments(base, 64 << 10, None, 3), on_problem=notices.append)
    rec.on_header(_sim_records().header)
    linked: list[Path] = []
    for r in _sim_records().records:
        rec.on_record(r)
        rec.flush()
        numbers = [n for n, _ in segments_of(base)]
        if not linked and numbers[-1] == 8:
            linked = [segment_name(base, numbers[0]), segment_name(base, 9)]
            linked[1].hardlink_to(linked[0])
    rec.close()
    assert all(p.exists() for p in linked) and linked[0].samefile(linked[1])
    written = [n for n in range(1, (rec.status().segment or 0) + 1)
               if segment_name(base, n) not in linked]
    assert [n for n, p in segments_of(base) if p not in linked] == written[-3:]
    said = [n.message for n in notices if "named like a segment" in n.message]
    assert said and all("one file with" in m and "being written" not in m for m in said)
    in_files = sum(len(records_of(p)) for _, p in segments_of(base) if p != linked[1])
    assert rec.status().summary().startswith(f"{in_files} records in ")


def test_a_file_of_another_set_hard_linked_among_the_segments_is_one_vote(
        tmp_path: Path) -> None:
    # Two names of one file of set b against two files of set a: a tie, so the run started a
    # new set and left set a's files for ever (never again removed by --keep).
    base = tmp_path / "gw.jsonl"
    _planted_set(segment_name(base, 1), "a" * 16)
    _planted_set(segment_name(base, 2), "a" * 16)
    _planted_set(segment_name(base, 3), "b" * 16)
    segment_name(base, 4).hardlink_to(segment_name(base, 3))
    rec = Recorder(check_segments(base, 64 << 10, None, 0))
    rec.on_header(_sim_records().header)
    rec.close()
    assert rec.segments is not None and rec.segments.set_id == "a" * 16


@pytest.mark.parametrize("keep, after", [(0, "nothing"), (4, "nothing"), (0, "a_file_of_mine")])
def test_a_segment_removed_by_hand_is_counted_lost_when_its_inode_number_is_taken_again(
        tmp_path: Path, keep: int, after: str) -> None:
    # `rm gw.000002.jsonl` while gw.000004.jsonl is written: ext4 gives its inode number to
    # the next file made in the folder. The closing line found the deleted segment "by its
    # inode" and said "204 records written to gw.000002.jsonl (now gw.000005.jsonl), moved
    # away" (the run's own next segment, counted twice), or "(now notes.txt)"; with --keep
    # those records were "removed to keep the budget" with gw.000005.jsonl. They were lost.
    base = tmp_path / "gw.jsonl"
    rec = Recorder(check_segments(base, 64 << 10, None, keep))
    rec.on_header(_sim_records().header)
    deleted_inode: int | None = None
    lost = 0
    for r in _sim_records().records:
        rec.on_record(r)
        rec.flush()
        if deleted_inode is None and segments_of(base)[-1][0] == 4:
            gone = segment_name(base, 2)
            lost, deleted_inode = len(records_of(gone)), gone.stat().st_ino
            gone.unlink()
            if after == "a_file_of_mine":
                (tmp_path / "notes.txt").write_text("mine\n")
    rec.close()
    assert deleted_inode is not None
    if not any(p.stat().st_ino == deleted_inode for p in tmp_path.iterdir()):
        pytest.skip("this file system gave the deleted segment's inode number to no new file")
    summary = rec.status().summary()
    in_files = sum(len(records_of(p)) for _, p in segments_of(base))
    assert summary.startswith(f"{in_files} records in ")
    assert f"{lost} records lost with gw.000002.jsonl" in summary
    assert "moved away" not in summary
    status = rec.status()
    assert status.records_kept is not None
    assert status.records_kept + status.records_removed + status.records_lost \
        == status.records_written


def test_closing_a_run_of_many_segments_looks_at_each_segment_once(tmp_path: Path) -> None:
    # The closing line's check of which files are still at their names compared each kept
    # segment with every one found there (c6d5bf0): steps growing as the square of the
    # segments, 11 s at close for 20,000 (two weeks of --rotate-age 1m, nothing pruned).
    # Counted in lines the recorder runs while closing (not in time): a few per segment.
    rec = _a_segment_per_record(tmp_path / "gw.jsonl", RECORDS)
    segments = len(segments_of(tmp_path / "gw.jsonl"))
    assert segments > 1000
    lines = _lines_run_by_the_recorder(rec.close)
    assert lines < 50 * segments, (lines, segments)
    assert rec.status().summary().startswith(f"{RECORDS} records in ")


def test_closing_after_half_the_segments_were_removed_by_hand_lists_the_folder_once(
        tmp_path: Path) -> None:
    # An operator freeing space by hand (`rm` of old segments) while recording: the close
    # looked for each removed file in a fresh listing of the folder (steps growing as the
    # removed files times the folder's), and took each out of the kept list by a search.
    # Counted in lines the recorder runs while closing (not in time).
    rec = _a_segment_per_record(tmp_path / "gw.jsonl", RECORDS)
    names = segments_of(tmp_path / "gw.jsonl")
    removed = [path for _, path in names[:-1:2]]  # every other one, never the one written
    records_in_removed = sum(len(path.read_bytes().splitlines()) - 1 for path in removed)
    for path in removed:
        path.unlink()
    lines = _lines_run_by_the_recorder(rec.close)
    assert len(removed) > 500
    assert lines < 50 * len(names), (lines, len(names))  # 1,099,936 for 1,202 before
    assert rec.status().records_lost == records_in_removed > 0


def _lines_run_by_the_recorder(action: Callable[[], object]) -> int:
    """How many lines of gapwatch/sinks/recorder.py `action` runs: a count of steps that does
    not depend on the machine's speed, for the tests of work that grew with the segments."""
    import sys
    from types import FrameType
    from typing import Any

    lines = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        lines += event == "line"
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.endswith("recorder.py") else None

    sys.settrace(calls)
    try:
        action()
    finally:
        sys.settrace(None)
    return lines


#: How many records, each in a segment of its own, the tests of a long run's close write.
RECORDS = 1200


def _a_segment_per_record(out: Path, records: int) -> Recorder:
    """A recorder still open that wrote the simulator's first `records` records, each flushed
    into a segment of its own (a 1-byte segment limit): a run of ~`records` segments."""
    sim = _sim_records()
    rec = Recorder(check_segments(out, 1, None, 0))
    rec.on_header(sim.header)
    for r in list(sim.records)[:records]:
        rec.on_record(r)
        rec.flush()
    return rec
