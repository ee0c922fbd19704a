"""The patterns that read prover text read it in time linear in its length.

A log line is outside text, read to its first `PARSE_CHARS` (16 KiB), and Python's `re` runs
in C holding the GIL: a pattern whose search may begin a match at each of many places and read
on from each to a distant end takes time quadratic in the line (a panic's 8 KiB message of
`aaa()@aaa()@...` took 0.7 s of CPU in the CUDA search, a span body of one 16 KiB word 1.5 s in
the field search, and the 100 ms sampler skipped its ticks meanwhile). No timing here: the
rewritten searches find what the old patterns found, on drawn texts, and no searched pattern
has the shape that made them quadratic (checked on the pattern itself, for every pattern of
`gapwatch.cuzk` and `gapwatch.logs`).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from re import _constants as sre_c  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]

from hypothesis import example, given, settings
from hypothesis import strategies as st

import gapwatch.cuzk
import gapwatch.logs
from gapwatch.core.values import convert_value
from gapwatch.cuzk.panics import cuda_error
from gapwatch.logs.parse import LogParser
from gapwatch.logs.parse.tracing import parse_kv_searching

#: The patterns as they were: what the linear searches must still find.
_OLD_CUDA = re.compile(r"(?P<call>\w+)\(\)@(?P<where>\S+?):? failed: \"(?P<error>[^\"]{0,200})\"")
_OLD_FIELD = re.compile(
    r'([A-Za-z_][\w.]*)=("(?:[^"\\]|\\.)*"|\[[^\]]*\]|.*?)(?= [A-Za-z_][\w.]*=|$)')

CUDA_TEXT = st.lists(st.sampled_from(
    ["a", "b_", "1", "\u00e9", "()@", "(", ")", "@", ":", "-", " ", "\n", '"', "x",
     ' failed: "', "/k.cu:22", "oom", "y" * 199]), max_size=16).map("".join)
FIELD_TEXT = st.lists(st.sampled_from(
    ["a", "b_", "1", ".", "\u00e9", "\u0663", "=", " ", '"', "\\", "[", "]", "x=", " k=",
     "\n", "-"]), max_size=14).map("".join)


@settings(max_examples=2000, deadline=None)
@given(CUDA_TEXT)
@example('x a()@/k.cu:22: failed: "oom"')  # the place without its trailing `:`
@example('a()@: failed: "oom"')  # a place of `:` alone is kept
@example('a()@ failed: "oom"')  # no place: none
@example('zz failed: "a()@f failed: "oom"')  # a ` failed: "` inside another's error text
@example('-\u00e9a()@b()@f failed: "oom"')  # the first call of the token, from its word's start
def test_the_cuda_error_is_what_the_old_pattern_found(text: str) -> None:
    m = _OLD_CUDA.search(text)
    found = cuda_error(text)
    assert (None if found is None else tuple(found)) == (
        None if m is None else (m["call"], m["where"], m["error"]))


@settings(max_examples=2000, deadline=None)
@given(FIELD_TEXT, st.integers(0, 6))
@example("1a=2 \u00e9b=3 .c=4", 0)  # a key is its run's part from its first ASCII letter
@example("a.1=x b=y", 0)
@example("b_=", 1)  # a key cut by the start is read from there
def test_the_field_search_finds_what_the_old_pattern_found(text: str, pos: int) -> None:
    assert parse_kv_searching(text, pos, {}) == {
        key: convert_value(value) for key, value in _OLD_FIELD.findall(text, pos)}


def test_a_panic_of_hostile_words_still_names_its_cuda_error() -> None:
    """The attack's message (8 KiB of `aaa()@` runs, no space), then the real CUDA line: the
    panic event names the call, the place and the error."""
    junk = (("a" * 100 + "()@") * 80)[:7000]
    parser = LogParser()
    lines = ["thread 'tokio-runtime-worker' panicked at /src/lib.rs:316:9:", junk,
             'cudaGetLastError()@/ntt/kernels/gs.cu:220 failed: "out of memory"',
             "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
             "2026-11-30T09:06:27.000000Z  INFO cuzk_core::engine: tick"]
    events = [e for line in lines for e in parser.parse_line(line, "stderr")]
    [panic] = [e for e in events + parser.flush() if e.kind == "panic"]
    assert (panic.fields["cuda_call"], panic.fields["cuda_where"], panic.fields["cuda_error"]) == (
        "cudaGetLastError", "/ntt/kernels/gs.cu:220", "out of memory")


# --- the shape: where a searched pattern may begin, and how far it reads from there -------

#: Patterns only ever matched at one place (`.match`/`.fullmatch`), never searched: a match
#: begins at one place, so a run read from it is read once. Checked against the source below.
_MATCHED_ONLY = {"_MONTH_PREFIX", "_JOURNAL_ORIGIN", "_RECORDING_HEAD", "_SPAN",
                 "_ONE_TOKEN_FIELDS", "_START", "NUMBER"}


def _unbounded(op: object, av: object) -> bool:
    return (op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT)
            and av[1] == sre_c.MAXREPEAT)  # type: ignore[index]


def _reads_on_from_any_place(items: list[tuple[object, object]]) -> bool | None:
    """Whether a search may begin this pattern at any character and reach an unbounded repeat
    before anything limits where it begins (a literal, a lookbehind, `^`): True, False (limited
    first, or no unbounded repeat), None (undecided: read on after it). A literal is taken as
    limiting enough: `x.*y` over `xxx...` would pass (no such pattern reads the logs now)."""
    for op, av in items:
        if op in (sre_c.LITERAL, sre_c.AT):
            return False
        if op in (sre_c.ASSERT, sre_c.ASSERT_NOT) and av[0] == -1:  # type: ignore[index]
            return False  # a lookbehind: a match begins only where a run does
        if _unbounded(op, av):
            return True
        if op == sre_c.SUBPATTERN:
            inner = _reads_on_from_any_place(list(av[-1]))  # type: ignore[index]
            if inner is not None:
                return inner
        elif op == sre_c.BRANCH:
            answers = [_reads_on_from_any_place(list(b)) for b in av[1]]  # type: ignore[index]
            if any(a is True for a in answers):
                return True
            if all(a is False for a in answers):
                return False
    return None


def _quadratic_shape(pattern: re.Pattern[str] | re.Pattern[bytes]) -> bool:
    items = list(sre_parse.parse(pattern.pattern, pattern.flags))
    if len(items) == 1 and _unbounded(*items[0]):
        return False  # one run and nothing after it: a match never fails once begun (`\S+`)
    return _reads_on_from_any_place(items) is True


def _patterns() -> list[tuple[str, str, re.Pattern[str] | re.Pattern[bytes]]]:
    found = []
    for package in (gapwatch.cuzk, gapwatch.logs):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if isinstance(value, re.Pattern):
                    found.append((info.name, name, value))
    return found


def test_the_check_knows_the_shape_that_was_quadratic() -> None:
    assert _quadratic_shape(_OLD_CUDA) and _quadratic_shape(_OLD_FIELD)
    assert not _quadratic_shape(re.compile(r"(?<!\w)(\w++)\(\)@"))
    assert not _quadratic_shape(re.compile(r"\S+"))


def test_no_searched_pattern_of_the_log_readers_begins_anywhere_and_reads_on() -> None:
    """A searched pattern whose match may begin at any character and reach an unbounded repeat
    (`\\w+...`, `[A-Za-z_][\\w.]*...`) reads a long run once for each of its characters."""
    patterns = _patterns()
    assert {"_CALL", "_FIELD", "_KEYED_TOKEN"} <= {name for _, name, _ in patterns}
    bad = [f"{module}.{name}: {p.pattern!r}" for module, name, p in patterns
           if name not in _MATCHED_ONLY and _quadratic_shape(p)]
    assert bad == []
    for module, name, _ in patterns:
        if name in _MATCHED_ONLY:
            source = inspect.getsource(importlib.import_module(module))
            uses = re.findall(rf"\b{name}\.(\w+)\(", source)
            assert uses and set(uses) <= {"match", "fullmatch"}, (module, name, uses)
