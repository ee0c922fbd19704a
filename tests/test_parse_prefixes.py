"""journald / `ts` prefixes: peeled, and their time used when the line has none of its own."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from gapwatch.logs.parse import LogParser
from gapwatch.logs.parse.prefixes import iso_to_epoch, strip_ansi, strip_prefix

ARRIVAL = 1_796_029_600.0  # 2026-11-30
LOCAL_0906 = time.mktime(datetime(2026, 11, 30, 9, 6, 26).timetuple())


def test_journald_short_iso_precise_prefix() -> None:
    rest, t = strip_prefix("2026-11-30T09:06:26.553439+0000 gpu1 cuzk[812]: CUZK_TIMING: a_ms=1",
                           ARRIVAL) or ("", 0.0)
    assert rest == "CUZK_TIMING: a_ms=1"
    assert t == pytest.approx(iso_to_epoch("2026-11-30T09:06:26.553439Z"))


def test_journald_short_iso_precise_with_colon_offset() -> None:
    rest, t = strip_prefix("2026-11-30T10:06:26.5+01:00 gpu1 cuzk[812]: x", ARRIVAL) or ("", 0.0)
    assert rest == "x" and t == pytest.approx(iso_to_epoch("2026-11-30T09:06:26.5Z"))


def test_journald_short_precise_and_ts_use_local_time_and_the_arrival_year() -> None:
    rest, t = strip_prefix("Nov 30 09:06:26.553439 gpu1 cuzk[812]: TIMELINE,1,X,j,", ARRIVAL) or ("", 0.0)
    assert rest == "TIMELINE,1,X,j," and t == pytest.approx(LOCAL_0906 + 0.553439)
    rest, t = strip_prefix("Nov 30 09:06:26 CUZK_TIMING: a_ms=1", ARRIVAL) or ("", 0.0)
    assert rest == "CUZK_TIMING: a_ms=1" and t == pytest.approx(LOCAL_0906)


def test_december_line_read_in_january_belongs_to_the_previous_year() -> None:
    jan_2 = time.mktime(datetime(2027, 1, 2, 12, 0, 0).timetuple())
    _, t = strip_prefix("Dec 31 23:59:59 x", jan_2) or ("", 0.0)
    assert t == pytest.approx(time.mktime(datetime(2026, 12, 31, 23, 59, 59).timetuple()))


def test_ts_epoch_and_space_separated_iso_prefixes() -> None:
    assert strip_prefix("1796029586.25 CUZK_NTT_H: total=1ms", ARRIVAL) == (
        "CUZK_NTT_H: total=1ms", 1796029586.25)
    rest, t = strip_prefix("2026-11-30 09:06:26.5 CUZK_TIMING: a_ms=1", ARRIVAL) or ("", 0.0)
    assert rest == "CUZK_TIMING: a_ms=1" and t == pytest.approx(LOCAL_0906 + 0.5)


def test_text_that_only_resembles_an_origin_keeps_its_words() -> None:
    rest, _ = strip_prefix("Nov 30 09:06:26 some words: here", ARRIVAL) or ("", 0.0)
    assert rest == "some words: here"
    assert strip_prefix("no prefix here", ARRIVAL) is None
    assert strip_prefix("Foo 30 09:06:26 x", ARRIVAL) is None


def test_time_source_precedence_line_then_prefix_then_timeline_then_arrival() -> None:
    p = LogParser()
    (anchor,) = p.parse_line("Nov 30 09:06:30.000000 h cuzk[1]: 2026-11-30T09:06:26.553439Z  INFO "
                             "cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
                             "j", 1, ARRIVAL)
    assert anchor.time_source == "line"
    assert anchor.t_wall_s == pytest.approx(iso_to_epoch("2026-11-30T09:06:26.553439Z"))
    (cpp,) = p.parse_line("Nov 30 09:06:26.5 h cuzk[1]: CUZK_TIMING: prep_msm_ms=3", "j", 1, ARRIVAL)
    assert cpp.time_source == "prefix" and cpp.t_wall_s == pytest.approx(LOCAL_0906 + 0.5)
    (tl_prefixed,) = p.parse_line("Nov 30 09:06:26.5 h cuzk[1]: TIMELINE,1000,GPU_START,j,worker=0",
                                  "j", 1, ARRIVAL)
    assert tl_prefixed.time_source == "prefix"
    (tl,) = p.parse_line("TIMELINE,1000,GPU_START,j,worker=0", "j", 1, ARRIVAL)
    assert tl.time_source == "timeline" and tl.t_wall_s == pytest.approx(anchor.t_wall_s + 1.0)
    (other,) = p.parse_line("hello", "j", 1, ARRIVAL)
    assert (other.kind, other.time_source, other.t_wall_s) == ("unparsed", "arrival", ARRIVAL)


def test_strip_ansi_handles_non_colour_escapes() -> None:
    assert strip_ansi("\x1b[2K\x1b[1;31mred\x1b[0m") == "red"
    assert strip_ansi("plain") == "plain"


@pytest.mark.parametrize("text", ["2026-11-30T25:00:00Z", "2026-02-30T01:00:00Z",
                                  "2026-11-30T09:06:26.Z", "2026-11-30T09:06:26+99:00", "short"])
def test_bad_iso_times_are_none(text: str) -> None:
    assert iso_to_epoch(text) is None


def test_a_kubernetes_cri_log_line_is_peeled_to_the_provers_line() -> None:
    """`/var/log/pods/NS_POD_UID/cuzk/0.log`: the runtime's time, the stream and F (a full
    line) or P (a part of a longer one) before the prover's line."""
    rest, t = strip_prefix("2026-11-30T09:06:26.553439123Z stderr F TIMELINE,1,X,j,",
                           ARRIVAL) or ("", 0.0)
    assert rest == "TIMELINE,1,X,j," and t == pytest.approx(iso_to_epoch("2026-11-30T09:06:26.553439Z"))
    rest, _ = strip_prefix("2026-11-30T09:06:26Z stdout P CUZK_TIMING: a_ms=1", ARRIVAL) or ("", 0)
    assert rest == "CUZK_TIMING: a_ms=1"


