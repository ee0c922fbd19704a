"""Snapshots: a folder that holds what the user saw and what led to it, whole or absent.

Who calls it: the dashboard (key `s`, and automatically when a GPU enters BREAKDOWN), from a
thread worker so the UI never stalls on disk; anything headless may call it too. Core module: it
never imports Textual; the UI renders the SVG and passes it in as a string.

A snapshot folder `gapwatch-snapshot-<host>-<UTC time>/` holds:
- `dashboard.svg`: the screen as the user saw it (when taken from the UI);
- `recording.jsonl.gz`: the last `snapshot.history_s` of samples, log events, prover status
  snapshots, the copy trace's copies and notices, written by
  `gapwatch.sinks.recorder.write_recording`, replayable with `gapwatch replay` (and `report`);
- `gaps.json`: the detector's gaps in that span (latest version of each);
- `summary.md`: what happened, the hints, link capacity, host pressure, sampler state, config.

Everything is written into a hidden temporary folder next to the target, then renamed in one
step: a reader (or a full disk halfway through) never leaves a half snapshot under the real name.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import statistics
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from msgspec import structs

from gapwatch.base.no_replace import rename_no_replace
from gapwatch.config import Config
from gapwatch.core import fmt
from gapwatch.core.codec import encode_json, gap_json
from gapwatch.core.health import GPU_ERROR_KINDS, event_words, health_cells
from gapwatch.core.hints import hint_cause, link_text
from gapwatch.core.models import (
    CopyRecord,
    Gap,
    GpuSample,
    HostSample,
    LogEvent,
    Notice,
    ProverEvent,
    Record,
    SessionHeader,
)
from gapwatch.core.payoff import (
    GpuSpan,
    IfClosed,
    floor_over_gpus,
    if_closed,
    samples_link_floor_s,
)
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.core.verdict import window_words
from gapwatch.cuzk.advice import advice_lines, open_gap_words, session_advice
from gapwatch.cuzk.prover import cause_words
from gapwatch.sinks.recorder import write_recording

RECORDING_NAME = "recording.jsonl.gz"
SVG_NAME = "dashboard.svg"
GAPS_NAME = "gaps.json"
SUMMARY_NAME = "summary.md"


class SnapshotError(Exception):
    """The snapshot could not be written; the message is for the user (monitoring goes on)."""


#: The most characters of the host in a snapshot's name: a name is at most 255 bytes, and a
#: recording's host is anybody's text (a 300-character one made the name too long: an OSError
#: out of `write_snapshot`, past its callers, which catch `SnapshotError`).
HOST_CHARS = 64
#: Names tried for one snapshot (`NAME`, `NAME-2`, ...) before giving up.
MAX_NAMES = 1000


def snapshot_name(host: str, t_wall_s: float) -> str:
    """`gapwatch-snapshot-HOST-STAMP`: the host made of name-safe characters, cut to
    `HOST_CHARS`."""
    safe_host = re.sub(r"[^A-Za-z0-9._-]", "_", host)[:HOST_CHARS] or "host"
    return f"gapwatch-snapshot-{safe_host}-{fmt.utc_stamp(t_wall_s)}"


def _newest_wall_s(snap: StoreSnapshot) -> float | None:
    times = [s[-1].t_wall_s for s in snap.gpu_samples.values() if s]
    if snap.host_samples:
        times.append(snap.host_samples[-1].t_wall_s)
    if snap.log_events:
        times.append(snap.log_events[-1].t_wall_s)
    return max(times) if times else None


def history_since(snap: StoreSnapshot, history_s: float) -> float | None:
    """The start of the span a snapshot holds: `history_s` before the newest reading (None: no
    reading, nothing held). Every count of its summary.md is of this span."""
    newest = _newest_wall_s(snap)
    return None if newest is None else newest - history_s


def history_records(snap: StoreSnapshot, history_s: float) -> list[Record]:
    """Samples, log events, prover status snapshots, the copy trace's copies, notices and gaps
    of the last `history_s` (before the newest reading, `history_since`), in time order: the
    body of the snapshot's recording.

    The copies as `record` writes them (a `copy` record each, by its end, `CopyRecord.t_wall_s`):
    a gap's memory kind, and the BREAKDOWN entered on pageable copies, rest on them, and the
    snapshot's replay and report compute every gap and state again from what the file holds
    (`models.DERIVED_TYPES`). Without them the snapshot taken the moment a GPU entered
    BREAKDOWN replayed with no BREAKDOWN. The store keeps the latest copies only
    (`SeriesStore`'s `max_copies`): on a box copying faster than that, the earliest of the span
    have none."""
    newest = _newest_wall_s(snap)
    since = history_since(snap, history_s)
    if newest is None or since is None:
        return []
    records: list[Record] = []
    for samples in snap.gpu_samples.values():
        records.extend(s for s in samples if s.t_wall_s >= since)
    records.extend(h for h in snap.host_samples if h.t_wall_s >= since)
    records.extend(e for e in snap.log_events if e.t_wall_s >= since)
    records.extend(p for p in snap.prover_statuses if p.t_wall_s >= since)
    records.extend(n for n in snap.notices if n.t_wall_s >= since)
    records.extend(c for c in snap.copies if c.t_wall_s >= since)
    records.extend(g for g in snap.gaps if (g.end_s or newest) >= since)
    records.sort(key=_record_time)
    return records


def _record_time(record: Record) -> float:
    return record.start_s if isinstance(record, Gap) else record.t_wall_s


def covered_text(records: Sequence[Record], history_s: float) -> str:
    """What span of data the snapshot holds, in words: its real length (a snapshot taken 47 s
    after start covers 47 s, not the `history_s` it would keep at most)."""
    times = [t for r in records if (t := _record_time(r)) > 0]
    if not times:
        return "Holds no data"
    span_s = max(times) - min(times)
    return (f"Covers {fmt.duration(span_s)} of data, {fmt.clock(min(times))} to "
            f"{fmt.clock(max(times))} (at most the last {history_s:g} s are kept)")


def hint_lines(gaps: Sequence[Gap], evidence_before_s: float) -> list[str]:
    """The hints grouped once per distinct cause (kind + `hint_cause`, each gap's own evidence
    window beginning `evidence_before_s` before it, as the detector explained it, and the
    prover's cause leading where it leads the gap's hint), most gaps first."""
    groups: dict[tuple[str, str], list[Gap]] = {}
    for g in gaps:
        cause = hint_cause(g.kind, g.log_events, g.start_s - evidence_before_s,
                           cause_words(g.prover_cause))
        groups.setdefault((g.kind, cause), []).append(g)
    lines = []
    for (kind, cause), these in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        per_gpu = Counter(g.gpu for g in these)
        where = ", ".join(f"GPU{gpu} {n}" for gpu, n in sorted(per_gpu.items()))
        idle_s = sum(g.duration_s for g in these)
        latest = max(these, key=lambda g: g.start_s)
        lines.append(f"- **{fmt.markdown(kind)}**, {len(these)} gap(s) ({where}), "
                     f"{idle_s:.1f} s idle: {fmt.markdown(cause or 'no cause named')}")
        if latest.hint:
            lines.append(f"  - latest ({fmt.clock(latest.start_s)}): {fmt.markdown(latest.hint)}")
    return lines


#: A line's Markdown structure that gapwatch writes before its text: indentation and a list
#: item's marker (`advice_lines`' items, the notes' `- `).
_MD_STRUCTURE = re.compile(r"( *(?:- )?)(.*)", re.S)


def _md_line(line: str) -> str:
    """A line of gapwatch's words and outside text (a hint, an advice line quoting a log's
    error, a status line) for summary.md: its indentation and list marker kept, the rest
    through `fmt.markdown`, the one rule for text going into Markdown."""
    m = _MD_STRUCTURE.fullmatch(line)
    assert m is not None  # matches any text
    return m[1] + fmt.markdown(m[2])


def _gaps_in(records: Iterable[Record]) -> list[Gap]:
    return [r for r in records if isinstance(r, Gap)]


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(fmt.markdown(cell) for cell in row) + " |" for row in rows]
    return lines


def render_summary(
    snap: StoreSnapshot,
    header: SessionHeader,
    config: Config,
    records: Sequence[Record],
    *,
    t_wall_s: float,
    reason: str,
    status_lines: Sequence[str] = (),
) -> str:
    """summary.md: written for a person who was not watching (or an assistant they ask), one
    section per named step below."""
    gaps = _gaps_in(records)
    hosts = [r for r in records if isinstance(r, HostSample)]
    out = [
        f"# gapwatch snapshot: {fmt.markdown(header.host)}, {fmt.utc_stamp(t_wall_s)}",
        "",
        # The source and version as text, not code spans: a backtick in them ended one.
        f"Taken {fmt.markdown(reason)}. Source: {fmt.markdown(header.source)}, gapwatch "
        f"{fmt.markdown(header.gapwatch_version)}. "
        f"{covered_text(records, config.snapshot.history_s)}; times are UTC.",
    ]
    out += _gpu_section(snap, config)
    out += _happened_section(gaps)
    out += ["", "## Hints", "", "One line per distinct cause (gaps of the same kind that idled for "
            "the same reason), with the latest such gap's hint in full.", ""]
    out += hint_lines(gaps, config.detector.evidence_before_s) or ["- none"]
    links = {i.index: config.detector.link_or_default(i.link_bytes_per_s) for i in snap.gpus}
    out += _advice_section(snap, gaps, records,
                           _events_since(snap, history_since(snap, config.snapshot.history_s)),
                           links)
    out += _warnings_section(records)
    out += _host_section(hosts)
    if status_lines:
        out += ["", "## Sampler and inputs", "",
                "The session's, when the snapshot was taken (not only this span's).", ""]
        out += [f"- {fmt.markdown(line)}" for line in status_lines]
    out += _files_section(records, gaps, hosts)
    out += ["", "## Config", "", "```json",
            encode_json(config.model_dump(mode="json"), indent=2).decode(), "```", ""]
    # Log lines, hints and paths are text from outside: each went in through `fmt.markdown`
    # (never Markdown, HTML, a link or a mention where the file is pasted), and here every line
    # is shown, never obeyed by the terminal a user `cat`s it to.
    return "\n".join(fmt.visible(line) for line in "\n".join(out).split("\n"))


def _events_since(snap: StoreSnapshot, since: float | None) -> list[ProverEvent]:
    """The prover events of the span from `since` (none where the span holds nothing)."""
    return [] if since is None else [e for e in snap.prover_events if e.t_wall_s >= since]


def _advice_section(snap: StoreSnapshot, gaps: list[Gap], records: Sequence[Record],
                    events: Sequence[ProverEvent], links: dict[int, float]) -> list[str]:
    """What to change (`gapwatch.cuzk.advice`), with the payoff over the span recorded here:
    the snapshot's GPU time, first to last sample of each GPU (busy time is not summed here,
    so only the throughput gain is given), never below what the span's PCIe bytes need at
    each GPU's link (`links`, bytes/s by GPU; each GPU's span by its own floor, as the
    report's).

    Over every gap of the span the snapshot holds, the ones still open included: a snapshot is
    taken while gaps happen (by hand, or the moment a GPU enters BREAKDOWN, often on the gap
    still open), and one that left the open gap out said "nothing to change: no gap" then. An
    open gap is as the detector last published it (its idle time so far, its kind and cause
    of that moment), each named first as still open; retracted gaps are never in `gaps`. The
    PoSt troubles first, of the span's prover events (`events`) as the gaps are of its span."""
    by_gpu: dict[int, list[GpuSample]] = {}
    for r in records:
        if isinstance(r, GpuSample):
            by_gpu.setdefault(r.gpu, []).append(r)
    spans = {g: s[-1].t_wall_s - s[0].t_wall_s for g, s in by_gpu.items()}
    span = sum(spans.values())
    # Copies are work too: each GPU's span never below what its bytes need at its link (a
    # GPU whose link is not known here, or with no PCIe reading, has no floor), each GPU
    # shrunk by its own gaps alone (`floor_over_gpus`: summed floors let one GPU's spare
    # span hide another's full link).
    floors = {g: samples_link_floor_s(s, links[g]) if g in links else None
              for g, s in by_gpu.items()}

    def payoff(these: Sequence[Gap]) -> IfClosed:
        closed: dict[int, float] = {}
        for g in these:
            closed[g.gpu] = closed.get(g.gpu, 0.0) + g.duration_s
        floor = floor_over_gpus(GpuSpan(g, spans[g], closed.get(g, 0.0), floors[g])
                                for g in spans)
        return if_closed(None, span, sum(closed.values()), floor_s=floor)

    # The PoSt that failed or were late, of the span's events (as its gaps are), first.
    report = session_advice(snap, gaps, payoff, events)
    still_open = [_md_line(f"- gap {g.gap_id} on GPU{g.gpu} ({g.kind}), from "
                           f"{fmt.clock(g.start_s, millis=True)}, {open_gap_words(g)}")
                  for g in gaps if g.is_open and not g.retracted]
    open_lines = ["Still open when the snapshot was taken (advised on below with the gaps that "
                  "closed, their idle time so far):", "", *still_open, ""] if still_open else []
    return ["", "## What to change", "",
            "cuzk's own settings for the stalls these gaps show, each with its evidence, the "
            "upstream file it comes from, and whether it is a guess (docs/advice.md).", "",
            *open_lines,
            *[_md_line(line[2:] if line.startswith("  ") else line)
              for line in advice_lines(report)],
            *_lacks_lines(snap.prover_lacks)]


