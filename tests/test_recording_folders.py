"""A folder or a glob joins only the files of one recording set (same set id, host and GPUs),
in the order of the times inside them; anything else in it is said, or the folder refused with
one line that lists each recording (gapwatch.sources.recording_set). Issue 29, item 8 (and
item 12's files not named *.jsonl*)."""

from __future__ import annotations

import gzip
import random
import re
import shlex
import shutil
from pathlib import Path

import pytest
from conftest import DATA
from msgspec import structs

from evaluation.simulate import SimResult, simulate
from gapwatch.cli import main
from gapwatch.core.models import GpuSample, Record, SessionHeader
from gapwatch.sinks.recorder import Recorder, write_recording
from gapwatch.sinks.segments import check_segments, segment_name, segments_of
from gapwatch.sources.files import json_bytes_of, read_any
from gapwatch.sources.recording import RecordingError, json_bytes

HOSTILE = DATA / "hostile"


def _record(target: Path, header: SessionHeader, records: list[Record],
            rotate_bytes: int | None = None) -> Recorder:
    """What `record` writes (a set id in every header), without the CLI."""
    plan = check_segments(target, rotate_bytes, None, 0) if rotate_bytes else target
    rec = Recorder(plan)
    rec.on_header(header)
    for r in records:
        rec.on_record(r)
        rec.flush()
    rec.close()
    return rec


def _samples(rec_path: Path | str) -> list[GpuSample]:
    return [r for r in read_any(rec_path).records if isinstance(r, GpuSample)]