def test_a_docker_json_file_record_is_decoded_to_the_provers_line() -> None:
    """`/var/lib/docker/containers/ID/ID-json.log`: the line JSON-escaped, colours and all."""
    record = ('{"log":"\\u001b[32m2026-11-30T09:06:26.553439Z \\u001b[0m INFO cuzk_core::engine: '
              'starting cuzk engine pipeline_enabled=true\\n","stream":"stdout",'
              '"time":"2026-11-30T09:06:26.600000000Z"}')
    rest, t = strip_prefix(record, ARRIVAL) or ("", 0.0)
    assert rest == ("2026-11-30T09:06:26.553439Z  INFO cuzk_core::engine: starting cuzk engine "
                    "pipeline_enabled=true")
    assert t == pytest.approx(iso_to_epoch("2026-11-30T09:06:26.6Z"))
    (event,) = LogParser().parse_line(record, "docker", 1, ARRIVAL)
    assert event.name == "starting cuzk engine" and event.time_source == "line"
    assert event.t_wall_s == pytest.approx(iso_to_epoch("2026-11-30T09:06:26.553439Z"))


def test_a_docker_record_with_the_containers_labels_is_decoded_too() -> None:
    record = ('{"log":"CUZK_TIMING: a_ms=1\\n","stream":"stderr","attrs":{"app":"cuzk",'
              '"tag":"a}b"},"time":"2026-11-30T09:06:26Z"}')
    assert strip_prefix(record, ARRIVAL) == ("CUZK_TIMING: a_ms=1",
                                             iso_to_epoch("2026-11-30T09:06:26Z"))


def test_json_lines_of_other_shapes_are_not_taken_for_dockers() -> None:
    assert strip_prefix('{"log":"x","time":"2026-11-30T09:06:26Z"}', ARRIVAL) is None
    assert strip_prefix('{"level":"info","msg":"hello"}', ARRIVAL) is None
    assert strip_prefix('{"log":"\\ud800","stream":"stdout","time":"not a time at all"}',
                        ARRIVAL) is None