def _lacks_lines(lacks: Sequence[str]) -> list[str]:
    """What the prover package could not learn (`Prover.lacks`): why a gap may have no prover
    cause and a stall no setting."""
    if not lacks:
        return []
    return ["", "What gapwatch lacks (so some gaps have no prover cause, some stalls no "
            "setting):", "", *[f"- {fmt.markdown(why)}" for why in lacks]]


def _gpu_section(snap: StoreSnapshot, config: Config) -> list[str]:
    """Each GPU's state and since when, busy share, link (as trained, when below its maximum),
    what the state rests on now (the live window, as the dashboard's verdict says it) and what
    it was entered on."""
    out = [
        "", "## GPUs", "",
        "Busy: share of the detector's window (the last "
        f"{config.detector.window_s:g} s) in which the GPU was busy, as the dashboard header and "
        "/metrics show it.",
        "",
    ]
    rows = []
    for info in snap.gpus:
        state = snap.states.get(info.index)
        link = config.detector.link_or_default(info.link_bytes_per_s)
        gen = fmt.link_shape(info.link_gen, info.link_width) if info.link_gen else "link unknown"
        trained = snap.links.get(info.index)
        if trained is not None and trained.trained_down:
            # "% of link" everywhere is of the maximum: say what the link actually ran at.
            gen += (f"; trained down to "
                    f"{link_text(trained.gen, trained.width, trained.bytes_per_s)} under traffic")
        window = snap.windows.get(info.index)
        now = window_words(state.state, window, config.detector) \
            if state is not None and window is not None else ""
        rows.append([
            f"GPU{info.index}", info.name, snap.state_name(info.index),
            fmt.clock(state.t_wall_s) if state is not None else "-",
            fmt.frac_pct(snap.busy_share(info.index)),
            f"{fmt.rate(link)} per direction ({gen})",
            now or "-",
            (state.reason if state else "") or "-",
        ])
    out += _table(["GPU", "name", "state", "since", "busy", "link capacity", "now",
                   "entered on"], rows)
    return out + _health_section(snap)


