"""Configuration: pydantic models for every tunable, loaded from TOML, overridden by CLI flags.

Who calls it: `gapwatch.cli` builds one `Config` per run and passes it (or its sections) down;
nothing else reads files or environment variables for settings (no ambient globals). The
sections the core and the cuzk package read live with them (`gapwatch.core.config.
DetectorConfig`, `gapwatch.cuzk.config.CuzkConfig`); this package puts the file together.

Lookup order: `--config FILE`, else `$XDG_CONFIG_HOME/gapwatch/config.toml` (or
`~/.config/gapwatch/config.toml`), else the defaults below. Every key is documented in
`config.example.toml`; `tests/test_config.py` checks that the two stay in step.

Errors: an unknown key or a bad value raises `ConfigError`, whose message names the file, the
dotted key and, for a typo, the nearest valid key (difflib), e.g.
`config.toml: detector.min_gap_m: unknown key (did you mean 'min_gap_ms'?)`.
"""

from __future__ import annotations

import difflib
import os
import re
import reprlib
import stat
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError, ValidationInfo, field_validator

from gapwatch.base.input_files import fifo_heard, file_kind, path_problem
from gapwatch.core import fmt
from gapwatch.core.bounds import (
    DEFAULT_PERIOD_MS,
    MAX_BYTES_PER_S,
    MAX_GPU_INDEX,
    MAX_PERIOD_MS,
    MAX_SECONDS,
    MIN_PERIOD_MS,
)
from gapwatch.core.config import DetectorConfig, Section
from gapwatch.core.models import SessionHeader
from gapwatch.core.units import parse_duration, parse_size
from gapwatch.cuzk.config import CuzkConfig
from gapwatch.cuzk.post_deadlines import PostDeadlines, judged_by

#: The smallest segment (`[record] rotate_size`) and the youngest (`rotate_age`) a recording
#: may rotate at.
MIN_SEGMENT_BYTES = 1 << 20
MIN_SEGMENT_AGE_S = 60.0


def check_rotate_size(text: str) -> str:
    """`text` if it is a segment size (`[record] rotate_size`, `--rotate-size`): at least
    1 MiB, a segment holding whole gzip members of 1 MiB. Raises ValueError."""
    if parse_size(text) < MIN_SEGMENT_BYTES:
        raise ValueError(f"{text!r} is less than 1 MiB")
    return text


def check_rotate_age(text: str) -> str:
    """`text` if it is a segment age (`[record] rotate_age`, `--rotate-age`): at least a minute.
    Raises ValueError."""
    if parse_duration(text) < MIN_SEGMENT_AGE_S:
        raise ValueError(f"{text!r} is less than a minute")
    return text


#: The largest config file read (bytes). The commented example is ~10 KiB; a file beyond this
#: is not a config (`--config /dev/zero`, a 1 GB log given by mistake), and TOML's dotted keys
#: cost quadratic time to parse (`a.a.a...` 64 KiB long: seconds; 1 MiB long: most of an hour),
#: so the bound is also what keeps a hostile file from hanging the command.
MAX_CONFIG_BYTES = 64 << 10
#: How long a FIFO given as the config (`--config <(generate-config)`) may stay silent before
#: it is given up: a FIFO nobody writes to would otherwise hang the command for ever.
CONFIG_FIFO_SILENCE_S = 10.0
#: The most parts a dotted TOML key may have (`a.b.c`: 3). gapwatch's deepest key has 3
#: (`logs.rules` tables hold plain keys); tomllib parses a key of N parts in O(N^2) time: a
#: 64 KiB line `a.a.a...` took 18 s, so such a key is refused before parsing.
MAX_KEY_PARTS = 16
#: A key part (bare or quoted) starting where no bare-key character precedes it (so that the
#: scan starts once per word, not once per character of it), then more parts after dots.
_LONG_DOTTED_KEY = re.compile(
    r"(?<![A-Za-z0-9_-])(?:[A-Za-z0-9_-]+|\"[^\"\n]*\"|'[^'\n]*')"
    r"(?:[ \t]*\.[ \t]*(?:[A-Za-z0-9_-]+|\"[^\"\n]*\"|'[^'\n]*'))"
    + "{" + str(MAX_KEY_PARTS) + ",}")


