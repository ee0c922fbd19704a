"""Build this folder's test data from curio's own source: every log line cuzk can write, and its
`/status` bodies, as upstream's format strings and serde structs make them.

Run by hand (never by the tests, which read only what it wrote), with a curio checkout:

    python3 tests/data/cuzk-upstream/make_data.py /path/to/curio

What it reads (curio main e0294b0f948132d41e8f42f59fa949495d5fd3af, cuzk's code unchanged since
2026-05-05): every `tracing` macro (`info!`, `warn!`, `error!`, `debug!`, `trace!`) in
`extern/cuzk/{cuzk-core,cuzk-daemon,cuzk-server,cuzk-pce}/src`, every `timeline_event(...)` call
in `cuzk-core/src/engine.rs` (its `eprintln!("TIMELINE,{},{},{},{}")`), every `fprintf(stderr,
"CUZK_...")` in `extern/supraseal-c2/cuda`. For each it writes the line as the daemon would
(tracing-subscriber 0.3's Full format without colours: `<RFC3339 µs>Z <LEVEL> <target>:
<message> <k=v>...`, fields rendered as tracing does: `%` Display bare, `?` Debug, strings
quoted) with illustrative values, and the name gapwatch must give it (`expected.json`: the whole
message for a tracing line, the event for TIMELINE, the first key for CUZK_TIMING), with the
file and line it came from. No upstream code is copied: format strings and field names only.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

COMMIT = "e0294b0f948132d41e8f42f59fa949495d5fd3af"
HERE = Path(__file__).parent
RUST_DIRS = ("extern/cuzk/cuzk-core/src", "extern/cuzk/cuzk-daemon/src",
             "extern/cuzk/cuzk-server/src", "extern/cuzk/cuzk-pce/src")
CUDA_DIR = "extern/supraseal-c2/cuda"
_MACRO = re.compile(r"\b(?:tracing::)?(info|warn|error|debug|trace)!\s*\(")
_LEVEL = {"info": " INFO", "warn": " WARN", "error": "ERROR", "debug": "DEBUG", "trace": "TRACE"}
T0 = datetime(2026, 5, 12, 14, 0, 0, tzinfo=UTC).timestamp()


def balanced(text: str, start: int) -> int:
    """Index just past the `)` that closes the `(` before `start` (strings and chars skipped)."""
    depth, i, n = 1, start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "'" and i + 2 < n and (text[i + 2] == "'" or text[i + 1] == "\\"):
            i = text.index("'", i + 2 if text[i + 1] != "\\" else i + 3)
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced")


def split_args(body: str) -> list[str]:
    """Top-level comma-separated arguments of a macro call."""
    out, depth, cur, i = [], 0, [], 0
    while i < len(body):
        c = body[i]
        if c == '"':
            j = i + 1
            while body[j] != '"':
                j += 2 if body[j] == "\\" else 1
            cur.append(body[i:j + 1])
            i = j + 1
            continue
        if c in "([{<" and not (c == "<" and body[i - 1:i] == " "):
            depth += 1
        elif c in ")]}>" and depth and not (c == ">" and body[i - 1:i] in ("=", "-")):
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def rust_string(lit: str) -> str:
    """A Rust string literal's text (escapes of the kinds cuzk uses)."""
    body = lit[1:-1]
    body = re.sub(r"\\\n\s*", "", body)  # a `\` line continuation drops the indentation
    return body.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def sample(name: str, expr: str, sigil: str) -> str:
    """An illustrative value for a field, rendered as tracing would."""
    n = name.lower()
    if sigil == "?":
        if n in ("partition", "partition_idx") or "partition" in n and "Option" in expr:
            return "Some(3)"
        if n in ("gpus", "gpu_ordinals"):
            return "[0, 1]"
        if n.endswith("partitions") or n.endswith("_ids") or "valid" in n:
            return "[0, 1, 2]"
        if n == "priority":
            return "Normal"
        if "path" in n or "dir" in n or "config" in n:
            return '"/data/zk/params"'
        if n.endswith("_ms") or "elapsed" in n or "duration" in n or n.endswith("time"):
            return "28.408771233s"
        return "Some(3)"
    if sigil == "%":
        if n in ("job_id", "parent_id", "pid", "p_job_id") or "job" in n:
            return "porep-1234-5678"
        if "circuit" in n:
            return "porep-32g"
        if n in ("proof_kind", "kind"):
            return "porep-c2"
        if "addr" in n or "listen" in n:
            return "127.0.0.1:9821"
        if "path" in n or "dir" in n:
            return "/data/zk/params/v28-stacked-proof-of-replication.params"
        if n in ("error", "e", "err"):
            return "synthesis error: constraint 12 unsatisfied"
        if n == "entry" or n == "label":
            return "srs:porep-32g"
        return "porep-c2"
    if "format!" in expr:
        return '"7.9"'
    if n in ("bootstrap", "evictable", "is_pinned", "pipeline_enabled", "success", "valid",
             "hit", "pinned", "enabled", "is_batched", "self_check", "cached"):
        return "true"
    if "as f64" in expr or n.endswith("_gbs") or n == "buf_gib" or n in (
            "size_gib", "total_gib", "freed_gib", "total_freed_gib", "pool_total_gib", "est_gib"):
        return "3.882612854242325"
    if expr.startswith('"') or n in ("event", "circuit_id_str"):
        return '"synth_start"'
    return "3"


FIELD = re.compile(r"^(?:(?P<name>[A-Za-z_][\w.]*)\s*=\s*(?P<sigil>[%?]?)\s*(?P<expr>.+)|"
                   r"(?P<sigil2>[%?]?)(?P<short>[A-Za-z_][\w.]*))$", re.S)
PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def format_message(fmt: str, args: list[str]) -> str:
    """The message with its `{}` placeholders filled (illustrative values)."""
    it = iter(args)

    def fill(m: re.Match[str]) -> str:
        spec = m.group(0)
        arg = next(it, "")
        inline = spec[1:].split(":")[0].rstrip("}")
        name = (inline or arg).lower()
        if ":?" in spec:
            if "duration" in name or "elapsed" in name or "time" in name:
                return "28.408771233s"
            if "path" in name or "config" in name:
                return '"/etc/cuzk/cuzk.toml"'
            return "Some(3)"
        if "addr" in name or "listen" in name:
            return "127.0.0.1:9820"
        if "path" in name or "socket" in name:
            return "/run/curio/cuzk.sock"
        if "id" in name or "job" in name:
            return "porep-1234-5678"
        if "e" == name or "err" in name:
            return "boom"
        return "7"

    return PLACEHOLDER.sub(fill, fmt.replace("{{", "\0").replace("}}", "\1")) \
        .replace("\0", "{").replace("\1", "}")