def test_another_hosts_recording_in_the_folder_is_refused_in_one_line_naming_both(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # It was merged into our GPU 0 with nothing said.
    ours = simulate("pageable", seed=1, duration_s=20)
    _record(tmp_path / "gw.jsonl", ours.header, list(ours.records), rotate_bytes=64 << 10)
    shutil.copy(HOSTILE / "segment-of-another-set.jsonl", tmp_path / "theirs.jsonl")
    with pytest.raises(RecordingError) as exc:
        read_any(tmp_path)
    said = str(exc.value)
    assert "holds 2 recordings, not one" in said and "\n" not in said
    assert f"'{tmp_path}/gw.*.jsonl'" in said and "theirs.jsonl" in said
    assert "host elsewhere" in said and "host (simulated)" in said
    assert main(["report", str(tmp_path)]) == 2
    assert "holds 2 recordings" in capsys.readouterr().err
    # Each reads on its own, whole.
    assert len(_samples(tmp_path / "gw.*.jsonl")) == 200


def test_two_sessions_recording_side_by_side_in_one_folder_are_never_merged(
        tmp_path: Path) -> None:
    # Two concurrent `record`s into one folder (same host, same GPUs) were joined as one
    # session: 44 % of the samples were dropped as "out of time order", and one session's gaps
    # were lost. Each has its own set id: the folder is refused, naming both, and each one's
    # glob reads every sample of it.
    a = simulate("pageable", seed=1, duration_s=30)
    b = simulate("pageable", seed=2, duration_s=30, start_wall_s=a.header.started_wall_s + 5)
    rec_a = Recorder(check_segments(tmp_path / "a.jsonl", 64 << 10, None, 0))
    rec_b = Recorder(check_segments(tmp_path / "b.jsonl", 64 << 10, None, 0))
    rec_a.on_header(a.header)
    rec_b.on_header(b.header)
    for ra, rb in zip(a.records, b.records, strict=False):  # at the same time
        rec_a.on_record(ra)
        rec_b.on_record(rb)
    rec_a.close()
    rec_b.close()
    with pytest.raises(RecordingError, match="holds 2 recordings, not one"):
        read_any(tmp_path)
    for name, sim in (("a", a), ("b", b)):
        assert _samples(tmp_path / f"{name}.*.jsonl") == [
            r for r in sim.records if isinstance(r, GpuSample)]


def test_segments_renamed_out_of_order_are_read_in_the_order_of_their_times(
        tmp_path: Path) -> None:
    # Ordered by their numbers, a segment renamed to a later number made 63 % of the data
    # "out of time order".
    sim = simulate("pageable", seed=1, duration_s=60)
    _record(tmp_path / "gw.jsonl", sim.header, list(sim.records), rotate_bytes=64 << 10)
    segs = segments_of(tmp_path / "gw.jsonl")
    assert len(segs) >= 4
    first = segs[0][1]
    first.rename(tmp_path / "gw.000099.jsonl")  # the oldest now has the highest number
    segs[2][1].rename(tmp_path / "gw.000000.jsonl")
    rec = read_any(tmp_path)
    assert [r for r in rec.records if isinstance(r, GpuSample)] == [
        r for r in sim.records if isinstance(r, GpuSample)]
    assert rec.counters.get("out_of_order", 0) == 0


def test_a_stray_file_in_the_folder_is_said_in_the_same_words_by_report_replay_and_export(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `report` and `replay` said "1 entry not named *.jsonl or *.jsonl.gz, not read:
    # notes.txt"; `export --format csv` printed "(reader counters: {'not_read': 1})" and the
    # Perfetto export nothing (`Recording.problems_said`, one home for the words).
    rec = tmp_path / "rec"
    rec.mkdir()
    sim = simulate("chained", seed=1, duration_s=5)
    _record(rec / "gw.jsonl", sim.header, list(sim.records))
    (rec / "notes.txt").write_text("x\n")
    words = f"{rec}: 1 entry not named *.jsonl or *.jsonl.gz, not read: notes.txt"
    assert main(["report", str(rec)]) == 0
    assert f"  {words}" in capsys.readouterr().out.splitlines()
    assert main(["replay", "--headless", "--speed", "0", str(rec)]) == 0
    assert any(ln.endswith(words) for ln in capsys.readouterr().err.splitlines())
    for fmt in ("csv", "perfetto"):
        assert main(["export", str(rec), "--format", fmt, "--out", str(tmp_path / "x")]) == 0
        err = capsys.readouterr().err
        assert f"gapwatch export: warning: {words}" in err.splitlines()
        assert "{" not in err  # no Python dict


def test_files_not_named_jsonl_in_a_folder_are_said_in_one_line(tmp_path: Path) -> None:
    sim = simulate("chained", seed=1, duration_s=5)
    _record(tmp_path / "gw.jsonl", sim.header, list(sim.records))
    for name in ("notes.txt", "gw.csv", "old.json"):
        (tmp_path / name).write_text("x\n")
    (tmp_path / "sub").mkdir()
    rec = read_any(tmp_path)
    assert list(rec.records) == list(sim.records)
    said = [p for p in rec.problems if "not named *.jsonl" in p]
    assert len(said) == 1 and rec.counters["not_read"] == 1
    assert "4 entries not named *.jsonl or *.jsonl.gz, not read: gw.csv, notes.txt, old.json, "\
        "sub" in said[0]


def test_recordings_without_a_set_id_join_only_with_the_same_host_and_gpus(
        tmp_path: Path) -> None:
    # Recordings made before set ids: one session per host and GPUs, as before, but another
    # host's file is never merged into it.
    a = simulate("pageable", seed=1, duration_s=10)
    b = simulate("pageable", seed=2, duration_s=10, start_wall_s=a.header.started_wall_s + 60)
    write_recording(tmp_path / "gw.000001.jsonl", a.header, a.records)
    write_recording(tmp_path / "gw.000002.jsonl", b.header, b.records)
    assert read_any(tmp_path).runs == 2
    other: SimResult = simulate("pageable", seed=3, duration_s=10)
    write_recording(tmp_path / "x.jsonl", structs.replace(other.header, host="elsewhere"),
                    other.records)
    with pytest.raises(RecordingError, match="holds 2 recordings, not one.*no set id, host "
                       "elsewhere"):
        read_any(tmp_path)


def test_rotate_continues_the_set_of_the_recording_it_rotates_past(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `--rotate` is the choice for a unit that restarts gapwatch: its folder reads as one
    # session, as it did before set ids.
    out = tmp_path / "gw.jsonl"
    for extra in ([], ["--rotate"], ["--rotate"]):
        assert main(["record", "--source", "sim:pageable", "--speed", "0", "--quiet",
                     "--duration", "5", "--out", str(out), *extra]) == 0
    capsys.readouterr()
    ids = {read_any(p).header.set_id for p in tmp_path.iterdir()}
    assert len(ids) == 1 and None not in ids
    assert read_any(tmp_path).files == [out, tmp_path / "gw.1.jsonl", tmp_path / "gw.2.jsonl"]


def test_a_set_id_that_is_not_a_string_is_a_bad_header_value_not_a_refused_file(
        tmp_path: Path) -> None:
    sim = simulate("chained", seed=1, duration_s=5)
    path = tmp_path / "gw.jsonl"
    write_recording(path, sim.header, sim.records)
    lines = path.read_bytes().split(b"\n", 1)
    path.write_bytes(lines[0][:-1] + b',"set_id":[1,2]}\n' + lines[1])
    rec = read_any(path)
    assert rec.header.set_id is None and rec.counters["bad_header"] == 1
    assert list(rec.records) == list(sim.records)


def test_a_folder_with_a_link_loop_and_a_link_to_its_parent_named_like_recordings_says_them(
        tmp_path: Path) -> None:
    # A subfolder loop (a link to the folder itself, to its parent), a link to itself, a
    # folder named like a recording: they were dropped without a word (`is_file()`).
    sim = simulate("chained", seed=1, duration_s=5)
    _record(tmp_path / "gw.jsonl", sim.header, list(sim.records))
    (tmp_path / "self.jsonl").symlink_to(".")
    (tmp_path / "up.jsonl").symlink_to("..")
    (tmp_path / "loop.jsonl").symlink_to("loop.jsonl")
    (tmp_path / "dir.jsonl").mkdir()
    rec = read_any(tmp_path)
    assert list(rec.records) == list(sim.records)
    said = [p for p in rec.problems if "named like recordings but not files" in p]
    assert len(said) == 1 and rec.counters["not_a_file"] == 1
    assert "4 entries" in said[0]
    assert "dir.jsonl (a directory)" in said[0] and "self.jsonl (a directory)" in said[0]
    assert "loop.jsonl (cannot look at it: Too many levels of symbolic links)" in said[0]


def test_replay_of_a_folder_of_many_empty_files_says_how_many_not_only_the_first_twenty(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The reader keeps 20 messages; replay said those (5, then "15 more like this") and never
    # the count: 100,000 skipped files read as 20.
    sim = simulate("chained", seed=1, duration_s=5)
    _record(tmp_path / "gw.jsonl", sim.header, list(sim.records))
    for i in range(300):
        (tmp_path / f"empty{i:04d}.jsonl").touch()
    assert main(["replay", "--headless", "--speed", "0", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "input problems in all: not_a_recording 300 (the first 20 said)" in err
    assert len(err.splitlines()) < 20  # one line for the count, not one per file


def test_replay_of_counts_without_messages_says_the_counts_alone(
        capsys: pytest.CaptureFixture[str]) -> None:
    # A trace's stale GPM rows are counted, each not said: "(the first 0 said)" read oddly.
    trace = Path(__file__).parent / "data" / "h200-pinned-50ms-slice.csv"
    assert main(["replay", "--headless", "--speed", "0", str(trace)]) == 0
    [line] = [ln for ln in capsys.readouterr().err.splitlines() if "problems in all" in ln]
    assert line.endswith("input problems in all: stale_gpm_rows 60")


@pytest.mark.parametrize("name", ["gw.jsonl", "gw.jsonl.gz"])
def test_a_recording_still_being_written_is_read_to_where_it_stands_and_said(
        tmp_path: Path, name: str) -> None:
    # `record --speed 5` writing while `report` reads: a plain file read to its last flush
    # with nothing said (its end looked like the recording's end); a gzip one said "file
    # ends early", as if damaged.
    import fcntl
    import gzip
    import zlib

    sim = simulate("chained", seed=1, duration_s=5)
    path = tmp_path / name
    write_recording(path, sim.header, sim.records)
    if name.endswith(".gz"):  # as a live writer leaves it: the last member without its end
        data = gzip.decompress(path.read_bytes())
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        path.write_bytes(z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH))
    with path.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the writer's lock, as the recorder holds it
        rec = read_any(path)
        records = list(rec.records)
    assert records == list(sim.records)
    assert rec.counters.get("still_written") == 1 and "truncated" not in rec.counters
    assert any("still being written by another process" in p for p in rec.problems)
    rec = read_any(path)  # the writer gone: nothing said for a plain file
    list(rec.records)
    assert "still_written" not in rec.counters


def _advice(said: str) -> dict[str, str]:
    """The set id of each recording a refusal lists, and what it says reads it alone (as a
    shell would pass it)."""
    found = re.findall(r"(?:: |; )(\S+) \(\d+ files?; set (\w+),", said)
    return {set_id: shlex.split(given)[0] for given, set_id in found}


@pytest.mark.parametrize("given", ["folder", "glob"])
def test_two_sets_of_one_base_name_in_a_folder_are_each_read_alone_by_the_advice_given(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str) -> None:
    # Two boxes' segments of gw.jsonl copied into one folder: the refusal listed both with
    # the glob 'DIR/gw.*.jsonl', and that glob was refused with the same line: the advice
    # looped. Each set listed now comes with what reads it alone, and following it does.
    sims = [simulate("pageable", seed=1, duration_s=20),
            simulate("chained", seed=2, duration_s=20)]
    box2 = tmp_path / "box2"
    box2.mkdir()
    here = tmp_path / "all"
    here.mkdir()
    _record(here / "gw.jsonl", sims[0].header, list(sims[0].records), rotate_bytes=64 << 10)
    _record(box2 / "gw.jsonl", sims[1].header, list(sims[1].records), rotate_bytes=64 << 10)
    for n, path in segments_of(box2 / "gw.jsonl"):
        shutil.copy(path, segment_name(here / "gw.jsonl", 50 + n))
    ids = [read_any(p).header.set_id for p in (here / "gw.000001.jsonl",
                                               here / "gw.000051.jsonl")]
    arg = str(here) if given == "folder" else str(here / "gw.*.jsonl")
    assert main(["report", arg]) == 2
    said = capsys.readouterr().err
    advice = _advice(said)
    assert sorted(advice) == sorted(i for i in ids if i) and len(set(advice.values())) == 2
    for set_id, sim in zip(ids, sims, strict=True):
        assert set_id is not None
        assert main(["report", "--json", advice[set_id]]) == 0, capsys.readouterr().err
        assert _samples(advice[set_id]) == [r for r in sim.records if isinstance(r, GpuSample)]
        rec = read_any(advice[set_id])
        list(rec.records)
        assert rec.counters.get("not_read") == 1  # the other set's files, said in one line


@pytest.mark.parametrize("second", ["hard_link", "symbolic_link", "copy", "restored_folder"])
def test_a_segment_under_a_second_name_is_read_once(tmp_path: Path, second: str) -> None:
    # `ln gw.000002.jsonl keep.jsonl`, a link to it, a file manager's copy of it in the
    # folder, or a glob over the folder and a `cp -a` restore of it: each file was read as
    # one more segment of the set, every record twice (a quarter of the GPU samples dropped
    # as "out of time order", the prover's failures counted twice), nothing said.
    sim = simulate("pageable", seed=1, duration_s=30)
    folder = tmp_path / "rec"
    folder.mkdir()
    _record(folder / "gw.jsonl", sim.header, list(sim.records), rotate_bytes=64 << 10)
    once = list(read_any(folder).records)
    bytes_once = json_bytes_of(folder)
    seg = segments_of(folder / "gw.jsonl")[1][1]
    arg, said_as = str(folder), f"keep.jsonl (= {seg.name})"
    if second == "hard_link":
        (folder / "keep.jsonl").hardlink_to(seg)
    elif second == "symbolic_link":
        (folder / "keep.jsonl").symlink_to(seg.name)
    elif second == "copy":
        shutil.copy2(seg, folder / "keep.jsonl")
    else:
        shutil.copytree(folder, tmp_path / "restored", copy_function=shutil.copy2)
        arg, said_as = str(tmp_path / "*" / "gw.*.jsonl"), f"{tmp_path / 'restored' / seg.name}"
    rec = read_any(arg)
    assert list(rec.records) == once
    assert rec.counters.get("out_of_order", 0) == 0
    said = [p for p in rec.problems if "read under another name" in p]
    assert len(said) == 1 and said_as in said[0], rec.problems
    assert rec.counters["read_once"] == 1
    if second in ("hard_link", "symbolic_link"):
        # How much the report reads (it decides whether to split the work): the file once.
        assert json_bytes_of(arg) == bytes_once


def test_of_a_plain_copy_cut_short_and_a_whole_gzip_copy_of_a_segment_the_gzip_is_read(
        tmp_path: Path) -> None:
    # Neither is the recorder's own file (a restored folder): the longer on disk was read, so a
    # `gzip -k` of the whole segment lost to a plain copy taken while it was written.
    sim = simulate("pageable", seed=1, duration_s=30)
    folder = tmp_path / "rec"
    folder.mkdir()
    _record(folder / "gw.jsonl", sim.header, list(sim.records), rotate_bytes=64 << 10)
    whole = list(read_any(folder).records)
    seg = segments_of(folder / "gw.jsonl")[1][1]
    text = seg.read_bytes()
    (folder / f"{seg.name}.gz").write_bytes(gzip.compress(text))
    cut = text[: text.index(b"\n", len(text) // 2) + 1]
    (folder / "copy.jsonl").write_bytes(cut)
    seg.unlink()
    rec = read_any(folder)
    assert list(rec.records) == whole
    said = [p for p in rec.problems if "read under another name" in p]
    assert len(said) == 1 and f"copy.jsonl (= {seg.name}.gz)" in said[0], rec.problems


def test_a_gzip_copy_is_weighed_by_what_it_inflates_to_not_by_its_first_mib(
        tmp_path: Path) -> None:
    # Weighing copies of one segment: a gzip's size times its first MiB's ratio is an estimate
    # (a first MiB that compresses worse than the rest reads low, and a plain copy cut short
    # could win); exact=True inflates the whole file, member after member.
    rng = random.Random(1)
    noisy = bytes(rng.randrange(256) for _ in range(1 << 20))  # compresses to ~its size
    plain = b"x" * (8 << 20)  # compresses ~1000-fold
    path = tmp_path / "two-members.jsonl.gz"
    path.write_bytes(gzip.compress(noisy) + gzip.compress(plain))
    assert json_bytes(path, exact=True) == len(noisy) + len(plain)
    assert json_bytes(path) < len(noisy) + len(plain) // 2  # the estimate from the first MiB


def test_the_glob_advised_for_a_folder_named_with_glob_characters_reads_that_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Two recordings in /data/box[1]: the refusal advised '/data/box[1]/gw1.*.jsonl', a glob
    # whose folder part names /data/box1: it read the one file there (a copy of a segment)
    # and not one of the folder's own, with nothing said.
    sims = [simulate("pageable", seed=1, duration_s=20),
            simulate("chained", seed=2, duration_s=20)]
    here = tmp_path / "box[1]"
    here.mkdir()
    for k, sim in enumerate(sims, 1):
        _record(here / f"gw{k}.jsonl", sim.header, list(sim.records), rotate_bytes=64 << 10)
    (tmp_path / "box1").mkdir()
    shutil.copy(here / "gw1.000001.jsonl", tmp_path / "box1" / "gw1.000001.jsonl")
    assert main(["report", str(here)]) == 2
    advice = _advice(capsys.readouterr().err)
    assert len(advice) == 2
    for given in advice.values():
        rec = read_any(given)
        assert rec.files and all(f.parent == here for f in rec.files), (given, rec.files)
    sim_of = {read_any(here / "gw1.000001.jsonl").header.set_id: sims[0],
              read_any(here / "gw2.000001.jsonl").header.set_id: sims[1]}
    for set_id, given in advice.items():
        assert _samples(given) == [r for r in sim_of[set_id].records
                                   if isinstance(r, GpuSample)]


@pytest.mark.parametrize("given, said", [
    ("FILE?set=ID", None),
    ("FILE?set=ffffffffffffffff", "no recording of set ffffffffffffffff in it"),
    ("DIR?set=", "?set= names no recording set: give the set id after it"),
    ("DIR?set=ID?set=ID", "?set= is given twice"),
    ("DIR?set=ID/x", "?set= takes a set id, which has no '/'"),
    ("FILE?set=ID/x", "?set= takes a set id, which has no '/'"),
    ("CSV?set=ID", "a trace CSV has no recording sets: give it without ?set="),
])
def test_a_set_selector_on_a_file_without_an_id_or_twice_is_read_or_said_for_what_it_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str,
        said: str | None) -> None:
    # `FILE?set=ID` was "no such file" of a file that exists; `DIR?set=` "no gapwatch
    # recording in it" and `DIR?set=ID?set=ID` "no recording of set ID in it", of a folder
    # that held that very set (both were read as globs that named nothing); `DIR?set=ID/x` was
    # "no gapwatch recording in it" (a path under a folder `DIR?set=ID`, which is not there);
    # `CSV?set=ID` "no recording of set ID in it (...: not a gapwatch recording)".
    sim = simulate("chained", seed=1, duration_s=5)
    file = tmp_path / "gw.jsonl"
    _record(file, sim.header, list(sim.records))
    set_id = read_any(file).header.set_id
    assert set_id is not None
    csv = tmp_path / "t.csv"
    csv.write_text("timestamp_s,gpu,sm_active_pct\n1700000000.0,0,50.0\n")
    arg = given.replace("FILE", str(file)).replace("DIR", str(tmp_path)).replace(
        "CSV", str(csv)).replace("ID", set_id)
    if said is None:
        assert list(read_any(arg).records) == list(read_any(file).records)
        return
    with pytest.raises(RecordingError) as exc:
        read_any(arg)
    assert said in str(exc.value)
    assert main(["report", arg]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1


def test_a_set_selector_after_a_folder_that_is_not_there_says_no_such_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `/data/typo?set=ID` was "no recording of set ID in it", of a folder that is not there
    # (without ?set=, and before ?set= was taken after a file: "no such file").
    arg = f"{tmp_path / 'typo'}?set=0123456789abcdef"
    with pytest.raises(RecordingError) as exc:
        read_any(arg)
    assert "no such file or folder before ?set=" in str(exc.value)
    assert "no recording of set" not in str(exc.value)
    assert main(["export", arg, "--format", "csv", "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert "no such file or folder" in err and len(err.strip().splitlines()) == 1