class ConfigError(Exception):
    """A configuration file or value is wrong; the message is meant for the user as is."""


class SamplerConfig(Section):
    """How GPUs are sampled."""

    #: Sampling period (`bounds.DEFAULT_PERIOD_MS`: GPM's refresh).
    period_ms: float = Field(DEFAULT_PERIOD_MS, ge=MIN_PERIOD_MS, le=MAX_PERIOD_MS)
    #: GPU indices to watch; empty = all. Indices as recordings hold them (`bounds.GpuIndex`).
    gpus: list[Annotated[int, Field(ge=0, le=MAX_GPU_INDEX)]] = Field(default_factory=list)
    #: Allow GPM (Hopper and newer). Off forces the byte counters / legacy path.
    use_gpm: bool = True
    #: Allow the PCIe byte counters (fields 197/198) when GPM is unavailable.
    use_counters: bool = True
    #: Seconds between `nvmlDeviceGetPcieThroughput` calls on the legacy path. That call blocks
    #: ~21 ms per direction per GPU, so it never runs inside every tick.
    legacy_pcie_every_s: float = Field(5.0, ge=1.0, le=MAX_SECONDS)
    #: Seconds between readings of the host memory (/proc/PID/status: pinned RssShmem vs heap
    #: RssAnon) of the processes NVML lists on each GPU; 0 = never. A slow reading: memory
    #: sizes change over seconds, and it costs one NVML call per GPU and one file per process.
    procmem_every_s: float = Field(1.0, le=MAX_SECONDS)
    #: At most this often per GPU, and only while data moves, the PCIe link's current
    #: generation and width are read (a link trained below its maximum); 0 = never.
    link_every_s: float = Field(5.0, le=MAX_SECONDS)
    #: "Data moves": PCIe RX or TX of the tick's reading above this. Idle links down-train to
    #: save power, so a reading at idle would report a trained-down link that is not.
    link_check_min_bytes_per_s: float = Field(1e9, gt=0, le=MAX_BYTES_PER_S)
    #: Seconds between GPU health readings (memory, temperature, power and its limit, clocks
    #: and their throttle reasons, ECC counts: ~2 us per call on the H200); 0 = never.
    health_every_s: float = Field(1.0, le=MAX_SECONDS)
    #: Seconds between readings of the PCIe replay counter (171 us per call on the H200: read
    #: rarely); 0 = never. A count that grew is a `pcie_replay` event.
    pcie_replay_every_s: float = Field(60.0, le=MAX_SECONDS)
    #: Seconds between readings of the GPU memory's row remapping (Ampere and newer: a remap
    #: pending until the next GPU reset, or one that failed); 0 = never. Each is a
    #: `row_remap_pending` or `row_remap_failure` event, once a run per GPU.
    row_remap_every_s: float = Field(60.0, le=MAX_SECONDS)
    #: Wait for NVML's XID critical error events on a thread of their own (blocked in the
    #: driver between events, so it costs nothing measurable).
    xid_events: bool = True

    @field_validator("procmem_every_s", "link_every_s", "health_every_s", "pcie_replay_every_s",
                     "row_remap_every_s")
    @classmethod
    def _slow_reading(cls, value: float) -> float:
        # Not every tick: these are slow readings by design (0 turns them off).
        if value != 0 and value < 1.0:
            raise ValueError("must be 0 (off) or at least 1 second")
        return value


class HostConfig(Section):
    """Host memory pressure sampling."""

    enabled: bool = True
    #: Read memory-bandwidth monitoring from resctrl where the kernel exposes it.
    resctrl: bool = True