def target_of(path: str) -> str:
    """tracing's default target: the module path (`cuzk_core::engine`; a crate root is the
    crate: `cuzk_daemon`)."""
    parts = Path(path).parts
    crate = parts[2].replace("-", "_")
    mod = Path(path).stem
    return crate if mod in ("main", "lib") else f"{crate}::{mod}"


def rust_lines(root: Path) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for d in RUST_DIRS:
        for f in sorted((root / d).rglob("*.rs")):
            rel = str(f.relative_to(root))
            text = f.read_text()
            for m in _MACRO.finditer(text):
                line_no = text.count("\n", 0, m.start()) + 1
                if text.rfind("//", text.rfind("\n", 0, m.start()), m.start()) >= 0:
                    continue  # in a comment
                end = balanced(text, m.end())
                args = split_args(text[m.end():end - 1])
                fields: list[str] = []
                message = None
                msg_args: list[str] = []
                for k, arg in enumerate(args):
                    if arg.startswith('"'):
                        message = format_message(rust_string(arg), args[k + 1:])
                        msg_args = args[k + 1:]
                        break
                    fm = FIELD.match(arg)
                    if fm is None or arg.startswith(("target:", "parent:")):
                        continue
                    if fm.group("name"):
                        fields.append(f"{fm.group('name')}="
                                      f"{sample(fm.group('name'), fm.group('expr'), fm.group('sigil'))}")
                    else:
                        short = fm.group("short")
                        fields.append(f"{short.split('.')[-1]}="
                                      f"{sample(short, short, fm.group('sigil2'))}")
                if message is None:
                    continue  # an event with fields only: no message to name it
                del msg_args
                ts = datetime.fromtimestamp(T0 + len(out) / 1000, UTC) \
                    .strftime("%Y-%m-%dT%H:%M:%S.%fZ")
                body = message + ("" if not fields else " " + " ".join(fields))
                line = f"{ts} {_LEVEL[m.group(1)]} {target_of(rel)}: {body}"
                out.append({"line": line, "kind": "tracing", "name": message.rstrip(),
                            "fields": [f.split("=", 1)[0] for f in fields],
                            "source": f"{rel}:{line_no}"})
    return out


_TIMELINE = re.compile(r'timeline_event\(\s*"(?P<event>[A-Z_]+)"\s*,(?P<rest>.*?)\);', re.S)


def timeline_lines(root: Path, first_ms: int) -> list[dict[str, object]]:
    rel = "extern/cuzk/cuzk-core/src/engine.rs"
    text = (root / rel).read_text()
    out: list[dict[str, object]] = []
    for m in _TIMELINE.finditer(text):
        line_no = text.count("\n", 0, m.start()) + 1
        rest = m.group("rest")
        if '"monolithic"' in rest:
            detail = "monolithic"
        elif "kind=" in rest:
            detail = "kind=winning-post"
        elif "partition={},synth_ms" in rest:
            detail = "partition=3,synth_ms=28413"
        elif "synth_ms=" in rest:
            detail = "synth_ms=2100"
        elif "worker={}" in rest:
            detail = "worker=1,partition=3"
        elif "partition={}" in rest:
            detail = "partition=3"
        else:  # a detail built elsewhere (GPU_START's, GPU_END's): both shapes cuzk makes
            detail = "worker=1,partition=3,gpu_ms=3356" if m.group("event") == "GPU_END" \
                else "worker=1,partition=3"
        job = "winpost-1000-1a2b3c4d" if detail in ("monolithic", "kind=winning-post",
                                                    "synth_ms=2100") else "porep-1234-5678"
        out.append({"line": f"TIMELINE,{first_ms + 10 * len(out)},{m.group('event')},{job},"
                            f"{detail}", "kind": "timeline", "name": m.group("event"),
                    "source": f"{rel}:{line_no}"})
    return out


_FPRINTF = re.compile(r'fprintf\(\s*stderr\s*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', re.S)


def cuda_lines(root: Path) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for f in sorted((root / CUDA_DIR).glob("*.cu")):
        rel = str(f.relative_to(root))
        text = f.read_text()
        for m in _FPRINTF.finditer(text):
            fmt = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
            if not fmt.startswith("CUZK_"):
                continue
            line_no = text.count("\n", 0, m.start()) + 1
            numbers = iter(range(100, 1100))

            def number(_m: re.Match[str], it: Iterator[int] = numbers) -> str:
                return str(next(it))

            line = re.sub(r"%(?:zu|lld|ld|d|u)", number, fmt.replace("\\n", ""))
            kind = "cuzk_ntt_h" if line.startswith("CUZK_NTT_H") else "cuzk_timing"
            if kind == "cuzk_ntt_h":
                name = "CUZK_NTT_H"
            elif "pool release threshold" in line:
                name = "pool_release_threshold"
            elif "d_a_cache allocated" in line:
                name = "d_a_cache_allocated"
            else:
                keys = [t.split("=")[0] for t in line.split(":", 1)[1].split() if "=" in t]
                name = next(key for key in keys if key != "gpu_tid")
            out.append({"line": line, "kind": kind, "name": name, "source": f"{rel}:{line_no}"})
    return out


# -- /status bodies, in status.rs's serde field order ------------------------------------------

GIB = 1 << 30