def _health_section(snap: StoreSnapshot) -> list[str]:
    """The chaining figure and the latest health of each GPU, and the GPU errors kept."""
    out = ["", "## Chaining and health", "",
           "Chaining: share of host-to-device copy time over the last minute that ran while the "
           "SMs were busy (copies overlapped with kernels); high while the pipeline chains. "
           "GPU-Util: what nvidia-smi shows over the chaining window (any kernel or copy "
           "running), beside the busy share of the same window.", ""]
    rows = []
    for info in snap.gpus:
        f = snap.chaining.get(info.index)
        chain = ("- (no copies seen)" if f is None else f.words() if not f.has_copies()
                 else f"{f.words()} ({f.basis_words()})")
        health = " ".join([*snap.lasting_states(info.index),
                           *health_cells(snap.health.get(info.index))])
        u = snap.util.get(info.index)
        util = "-" if u is None else (f"{u.util_share * 100:.0f}% (busy "
                                      f"{fmt.frac_pct(snap.busy_share(info.index))})")
        rows.append([f"GPU{info.index}", chain, util, health])
    out += _table(["GPU", "chaining", "GPU-Util (nvidia-smi)",
                   "health (memory, temperature, power of limit, throttle)"], rows)
    if snap.hw_events or snap.gpu_errors:
        out += ["", "GPU errors (NVML), every one the session kept, from before this span too:",
                ""]
        out += _hw_lines(snap)
    return out