class UserRule(Section):
    """A log line format of a prover other than cuzk: a regex with named groups.

    Groups with special meaning: `timestamp`, `phase`, `worker`, `partition`, `gpu`, `job_id`.
    Every other named group becomes a field of the event.
    """

    name: str = Field(min_length=1)
    regex: str = Field(min_length=1)
    #: strptime format of the `timestamp` group; empty = RFC3339/ISO-8601 or Unix seconds.
    timestamp_format: str = ""
    #: Event name when the regex has no `phase` group.
    event: str = ""
    #: Mark matching lines as a warning that explains gaps (e.g. "unpinned").
    warning: str = ""

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str, info: ValidationInfo) -> str:
        import regex  # only for a config with rules: ~25 ms to import

        try:
            # The module the parser runs the rules with (logs/parse/user_rules.py).
            regex.compile(value)
        except regex.error as exc:
            # Name the rule: "logs.rules.3.regex" alone does not tell which rule is wrong.
            name = info.data.get("name", "?")
            raise ValueError(f"rule {name!r}: regex does not compile: {exc}") from exc
        return value


class LogsConfig(Section):
    """The prover logs gapwatch follows."""

    #: Paths to follow (tail -F); "-" is standard input. `--log` adds to these.
    paths: list[str] = Field(default_factory=list)
    #: Read existing content first instead of starting at the end.
    from_start: bool = False
    #: How often, at most, a followed file is looked at for growth, rotation and truncation:
    #: at once when its folder changes (Linux inotify) but no more often than this; every
    #: `poll_ms` where changes cannot be heard (FIFOs, no inotify).
    #: At least 1 ms (`1e-300` polled a FIFO without a pause: half a core, the GIL with it).
    poll_ms: float = Field(50.0, ge=1, le=5000)
    #: How often a followed file is looked at when nothing was heard to change (what inotify
    #: misses: writes from another host to a network filesystem).
    idle_poll_ms: float = Field(1000.0, ge=1, le=60000)
    #: Longer lines are cut here (and counted).
    #: At most 4 MiB: a recorded log event holds the line and fields taken from it, each byte
    #: escaped as `\u00XX` at worst (x6), and the recording reader takes no line over 64 MiB
    #: for a record (`gapwatch.sources.gzip_lines.MAX_LINE_BYTES`).
    max_line_bytes: int = Field(1 << 20, ge=1024, le=4 << 20)
    #: Use the built-in cuzk rules.
    cuzk: bool = True
    #: User-defined rules, tried after the built-in ones.
    rules: list[UserRule] = Field(default_factory=list)


def split_listen(listen: str, what: str) -> tuple[str, int]:
    """Split a listen address `HOST:PORT`, `:PORT` or `PORT` (IPv6 as `[::1]:PORT`) into
    (host, port); a missing host is 127.0.0.1 (serving beyond loopback must be asked for).
    `what` names the flag or key in the message. Raises ValueError."""
    text = listen.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{what} {listen!r}: write an IPv6 host as [addr]:PORT")
    # ASCII digits only: `int` also reads Arabic-Indic digits, `_`, a sign and spaces, and
    # `127.0.0.1:٣٣` served on port 33, an address nobody wrote.
    if not (port_text.isascii() and port_text.isdigit()):
        raise ValueError(
            f"{what} {listen!r}: expected HOST:PORT, :PORT or PORT (e.g. 127.0.0.1:9400)")
    port = int(port_text)
    if not 0 <= port <= 65535:
        raise ValueError(f"{what} {listen!r}: port must be 0..65535")
    return (host or "127.0.0.1"), port


class RecordConfig(Section):
    """Recording to JSON Lines."""

    #: Flush the recording at least this often (kill -9 loses at most this much).
    #: At least 10 ms: a shorter period is no wait at all (`1e-300` flushed without a pause,
    #: a whole core), and a file flushed more often than the sampler ticks gains nothing.
    flush_interval_s: float = Field(1.0, ge=0.01, le=10)
    #: Longest wait between two write attempts while the disk refuses them (full, I/O error).
    retry_max_s: float = Field(30.0, ge=1, le=3600)
    #: Records kept in memory while the disk refuses them; beyond that they are dropped, counted.
    max_pending_mib: int = Field(16, ge=1, le=4096)
    #: A disk budget for unattended recording (docs/recording.md): the recording is a set of
    #: segments `NAME.000001.jsonl.gz`, ..., a new one once the current one holds
    #: `rotate_size` ("1GiB", "512MiB"; at least 1 MiB) or is `rotate_age` old ("1d", "6h";
    #: at least a minute); "" = no such limit (both "": one file, no segments).
    rotate_size: str = ""
    rotate_age: str = ""
    #: Segments kept (the newest; older ones of the set are removed); 0 = all.
    keep: int = Field(0, ge=0, le=1_000_000)

    @field_validator("rotate_size")
    @classmethod
    def _size(cls, value: str) -> str:
        return check_rotate_size(value) if value.strip() else value

    @field_validator("rotate_age")
    @classmethod
    def _age(cls, value: str) -> str:
        return check_rotate_age(value) if value.strip() else value

    @property
    def rotate_size_bytes(self) -> int | None:
        return parse_size(self.rotate_size) if self.rotate_size.strip() else None

    @property
    def rotate_age_s(self) -> float | None:
        return parse_duration(self.rotate_age) if self.rotate_age.strip() else None

    @property
    def segmented(self) -> bool:
        """True when the recording is a set of segments."""
        return self.rotate_size_bytes is not None or self.rotate_age_s is not None


