"""Nothing a log contains crashes the splitter or the parser: property tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gapwatch.config import build_config
from gapwatch.cuzk.partitions import derive_timeline
from gapwatch.logs.parse import PARSE_CHARS, LogParser
from gapwatch.logs.tail import LineSplitter

REAL_LINES = [
    line for name in ("pageable.log", "pinned.log")
    for line in (Path(__file__).parent / "data" / name).read_text().splitlines()
]
EXTRA = [
    '2026-05-12T14:13:32.351032Z  INFO synthesize_partition{job_id="porep-1-2" partition=3}: '
    "cuzk_core::pipeline: attempting pinned memory synthesis buf_gib=3.88 gpus=[0, 1]",
    "Nov 30 09:06:26.553439 gpu1 cuzk[812]: CUZK_TIMING: d_a_cache allocated 4096 MiB on gpu 1",
    "2026-11-30T09:06:26.553439+0000 gpu1 cuzk[812]: TIMELINE,1,GPU_START,j,worker=0",
    "\x1b[2m2026-05-12T14:14:02.010377Z\x1b[0m \x1b[32m INFO\x1b[0m a{b=\"}\"}: t: m k=v",
]
SEEDS = REAL_LINES + EXTRA

RULES = build_config({"logs": {"rules": [
    {"name": "r", "regex": r"(?P<timestamp>\S+) (?P<worker>\S+) (?P<phase>\w+)"}]}}).logs


def check_events(parser: LogParser, text: str) -> None:
    events = parser.parse_line(text, "s", 1, 1.0)
    for e in events:
        assert isinstance(e.t_wall_s, float)
        assert e.kind
    assert parser.counters["internal_errors"] == 0, text


@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=8), st.integers(64, 2048))
def test_random_bytes_through_splitter_and_parser(chunks: list[bytes], limit: int) -> None:
    splitter = LineSplitter(max_line_bytes=max(limit, 1024))
    parser = LogParser(RULES)
    lines = [line for chunk in chunks for line in splitter.feed(chunk)] + splitter.flush()
    for line in lines:
        check_events(parser, line)
    derive_timeline([])


# The strategies a mutation draws from, built once: built inside `mutated_line` they were built
# and validated again at every draw (a text strategy's alphabet each time), ~90 % of the test's CPU.
_SEED = st.sampled_from(SEEDS)
_MUTATIONS = st.integers(1, 4)
_OP = st.sampled_from(["cut", "insert", "delete", "replace"])
_JUNK = (st.text(alphabet=st.sampled_from(list(",=:{}[]()\" \x1b\x00Zz9-+.;\r\tµ")), max_size=4)
         | st.text(max_size=3))


@st.composite
def mutated_line(draw: st.DrawFn) -> str:
    line = draw(_SEED)
    for _ in range(draw(_MUTATIONS)):
        op = draw(_OP)
        pos = draw(st.integers(0, len(line)))
        junk = draw(_JUNK)
        if op == "cut":
            line = line[:pos]
        elif op == "insert":
            line = line[:pos] + junk + line[pos:]
        elif op == "delete":
            line = line[:pos] + line[pos + len(junk):]
        else:
            line = line[:pos] + junk + line[pos + len(junk):]
    return line


@pytest.mark.slow
# 120 lists of mutated lines a run (drawing them is most of the cost); each run of the suite
# draws new ones, so the runs add up to far more.
@settings(max_examples=120, deadline=None)
@given(st.lists(mutated_line(), min_size=1, max_size=20))
def test_mutated_real_lines_never_raise_and_timelines_still_derive(lines: list[str]) -> None:
    parser = LogParser(RULES)
    events = []
    for line in lines:
        check_events(parser, line)
        events += parser.parse_line(line, "s", 1, 1.0)
    derive_timeline(events)


def test_every_real_line_parses() -> None:
    parser = LogParser()
    for line in REAL_LINES:
        parser.parse_line(line, "s", 1, 1.0)
    assert parser.counters["unparsed"] == 0
    assert parser.counters["lines"] == len(REAL_LINES)


def test_a_megabyte_line_of_fields_is_parsed_in_its_first_slice_and_kept_whole() -> None:
    """Issue 29, item 7: one regex call over a 1 MiB line of `k=v` fields held the GIL 156 ms
    (the sampler missed ticks). The rules read the line's first PARSE_CHARS; `raw` is whole."""
    head = "2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: GPU_TIMING"
    line = head + " k0=v" * ((1 << 20) // 5)
    parser = LogParser()
    (event,) = parser.parse_line(line, "stdin", 0, 0.0)
    assert event.kind == "tracing" and event.raw == line
    assert parser.counters["parse_cut"] == 1
    # The fields come from the slice only: a field beyond it is not read.
    line_with_tail = line + " tail_field=1"
    (event,) = parser.parse_line(line_with_tail, "stdin", 0, 0.0)
    assert "tail_field" not in event.fields and event.raw == line_with_tail
    assert len(line_with_tail) > PARSE_CHARS


def test_a_line_of_the_longest_parsed_length_is_read_to_its_end() -> None:
    head = "2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: GPU_TIMING"
    line = head + " " + "x" * (PARSE_CHARS - len(head) - 10) + " last=1"
    assert len(line) <= PARSE_CHARS
    parser = LogParser()
    (event,) = parser.parse_line(line, "stdin", 0, 0.0)
    assert event.fields.get("last") == 1 and parser.counters["parse_cut"] == 0