#: Warnings (corrected ECC, PCIe replays) listed at most in a snapshot, the latest: a failing
#: memory gives one a GPU each reading.
SNAPSHOT_WARNINGS = 20


def _hw_lines(snap: StoreSnapshot) -> list[str]:
    """Every error the snapshot holds (`gpu_errors`, those `hw_events` still has among them),
    and the latest `SNAPSHOT_WARNINGS` warnings, in time order, with how many warnings were
    left out."""
    events = sorted({id(e): e for e in (*snap.gpu_errors, *snap.hw_events)}.values(),
                    key=lambda e: e.t_wall_s)
    warnings = [e for e in events if e.kind not in GPU_ERROR_KINDS]
    shown = set(map(id, warnings[-SNAPSHOT_WARNINGS:]))
    lines = [f"- {fmt.clock(e.t_wall_s)} {fmt.markdown(event_words(e))}" for e in events
             if e.kind in GPU_ERROR_KINDS or id(e) in shown]
    if len(warnings) > SNAPSHOT_WARNINGS:
        lines.append(f"- ... and {len(warnings) - SNAPSHOT_WARNINGS} earlier warnings "
                     "(corrected ECC, PCIe replays, a row remap pending) not listed")
    return lines


def _happened_section(gaps: list[Gap]) -> list[str]:
    """Gaps by GPU and kind: how many, idle in total, the longest, the median RX inside."""
    out = ["", "## What happened", ""]
    if not gaps:
        out.append("No idle gaps in this span.")
    for (gpu, kind), n in sorted(Counter((g.gpu, g.kind) for g in gaps).items()):
        these = [g for g in gaps if g.gpu == gpu and g.kind == kind]
        idle_s = sum(g.duration_s for g in these)
        rx = [g.pcie_rx_bytes_per_s for g in these if g.pcie_rx_bytes_per_s is not None]
        rx_txt = f", median RX inside {fmt.rate(statistics.median(rx))}" if rx else ""
        out.append(f"- GPU{gpu}: {n} {fmt.markdown(kind)} gap(s), {idle_s:.1f} s idle in total"
                   f", longest {fmt.duration(max(g.duration_s for g in these))}{rx_txt}")
    return out