#: The longest chart window and snapshot history: the store keeps every sample for the longest
#: of them (`engine.runtime`), so live they cost memory per second of them, as the detector's
#: window does (at most an hour too). `1e300` was an OverflowError traceback sizing the store;
#: `1e9` a store that never let a sample go.
MAX_HISTORY_S = 3600.0


class UiConfig(Section):
    """The dashboard."""

    #: Chart window at start; `w` cycles through `windows_s`.
    window_s: float = Field(60.0, gt=0, le=MAX_HISTORY_S)
    windows_s: list[Annotated[float, Field(gt=0, le=MAX_HISTORY_S)]] = Field(
        default_factory=lambda: [30.0, 60.0, 120.0, 600.0])
    #: The most often a second the always-on view repaints words (a gap opening or closing,
    #: a state), shown as soon as they change; and the `d` detail chart's redraw checks. The
    #: numbers (figures, charts, log) are repainted once a second whatever it says.
    redraw_hz: float = Field(4.0, gt=0, le=30)
    #: Seconds between redraws of the plotext detail chart (it is ~10x costlier).
    detail_redraw_s: float = Field(1.0, ge=0.2, le=3600)
    #: Ring the terminal bell when a GPU enters BREAKDOWN.
    bell: bool = False
    #: Theme: "auto" follows NO_COLOR; "mono" forces no colour.
    color: Literal["auto", "mono"] = "auto"


class SnapshotConfig(Section):
    """Snapshots (key `s`, or automatic on BREAKDOWN)."""

    #: Folder where snapshot folders are written.
    dir: str = "."
    #: Take one automatically when a GPU enters BREAKDOWN.
    auto: bool = True
    #: At most one automatic snapshot per this many seconds.
    auto_min_interval_s: float = Field(300.0, ge=0, le=MAX_SECONDS)
    #: How much history a snapshot keeps.
    history_s: float = Field(300.0, gt=0, le=MAX_HISTORY_S)


class AlertsConfig(Section):
    """When a GPU idling in gaps is said to a person: `--on-event`'s `idle_high` reads these,
    and the shipped alert rule `GapwatchGpuIdleHigh` (deploy/prometheus/gapwatch.rules.yml,
    static YAML) is written with their defaults (`tests/test_idle_alert.py` holds them
    equal): one threshold, one home."""

    #: The share (0..1) of the last `idle_window_s` of a GPU's data spent idle in gaps of any
    #: kind above which it is said. 0.25: the GPU could do a third more work (payoff 1.33x);
    #: 1: never (no share is over it).
    idle_share: float = Field(0.25, gt=0, le=1)
    #: The window the share is taken over (s): the rule's `rate(...[10m])`.
    idle_window_s: float = Field(600.0, ge=60, le=3600)


class PrometheusConfig(Section):
    """The Prometheus exporter."""

    #: HOST:PORT to serve /metrics on; empty = off. `--prometheus` sets it.
    listen: str = ""


