"""tracing's fast paths give what the plain ways give: the `key=value` split and the span pattern.

`parse_kv` splits one-token fields at spaces (most of cuzk's) and sends anything else to
`parse_kv_searching`, the one `_FIELD` search; the two must agree on every text, or a line
would parse differently depending on which way it took. The span pattern is possessive (no
backtracking into a span's body); it must match what the pattern written one character at a
time matches.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gapwatch.core.models import LogEvent
from gapwatch.cuzk import log_lines
from gapwatch.logs.parse import _EVENT_FIELDS, LogParser
from gapwatch.logs.parse.tracing import _SPAN, parse_kv, parse_kv_searching

#: Texts shaped like fields (`key=value`, a space or two between) whose keys and values are
#: made of the pieces the syntax turns on: quotes, brackets, spaces, `=`, escapes, newlines,
#: non-ASCII; so that most draws almost follow the one-token rule and some just break it.
KEY = st.sampled_from(["a", "b_", "x.y", "1a", "\u00e9", "a-b", ""])
VALUE = st.lists(st.sampled_from(['"', "[", "]", "x", " ", "\\", "\n", "=", "\u00e9"]),
                 max_size=3).map("".join)
FIELD_TEXT = st.builds(
    lambda head, fields, sep: head + sep.join(k + "=" + v for k, v in fields),
    st.sampled_from(["", "msg ", " "]), st.lists(st.tuples(KEY, VALUE), max_size=4),
    st.sampled_from([" ", "  "]))


@settings(max_examples=300, deadline=None)
@given(FIELD_TEXT, st.integers(0, 5))
# Each of these breaks the one-token rule in one way; a split that took it would differ.
@example('a=" a="', 0)  # a quoted string runs past the space
@example("a=[ a=]", 0)  # so does a list
@example('a="x\\" b_=1"', 0)  # an escaped quote does not end it
@example("\u00e9=1 a\u00e9=\u00b2", 0)  # a key must start as ASCII, and may go on in any script
@example("a=1  b_=2", 0)  # two spaces: the first value keeps one
@example("a=1\nb_=2", 0)  # a newline ends the search's values
@example("msg a=1", 0)  # text before the first key is skipped
@example("a=1 b_=2", 3)  # so is a key cut by the start
def test_the_split_and_the_search_give_the_same_fields(text: str, pos: int) -> None:
    assert parse_kv(text, pos) == parse_kv_searching(text, pos, {})


def test_one_token_fields_are_split_and_the_rest_searched() -> None:
    # Both ways, on the shapes cuzk writes: the split's answers are those of the search.
    cases = {
        "worker_id=1 partition=Some(4) prove_start_ms=2992":
            {"worker_id": 1, "partition": 4, "prove_start_ms": 2992},
        'job_id="porep-1-2" partition=10': {"job_id": "porep-1-2", "partition": 10},
        "gpus=[0] a= b=x=y": {"gpus": "[0]", "a": "", "b": "x=y"},
        # A value with a space, a quoted string or a list holding one: searched.
        "error=partition 3 failed code=7": {"error": "partition 3 failed", "code": 7},
        'msg="a b=1" n=2': {"msg": "a b=1", "n": 2},
        "gpus=[0, 1] n=2": {"gpus": "[0, 1]", "n": 2},
        "a=[x b=1]": {"a": "[x b=1]"},
    }
    for text, fields in cases.items():
        assert parse_kv(text) == fields, text
        assert parse_kv_searching(text, 0, {}) == fields, text


#: The span pattern as first written, one character at a time: the reference for the
#: possessive one the parser uses (same matches, no backtracking into a span's body).
PLAIN_SPAN = re.compile(r'([A-Za-z_]\w*)(?:\{((?:[^{}"]|"(?:[^"\\]|\\.)*")*)\})?:(?!:)')
SPAN_TEXT = st.lists(st.sampled_from(
    ["a", "b_", "{", "}", '"', "\\", ":", " ", "=", "1", "\n", "x=1", 'q="}"']), max_size=10,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(SPAN_TEXT, st.integers(0, 2))
@example('s{a="}" b=1}: t: m', 0)  # a brace inside a quoted value does not end the body
@example('s{a="x\\"}"}:', 0)  # nor does one after an escaped quote
@example("s{a=1}::x", 0)  # a second colon makes it a target
@example("s{a=1", 0)  # an unclosed body is no span
def test_the_possessive_span_pattern_matches_what_the_plain_one_matches(text: str,
                                                                        pos: int) -> None:
    mine, plain = _SPAN.match(text, pos), PLAIN_SPAN.match(text, pos)
    assert (mine and (mine.span(), mine.groups())) == (plain and (plain.span(), plain.groups()))


def test_the_rules_build_their_events_in_the_order_of_log_events_fields() -> None:
    # The parser's hot paths pass a LogEvent's fields by position, in `_EVENT_FIELDS`' order.
    assert _EVENT_FIELDS == LogEvent.__struct_fields__


def test_a_span_parsed_before_gives_its_fields_afresh_to_each_line() -> None:
    parser = LogParser(offline=True)
    line = ('2026-11-30T00:54:57.000000Z  INFO synthesize_partition{job_id="porep-1004-9" '
            'partition=4}: cuzk_core::pipeline: partition synthesis complete synth_ms={ms}')
    first = parser.parse_line(line.replace("{ms}", "1904"))[0].fields
    again = parser.parse_line(line.replace("{ms}", "2253"))[0].fields
    assert first == {"job_id": "porep-1004-9", "partition": 4, "synth_ms": 1904,
                     "spans": "synthesize_partition", "target": "cuzk_core::pipeline"}
    assert again == {**first, "synth_ms": 2253}
    plain = parser.parse_line(line.replace(" synth_ms={ms}", ""))[0].fields
    assert "synth_ms" not in plain  # no line's own fields stayed with the span


def test_a_tail_parsed_before_gives_its_parts_afresh_to_each_line() -> None:
    # A line's tail (target, message, own fields) is kept once parsed (`tracing._TAILS`): the
    # next line with the same tail in another span takes the same parts and a dict of its own.
    parser = LogParser(offline=True)
    tail = "cuzk_core::pinned_pool: cudaHostAlloc failed size_gib=3.882613 cuda_err=2"
    lines = [f'2026-11-30T00:54:57.00000{i}Z  WARN synthesize_partition{{job_id="porep-1-{i}" '
             f'partition={i}}}: {tail}' for i in range(2)]
    first, again = (parser.parse_line(line)[0] for line in lines)
    assert first.name == again.name == "cudaHostAlloc failed"
    assert first.fields == {"job_id": "porep-1-0", "partition": 0, "size_gib": 3.882613,
                            "cuda_err": 2, "spans": "synthesize_partition",
                            "target": "cuzk_core::pinned_pool"}
    assert again.fields == {**first.fields, "job_id": "porep-1-1", "partition": 1}
    first.fields["cuda_err"] = 99  # the kept parts are not the event's
    third = parser.parse_line(lines[0])[0]
    assert third.fields["cuda_err"] == 2 and third.t_wall_s == first.t_wall_s
    bare = parser.parse_line(f"2026-11-30T00:54:58.000000Z  WARN {tail}")[0]
    assert bare.fields == {"size_gib": 3.882613, "cuda_err": 2,
                           "target": "cuzk_core::pinned_pool"}
    # Lines without a span take the tail's fields alone, no span's dict between: each its own.
    bare.fields["cuda_err"] = 99
    later = [parser.parse_line(f"2026-11-30T00:54:5{9 - i}.000000Z  WARN {tail}")[0]
             for i in range(2)]
    assert [e.fields["cuda_err"] for e in later] == [2, 2]
    assert later[0].fields is not later[1].fields


#: C++ timing line bodies made of the pieces their split turns on: whitespace of several kinds
#: (`str.split` cuts at any), `=` first, last or alone, the prose lines' fixed words.
CPP_BODY = st.lists(st.sampled_from(
    ["a", "=", "1", " ", "\t", "\u2003", "\x1c", "ms", "d_a_cache allocated 12 MiB on gpu 0",
     "set pool release threshold to MAX on gpu -1", "d_a_cache allocated x"]),
    max_size=6).map("".join)


@settings(max_examples=400, deadline=None)
@given(CPP_BODY)
@example("=1 =2")  # no key before any `=`: no fields
@example("a=")  # a key and an empty value: a field
@example("x\u2003a=1")  # a token after a wide space
@example("set pool release threshold to MAX on gpu 3")  # prose, no `=`
def test_whether_a_cpp_timing_line_parses_is_told_without_parsing_it(body: str) -> None:
    assert log_lines.cuzk_cpp_parses(body, timing=True) == \
        (log_lines.parse_cuzk_timing(body) is not None)
    assert log_lines.cuzk_cpp_parses(body, timing=False) == \
        (log_lines.parse_cuzk_ntt_h(body) is not None)


def _kept(parser: LogParser, lines: list[str]) -> tuple[list[LogEvent], dict[str, int]]:
    """What `file_events` keeps of `lines` (events timed after 0), and the counters."""
    events = [e for line in lines for e in parser.parse_line(line, stream="f.log")]
    events += parser.flush()
    return [e for e in events if e.t_wall_s > 0], dict(parser.counters)


def test_a_parser_whose_reader_drops_untimed_events_keeps_and_counts_the_same() -> None:
    # `drops_untimed` (the offline reader's parser) gives a C++ timing line's event without its
    # fields once lock attribution is off: what the reader keeps, and every count, are the same
    # (a panic's block ended by such a line, a prefix-timed one, lines that do not parse).
    start = ("2026-11-30T00:53:20.000000Z  INFO cuzk_core::engine: initializing GPU workers "
             "num_gpus={n} gpu_workers_per_device=1")
    body = [
        "2026-11-30T00:53:21.000000Z  INFO cuzk_core::engine: pipeline GPU worker started "
        "worker_id=0 gpu=0 sub_id=0",
        "CUZK_TIMING: pre_lock_cpu_ms=2211 mutex_wait_ms=0",
        "CUZK_NTT_H: d_b_alloc=0ms ntt_kernels=2095ms total=2598ms",
        "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=2602",
        "CUZK_TIMING: mutex_held_ms=923 total_start_fn_ms=3018",
        "2026-11-30T00:53:22.000000Z  INFO cuzk_core::engine: GPU_TIMING spawn_blocking "
        "prove_start worker_id=0 partition=Some(2) spawn_to_enter_ms=0 prove_start_ms=3018",
        "thread 'tokio-runtime-worker' panicked at src/engine.rs:10:5:",
        "called `Option::unwrap()` on a `None` value",
        "CUZK_TIMING: gpu_tid=0 tail_msm_ms=20 gpu_total_ms=923",
        "a line no rule reads (after the panic's block, not in its message)",
        "2026-11-30T00:53:23.000000Z CUZK_TIMING: gpu_tid=1 tail_msm_ms=20",  # prefix-timed
        "CUZK_TIMING: =1 no fields", "CUZK_NTT_H: none", "CUZK_OTHER: a=1",
        "CUZK_TIMING: set pool release threshold to MAX on gpu 1",
    ]
    for n in (1, 8):  # attribution on (one GPU) and off
        lines = [start.format(n=n), *body]
        dropping = LogParser(keep_unparsed=False, offline=True, drops_untimed=True)
        plain = LogParser(keep_unparsed=False, offline=True)
        kept = _kept(dropping, lines)
        assert kept == _kept(plain, lines)
        panic = [e for e in kept[0] if e.kind == "panic"]
        assert len(panic) == 1 and "no rule reads" not in str(panic[0].fields)
        assert dropping.counters["kind:cuzk_timing"] >= 4