def _warnings_section(records: Sequence[Record]) -> list[str]:
    """The prover's warnings by kind, each with one example line."""
    warnings = [e for e in records if isinstance(e, LogEvent) and e.warning]
    out = ["", "## Prover log warnings", ""]
    if not warnings:
        return [*out, "- none"]
    for warning, n in Counter(e.warning or "" for e in warnings).most_common():
        example = next(e.raw for e in warnings if e.warning == warning)
        # As escaped text, not in a fenced block: a line of its own holding ``` closed it.
        out += [f"- {fmt.markdown(warning)}: {n} line(s), e.g. {fmt.markdown(example)}"]
    return out


def _host_section(hosts: list[HostSample]) -> list[str]:
    """Host memory pressure: the latest reading and the peak of the span."""
    out = ["", "## Host pressure", ""]
    if not hosts:
        return [*out, "No host samples."]
    last = hosts[-1]

    def peak(values: Iterable[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return max(present) if present else None

    return out + _table(["", "latest", "max in span"], [
        ["memory used", fmt.pct(last.mem_used_pct),
         fmt.pct(peak(h.mem_used_pct for h in hosts))],
        ["PSI memory some avg10", fmt.pct(last.psi_mem_some_avg10, 1),
         fmt.pct(peak(h.psi_mem_some_avg10 for h in hosts), 1)],
        ["PSI memory full avg10", fmt.pct(last.psi_mem_full_avg10, 1),
         fmt.pct(peak(h.psi_mem_full_avg10 for h in hosts), 1)],
        ["major faults/s", fmt.pct(last.major_faults_per_s).rstrip("%"),
         fmt.pct(peak(h.major_faults_per_s for h in hosts)).rstrip("%")],
        ["memory bandwidth", fmt.rate(last.mem_bandwidth_bytes_per_s),
         fmt.rate(peak(h.mem_bandwidth_bytes_per_s for h in hosts))],
    ])


def _files_section(records: Sequence[Record], gaps: list[Gap],
                   hosts: list[HostSample]) -> list[str]:
    """What each file of the folder holds."""
    # One pass over the records (the records' types have no subclasses: counted by type).
    n = Counter(type(r) for r in records)
    n_samples, n_logs, n_notices, n_copies = (n[GpuSample], n[LogEvent], n[Notice],
                                              n[CopyRecord])
    by_kind = Counter(g.kind for g in gaps)
    return [
        "",
        "## Files",
        "",
        f"- `{RECORDING_NAME}`: {n_samples} GPU samples, {len(hosts)} host samples, {n_logs} log "
        f"events, {n_copies} copies (copy trace), {n_notices} notices; "
        f"`gapwatch replay {RECORDING_NAME}` shows it again",
        f"- `{GAPS_NAME}`: {len(gaps)} gap(s) "
        f"({', '.join(f'{k} {n}' for k, n in by_kind.items())})",
        f"- `{SVG_NAME}`: the dashboard when the snapshot was taken (if taken from the dashboard)",
    ]


def write_snapshot(
    directory: str | Path,
    snap: StoreSnapshot,
    header: SessionHeader,
    config: Config,
    *,
    t_wall_s: float,
    svg: str | None = None,
    reason: str = "by hand",
    status_lines: Sequence[str] = (),
) -> Path:
    """Write a complete snapshot folder and return its path.

    Raises:
        SnapshotError: the folder cannot be created or written (read-only, disk full...); nothing
            is left under the final name, and the temporary folder is removed.
    """
    base = Path(directory)
    name = snapshot_name(header.host, t_wall_s)
    tmp: Path | None = None
    folder = -1
    try:
        base.mkdir(parents=True, exist_ok=True)
        tmp = _temporary_folder(base, name)
        folder = _held_folder(tmp)
        held = _through(folder, tmp)
        records = history_records(snap, config.snapshot.history_s)
        # Its header says when it was taken: the file's end is a cut of a session that went
        # on (the gap open then is said as cut there, not retracted as idle after the last
        # work: `SessionHeader.snapshot_wall_s`).
        write_recording(held / RECORDING_NAME, structs.replace(header, snapshot_wall_s=t_wall_s),
                        records)
        gaps = [gap_json(g) for g in _gaps_in(records)]
        (held / GAPS_NAME).write_bytes(encode_json(gaps, indent=2))
        summary = render_summary(snap, header, config, records, t_wall_s=t_wall_s,
                                 reason=reason, status_lines=status_lines)
        (held / SUMMARY_NAME).write_text(summary, encoding="utf-8")
        if svg is not None:
            (held / SVG_NAME).write_text(svg, encoding="utf-8")
        os.chmod(folder, 0o777 & ~_umask())  # as a folder made plainly would be
        _still_at(tmp, folder)
        final = _publish(tmp, base, name)
    except (OSError, ValueError) as exc:
        if tmp is not None and folder >= 0 and _is_at(tmp, folder):
            shutil.rmtree(tmp, ignore_errors=True)  # only the folder this made
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SnapshotError(f"snapshot not written to {base}: {detail}") from exc
    finally:
        if folder >= 0:
            os.close(folder)
    return final


def _publish(tmp: Path, base: Path, name: str) -> Path:
    """Give the finished folder `tmp` its name: `name`, else `name-2`, `name-3`... where
    something is there, never replacing it (`rename_no_replace`). A check before a plain rename
    raced another snapshot of the same second (its rename failed, ENOTEMPTY: one snapshot
    lost), replaced an empty folder made at the name meanwhile, and failed on a dangling link
    at the name (ENOTDIR: no snapshot at all)."""
    for n in range(1, MAX_NAMES + 1):
        final = base / (name if n == 1 else f"{name}-{n}")
        try:
            rename_no_replace(tmp, final)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                continue
            raise
        return final
    raise OSError(errno.EEXIST, f"{name} and {MAX_NAMES - 1} names after it are taken")


def _temporary_folder(base: Path, name: str) -> Path:
    """A new folder in `base` for snapshot `name` to be written in: `.NAME.tmp-` and a random
    part, made for this user alone (0700) by `mkdtemp`, which tries another name where one is
    taken and never replaces anything. It was `.NAME.tmp-PID-N`: a name the process id and
    the second foretell, at which anyone who may write to the folder could put a file or a
    link, and every snapshot failed (`File exists`)."""
    return Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=base))


