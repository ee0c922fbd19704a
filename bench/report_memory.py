"""Offline reports against the length of the recording: peak memory and time of `report`,
`report --json`, the Perfetto export and `replay --headless` of 1 h, 3 h and 24 h x 8 GPUs with
the prover's log.

Usage:
    python3 bench/report_memory.py                      # 1, 3 and 24 h x 8 GPUs
    python3 bench/report_memory.py --hours 1 3 --gpus 8 --kinds report json
    python3 bench/report_memory.py --before /tmp/base   # that checkout's figures beside these
    python3 bench/report_memory.py --hours 168 --segments --kinds report   # a week, in segments
    python3 bench/report_memory.py --hours 168 --segments --no-log --kinds report
    python3 bench/report_memory.py --hours 1 --copies 30   # with a copy trace, 30 a partition
    python3 bench/report_memory.py --hours 1 3 --kinds replay   # the replay's reading of --log
    python3 bench/report_memory.py --hours 24 --log-inside --kinds report   # record --log's way

The recordings are the simulator's `pageable` scenario (the worst case: a gap every ~2 s on every
GPU), simulated one hour at a time (seed = hour, its wall times an hour on, data time shifted
to follow: bench/compare_bench.py's way, so a day never has to be in memory) and written with
`write_recording`; each hour's prover log lines go to a `.log` beside it, given with `--log`
(TIMELINE lines, partitions, the anchor line of each hour's engine). Cached in /tmp
(`gapwatch-mem-Hh-Ggpu.jsonl` and `.log`), generated in a process of their own. With
`--segments` the recording is an hour per file instead, as `record --rotate-age 1h` leaves it:
`gapwatch-mem-Hh-Ggpu.d/gw.000001.jsonl`, ... (one recording set: every header names the same
`set_id`), and the command is given the folder. With `--copies N` the recording also holds the
copy trace's records, as a prover traced by `gapwatch copytrace` leaves them: each partition's
a/b/c copy cut into N (`gapwatch.sources.sim.SimCopyFeed`; cuzk makes tens a partition), ~20 N
copies an hour per GPU of this scenario (`gapwatch-mem-Hh-Ggpu-cN.jsonl`). With `--log-inside`
the log's events are in the recording, as `record --log` writes them, and no `--log` is given:
`gapwatch-mem-Hh-Ggpu-logged.jsonl`, made from the recording and its log (the log parsed into
its sorted spool on disk, each event slotted in before the first GPU sample at or after it,
`logs.files.merge_by_time`'s rule).

Every figure is one fresh `python -m gapwatch ...` under `/usr/bin/time -f '%M %e %U %S'`: peak
RSS (max resident set: of the largest one process, the command's own or a worker's), the peak of
the RSS of all its processes summed (a large report is split across processes: sampled every
0.25 s from /proc), wall seconds and CPU seconds (user + system, its workers included), start-up
included. Output to /dev/null (report) or
a file in /tmp (export, removed after).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()
sys.path.insert(0, str(ROOT))  # evaluation/, also when run from elsewhere

from evaluation.checkout_env import env_with  # noqa: E402

KINDS = {
    "report": ["report"],
    "json": ["report", "--json"],
    "perfetto": ["export", "--format", "perfetto"],
    # The dashboard's reading of a recording, headless and as fast as it reads: the same
    # detector over the same records and `--log` events, one process, no report.
    "replay": ["replay", "--headless", "--speed", "0"],
}


def _paths(hours: int, gpus: int, segments: bool = False, copies: int = 0
           ) -> tuple[Path, Path]:
    base = Path(f"/tmp/gapwatch-mem-{hours}h-{gpus}gpu" + (f"-c{copies}" if copies else ""))
    rec = Path(f"{base}.d") if segments else Path(f"{base}.jsonl")
    return rec, Path(f"{base}.log")


#: The recording set of `--segments` (any fixed id: the files are the bench's own).
SET_ID = "benchweek"


def generate(hours: int, gpus: int, segments: bool = False, copies: int = 0) -> None:
    """Write the recording (one file, or an hour per segment) and its log, an hour at a time;
    `copies`: the copy trace's records too, this many a partition (0: none)."""

    from evaluation.simulate import SIM_EPOCH_WALL_S, simulate
    from gapwatch.core.models import Record
    from gapwatch.sinks.recorder import write_recording

    rec_path, log_path = _paths(hours, gpus, segments, copies)
    part_log = log_path.with_suffix(".log.part")
    if segments:
        _generate_segments(hours, gpus, rec_path, log_path, part_log, copies)
        return
    header = simulate("pageable", seed=1, duration_s=1.0, gpus=gpus).header

    def records(log: Any) -> Iterator[Record]:
        for k in range(hours):
            res = simulate("pageable", seed=k + 1, duration_s=3600.0, gpus=gpus,
                           start_wall_s=SIM_EPOCH_WALL_S + k * 3600.0,
                           copies_per_partition=copies or None)
            log.write("".join(f"{text}\n" for _stream, text in res.log_lines))
            shift_ns = k * 3600 * 10**9
            for r in res.records:
                yield _shifted(r, shift_ns)
            print(f"  simulated hour {k + 1}/{hours}", file=sys.stderr)

    tmp = rec_path.with_name("part-" + rec_path.name)
    with open(part_log, "w") as log:
        write_recording(tmp, header, records(log))
    os.replace(tmp, rec_path)
    os.replace(part_log, log_path)


