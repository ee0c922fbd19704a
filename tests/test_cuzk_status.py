"""cuzk's `/status` as a source: the JSON read leniently into `ProverStatus`, and the poller
against a real loopback server that behaves like cuzk's (raw HTTP/1.1, one request per
connection, `Connection: close`): every failure counted by reason, polling goes on, and the
100 ms sampler keeps its schedule while the server stalls."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import msgspec
import pytest
from cuzk_fakes import WAITS_ON_SYNTHESIS, cuzk_doc, ok_answer, truncated_answer

from evaluation.simulate import ListSink
from gapwatch.base.clock import FakeClock
from gapwatch.core.models import GpuInfo, GpuSample, Notice, ProverStatus
from gapwatch.cuzk.config import status_url
from gapwatch.cuzk.status import (
    MAX_PARTITIONS_PER_POLL,
    MAX_PIPELINES_PER_POLL,
    MAX_TEXT_CHARS,
    StatusError,
    parse_status,
)
from gapwatch.engine.sampler import Sampler
from gapwatch.engine.session import Session, default_header
from gapwatch.engine.store import SeriesStore
from gapwatch.sources import Tick
from gapwatch.sources.cuzk_status import MAX_BODY_BYTES, StatusPoller, fetch_status
from gapwatch.sources.cuzk_status_server import CuzkStatusServer, http_response, not_found

DATA = Path(__file__).parent / "data"


def _parse(body: bytes, counters: dict[str, int] | None = None) -> ProverStatus:
    return parse_status(body, "p", 1, 2.0, 0.5, counters)


def test_a_cuzk_snapshot_becomes_a_compact_prover_record() -> None:
    st = _parse((DATA / "cuzk-status.json").read_bytes())
    assert st.type == "prover" and st.prover == "p" and st.latency_ms == 0.5
    assert st.partition_counts == {"pending": 2, "synthesizing": 4, "synth_done": 0, "gpu": 2,
                                   "done": 3, "failed": 0}
    assert (st.synthesis_active, st.synthesis_max, st.queue_depth, st.jobs) == (18, 18, 2, 2)
    assert (st.completed_total, st.failed_total, st.uptime_s) == (57, 1, 812.4)
    assert [(w.worker_id, w.gpu, w.state, w.partition, w.busy_s) for w in st.workers] == \
        [(0, 0, "proving", 4, 0.4), (1, 0, "proving", 3, 1.21)]
    # A WindowPoSt job id holds spaces and brackets: kept whole.
    assert "wdpost-1000-3-[12 34 56 78 90 12 34 56]" in {p.job_id for p in st.partitions}
    assert [(p.index, p.state, p.synth_ms, p.gpu_ms) for p in st.partitions][3] == \
        (3, "gpu", 28511, 1210)


def test_fields_cuzk_omits_or_mistypes_are_none_and_counted_the_rest_is_kept() -> None:
    doc = json.loads((DATA / "cuzk-status.json").read_text())
    del doc["counters"]
    doc["synthesis"]["active"] = "eighteen"  # a future type change
    doc["gpu_workers"][0]["busy_secs"] = -1.0  # not a duration
    doc["gpu_workers"].append("not a worker")
    doc["pipelines"][0]["partitions"][0]["state"] = "verifying"  # a state cuzk may add
    doc["brand_new_section"] = {"x": 1}
    counters: dict[str, int] = {}
    st = _parse(json.dumps(doc).encode(), counters)
    assert st.queue_depth is None and st.completed_total is None  # omitted: None, never 0
    assert st.synthesis_active is None and st.synthesis_max == 18
    assert st.workers[0].busy_s is None and len(st.workers) == 2
    assert st.partition_counts["other"] == 1 and st.partition_counts["done"] == 2
    # The mistyped count, the negative duration (a Rust f64 duration is never < 0) and the
    # junk worker.
    assert counters["dropped_fields"] == 3


def test_a_pipelines_of_the_wrong_type_leaves_jobs_unknown_never_zero() -> None:
    doc = json.loads((DATA / "cuzk-status.json").read_text())
    doc["pipelines"] = {"porep-1": "not a list"}
    counters: dict[str, int] = {}
    st = _parse(json.dumps(doc).encode(), counters)
    assert st.jobs is None and st.partition_counts == {} and st.partitions == []
    assert counters["dropped_fields"] == 1
    assert st.synthesis_active == 18 and len(st.workers) == 2  # the rest is kept
    assert _parse(json.dumps({**doc, "pipelines": []}).encode()).jobs == 0


def test_a_body_that_is_not_json_or_not_an_object_is_refused_by_reason() -> None:
    for body, reason in ((b'{"uptime_secs": 1.0, "pipel', "bad_json"), (b"<html>", "bad_json"),
                         (b"[1, 2]", "bad_schema"), (b'"ok"', "bad_schema")):
        try:
            _parse(body)
        except StatusError as exc:
            assert exc.reason == reason, body
        else:
            raise AssertionError(f"{body!r} was accepted")


def test_an_answer_nested_a_hundred_thousand_deep_is_bad_json_not_an_internal_error() -> None:
    """msgspec's depth guard raises RecursionError: the poller counted such an answer as its own
    bug (`internal`, "gapwatch could not read it: RecursionError(...)")."""
    deep = b"[" * 100_000 + b"]" * 100_000
    for body in (deep, b'{"pipelines": ' + deep + b"}",
                 b'{"pipelines": [{"partitions": ' + deep + b"}]}"):
        try:
            _parse(body)
        except StatusError as exc:
            assert exc.reason == "bad_json" and "nested too deep" in str(exc)
        else:
            raise AssertionError("a 100,000-deep answer was accepted")


def _raw_get(port: int, request: bytes) -> tuple[bytes, bool]:
    """Send `request` on a fresh connection; (the whole answer, connection closed by server)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request)
        chunks: list[bytes] = []
        while True:
            data = s.recv(65536)
            if not data:
                return b"".join(chunks), True
            chunks.append(data)