class CopyTraceConfig(Section):
    """The copy trace: copies named by memory kind, from the library injected into the prover
    (`gapwatch copytrace build`, docs/copytrace.md). `--copytrace [PATH]` turns it on."""

    #: Listen for the library's datagrams (off by default: the prover must carry the library).
    enabled: bool = False
    #: Socket path; "" = gapwatch-copytrace.sock in $XDG_RUNTIME_DIR or /run/user/UID, else
    #: /tmp/gapwatch-UID/copytrace.sock: a folder only its owner can write to
    #: (`gapwatch.copytrace.socket_path`).
    socket: str = ""
    #: Permission bits of the socket file (the prover's user must be able to write to it;
    #: root always can).
    socket_mode: int = Field(0o600, ge=0, le=0o777)


#: The most GPUs the simulator runs, whether counted (`sim.gpus`) or named one scenario each
#: (`sim:pageable,chained,...`).
MAX_SIM_GPUS = 16


#: The simulator's `batch-wait` scenario's cuzk `[scheduler] max_batch_size` and
#: `max_batch_wait_ms` (its story: a batch of two that never fills, each request held 5 s):
#: `[sim.batch_wait]`'s defaults, and the scenario's own (`gapwatch.sources.sim`).
BATCH_WAIT_MAX_BATCH_SIZE = 2
BATCH_WAIT_MAX_BATCH_WAIT_MS = 5000
#: cuzk's `max_batch_size` is a u32 (config.rs:193): the most it can be.
CUZK_MAX_BATCH_SIZE = 2**32 - 1
#: The longest `[sim.batch_wait] max_batch_wait_ms`: a day. cuzk takes any u64 (config.rs:196);
#: held longer, every request of any run the simulator plays is held to its end, which a day
#: shows as well.
MAX_SIM_BATCH_WAIT_MS = 86_400_000


class SimBatchWaitConfig(Section):
    """cuzk's `[scheduler]` batch settings in the simulator's `batch-wait` scenario (its
    requests one at a time through cuzk's batch collector), under cuzk's own names so that the
    advice's line (`[scheduler] max_batch_wait_ms`) is the key to set: the advice followed on
    the simulator, `gapwatch compare` of the two runs shows its gain (docs/compare.md). Other
    scenarios keep their own batching (`batched`: fed, every batch full)."""

    #: 1: no batching, each request sent at once (cuzk's default; its 0 acts the same, so 1
    #: is the one way to say it here).
    max_batch_size: int = Field(BATCH_WAIT_MAX_BATCH_SIZE, ge=1, le=CUZK_MAX_BATCH_SIZE)
    #: How long the collector holds a batch that has not filled; 0: sent at once.
    max_batch_wait_ms: int = Field(BATCH_WAIT_MAX_BATCH_WAIT_MS, ge=0,
                                   le=MAX_SIM_BATCH_WAIT_MS)