def _shifted(r: Any, shift_ns: int) -> Any:
    """`r` with its data time `shift_ns` on (a copy has none: its times are the wall's)."""
    import msgspec

    if not hasattr(r, "t_mono_ns"):
        return r
    return msgspec.structs.replace(r, t_mono_ns=r.t_mono_ns + shift_ns)


def _generate_segments(hours: int, gpus: int, folder: Path, log_path: Path,
                       part_log: Path, copies: int = 0) -> None:
    """An hour per segment in `folder` (made whole in `folder.part`, then renamed), one log."""
    import shutil

    import msgspec

    from evaluation.simulate import SIM_EPOCH_WALL_S, simulate
    from gapwatch.sinks.recorder import write_recording

    # Every segment starts with the session's header, as the recorder's rotation writes it.
    header = msgspec.structs.replace(
        simulate("pageable", seed=1, duration_s=1.0, gpus=gpus).header, set_id=SET_ID)
    part = folder.with_name(folder.name + ".part")
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir()
    with open(part_log, "w") as log:
        for k in range(hours):
            res = simulate("pageable", seed=k + 1, duration_s=3600.0, gpus=gpus,
                           start_wall_s=SIM_EPOCH_WALL_S + k * 3600.0,
                           copies_per_partition=copies or None)
            log.write("".join(f"{text}\n" for _stream, text in res.log_lines))
            shift_ns = k * 3600 * 10**9
            write_recording(part / f"gw.{k + 1:06d}.jsonl", header,
                            (_shifted(r, shift_ns) for r in res.records))
            print(f"  simulated hour {k + 1}/{hours}", file=sys.stderr)
    os.replace(part, folder)
    os.replace(part_log, log_path)


def _log_inside(rec: Path, log: Path) -> Path:
    """The recording `rec` with the events of `log` in it, as `record --log` leaves them; made
    once (cached beside it), in bounded memory."""
    out = rec.with_name(rec.name.removesuffix(".jsonl") + "-logged.jsonl")
    if out.exists():
        return out
    print(f"writing {out} ...", file=sys.stderr)
    from gapwatch.config import Config
    from gapwatch.core.models import Record
    from gapwatch.offline.report import spool_logs
    from gapwatch.sinks.recorder import write_recording
    from gapwatch.sources.files import read_any

    recording = read_any(rec)
    spool, _ = spool_logs([str(log)], Config())

    def merged() -> Iterator[Record]:
        events = iter(spool)
        event = next(events, None)
        for r in recording.records:
            if r.type == "gpu":
                while event is not None and event.t_wall_s <= r.t_wall_s:
                    yield event
                    event = next(events, None)
            yield r
        while event is not None:
            yield event
            event = next(events, None)

    tmp = out.with_name("part-" + out.name)
    try:
        write_recording(tmp, recording.header, merged())
    finally:
        spool.close()
    os.replace(tmp, out)
    return out


def _recording(hours: int, gpus: int, segments: bool = False, copies: int = 0
               ) -> tuple[Path, Path]:
    rec_path, log_path = _paths(hours, gpus, segments, copies)
    if not (rec_path.exists() and log_path.exists()):
        print(f"generating {rec_path} and {log_path.name} ...", file=sys.stderr)
        subprocess.run([sys.executable, str(HERE), "--generate", str(hours), str(gpus)]
                       + (["--segments"] if segments else [])
                       + (["--copies", str(copies)] if copies else []), check=True, cwd=ROOT)
    return rec_path, log_path


def _size_mb(path: Path) -> float:
    files = path.iterdir() if path.is_dir() else [path]
    return sum(f.stat().st_size for f in files) / 1e6