def test_the_stand_in_server_answers_as_cuzks_does_one_request_per_connection() -> None:
    with CuzkStatusServer(lambda: cuzk_doc(synth_done=1)) as server:
        answer, closed = _raw_get(server.port, b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
        head, _, body = answer.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        assert lines[0] == "HTTP/1.1 200 OK" and closed
        assert {"Content-Type: application/json", f"Content-Length: {len(body)}",
                "Access-Control-Allow-Origin: *", "Connection: close"} <= set(lines[1:])
        assert json.loads(body)["synthesis"]["max_concurrent"] == 83  # 750 GiB / 9 GiB
        other, _ = _raw_get(server.port, b"GET /metrics HTTP/1.1\r\n\r\n")
        assert other.startswith(b"HTTP/1.1 404 Not Found")
        # A second request on the same connection gets nothing: the server has closed it.
        pipelined, closed = _raw_get(server.port, b"GET /status HTTP/1.1\r\n\r\n"
                                                  b"GET /status HTTP/1.1\r\n\r\n")
        assert closed and pipelined.count(b"HTTP/1.1 200 OK") == 1


def test_the_poller_asks_like_a_client_cuzk_expects_and_hands_on_the_snapshot() -> None:
    got: list[ProverStatus] = []
    with CuzkStatusServer(lambda: WAITS_ON_SYNTHESIS) as server:
        poller = StatusPoller(server.url, 1.0, 2.0, got.append, clock=FakeClock())
        assert poller.poll_once() is not None
        assert server.request_lines == ["GET /status HTTP/1.1"]
    assert got[0].prover == f"127.0.0.1:{server.port}" and got[0].latency_ms >= 0
    st = poller.status()
    assert (st.state, st.polls, st.ok, st.errors) == ("ok", 1, 1, {})


def test_every_failure_is_counted_by_reason_said_once_and_polling_goes_on() -> None:
    release = threading.Event()
    script: list[bytes | None] = [
        not_found(),
        http_response(500, "Internal Server Error", b'{"error": "serialize"}'),
        truncated_answer(WAITS_ON_SYNTHESIS),
        http_response(200, "OK", b'{"uptime_secs": 1.0, "pipel'),
        http_response(200, "OK", b"[]"),
        None,  # slow: answers only after the poller gave up
        not_found(),
        ok_answer(WAITS_ON_SYNTHESIS),
    ]

    def respond(line: str) -> bytes:
        answer = script.pop(0)
        if answer is None:
            release.wait(10)
            return b""
        return answer

    notices: list[Notice] = []
    got: list[ProverStatus] = []
    with socket.socket() as closed:
        # Bound, never listening: connecting is refused, and no other process can take the
        # port meanwhile (a port picked, closed and dialled later could be anyone's by then).
        closed.bind(("127.0.0.1", 0))
        refused = StatusPoller(f"http://127.0.0.1:{closed.getsockname()[1]}/status", 1.0, 0.3,
                               got.append, notices.append, clock=FakeClock())
        assert refused.poll_once() is None and refused.status().errors == {"refused": 1}
    with CuzkStatusServer(respond=respond) as server:
        poller = StatusPoller(server.url, 1.0, 0.3, got.append, notices.append,
                              clock=FakeClock())
        results = [poller.poll_once() for _ in range(6)]
        release.set()
        results += [poller.poll_once(), poller.poll_once()]
    assert results[:7] == [None] * 7 and results[7] is not None and got == [results[7]]
    st = poller.status()
    assert st.errors == {"http_404": 2, "http_500": 1, "truncated": 1, "bad_json": 1,
                         "bad_schema": 1, "timeout": 1}
    assert (st.state, st.polls, st.ok) == ("ok", 8, 1)
    said = [n.message for n in notices if n.level == "warning"]
    # One warning per kind of failure (not one per poll), then one note on recovery.
    assert len(said) == 7 and sum("http_404" in m for m in said) == 1
    assert "connection refused" in said[0]
    assert notices[-1].level == "info" and "answering again after 7 failed polls" in \
        notices[-1].message



def _refused_at(port: int) -> socket.socket:
    """A socket bound to `port` and never listening: a connection there is refused, and no
    other process takes the port meanwhile."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


def test_a_poll_refused_after_answered_ones_says_the_prover_stopped_answering_not_the_address(
        ) -> None:
    # The H200 cuzk-status recording: 36 snapshots from 127.0.0.1:38043, then the prover
    # exited and the next poll was said as "connection refused (is cuzk's [daemon]
    # status_listen set to this address?)": the address was right.
    notices: list[Notice] = []
    clock = FakeClock()
    with CuzkStatusServer(lambda: WAITS_ON_SYNTHESIS) as server:
        port = server.port
        poller = StatusPoller(server.url, 1.0, 2.0, lambda _s: None, notices.append,
                              clock=clock)
        for _ in range(3):
            assert poller.poll_once() is not None
            clock.advance_ns(1_000_000_000)
    with _refused_at(port):
        assert poller.poll_once() is None and poller.poll_once() is None
    said = [n.message for n in notices if n.level == "warning"]
    assert said == [f"cuzk status {poller.url}: connection refused after 3 answered polls (the "
                    "last at 00:53:22 UTC): the prover no longer answers at this address (it "
                    "exited, or is restarting); polling goes on, failures counted (refused)"]
    # It answers again, then stops again: said again, with what it had answered by then.
    with CuzkStatusServer(lambda: WAITS_ON_SYNTHESIS, port=port):
        assert poller.poll_once() is not None
    with _refused_at(port):
        assert poller.poll_once() is None
    said = [n.message for n in notices if n.level == "warning"]
    assert len(said) == 2 and "connection refused after 4 answered polls" in said[1]
    assert poller.status().errors == {"refused": 3}
    # Never answered: the address may be wrong, and the hint stays.
    with _refused_at(port):
        fresh = StatusPoller(poller.url, 1.0, 2.0, lambda _s: None, notices.append,
                             clock=FakeClock())
        assert fresh.poll_once() is None
    assert notices[-1].message.startswith(
        f"cuzk status {poller.url}: connection refused (is cuzk's [daemon] status_listen set "
        "to this address?)")



def test_a_replay_of_a_recording_made_before_says_its_refusal_after_answered_polls_as_such(
        capsys: pytest.CaptureFixture[str]) -> None:
    # The recording holds the address question its poller said then; its 39 snapshots (36
    # whole, 3 unchanged markers) before it say the prover had answered there.
    from gapwatch.cli import main

    rec = DATA / "h200-cuzk-status" / "host-stall-status" / "rec.jsonl.gz"
    assert main(["replay", "--headless", "--speed", "0", str(rec)]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "refused" in line]
    assert said == ["warning: cuzk status http://127.0.0.1:38043/status: connection refused "
                    "after 39 answered polls (the last at 01:09:18 UTC): the prover no longer "
                    "answers at this address (it exited, or is restarting); polling goes on, "
                    "failures counted (refused)"]


def test_a_recorded_refusal_of_a_url_that_never_answered_keeps_the_address_question() -> None:
    from gapwatch.sources.cuzk_status import REFUSED_NEVER_ANSWERED, RecordedRefusals

    said = (f"cuzk status http://10.0.0.9:9821/status: {REFUSED_NEVER_ANSWERED}; polling goes "
            "on, failures counted (refused)")
    notice = Notice(t_mono_ns=1, t_wall_s=1.0, level="warning", message=said)
    refusals = RecordedRefusals()
    other = ProverStatus("127.0.0.1:9821", 0, 0.5, 1.0, 1.0, {}, [], 0, 0, 0, 0)
    assert refusals.said(other) is other
    assert refusals.said(notice) is notice  # another prover's snapshots say nothing of it


def test_polling_on_its_own_thread_keeps_going_through_failures() -> None:
    with CuzkStatusServer(respond=lambda line: not_found()) as server:
        poller = StatusPoller(server.url, 0.1, 1.0, lambda s: None)
        poller.start()
        try:
            for _ in range(200):
                if poller.status().errors.get("http_404", 0) >= 3:
                    break
                threading.Event().wait(0.05)
        finally:
            poller.stop()
    assert poller.status().errors["http_404"] >= 3 and poller.status().ok == 0


class _Source:
    """One GPU sample per read; remembers whether the status server was stalled at each read."""

    def __init__(self, stalled: threading.Event) -> None:
        self.stalled = stalled
        self.calls: list[int] = []
        self.stalled_at_read: list[bool] = []

    def open(self) -> list[GpuInfo]:
        return [GpuInfo(index=0)]

    def read(self, t_mono_ns: int, t_wall_s: float, lateness_ns: int) -> Tick:
        self.calls.append(t_mono_ns)
        self.stalled_at_read.append(self.stalled.is_set())
        return Tick(gpu=[GpuSample(0, t_mono_ns, t_wall_s, 100_000_000, 50.0, 50.0, 1.0, 1.0,
                                   lateness_ns=lateness_ns)])

    def close(self) -> None:
        pass


def test_the_sampler_keeps_its_schedule_while_the_status_server_stalls() -> None:
    """The poller is blocked inside a request for the whole sampler run, on the same session:
    every tick still runs on its deadline and every sample reaches the session."""
    stalled, release = threading.Event(), threading.Event()

    def respond(line: str) -> bytes:
        stalled.set()
        release.wait(20)
        stalled.clear()
        return ok_answer(WAITS_ON_SYNTHESIS)

    sink = ListSink()
    header = default_header("test", [GpuInfo(index=0)], 100.0)
    session = Session(header, SeriesStore([GpuInfo(index=0)], 0.1), sinks=[sink])
    with CuzkStatusServer(respond=respond) as server:
        poller = StatusPoller(server.url, 1.0, 15.0, session.on_record,
                              session.on_notice)
        poller.start()
        try:
            assert stalled.wait(10), "the poller never reached the server"
            clock = FakeClock(start_mono_ns=0)
            source = _Source(stalled)
            sampler = Sampler(source, None, session, clock, 100_000_000, duration_ns=3 * 10**9)
            runner = threading.Thread(target=sampler.run)
            runner.start()
            runner.join(15)  # a deadlock guard, not a timing threshold
            assert not runner.is_alive(), "the sampler was blocked by the stalled poller"
            assert all(source.stalled_at_read) and len(source.calls) == 31
            assert source.calls == [k * 100_000_000 for k in range(31)]
            assert sampler.lateness().max_ms == 0.0 and sampler.skipped_ticks == 0
            assert sum(isinstance(r, GpuSample) for r in sink.records) == 31
        finally:
            release.set()
            for _ in range(200):
                if poller.status().ok:
                    break
                threading.Event().wait(0.05)
            poller.stop()
    # Once the server answered, its snapshot joined the session like any record.
    assert poller.status().ok == 1
    assert any(isinstance(r, ProverStatus) for r in sink.records)


def test_a_server_that_drips_forever_is_a_timeout_within_the_poll_deadline() -> None:
    """One deadline per request (connect plus the whole answer): a server that drips a byte
    every 0.05 s costs one poll its deadline (0.3 s) and is counted as a timeout; a deadline
    per receive would wait for every byte (here 3 s of them, then a cut answer)."""
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
            for _ in range(60):
                if stop.wait(0.05):
                    return
                conn.sendall(b" ")

    t = threading.Thread(target=serve)
    t.start()
    poller = StatusPoller(f"http://127.0.0.1:{port}/status", 1.0, 0.3, lambda s: None,
                          clock=FakeClock())
    try:
        assert poller.poll_once() is None
    finally:
        stop.set()
        t.join(5)
        listener.close()
    st = poller.status()
    assert st.errors == {"timeout": 1} and st.polls == 1


def test_an_oversized_answer_is_refused() -> None:
    big = http_response(200, "OK", b" " * 5000 + b"{}")
    with CuzkStatusServer(respond=lambda line: big) as server:
        try:
            fetch_status(server.url, 2.0, max_bytes=4096)
        except StatusError as exc:
            assert exc.reason == "too_large"
        else:
            raise AssertionError("accepted")


def _many_partitions(pipelines: int, per_pipeline: int, bad_field: bool = False) -> bytes:
    part = {"index": 1, "state": "gpu", "synth_ms": -1 if bad_field else 10, "gpu_ms": 20}
    return json.dumps({"uptime_secs": 1.0, "pipelines": [
        {"job_id": f"j{i}", "proof_kind": "porep", "partitions": [part] * per_pipeline}
        for i in range(pipelines)]}).encode()


def test_a_status_listing_thousands_of_partitions_is_read_up_to_the_per_poll_bound() -> None:
    """Issue 29, item 7: a 5.5 MB answer (under the cap) of partitions cost the sampler 216 ms
    and the recording 6.5 MB/s. One poll reads at most MAX_PARTITIONS_PER_POLL of them and
    counts the rest."""
    counters: dict[str, int] = {}
    st = _parse(_many_partitions(300, 20), counters)
    assert len(st.partitions) == MAX_PARTITIONS_PER_POLL
    assert sum(st.partition_counts.values()) == MAX_PARTITIONS_PER_POLL
    assert len(st.job_kinds) == MAX_PIPELINES_PER_POLL
    assert counters["cut_items"] == (300 - MAX_PIPELINES_PER_POLL) + \
        (MAX_PIPELINES_PER_POLL * 20 - MAX_PARTITIONS_PER_POLL)


def test_a_status_whose_every_partition_is_bad_is_bounded_before_it_is_walked() -> None:
    counters: dict[str, int] = {}
    st = _parse(_many_partitions(1, 5000, bad_field=True), counters)
    assert len(st.partitions) == MAX_PARTITIONS_PER_POLL
    assert counters["cut_items"] == 5000 - MAX_PARTITIONS_PER_POLL
    assert counters["dropped_fields"] == MAX_PARTITIONS_PER_POLL  # only what was walked


def test_an_answer_over_one_mib_is_refused_as_too_large() -> None:
    """Decoding holds the GIL: 8 MiB answers, the cap before, made the sampler late."""
    assert MAX_BODY_BYTES == 1 << 20
    body = b'{"uptime_secs": 1.0, "x": "' + b"a" * MAX_BODY_BYTES + b'"}'
    with CuzkStatusServer(respond=lambda line: http_response(200, "OK", body)) as server:
        poller = StatusPoller(server.url, 1.0, 5.0, lambda st: None, clock=FakeClock())
        assert poller.poll_once() is None
    assert poller.status().errors == {"too_large": 1}


def test_a_poll_cut_to_its_bound_is_said_once() -> None:
    notices: list[Notice] = []
    body = _many_partitions(1, 3000)
    with CuzkStatusServer(respond=lambda line: http_response(200, "OK", body)) as server:
        poller = StatusPoller(server.url, 1.0, 5.0, lambda st: None, notices.append,
                              clock=FakeClock())
        assert poller.poll_once() is not None and poller.poll_once() is not None
    said = [n.message for n in notices if "per poll" in n.message]
    assert len(said) == 1 and "cut_items" in said[0]
    assert poller.counters["cut_items"] == 2 * (3000 - MAX_PARTITIONS_PER_POLL)


def test_a_job_id_of_hundreds_of_kilobytes_over_a_thousand_partitions_is_no_gigabyte_record(
) -> None:
    """A 900 KB job id is written into each of its partitions: over 1,024 partitions (a
    1 MiB answer) a poll was a ~920 MB record, encoded under the GIL every second. Every text
    of the document is cut as a log line's job id is, counted `text_cut`, said once."""
    job, kind, circuit = "J" * 200_000, "k" * 50_000, "c" * 50_000
    body = json.dumps({
        "pipelines": [{"job_id": job, "proof_kind": kind,
                       "partitions": [{"index": i, "state": "queued"} for i in range(1024)]}],
        "gpu_workers": [{"worker_id": 0, "gpu_ordinal": 0, "state": "busy",
                         "current_job": job}],
        "allocations": {"srs": [{"circuit_id": circuit, "bytes": 1}]}}).encode()
    counters: dict[str, int] = {}
    st = _parse(body, counters)
    assert len(st.partitions) == 1024 and st.partitions[0].index == 0
    assert len(msgspec.json.encode(st)) < 2 * len(body)
    assert st.partitions[0].job_id.startswith("J" * MAX_TEXT_CHARS + "… [cut ")
    assert st.workers[0].job_id == st.partitions[0].job_id  # still names the same job
    assert list(st.job_kinds) == [st.partitions[0].job_id]
    assert st.srs_circuits is not None and len(st.srs_circuits[0]) < 2 * MAX_TEXT_CHARS
    assert counters["text_cut"] == 4
    notices: list[Notice] = []
    with CuzkStatusServer(respond=lambda line: http_response(200, "OK", body)) as server:
        poller = StatusPoller(server.url, 1.0, 5.0, lambda st: None, notices.append,
                              clock=FakeClock())
        assert poller.poll_once() is not None and poller.poll_once() is not None
    said = [n.message for n in notices if "text_cut" in n.message]
    assert len(said) == 1 and poller.counters["text_cut"] == 8


def _unanswered_lookups(monkeypatch: pytest.MonkeyPatch, release: threading.Event,
                        asked: list[str]) -> None:
    """`socket.getaddrinfo` as a resolver that does not answer: it blocks until `release`
    (the system's own retries take tens of seconds), then gives up."""

    def unanswered(host: str, *args: object, **kwargs: object) -> list[object]:
        asked.append(host)
        release.wait(5)
        raise socket.gaierror("the resolver gave up")

    monkeypatch.setattr(socket, "getaddrinfo", unanswered)


def test_a_host_lookup_that_never_answers_costs_one_poll_deadline_and_the_next_poll_comes(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """`getaddrinfo` has no timeout: a resolver that did not answer held one poll for as long
    as it retried (tens of seconds), and no poll came meanwhile, the pipeline view going stale
    without a word. Now the poll ends at its deadline, counted `lookup_timeout` and said, and
    the next poll waits on the same lookup rather than starting one more."""
    asked: list[str] = []
    release = threading.Event()
    _unanswered_lookups(monkeypatch, release, asked)
    notices: list[Notice] = []
    poller = StatusPoller("http://cuzk.example:9821/status", 1.0, 0.3, lambda s: None,
                          notices.append, clock=FakeClock())
    try:
        # Each poll ends at its deadline while the lookup is still out: a poll held by the
        # lookup would end when the resolver gives up, a `connection` failure, not this.
        assert poller.poll_once() is None
        assert poller.poll_once() is None
    finally:
        release.set()
    st = poller.status()
    assert (st.state, st.polls, st.errors) == ("lookup_timeout", 2, {"lookup_timeout": 2})
    assert asked == ["cuzk.example"]
    assert len(notices) == 1 and "looking up 'cuzk.example'" in notices[0].message


def _polling_unanswered(monkeypatch: pytest.MonkeyPatch, period_s: float, timeout_s: float
                        ) -> tuple[StatusPoller, threading.Event, list[str]]:
    """A poller started on its thread against a host whose lookup is not answered until the
    event returned is set; the hosts looked up."""
    asked: list[str] = []
    release = threading.Event()
    _unanswered_lookups(monkeypatch, release, asked)
    poller = StatusPoller("http://cuzk.example:9821/status", period_s, timeout_s, lambda s: None)
    poller.start()
    return poller, release, asked


def test_polling_on_its_thread_goes_on_through_a_lookup_that_never_answers(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    poller, release, _asked = _polling_unanswered(monkeypatch, 0.1, 0.2)
    try:
        for _ in range(600):  # ends as soon as three polls have timed out (~1 s)
            if poller.status().errors.get("lookup_timeout", 0) >= 3:
                break
            threading.Event().wait(0.05)
        polls = poller.status().errors.get("lookup_timeout", 0)
    finally:
        poller.stop()
        release.set()
    assert polls >= 3


def test_a_stop_is_not_held_by_a_host_lookup_in_flight(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    """The lookup's wait also looks at the poller's stop: with `status_timeout_s` up to 10 s,
    a stop waited past its own 2 s for a lookup (the thread left running), then the poll that
    ended was counted as a failure."""
    poller, release, asked = _polling_unanswered(monkeypatch, 1.0, 10.0)
    try:
        for _ in range(100):
            if asked:
                break
            threading.Event().wait(0.02)
        assert asked, "the poller never looked the host up"
        poller.stop()  # gives up waiting after 2 s: a thread held by the lookup still runs
        running = poller.running()
    finally:
        release.set()
    assert not running
    assert poller.status().polls == 0  # a poll cut by the stop is no failure of the server


def test_a_stop_is_not_held_by_a_server_that_has_not_answered() -> None:
    """The same for a server that accepted and says nothing: the stop ends the wait for its
    answer rather than the poll's deadline."""
    listener = socket.create_server(("127.0.0.1", 0))
    poller = StatusPoller(f"http://127.0.0.1:{listener.getsockname()[1]}/status", 1.0, 10.0,
                          lambda s: None)
    poller.start()
    try:
        listener.settimeout(5)
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)
            poller.stop()  # gives up waiting after 2 s: a thread held to the deadline still runs
            running = poller.running()
    finally:
        listener.close()
    assert not running and poller.status().polls == 0


def test_a_status_url_whose_path_is_not_ascii_reaches_the_server_percent_encoded() -> None:
    """`--cuzk-status '127.0.0.1:9821/статус'` (or a path with a space): the request was
    encoded as latin-1 and never sent (every poll an `internal` failure, `gapwatch could not
    read it: UnicodeEncodeError`), or sent with a space splitting its request line. The path
    goes as a browser sends it, percent-encoded UTF-8; a host that is not ASCII is refused at
    start."""
    with CuzkStatusServer(lambda: WAITS_ON_SYNTHESIS) as server:
        url = status_url(f"127.0.0.1:{server.port}/статус dir?a=é")
        poller = StatusPoller(url, 1.0, 2.0, lambda _s: None, clock=FakeClock())
        assert poller.poll_once() is None  # the stand-in serves /status alone
        assert server.request_lines == [
            "GET /%D1%81%D1%82%D0%B0%D1%82%D1%83%D1%81%20dir?a=%C3%A9 HTTP/1.1"]
    assert poller.status().errors == {"http_404": 1}
    assert status_url("127.0.0.1:1/a%20b") == "http://127.0.0.1:1/a%20b"  # kept as given
    with pytest.raises(ValueError, match="ASCII"):
        status_url("пример.рф:9821")


def test_a_reason_phrase_or_status_line_of_sixty_kilobytes_is_said_cut() -> None:
    """The server's own words in a failure (an HTTP reason phrase, a status line that is not
    HTTP) went whole into the notice: 60 KB a message, to stderr, the toast and the recording,
    once for each of up to 900 `http_<code>` reasons (the document's texts are cut to
    `MAX_TEXT_CHARS`; these were not)."""
    words = "\x1b]52;c;aGVsbG8=\x07" + "R" * 60_000
    script = [f"HTTP/1.1 503 {words}\r\nContent-Length: 0\r\n\r\n".encode(),
              f"XTTP/1.1 {words}\r\nContent-Length: 0\r\n\r\n".encode()]
    notices: list[Notice] = []
    with CuzkStatusServer(respond=lambda _line: script.pop(0)) as server:
        poller = StatusPoller(server.url, 1.0, 2.0, lambda _s: None, notices.append,
                              clock=FakeClock())
        assert poller.poll_once() is None and poller.poll_once() is None
    assert poller.status().errors == {"http_503": 1, "connection": 1}
    assert len(notices) == 2
    assert all(len(n.message) < 400 and "RRRR…" in n.message for n in notices)