def snapshot(*, uptime: float, total_gib: int, used_gib: float, active: int,
             pipelines: list[dict[str, object]], workers: list[dict[str, object]],
             srs: list[dict[str, object]], completed: int) -> dict[str, object]:
    """A `StatusSnapshot` as serde_json writes it (fields in declaration order; Option is
    null; max_concurrent = total_bytes / SNAP_PARTITION_FULL_BYTES)."""
    total = total_gib * GIB
    used = int(used_gib * GIB)
    return {
        "uptime_secs": uptime,
        "memory": {"total_bytes": total, "used_bytes": used, "available_bytes": total - used},
        "synthesis": {"max_concurrent": total // (9 * GIB), "active": active},
        "pipelines": pipelines,
        "gpu_workers": workers,
        "allocations": {"srs": srs, "pce": []},
        "counters": {"total_completed": completed, "total_failed": 0,
                     "completed_by_kind": {"porep-c2": completed}, "failed_by_kind": {},
                     "queue_depth": 0},
        "buffers": {"synth_in_flight": active, "provers_in_flight": 0, "aux_in_flight": 0,
                    "shells_in_flight": 0, "pending_handles": 0},
    }


def pipeline(job: str, states: list[str], started: float) -> dict[str, object]:
    parts = []
    for i, st in enumerate(states):
        synth = None if st == "pending" else 28000 + 37 * i
        gpu = 1200 + i if st in ("gpu", "done") else None
        parts.append({"index": i, "state": st, "synth_ms": synth, "gpu_ms": gpu})
    return {"job_id": job, "proof_kind": "porep-c2", "started_secs_ago": started,
            "total_partitions": len(states),
            "partitions_done": sum(1 for s in states if s == "done"), "partitions": parts}


def worker(wid: int, proving: bool, job: str | None = None, part: int | None = None
           ) -> dict[str, object]:
    return {"worker_id": wid, "gpu_ordinal": 0, "state": "proving" if proving else "idle",
            "current_job": job if proving else None,
            "current_partition": part if proving else None,
            "busy_secs": 0.8 if proving else None}


SRS = [{"circuit_id": "porep-32g", "bytes": 47 * GIB, "last_used_secs_ago": 0.0,
        "evictable": False}]


def bodies() -> dict[str, dict[str, object]]:
    jobs = [f"porep-1234-{5678 + k}" for k in range(3)]
    return {
        # Both workers proving partitions of the oldest job, others synthesised ahead.
        "busy": snapshot(uptime=812.4, total_gib=750, used_gib=47 + 14 * 12, active=8,
                         pipelines=[pipeline(jobs[0], ["done"] * 4 + ["gpu"] * 2
                                             + ["synth_done"] * 2 + ["synthesizing"] * 2, 61.2),
                                    pipeline(jobs[1], ["synthesizing"] * 6 + ["pending"] * 4,
                                             12.0)],
                         workers=[worker(0, True, jobs[0], 4), worker(1, True, jobs[0], 5)],
                         srs=SRS, completed=57),
        # 18 workers synthesising (a 750 GiB budget: 750 / 14 = 53, capped at 18), nothing
        # synthesised ahead, both GPU workers idle: max_concurrent says 83.
        "synthesis-starved": snapshot(
            uptime=1500.0, total_gib=750, used_gib=47 + 14 * 18, active=18,
            pipelines=[pipeline(jobs[0], ["done"] * 2 + ["synthesizing"] * 8, 40.0),
                       pipeline(jobs[1], ["synthesizing"] * 10, 20.0),
                       pipeline(jobs[2], ["pending"] * 10, 2.0)],
            workers=[worker(0, False), worker(1, False)], srs=SRS, completed=90),
        # Nothing in flight (jobs done > 30 s ago are dropped), workers idle.
        "idle": snapshot(uptime=3600.0, total_gib=750, used_gib=47, active=0, pipelines=[],
                         workers=[worker(0, False), worker(1, False)], srs=SRS, completed=120),
        # A WinningPoSt proving: monolithic, so /status lists no job and an idle worker.
        "post-in-flight": snapshot(uptime=4000.0, total_gib=750, used_gib=47.5, active=0,
                                   pipelines=[], workers=[worker(0, False), worker(1, False)],
                                   srs=SRS, completed=121),
    }


def post_log(start_s: float) -> list[str]:
    """The TIMELINE lines of one WinningPoSt (engine.rs 2665, 2745, 2848, 3023, 3131, 3196)."""
    job = "winpost-1000-1a2b3c4d"
    return [f"TIMELINE,{int(start_s * 1000)},SYNTH_START,{job},kind=winning-post",
            f"TIMELINE,{int(start_s * 1000) + 2100},SYNTH_END,{job},synth_ms=2100",
            f"TIMELINE,{int(start_s * 1000) + 2101},GPU_QUEUE,{job},monolithic",
            f"TIMELINE,{int(start_s * 1000) + 2102},GPU_PICKUP,{job},worker=0",
            f"TIMELINE,{int(start_s * 1000) + 2102},GPU_START,{job},worker=0",
            f"TIMELINE,{int(start_s * 1000) + 2900},GPU_END,{job},worker=0,gpu_ms=798"]


# -- Scenario logs (issue 27): each line from one upstream format string, as the daemon writes
# -- it (tracing's Full format; TIMELINE `eprintln!`, engine.rs:352; Rust's default panic hook).

def trace(t: float, level: str, target: str, message: str, span: str = "",
          **fields: object) -> str:
    """A tracing line (tracing-subscriber 0.3 Full format, no colours) at Unix time `t`;
    `span`: the span it is inside, as that format writes it (`name{k=v ...}`), before its
    target."""
    stamp = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"
    said = "".join(f" {k}={v}" for k, v in fields.items())
    inside = f"{span}: " if span else ""
    return f"{stamp} {_LEVEL[level]} {inside}{target}: {message}{said}"


def tl(epoch: float, t: float, event: str, job: str, detail: str) -> str:
    """A TIMELINE line at Unix time `t` of a run whose engine started at `epoch`."""
    return f"TIMELINE,{round((t - epoch) * 1000)},{event},{job},{detail}"


def engine_start(t: float) -> list[str]:
    """A daemon's start (cuzk-daemon/src/main.rs:63-64; engine.rs:1198, 1219, 1244, 1339,
    2958): the TIMELINE epoch is `starting cuzk engine`."""
    return [trace(t, "info", "cuzk_daemon", "cuzk-daemon starting"),
            trace(t + 0.001, "info", "cuzk_daemon", "configuration loaded",
                  listen="127.0.0.1:9820"),
            trace(t + 0.010, "info", "cuzk_core::engine", "memory budget initialized",
                  total_budget_gib=750),
            trace(t + 0.020, "info", "cuzk_core::engine", "CUDA pinned memory pool initialized"),
            trace(t + 0.030, "info", "cuzk_core::engine", "starting cuzk engine",
                  pipeline_enabled="true"),
            trace(t + 0.031, "info", "cuzk_core::engine", "initializing GPU workers", num_gpus=1,
                  gpu_workers_per_device=2, total_workers=2, gpus="[0]"),
            trace(t + 0.032, "info", "cuzk_core::engine", "pipeline GPU worker started",
                  worker_id=0, gpu=0, sub_id=0),
            trace(t + 0.033, "info", "cuzk_core::engine", "pipeline GPU worker started",
                  worker_id=1, gpu=0, sub_id=1)]


def partition_on_gpu(epoch: float, job: str, part: int, worker: int, start: float,
                     end: float) -> list[tuple[float, str]]:
    """One partition's GPU lines (engine.rs:1778, 3023, 3131, 3196), timed."""
    return [(start - 0.001, tl(epoch, start - 0.001, "GPU_QUEUE", job, f"partition={part}")),
            (start, tl(epoch, start, "GPU_PICKUP", job, f"worker={worker},partition={part}")),
            (start, tl(epoch, start, "GPU_START", job, f"worker={worker},partition={part}")),
            (end, tl(epoch, end, "GPU_END", job,
                     f"worker={worker},partition={part},gpu_ms={round((end - start) * 1000)}"))]


def post_job(epoch: float, job: str, kind: str, arrive: float, synth_start: float,
             synth_s: float, pickup: float, gpu_s: float, worker: int
             ) -> list[tuple[float, str]]:
    """One PoSt: `job enqueued` (scheduler.rs:67), TIMELINE engine.rs 2665, 2745, 2848, 3023,
    3131, 3196, `proof completed successfully (pipeline)` (engine.rs:839); Curio's job ids
    (lib/ffi/cuzk_funcs.go:179, 220)."""
    queued = synth_start + synth_s
    end = pickup + gpu_s
    prio = "Critical" if kind == "winning-post" else "High"
    return [(arrive, trace(arrive, "info", "cuzk_core::scheduler", "job enqueued", job_id=job,
                           proof_kind=kind, priority=prio, queue_position=0)),
            (synth_start, tl(epoch, synth_start, "SYNTH_START", job, f"kind={kind}")),
            (queued, tl(epoch, queued, "SYNTH_END", job, f"synth_ms={round(synth_s * 1000)}")),
            (queued, tl(epoch, queued, "GPU_QUEUE", job, "monolithic")),
            (pickup, tl(epoch, pickup, "GPU_PICKUP", job, f"worker={worker}")),
            (pickup, tl(epoch, pickup, "GPU_START", job, f"worker={worker}")),
            (end, tl(epoch, end, "GPU_END", job, f"worker={worker},gpu_ms={round(gpu_s * 1000)}")),
            # engine.rs:839, from the finalizer after GPU_END: no job id; total_ms from submit.
            (end + 0.001, trace(end + 0.001, "info", "cuzk_core::engine",
                                "proof completed successfully (pipeline)", proof_len=192,
                                total_ms=round((end - arrive) * 1000),
                                queue_ms=round((synth_start - arrive) * 1000),
                                synth_ms=round(synth_s * 1000), gpu_ms=round(gpu_s * 1000)))]


def srs_load(start: float, end: float, circuit: str, params: str, gib: int
             ) -> list[tuple[float, str]]:
    """An SRS loaded on demand (srs_manager.rs:203, 224)."""
    return [(start, trace(start, "info", "cuzk_core::srs_manager", "loading SRS from disk",
                          circuit_id=circuit, path=f"/data/zk/params/{params}",
                          file_size_gib=gib)),
            (end, trace(end, "info", "cuzk_core::srs_manager", "SRS loaded successfully",
                        circuit_id=circuit, elapsed_ms=round((end - start) * 1000),
                        budget_used_gib=48, budget_available_gib=702))]


def _sorted(lines: list[tuple[float, str]]) -> list[str]:
    return [text for _, text in sorted(lines, key=lambda x: x[0])]


def post_behind_partitions() -> list[str]:
    """A WinningPoSt arriving while both workers hold partitions (the H200 figures of issue 27:
    synthesis 2.2 s, 0.37 s waiting for a worker, 1.3 s on the GPU, 3.9 s in all)."""
    t0 = T0 + 3600
    lines = [(t0 + i * 0.001, x) for i, x in enumerate(engine_start(t0))]
    epoch = t0 + 0.030
    lines += partition_on_gpu(epoch, "porep-1000-12", 3, 0, t0 + 10.0, t0 + 13.37)
    lines += partition_on_gpu(epoch, "porep-1000-12", 4, 1, t0 + 11.0, t0 + 14.9)
    lines += post_job(epoch, "winpost-1000-0a1b2c3d", "winning-post", t0 + 10.8, t0 + 10.8,
                      2.2, t0 + 13.37, 1.3, 0)
    return _sorted(lines)


def post_late() -> list[str]:
    """A WinningPoSt that misses its 30 s epoch: it waited 33 s in cuzk's queue while the
    PoRep SRS was loaded on demand (srs_manager.rs:203, 224) for a PoRep job (its C1 parse and
    SRS load, engine.rs:2187-2210), which the single synthesis dispatcher awaits inline at
    `synthesis_concurrency = 1` (engine.rs:1927-1938), then synthesis and the GPU. Not its own
    SRS: a PoSt loads that inside its synthesis step, after SYNTH_START (engine.rs:2717-2721)."""
    t0 = T0 + 7200
    lines = [(t0 + i * 0.001, x) for i, x in enumerate(engine_start(t0))]
    epoch = t0 + 0.030
    arrive = t0 + 20.0
    lines += srs_load(arrive + 1, arrive + 32, "porep-32g",
                      "v28-stacked-proof-of-replication.params", 44)
    lines += post_job(epoch, "winpost-1000-9f8e7d6c", "winning-post", arrive, arrive + 33.0,
                      2.1, arrive + 35.11, 0.8, 1)
    return _sorted(lines)


def restart() -> list[str]:
    """A run proving partitions, killed without a line (systemd's SIGTERM: only SIGINT is
    handled, main.rs:233-266), started again by systemd 10 s later (RestartSec=10,
    cuzk-proving-daemon.md:122-140); the new run loads its SRS, pins its pool again and
    synthesises a first wave before its first GPU work (the same job id: Curio retries)."""
    t0 = T0 + 10800
    lines = [(t0 + i * 0.001, x) for i, x in enumerate(engine_start(t0))]
    epoch = t0 + 0.030
    lines += partition_on_gpu(epoch, "porep-1000-77", 0, 0, t0 + 40.0, t0 + 43.0)
    lines += partition_on_gpu(epoch, "porep-1000-77", 1, 1, t0 + 41.0, t0 + 44.0)
    t1 = t0 + 54.0
    lines += [(t1 + i * 0.001, x) for i, x in enumerate(engine_start(t1))]
    epoch1 = t1 + 0.030
    lines += srs_load(t1 + 0.5, t1 + 12.5, "porep-32g", "v28-stacked-proof-of-replication.params",
                      44)
    for p in range(3):
        s0 = t1 + 13.0 + p * 0.1
        lines.append((s0, tl(epoch1, s0, "SYNTH_START", "porep-1000-77", f"partition={p}")))
    lines += [(t1 + 40.0, tl(epoch1, t1 + 40.0, "SYNTH_END", "porep-1000-77",
                             "partition=0,synth_ms=27000"))]
    lines += [(t1 + 40.2 + i * 0.1, trace(t1 + 40.2 + i * 0.1, "info", "cuzk_core::pinned_pool",
                                          "pinned pool: allocated new buffer",
                                          size_gib=3.88, total_buffers=i + 1,
                                          total_gib=round(3.88 * (i + 1), 2)))
              for i in range(3)]
    lines += partition_on_gpu(epoch1, "porep-1000-77", 0, 0, t1 + 41.0, t1 + 44.0)
    return _sorted(lines)


#: A GPU prove start's panic (`panic`, `post_failed`), as Rust 1.86's default hook writes it
#: (cuzk's rust-toolchain.toml): location line, message, note (a process's first panic's only).
#: supraseal-c2's `start_groth16_proof` turns the CUDA error of its NTT into it (src/lib.rs:
#: 315-316, `panic!("{}", String::from(err))`), its text as filecoin-project/lotus#13634 quotes
#: it, inside the `spawn_blocking` of `gpu_prove_start` (engine.rs:3134-3147): a thread tokio
#: names `tokio-runtime-worker` (cuzk-daemon's `#[tokio::main]`, main.rs:33, names none; it read
#: `'<unnamed>'`, lotus's thread, which no tokio runtime starts). Its error as `error = %e`
#: writes tokio 1.49's `JoinError` (cuzk's Cargo.lock; tokio/src/runtime/task/error.rs:135-150,
#: `task {id} panicked with message {msg:?}`; the id illustrative).
PANIC_LINES = [
    "thread 'tokio-runtime-worker' panicked at /root/.cargo/git/checkouts/curio/extern/"
    "supraseal-c2/src/lib.rs:316:9:",
    'cudaGetLastError()@/root/.cargo/registry/src/sppark-0.1.14/ntt/kernels/'
    'gs_mixed_radix_wide.cu:220 failed: "out of memory"',
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
]
PROVE_START_PANIC_LINE = PANIC_LINES[0]
PROVE_START_PANIC_ERROR = ('task 41 panicked with message "'
                           + PANIC_LINES[1].replace("\\", "\\\\").replace('"', '\\"') + '"')


def panic() -> list[str]:
    """A CUDA error on the GPU in a partition's prove start: the panic on stderr
    (untimestamped), then in its GPU worker's span `GPU_TIMING prove_start returned` and
    cuzk's own line for it, `GPU prove start task panicked` (engine.rs:3148-3154, 3302), and
    the GPU idle after it. It was `partition GPU proving task panicked` (679), which cuzk
    writes of a panic in the split prove's finalizer (`gpu_prove_finish`, engine.rs:3185-3197,
    3238; supraseal-c2's lib.rs:331), never after its start's lib.rs:316."""
    t0 = T0 + 14400
    lines = [(t0 + i * 0.001, x) for i, x in enumerate(engine_start(t0))]
    epoch = t0 + 0.030
    lines += partition_on_gpu(epoch, "porep-1000-88", 0, 0, t0 + 10.0, t0 + 13.0)
    lines += [(t0 + 14.0, tl(epoch, t0 + 14.0, "GPU_PICKUP", "porep-1000-88",
                             "worker=1,partition=1")),
              (t0 + 14.0, tl(epoch, t0 + 14.0, "GPU_START", "porep-1000-88",
                             "worker=1,partition=1"))]
    lines += [(t0 + 14.5 + i * 1e-6, x) for i, x in enumerate(PANIC_LINES)]
    span = gpu_worker_span("porep-1000-88", "porep-c2", 1, 0, partition=1)
    lines += [(t0 + 14.5001, trace(t0 + 14.5001, "info", "cuzk_core::engine",
                                   "GPU_TIMING prove_start returned", span=span, worker_id=1,
                                   partition="Some(1)", total_pre_prove_ms=500,
                                   spawn_blocking_wall_ms=500)),
              (t0 + 14.5002, trace(t0 + 14.5002, "error", "cuzk_core::engine",
                                   "GPU prove start task panicked", span=span,
                                   error=PROVE_START_PANIC_ERROR))]
    return _sorted(lines)


def lost_job() -> list[str]:
    """Two WinningPoSt queued for the GPU while both workers hold partitions: both get the GPU
    queue key (0,0) (engine.rs:2851) and `map.insert` replaces the first (engine.rs:53-58);
    the second is picked up, the first never."""
    t0 = T0 + 18000
    lines = [(t0 + i * 0.001, x) for i, x in enumerate(engine_start(t0))]
    epoch = t0 + 0.030
    lines += partition_on_gpu(epoch, "porep-1000-99", 5, 0, t0 + 10.0, t0 + 14.0)
    lines += partition_on_gpu(epoch, "porep-1000-99", 6, 1, t0 + 10.5, t0 + 15.0)
    first, second = "winpost-1000-11111111", "winpost-1000-22222222"
    for job, arrive in ((first, t0 + 11.0), (second, t0 + 11.5)):
        lines += [(arrive, tl(epoch, arrive, "SYNTH_START", job, "kind=winning-post")),
                  (arrive + 1.0, tl(epoch, arrive + 1.0, "SYNTH_END", job, "synth_ms=1000")),
                  (arrive + 1.0, tl(epoch, arrive + 1.0, "GPU_QUEUE", job, "monolithic"))]
    lines += [(t0 + 14.0, tl(epoch, t0 + 14.0, "GPU_PICKUP", second, "worker=0")),
              (t0 + 14.0, tl(epoch, t0 + 14.0, "GPU_START", second, "worker=0")),
              (t0 + 14.8, tl(epoch, t0 + 14.8, "GPU_END", second, "worker=0,gpu_ms=800"))]
    return _sorted(lines)


#: A PoRep 32G partition's a/b/c buffer (num_constraints 130278869 x 32-byte Fr, pipeline.rs:286).
ABC_GIB = 130278869 * 32 / (1 << 30)


def _pool(t: float, level: str, message: str, target: str = "cuzk_core::pinned_pool",
          **fields: object) -> tuple[float, str]:
    return t, trace(t, level, target, message, span="", **fields)


def pool_churn() -> list[str]:
    """The pinned pool churning, then failing (cuzk-upstream-paths.md 2.4): a partition's three
    a/b/c buffers are pinned (pinned_pool.rs:212) and checked in after its GPU prove
    (pinned_pool.rs:187); a short budget acquire runs the evictor, which unpins every idle
    buffer (pinned_pool.rs:240; engine.rs:1257-1265, memory.rs:214-225); the next partition pins
    three new ones. Four such cycles 30 s apart; at the fourth, `cudaHostAlloc` fails for `c`
    (pinned_pool.rs:61, 202), `a` and `b` go back to the pool (pinned_pool.rs:307-308, 187), and
    the partition falls back to pageable a/b/c (pipeline.rs:302). Every pool line is INFO but
    the failures (WARN): at level "warn" only those four remain."""
    t0 = T0 + 25200
    lines = [(t0 + i * 0.001, x) for i, x in enumerate(engine_start(t0))]
    total = 0  # total_allocated: every buffer ever pinned (pinned_pool.rs:211)
    held = 0  # buffers the pool holds (total_bytes / ABC_GIB)

    def pin(t: float) -> tuple[float, str]:
        nonlocal total, held
        total, held = total + 1, held + 1
        return _pool(t, "info", "pinned pool: allocated new buffer", size_gib=ABC_GIB,
                     total_buffers=total, total_gib=held * ABC_GIB)

    lines += [pin(t0 + 40.0 + i * 0.01) for i in range(3)]
    for cycle in range(4):
        c0 = t0 + 60.0 + cycle * 30.0
        lines += [_pool(c0 + i * 0.001, "info", "pinned pool: checkin", size_gib=ABC_GIB)
                  for i in range(3)]
        for i in range(3):  # one shrink: largest first, total_freed_gib adds up (:232-243)
            held -= 1
            lines.append(_pool(c0 + 1.0 + i * 0.001, "info",
                               "pinned pool: freed buffer (evictor)", freed_gib=ABC_GIB,
                               total_freed_gib=(i + 1) * ABC_GIB))
        r0 = c0 + 3.0
        if cycle < 3:
            lines += [pin(r0 + i * 0.01) for i in range(3)]
            continue
        lines += [pin(r0), pin(r0 + 0.01),
                  _pool(r0 + 0.02, "warn", "cudaHostAlloc failed", size_gib=ABC_GIB, cuda_err=2),
                  _pool(r0 + 0.021, "warn", "pinned pool: cudaHostAlloc failed",
                        size_gib=ABC_GIB),
                  _pool(r0 + 0.022, "info", "pinned pool: checkin", size_gib=ABC_GIB),
                  _pool(r0 + 0.023, "info", "pinned pool: checkin", size_gib=ABC_GIB),
                  _pool(r0 + 0.024, "warn",
                        "pinned pool checkout FAILED \u2014 falling back to unpinned",
                        target="cuzk_core::pipeline", num_constraints=130278869, pool_free=2,
                        pool_total_gib=held * ABC_GIB)]
    return _sorted(lines)


def monolithic_engine_start(t: float) -> list[str]:
    """A daemon started with `[pipeline] enabled = false` (cuzk-daemon/src/main.rs:63;
    engine.rs:1244, 1339 with one worker per GPU, 1333-1337; the monolithic worker's start,
    3378; `cuzk engine started`, 3510)."""
    return [trace(t, "info", "cuzk_daemon", "cuzk-daemon starting"),
            trace(t + 0.030, "info", "cuzk_core::engine", "starting cuzk engine",
                  pipeline_enabled="false"),
            trace(t + 0.031, "info", "cuzk_core::engine", "initializing GPU workers", num_gpus=1,
                  gpu_workers_per_device=1, total_workers=1, gpus="[0]"),
            trace(t + 0.032, "info", "cuzk_core::engine", "monolithic GPU worker started",
                  worker_id=0, gpu=0),
            trace(t + 0.033, "info", "cuzk_core::engine", "cuzk engine started", num_workers=1,
                  pipeline="false")]


def monolithic_job(job: str, kind: str, prio: str, arrive: float, start: float, prove_s: float,
                   worker: int, gpu: int) -> list[tuple[float, str]]:
    """One proof on a monolithic worker (`[pipeline] enabled = false`): `job enqueued`
    (scheduler.rs:67), `job dequeued for proving` (scheduler.rs:85), then, inside the worker's
    span `monolithic_worker{worker_id gpu job_id proof_kind}` (engine.rs:3394), `processing job
    (monolithic)` (3397) and, after the whole proof in one call (3422-3440), `proof completed
    successfully (monolithic) proof_len total_ms queue_ms deser_ms prove_ms` (3455-3462:
    total_ms from submission, queue_ms the rest of it before the prover's own total). No
    TIMELINE line: the monolithic path writes none."""
    span = f"monolithic_worker{{worker_id={worker} gpu={gpu} job_id={job} proof_kind={kind}}}"
    end = start + prove_s
    proof_len = 1920 if kind == "porep-c2" else 192
    lines = [(arrive, trace(arrive, "info", "cuzk_core::scheduler", "job enqueued", job_id=job,
                            proof_kind=kind, priority=prio, queue_position=0)),
             (start, trace(start, "info", "cuzk_core::scheduler", "job dequeued for proving",
                           job_id=job, proof_kind=kind)),
             (start + 0.0001, trace(start + 0.0001, "info", "cuzk_core::engine",
                                    "processing job (monolithic)", span=span))]
    if kind == "winning-post":
        # prover.rs:535, 566, inside `prove_winning_post{job_id}` (523), entered on the
        # blocking thread, where the worker's span is not current; a `&str` is written with
        # Debug (quoted).
        inner = f'prove_winning_post{{job_id="{job}"}}'
        lines += [(start + 0.001, trace(start + 0.001, "info", "cuzk_core::prover",
                                        "proving WinningPoSt", span=inner,
                                        proof_type="StackedDrgWinning32GiBV1", miner_id=1000,
                                        num_vanilla_proofs=1)),
                  (end - 0.001, trace(end - 0.001, "info", "cuzk_core::prover",
                                      "WinningPoSt proof completed", span=inner, proof_len=192,
                                      prove_ms=round((prove_s - 0.002) * 1000),
                                      total_ms=round((prove_s - 0.002) * 1000)))]
    lines.append((end, trace(end, "info", "cuzk_core::engine",
                             "proof completed successfully (monolithic)", span=span,
                             proof_len=proof_len, total_ms=round((end - arrive) * 1000),
                             queue_ms=round((start - arrive) * 1000), deser_ms=0,
                             prove_ms=round((prove_s - 0.002) * 1000))))
    return lines


def post_pipeline_off() -> list[str]:
    """`[pipeline] enabled = false`: one GPU, so one monolithic worker (engine.rs:1333-1337).
    A WinningPoSt arrives while the worker proves a whole PoRep C2 in one call; it is dequeued
    first (Critical, scheduler.rs:34-45) but only when the PoRep ends, 30 s later, and misses
    its 30 s epoch (3.4 s to prove). Then a WindowPoSt (Curio's id holds spaces and brackets,
    lib/ffi/cuzk_funcs.go:179) arrives at the idle worker and is on time."""
    t0 = T0 + 21600
    lines = [(t0 + i * 0.001, x) for i, x in enumerate(monolithic_engine_start(t0))]
    lines += monolithic_job("porep-1000-7", "porep-c2", "Normal", t0 + 10.0, t0 + 10.0, 40.0,
                            0, 0)
    lines += monolithic_job("winpost-1000-5e6f7a8b", "winning-post", "Critical", t0 + 20.0,
                            t0 + 50.0, 3.4, 0, 0)
    lines += monolithic_job("wdpost-1000-0-[12 34 56 78 90 12 34 56]", "window-post", "High",
                            t0 + 70.0, t0 + 70.0, 95.0, 0, 0)
    return _sorted(lines)


def gpu_worker_span(job: str, kind: str, worker: int, gpu: int,
                    partition: int | None = None) -> str:
    """A pipelined job's GPU worker span (engine.rs:3005-3012), as tracing writes it:
    `partition = ?partition_index`, `None` for a PoSt, `Some(p)` for a partition."""
    some = "None" if partition is None else f"Some({partition})"
    return (f"gpu_worker{{worker_id={worker} gpu={gpu} job_id={job} proof_kind={kind} "
            f"batch_size=1 partition={some}}}")


#: A WinningPoSt's synthesis failing on a vanilla proof cuzk cannot read (one cut short):
#: `synthesize_winning_post`'s `failed to deserialize WinningPoSt vanilla proof: {}`
#: (pipeline.rs:2923-2925) of bincode 1.3.3's error (cuzk's Cargo.lock: a slice read past its
#: end is `io::ErrorKind::UnexpectedEof`, src/de/read.rs:75, said `io error: {}`,
#: src/error.rs:85), as `synthesis failed` writes it (engine.rs:2855, `error = %e`).
VANILLA_UNREADABLE = ("failed to deserialize WinningPoSt vanilla proof: io error: unexpected end "
                      "of file")


def post_failed() -> list[str]:
    """Two WinningPoSt that fail with the pipeline on. The first fails on the GPU: its lines
    through GPU_START (engine.rs:2665, 2745, 2848, 3023, 3131), then its prove start panics
    (supraseal-c2's CUDA error, src/lib.rs:316, inside the `spawn_blocking` of
    `gpu_prove_start`, engine.rs:3134-3147): the panic on stderr, then inside its GPU worker's
    span, which names it, `GPU_TIMING prove_start returned` (3148-3154) and `GPU prove start
    task panicked` (3302, `error = %e` of tokio's `JoinError`); its worker is free again. It
    was `GPU prove start failed: Unsatisfiable` (3282), which curio e0294b0f cannot write:
    `gpu_prove_start` (pipeline.rs:1386-1405) fails only where bellperson's `prove_start`
    returns `MalformedSrs` (supraseal.rs:199-202), never with the `SuprasealParameters` cuzk
    passes (supraseal_params.rs:70-72). The second fails in synthesis, its vanilla proof cut
    short (`VANILLA_UNREADABLE`): `synthesis failed` (engine.rs:2855) inside
    `synth_single{proof_kind}` (2099), a kind and no job, after its SYNTH_START: the one
    WinningPoSt in synthesis then. A PoRep partition goes on after, past the second's 30 s
    (said late there while a line naming no job failed no PoSt)."""
    t0 = T0 + 25200
    lines = [(t0 + i * 0.001, x) for i, x in enumerate(engine_start(t0))]
    epoch = t0 + 0.030
    first, second = "winpost-1000-3c4d5e6f", "winpost-1000-4d5e6f70"
    arrive = t0 + 10.0
    lines += [(arrive, trace(arrive, "info", "cuzk_core::scheduler", "job enqueued",
                             job_id=first, proof_kind="winning-post", priority="Critical",
                             queue_position=0)),
              (arrive, tl(epoch, arrive, "SYNTH_START", first, "kind=winning-post")),
              (arrive + 2.1, tl(epoch, arrive + 2.1, "SYNTH_END", first, "synth_ms=2100")),
              (arrive + 2.1, tl(epoch, arrive + 2.1, "GPU_QUEUE", first, "monolithic")),
              (arrive + 2.2, tl(epoch, arrive + 2.2, "GPU_PICKUP", first, "worker=0")),
              (arrive + 2.2, tl(epoch, arrive + 2.2, "GPU_START", first, "worker=0")),
              (arrive + 2.5, PROVE_START_PANIC_LINE)]
    lines += [(arrive + 2.5 + (i + 1) * 1e-6, x) for i, x in enumerate(PANIC_LINES[1:])]
    span = gpu_worker_span(first, "winning-post", 0, 0)
    lines += [(arrive + 2.5001, trace(arrive + 2.5001, "info", "cuzk_core::engine",
                                      "GPU_TIMING prove_start returned", span=span,
                                      worker_id=0, partition="None", total_pre_prove_ms=300,
                                      spawn_blocking_wall_ms=300)),
              (arrive + 2.5002, trace(arrive + 2.5002, "error", "cuzk_core::engine",
                                      "GPU prove start task panicked", span=span,
                                      error=PROVE_START_PANIC_ERROR))]
    arrive2 = t0 + 20.0
    lines += [(arrive2, trace(arrive2, "info", "cuzk_core::scheduler", "job enqueued",
                              job_id=second, proof_kind="winning-post", priority="Critical",
                              queue_position=0)),
              (arrive2, tl(epoch, arrive2, "SYNTH_START", second, "kind=winning-post")),
              (arrive2 + 1.0, trace(arrive2 + 1.0, "error", "cuzk_core::engine",
                                    "synthesis failed", span="synth_single{proof_kind=winning-post}",
                                    error=VANILLA_UNREADABLE))]
    lines += partition_on_gpu(epoch, "porep-1000-13", 0, 1, t0 + 40.0, t0 + 55.0)
    return _sorted(lines)


def monolithic_failed_job(job: str, kind: str, arrive: float, start: float, fail_s: float,
                          worker: int, gpu: int) -> list[tuple[float, str]]:
    """A PoSt a monolithic worker fails (`[pipeline] enabled = false`): `job enqueued`, `job
    dequeued for proving`, `processing job (monolithic)` in the worker's span (scheduler.rs:67,
    85, engine.rs:3394, 3397), then `proof failed` in it (engine.rs:3471, `error = %e`:
    anyhow's outermost context, `generate_winning_post_with_vanilla failed`, prover.rs:552)."""
    span = f"monolithic_worker{{worker_id={worker} gpu={gpu} job_id={job} proof_kind={kind}}}"
    end = start + fail_s
    return [(arrive, trace(arrive, "info", "cuzk_core::scheduler", "job enqueued", job_id=job,
                           proof_kind=kind, priority="Critical", queue_position=0)),
            (start, trace(start, "info", "cuzk_core::scheduler", "job dequeued for proving",
                          job_id=job, proof_kind=kind)),
            (start + 0.0001, trace(start + 0.0001, "info", "cuzk_core::engine",
                                   "processing job (monolithic)", span=span)),
            (end, trace(end, "error", "cuzk_core::engine", "proof failed", span=span,
                        error="generate_winning_post_with_vanilla failed"))]


def post_failed_pipeline_off() -> list[str]:
    """`[pipeline] enabled = false`: a WinningPoSt the GPU's one monolithic worker fails 1.5 s
    into its proving; then one proved on time under another id."""
    t0 = T0 + 28800
    lines = [(t0 + i * 0.001, x) for i, x in enumerate(monolithic_engine_start(t0))]
    lines += monolithic_failed_job("winpost-1000-6f708192", "winning-post", t0 + 10.0,
                                   t0 + 10.0, 1.5, 0, 0)
    lines += monolithic_job("winpost-1000-708192a3", "winning-post", "Critical", t0 + 40.0,
                            t0 + 40.0, 3.4, 0, 0)
    return _sorted(lines)


#: The scenario logs and what each shows (README, the tests, the simulator's `sim:post`).
SCENARIO_LOGS = {
    "post-behind-partitions.log": post_behind_partitions,
    "post-late.log": post_late,
    "restart.log": restart,
    "panic.log": panic,
    "lost-job.log": lost_job,
    "post-pipeline-off.log": post_pipeline_off,
    "pool-churn.log": pool_churn,
    "post-failed.log": post_failed,
    "post-failed-pipeline-off.log": post_failed_pipeline_off,
}


def write_scenarios() -> None:
    """The scenario logs need no curio checkout (format strings only): `make_data.py
    --scenarios` writes only them."""
    for name, make in SCENARIO_LOGS.items():
        (HERE / name).write_text("\n".join(make()) + "\n")


def main(argv: list[str]) -> int:
    if argv[1:] == ["--scenarios"]:
        write_scenarios()
        return 0
    if len(argv) != 2:
        print("usage: make_data.py CURIO_CHECKOUT (git clone "
              "https://github.com/filecoin-project/curio; git checkout " + COMMIT + ")",
              file=sys.stderr)
        return 2
    root = Path(argv[1])
    lines = rust_lines(root)
    lines += timeline_lines(root, 812345)
    lines += cuda_lines(root)
    (HERE / "cuzk.log").write_text("".join(f"{e['line']}\n" for e in lines))
    (HERE / "expected.json").write_text(json.dumps(
        {"commit": COMMIT, "lines": lines}, indent=1) + "\n")
    for name, doc in bodies().items():
        # serde_json::to_string: compact, fields in declaration order.
        (HERE / f"status-{name}.json").write_text(json.dumps(doc, separators=(",", ":")))
    (HERE / "post-in-flight.log").write_text("\n".join(post_log(3998.0)) + "\n")
    write_scenarios()
    (HERE / "README.md").write_text(readme(lines))
    print(f"{len(lines)} lines, {len(bodies())} bodies")
    return 0


def readme(lines: list[dict[str, object]]) -> str:
    rows = "\n".join(f"| {i + 1} | `{e['source']}` | {e['kind']} | {str(e['name'])[:60]} |"
                     for i, e in enumerate(lines))
    return f"""# cuzk's own lines and `/status` bodies, built from upstream's source

Built by `make_data.py` (run by hand with a curio checkout; the tests read only these files)
from curio `main` at commit `{COMMIT}` (cuzk's code there unchanged since 2026-05-05):
format strings, field names and serde structs only, no upstream code.

- `cuzk.log`: one line per logging site, as the daemon writes it (tracing's Full format without
  colours, TIMELINE and CUZK lines as `eprintln!`/`fprintf` print them), values illustrative.
- `expected.json`: each line with the kind and the whole name gapwatch must give it, its
  fields, and its source (file:line at that commit; also in the table below).
- `status-busy.json`, `status-synthesis-starved.json`, `status-idle.json`,
  `status-post-in-flight.json`: `GET /status` bodies as `serde_json::to_string` writes
  `status.rs`'s `StatusSnapshot` (fields in declaration order, `Option` as null,
  `max_concurrent` = budget / 9 GiB). Synthesis-starved: 18 workers synthesising on a 750 GiB
  budget (`max_concurrent` 83), nothing in synth_done, both GPU workers idle.
  Post-in-flight: a WinningPoSt proving, which `/status` never lists; `post-in-flight.log` holds
  its TIMELINE lines (engine.rs 2665, 2745, 2848, 3023, 3131, 3196).
- Scenario logs (issue 27; `make_data.py --scenarios` writes only them, no checkout needed),
  each line from one upstream format (the functions of the same name say which):
  `post-behind-partitions.log` (a WinningPoSt arriving while both workers hold partitions),
  `post-late.log` (a WinningPoSt past its 30 s epoch, queued behind a PoRep's SRS load),
  `restart.log` (a run killed without a line and started again: SRS, pool, first wave),
  `panic.log` (a partition's prove start panicking: supraseal-c2's
  CUDA error panic on stderr, src/lib.rs:316, Rust's default hook in tokio's
  `tokio-runtime-worker`, the message as lotus#13634 quotes it, then `GPU_TIMING prove_start
  returned` and `GPU prove start task panicked`, engine.rs:3148, 3302, in its GPU worker's span
  `gpu_worker{{... partition=Some(1)}}`), `lost-job.log` (two WinningPoSt with the
  GPU queue key (0,0), engine.rs:53-58, 2851: the first never picked up),
  `post-pipeline-off.log` (`[pipeline] enabled = false`: no TIMELINE; the monolithic worker's
  span and lines, engine.rs:3378, 3394, 3397, 3455-3462, prover.rs:523, 535, 566; a WinningPoSt
  late behind a whole PoRep C2 on the GPU's one worker, then an on-time WindowPoSt),
  `pool-churn.log` (the evictor unpinning a partition's idle a/b/c buffers and the next one
  pinning new ones, four times 30 s apart, the fourth `cudaHostAlloc` failing: pinned_pool.rs:61,
  187, 202, 212, 240, pipeline.rs:302; cuzk-upstream-paths.md 2.4),
  `post-failed.log` (a WinningPoSt whose prove start panics: supraseal-c2's CUDA error on
  stderr, src/lib.rs:316, then `GPU_TIMING prove_start returned` and `GPU prove start task
  panicked`, engine.rs:3148, 3302, inside its GPU worker's span `gpu_worker{{job_id ...}}`,
  3005-3012, which names it; not `GPU prove start failed`, 3282, which this commit cannot
  write: `gpu_prove_start` fails only with bellperson's `MalformedSrs`; another whose
  `synthesis failed`, 2855, inside `synth_single{{proof_kind}}`, 2099, which names no job: the
  one WinningPoSt in synthesis then),
  `post-failed-pipeline-off.log` (a WinningPoSt the monolithic worker fails, `proof failed`,
  engine.rs:3471, in its span, 3394; then one on time).

| # | source | kind | name |
| --- | --- | --- | --- |
{rows}
"""


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