def measure(kind: str, rec: Path, log: Path | None, checkout: Path) -> dict[str, Any]:
    """One command in a fresh process: the peak RSS (MiB) of its largest process, the peak of
    its processes' RSS summed (a split report's workers included, sampled every
    `SUM_EVERY_S`), wall and CPU seconds (user + system, the workers included). `log` None:
    without `--log`."""
    with tempfile.TemporaryDirectory(prefix="gapwatch-mem-") as tmp:
        cmd = [sys.executable, "-m", "gapwatch", *KINDS[kind], str(rec)]
        if log is not None:
            cmd += ["--log", str(log)]
        if kind == "perfetto":
            cmd += ["--out", f"{tmp}/trace.json"]
        timing = Path(tmp) / "time.txt"
        run = subprocess.Popen(["/usr/bin/time", "-o", str(timing), "-f", "%M %e %U %S", *cmd],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=env_with(checkout), cwd=tmp)
        summed_kib, err = _sum_rss_until_done(run)
        rss_kib, wall_s, user_s, sys_s = timing.read_text().split()[-4:]
        out_mb = (Path(tmp) / "trace.json").stat().st_size / 1e6 if kind == "perfetto" and \
            (Path(tmp) / "trace.json").exists() else None
    return {"kind": kind, "rc": run.returncode, "peak_rss_mib": int(rss_kib) / 1024,
            "summed_rss_mib": summed_kib / 1024, "wall_s": float(wall_s),
            "cpu_s": float(user_s) + float(sys_s), "out_mb": out_mb,
            "stderr_tail": err[-300:] if run.returncode else ""}


#: How often the processes' resident sets are summed (a worker lives for minutes).
SUM_EVERY_S = 0.25


def _sum_rss_until_done(proc: subprocess.Popen[str]) -> tuple[int, str]:
    """The largest sum of the resident sets (KiB) of `proc` and its descendants, sampled until
    it exits, and its stderr (drained by a thread meanwhile: a full pipe would stall it)."""
    import threading
    import time

    err: list[str] = []
    reader = threading.Thread(
        target=lambda: err.append(proc.stderr.read() if proc.stderr is not None else ""),
        daemon=True)
    reader.start()
    most = 0
    while proc.poll() is None:
        most = max(most, sum(_rss_kib(p) for p in _tree(proc.pid)))
        time.sleep(SUM_EVERY_S)
    reader.join()
    return most, "".join(err)


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (Linux /proc: each process's children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except OSError:
            continue
    return out


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=int, nargs="+", default=[1, 3, 24])
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--kinds", nargs="+", choices=list(KINDS),
                    default=["report", "json", "perfetto"])
    ap.add_argument("--before", type=Path, default=None,
                    help="another checkout, measured the same way beside this one")
    ap.add_argument("--generate", type=int, nargs=2, metavar=("HOURS", "GPUS"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--segments", action="store_true",
                    help="the recording as an hour per segment, the folder given to the command")
    ap.add_argument("--no-log", action="store_true", help="without the prover's log")
    ap.add_argument("--log-inside", action="store_true",
                    help="the log's events in the recording (as `record --log` writes them), "
                         "no --log given")
    ap.add_argument("--copies", type=int, default=0, metavar="N",
                    help="with a copy trace: each partition's a/b/c copy cut into N copies")
    ap.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    args = ap.parse_args()
    if args.generate:
        generate(args.generate[0], args.generate[1], segments=args.segments,
                 copies=args.copies)
        return 0
    if args.log_inside and (args.segments or args.no_log):
        ap.error("--log-inside is a single file with its log: not with --segments or --no-log")
    checkouts = [("this", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    rows = []
    print(f"{'input':<22} {'MB':>7} {'checkout':<8} {'kind':<9} {'peak RSS MiB':>12} "
          f"{'summed MiB':>10} {'wall s':>7} {'CPU s':>7} {'rc':>3}")
    for hours in args.hours:
        rec, log_file = _recording(hours, args.gpus, args.segments, args.copies)
        log = None if args.no_log or args.log_inside else log_file
        if args.log_inside:
            rec = _log_inside(rec, log_file)
        size_mb = _size_mb(rec) + (_size_mb(log) if log is not None else 0.0)
        for kind in args.kinds:
            for name, checkout in checkouts:
                m = measure(kind, rec, log, checkout)
                rows.append({"hours": hours, "gpus": args.gpus, "copies": args.copies,
                             "input_mb": size_mb,
                             "checkout": name, **m})
                what = (f"{hours} h x {args.gpus} GPUs"
                        + (" log inside" if args.log_inside else "" if log is not None
                           else " no log")
                        + (f" c{args.copies}" if args.copies else ""))
                print(f"{what:<22} {size_mb:>7.0f} {name:<8} "
                      f"{kind:<9} {m['peak_rss_mib']:>12.0f} {m['summed_rss_mib']:>10.0f} "
                      f"{m['wall_s']:>7.1f} {m['cpu_s']:>7.1f} {m['rc']:>3}"
                      + (f"  {m['stderr_tail']!r}" if m["rc"] else ""), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