def _held_folder(tmp: Path) -> int:
    """Hold the temporary folder `tmp` open: the snapshot's files are written through the
    handle, never through the name. The folder where snapshots go may be another user's (a
    shared /tmp, `[snapshot] dir`): between the folder's making and the writes that user could
    put a link at its name, and gapwatch run as root wrote its files wherever the link
    pointed. A folder at the name that is a link, or not this user's, is refused."""
    folder = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    if os.fstat(folder).st_uid != os.geteuid():
        os.close(folder)
        raise OSError(errno.EPERM, f"{tmp.name} was replaced by a folder not gapwatch's")
    return folder


def _through(folder: int, tmp: Path) -> Path:
    """A path to the held folder that no rename of its name can redirect (/proc's handle);
    the name itself where there is no /proc."""
    held = Path(f"/proc/self/fd/{folder}")
    return held if held.is_dir() else tmp


def _is_at(tmp: Path, folder: int) -> bool:
    """Whether the name `tmp` is still the folder held (not a link or folder put there)."""
    try:
        st, held = os.lstat(tmp), os.fstat(folder)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)


def _still_at(tmp: Path, folder: int) -> None:
    if not _is_at(tmp, folder):
        raise OSError(errno.EPERM, f"{tmp.name} was moved or replaced while it was written")


def _umask() -> int:
    """The process's umask, read without changing it (os.umask sets it, racing other
    threads); 022 where /proc does not say."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022