class SimConfig(Section):
    """The simulated prover (`--source sim[:SCENARIO]`)."""

    #: A scenario for every GPU, or one per GPU separated by commas ("pageable,chained": GPU 0
    #: breaks down, GPU 1 chains); then their number is the GPU count. Checked when the
    #: simulator starts (`gapwatch.sources.sim.parse_scenarios`, the one list of names).
    scenario: str = "pageable"
    seed: int = 1
    #: Number of simulated GPUs (each with two workers).
    gpus: int = Field(1, ge=1, le=MAX_SIM_GPUS)
    #: Stop after this many simulated seconds (0 = run until stopped).
    duration_s: float = Field(0.0, ge=0, le=MAX_SECONDS)
    #: Where the simulated prover serves its own cuzk-style `GET /status` (speed > 0), HOST:PORT;
    #: port 0 = any free one (the URL is printed). When no `[cuzk] status_url` is given, gapwatch
    #: polls it. Empty = off.
    status_listen: str = "127.0.0.1:0"
    #: Record the simulated prover's host-to-device copies as the copy trace would see them
    #: (`gapwatch.sources.sim.SimCopyFeed`), each partition's a/b/c copy as
    #: `copies_per_partition` copies: "on", "off", or "auto": on in `gapwatch demo`, off
    #: otherwise (`record --source sim` writes copies only when asked).
    copy_trace: Literal["auto", "on", "off"] = "auto"
    copies_per_partition: int = Field(3, ge=1, le=1000)
    batch_wait: SimBatchWaitConfig = Field(default_factory=SimBatchWaitConfig)

    @field_validator("status_listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        if value.strip():
            split_listen(value, "status_listen")
        return value


class Config(Section):
    """The whole configuration. Sections mirror `config.example.toml`."""

    sampler: SamplerConfig = Field(default_factory=SamplerConfig)
    host: HostConfig = Field(default_factory=HostConfig)
    logs: LogsConfig = Field(default_factory=LogsConfig)
    detector: DetectorConfig = Field(default_factory=DetectorConfig)
    record: RecordConfig = Field(default_factory=RecordConfig)
    ui: UiConfig = Field(default_factory=UiConfig)
    snapshot: SnapshotConfig = Field(default_factory=SnapshotConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    prometheus: PrometheusConfig = Field(default_factory=PrometheusConfig)
    copytrace: CopyTraceConfig = Field(default_factory=CopyTraceConfig)
    sim: SimConfig = Field(default_factory=SimConfig)
    cuzk: CuzkConfig = Field(default_factory=CuzkConfig)


def default_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gapwatch" / "config.toml"


def _valid_keys(model: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    """The keys valid at `loc` (a pydantic error location), for "did you mean" suggestions."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return []
        annotation = fields[part].annotation
        args = getattr(annotation, "__args__", None)
        if args:  # list[UserRule] and friends
            annotation = next((a for a in args if isinstance(a, type)), annotation)
        current = annotation
    fields = getattr(current, "model_fields", None)
    return list(fields) if fields else []


#: Problems said per config file; the rest counted. A file of thousands of unknown keys would
#: otherwise print thousands of lines.
MAX_CONFIG_PROBLEMS = 20
#: How much of a bad value or key a problem quotes: a 60 KiB string, or an array nested
#: hundreds deep (whose plain repr recurses), is shown cut.
_QUOTE = reprlib.Repr()
_QUOTE.maxstring = _QUOTE.maxother = 80
_QUOTE.maxlevel = 3


def _describe(exc: ValidationError, origin: str) -> str:
    lines = []
    errors = exc.errors()
    for err in errors[:MAX_CONFIG_PROBLEMS]:
        loc = tuple(err["loc"])
        key = _QUOTE.repr(".".join(str(p) for p in loc))[1:-1]
        if err["type"] == "extra_forbidden":
            valid = _valid_keys(Config, loc)
            near = difflib.get_close_matches(str(loc[-1]), valid, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else f" (valid keys: {', '.join(valid)})"
            lines.append(f"{origin}: {key}: unknown key{hint}")
        else:
            lines.append(f"{origin}: {key}: {err['msg']} (got {_QUOTE.repr(err.get('input'))})")
    if len(errors) > MAX_CONFIG_PROBLEMS:
        lines.append(f"{origin}: {len(errors) - MAX_CONFIG_PROBLEMS} more problems")
    return "\n".join(lines)


def build_config(data: dict[str, Any], origin: str = "<defaults>") -> Config:
    """Validate a plain dict (from TOML or tests) into a `Config`, or raise `ConfigError`."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, origin)) from None


def load_config(path: str | Path | None = None) -> Config:
    """Load the configuration from `path`, the default location, or the defaults.

    Raises:
        ConfigError: the file cannot be read, is not TOML, or holds unknown keys or bad values.
    """
    explicit = path is not None
    file = Path(path) if path is not None else default_config_path()
    # `$XDG_CONFIG_HOME` of 5000 characters: `exists()` raised ENAMETOOLONG (a traceback in
    # every command); `--config` is checked by argparse by the same rule.
    problem = path_problem(str(file))
    if problem is not None:
        where = "--config" if explicit else "the default config ($XDG_CONFIG_HOME or $HOME)"
        raise ConfigError(f"{where}: {problem}")
    if not file.exists():
        if explicit:
            raise ConfigError(f"{_said(file)}: config file not found")
        return Config()
    try:
        data = tomllib.loads(_read_config_text(file))
    except OSError as exc:
        raise ConfigError(f"{_said(file)}: cannot read config: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{_said(file)}: cannot read config: not UTF-8 text ({exc.reason} "
                          f"at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{_said(file)}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ConfigError(
            f"{_said(file)}: not a config: its arrays or tables are nested too deep") from None
    return build_config(data, origin=_said(file))


def _said(file: Path) -> str:
    """The config file's name as its messages say it: one line whatever it holds (a newline in
    the path split the message into two lines, the second one looking like gapwatch's own)."""
    return fmt.visible(str(file))


def _read_config_text(file: Path) -> str:
    """The text of the config file `file`, read within bounds: a regular file of at most
    `MAX_CONFIG_BYTES`, or a FIFO (`--config <(...)`) that says that much with no silence over
    `CONFIG_FIFO_SILENCE_S`. Anything else (a directory, `/dev/zero`, a socket) is refused
    without reading it. Raises ConfigError, OSError, UnicodeDecodeError."""
    # Non-blocking: opening a FIFO nobody writes to would block here, deaf to the deadline.
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            if st.st_size > MAX_CONFIG_BYTES:
                raise ConfigError(f"{_said(file)}: not a config: {st.st_size} bytes, over the "
                                  f"{MAX_CONFIG_BYTES >> 10} KiB a config file may hold")
            raw = _read_regular(fd)
        elif stat.S_ISFIFO(st.st_mode):
            raw = _read_fifo(fd, file)
        else:
            raise ConfigError(f"{_said(file)}: not a config: {file_kind(st.st_mode)}, not a file")
    finally:
        os.close(fd)
    if len(raw) > MAX_CONFIG_BYTES:  # a file that grew since fstat, or a FIFO that says more
        raise ConfigError(f"{_said(file)}: not a config: over the {MAX_CONFIG_BYTES >> 10} KiB a "
                          "config file may hold")
    # A byte order mark (Notepad's UTF-8) is passed over: tomllib refused it as an "Invalid
    # statement (at line 1, column 1)" that no editor shows.
    text = raw.decode("utf-8-sig")
    # Checked on the text as a whole, strings included: a string value holding 16 dotted words
    # in a row is refused too, which no setting of gapwatch's needs.
    if _LONG_DOTTED_KEY.search(text):
        raise ConfigError(f"{_said(file)}: not a config: a dotted key of more than {MAX_KEY_PARTS} "
                          "parts (gapwatch's keys have at most 3)")
    return text


def _read_regular(fd: int) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got <= MAX_CONFIG_BYTES:
        chunk = os.read(fd, MAX_CONFIG_BYTES + 1 - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _read_fifo(fd: int, file: Path) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got <= MAX_CONFIG_BYTES:
        if not fifo_heard(fd, CONFIG_FIFO_SILENCE_S):
            raise ConfigError(f"{_said(file)}: a FIFO that said nothing for "
                              f"{CONFIG_FIFO_SILENCE_S:g} s; give a config file")
        try:
            chunk = os.read(fd, MAX_CONFIG_BYTES + 1 - got)
        except BlockingIOError:
            continue
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def with_overrides(config: Config, overrides: dict[str, dict[str, Any]]) -> Config:
    """Return `config` with CLI overrides applied section by section, validated again. The keys
    the file did not name stay unnamed (`model_fields_set`): the whole dump made every default
    one the user set, and an offline command judged a PoSt by this run's 30 s where the
    recording's own deadline was to judge it (`gapwatch.cuzk.post_deadlines`), whenever a flag
    such as `--log` was given."""
    data = config.model_dump(exclude_unset=True)
    for section, values in overrides.items():
        data.setdefault(section, {}).update(values)
    return build_config(data, origin="command line")


def judged_config(header: SessionHeader, config: Config) -> tuple[PostDeadlines, Config]:
    """The deadlines the PoSt of the recording of `header` are judged by (`post_deadlines.
    judged_by`: the recording's own, unless this run's config names the key), and `config`
    with them in its `[cuzk]`: what an offline command builds its PoSt watcher with. Called by
    `gapwatch.offline.report.detect_either` (report, export, compare's sides) and the replay's
    runtime (`gapwatch.engine.runtime`)."""
    judged = judged_by(header.config, config.cuzk)
    return judged, config.model_copy(update={"cuzk": judged.section})
