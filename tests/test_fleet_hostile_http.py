"""`gapwatch fleet` as a network client against hostile HTTP servers (raw sockets, so that they
can answer what no well-behaved server would): a drip-fed answer, a broken status line or
headers, a body cut short, redirects, a quadratic fan-out of box-level series. Every one is a
`PromError` with a one-line message within the query's deadline, never a raise or a hang.

The deadlines here are tenths of a second: no test waits more than about one."""

from __future__ import annotations

import json
import socket
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import pytest
from fleet_fakes import Reply, box, fake_prometheus, matrix, promql, vector

from gapwatch.cli import main
from gapwatch.fleet import rows as fleet_rows
from gapwatch.fleet.client import MAX_NAME_CHARS, PromClient, PromError, Series, kept_name
from gapwatch.fleet.rows import FleetOptions, FleetRow, refresh

GOOD = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()

Behave = Callable[[socket.socket], None]


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


@contextmanager
def hostile(behave: Behave) -> Iterator[str]:
    """A server on loopback that reads each request, then does `behave` with the socket."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def one(conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(5)
                _read_request(conn)
                behave(conn)
            except OSError:
                pass  # the client gave up: what these tests want

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        # Closing alone does not wake an `accept` blocked in another thread (Linux): the server
        # thread waited there for the rest of the worker's run (tests/conftest.py,
        # `no_stray_threads`). A shut-down listening socket does.
        with suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        server.join(5)


def _head(extra: bytes = b"", status: bytes = b"200 OK") -> bytes:
    return b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n" + extra + \
        b"Connection: close\r\n\r\n"


def _ask(url: str, timeout_s: float = 0.3) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(PromError) as caught:
        PromClient(url, timeout_s=timeout_s).instant("up")
    return str(caught.value), time.monotonic() - started


def test_a_prometheus_that_drips_one_byte_at_a_time_costs_one_query_deadline() -> None:
    # A byte every 50 ms: each read is well within any per-read timeout, the whole answer is
    # not. Before, the client waited for all of it (13.6 s for a 1 s timeout).
    def drip(conn: socket.socket) -> None:
        conn.sendall(_head(b"Content-Length: %d\r\n" % len(GOOD)))
        for byte in GOOD:
            conn.sendall(bytes([byte]))
            time.sleep(0.05)

    with hostile(drip) as url:
        why, _ = _ask(url)
    assert "no answer within 0.3 s" in why  # before: the whole answer, ~2 s later


def _dripping(head: bytes, piece: bytes, times: int = 40) -> Behave:
    """A server that sends `head`, then `piece` every 50 ms, `times` times (2 s by default:
    each read well within any per-read timeout, the whole far past a 0.3 s deadline)."""
    def drip(conn: socket.socket) -> None:
        conn.sendall(head)
        for _ in range(times):
            conn.sendall(piece)
            time.sleep(0.05)

    return drip


def test_headers_dripped_without_end_cost_one_query_deadline() -> None:
    with hostile(_dripping(b"HTTP/1.1 200 OK\r\n", b"X: a\r\n")) as url:
        why, _ = _ask(url)
    assert "no answer within" in why


def test_an_endless_trickle_of_chunks_costs_one_query_deadline() -> None:
    with hostile(_dripping(_head(b"Transfer-Encoding: chunked\r\n"), b"1\r\n \r\n")) as url:
        why, _ = _ask(url)
    assert "no answer within" in why


@pytest.mark.parametrize("reply", [
    b"garbage\r\n\r\n",  # not HTTP at all (BadStatusLine)
    bytes.fromhex("15030100020228"),  # a TLS alert: an https server asked over http
    b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000 + b"\r\n\r\n",  # a header line over 64 KiB
    b"HTTP/1.1 200 OK\r\n" + b"X: a\r\n" * 200 + b"\r\n",  # more than 100 headers
    _head(b"Transfer-Encoding: chunked\r\n") + b"zz\r\nhello\r\n",  # a chunk size not hex
])
def test_an_answer_that_is_not_http_is_a_prom_error_not_a_raise(reply: bytes) -> None:
    # http.client raises these as HTTPException, which is not an OSError: they escaped the
    # client, and `fleet --once` died with a traceback.
    with hostile(lambda conn: conn.sendall(reply)) as url:
        why, _ = _ask(url)
    assert why.startswith("not an HTTP answer") and "\n" not in why


def test_a_connection_closed_mid_answer_is_said_as_cut_short() -> None:
    # Content-Length says 1,000 bytes; a whole (valid) document of fewer comes, then the close.
    # Before, the client took the short body as the answer.
    with hostile(lambda conn: conn.sendall(_head(b"Content-Length: 1000\r\n") + GOOD)) as url:
        why, _ = _ask(url)
    assert why == f"the answer was cut short: {len(GOOD)} of 1000 bytes"


@pytest.mark.parametrize("location", [
    b"file:///etc/passwd", b"ftp://127.0.0.1:1/x", b"http://elsewhere.invalid:9090/",
    b"/api/v1/query",  # a loop: back to itself
])
def test_a_redirect_is_named_and_never_followed(location: bytes) -> None:
    # Prometheus's API never redirects; urllib followed one to another host or to ftp://
    # (a POST turned into a bodyless GET, a fresh timeout per hop, five hops for a loop).
    asked: list[int] = []

    def redirect(conn: socket.socket) -> None:
        asked.append(1)
        conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: " + location +
                     b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    with hostile(redirect) as url:
        why, _ = _ask(url)
    assert why.startswith("HTTP 302: redirected to ") and "not followed" in why
    assert len(asked) == 1


def test_an_error_status_with_an_endless_body_is_said_by_its_status() -> None:
    def endless_500(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 500 Oops\r\nContent-Length: 1000000000\r\n\r\n")
        while True:
            conn.sendall(b"x" * 65536)

    with hostile(endless_500) as url:
        why, _ = _ask(url)
    assert why == "HTTP 500"


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:abc", "http://127.0.0.1:99999", "http://user:secret@127.0.0.1:9",
    "http://127.0.0.1:9/a b", "http://127.0.0.1:9/\x1b[2J", "http://ex\x00ample:9",
])
def test_a_prometheus_url_with_odd_characters_is_refused_at_the_flag(url: str) -> None:
    # They raised http.client.InvalidURL at the first query (a traceback), or were sent on
    # ("user:secret@host" looked up as a host name; port 99999 wrapped to 34463).
    with pytest.raises(ValueError, match="--prometheus"):
        PromClient(url)


def test_box_level_series_are_spread_over_a_boxs_gpus_once_not_once_per_series(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 300 GPU rows on one box and 300 `up` series for it (distinct labels, one instance): each
    # series was set on every row, n * n assignments (20,000 of each took 94 s).
    n = 300
    sets: list[str] = []
    real_set = fleet_rows._set

    def counted(row: FleetRow, name: str, s: Series) -> None:
        sets.append(name)
        real_set(row, name, s)

    monkeypatch.setattr(fleet_rows, "_set", counted)
    state: list[object] = [{"metric": {"instance": "a", "gpu": str(i), "state": "GAPS"},
                            "value": [0, "1"]} for i in range(n)]
    up: list[object] = [{"metric": {"instance": "a", "x": str(i)}, "value": [0, "1"]}
                        for i in range(n)]

    def vector_of(result: list[object]) -> Reply:
        return Reply(body=json.dumps({"status": "success",
                                      "data": {"resultType": "vector", "result": result}}
                                     ).encode())

    with fake_prometheus() as fake:
        fake.replies[promql("state")] = vector_of(state)
        fake.replies[promql("up")] = vector_of(up)
        fake.replies[promql("busy_ratio")] = vector_of([{"metric": {"instance": "a"},
                                                         "value": [0, "0.5"]}] * n)
        rows = refresh(PromClient(fake.url), FleetOptions()).rows
    assert len(rows) == n and all(r.up == 1.0 and r.busy_ratio == 0.5 for r in rows)
    # Each row set once per field: n state rows + up + busy_ratio (before: n * n of each).
    assert len(sets) <= 4 * n


def test_a_series_with_thousands_of_labels_and_a_megabyte_name_keeps_only_what_fleet_reads(
        ) -> None:
    # 100 series of 2,000 labels each (2.4 MB) answering all 13 queries: every label was kept,
    # 13 answers at once (13 MB of them cost 1.3 GB). A series now keeps the labels fleet reads,
    # a name cut past MAX_NAME_CHARS (its start and a digest): a 1 MB box name no longer
    # reaches the table or a title.
    labels: dict[str, str] = {f"l{i}": "" for i in range(2000)}
    result: list[object] = [
        {"metric": labels | {"instance": "b" * 1_000_000 if i == 0 else f"b{i}", "gpu": "0",
                             "state": "GAPS"}, "value": [0, "1"]} for i in range(100)]
    with fake_prometheus() as fake:
        fake.default = Reply(body=json.dumps({"status": "success", "data": {
            "resultType": "vector", "result": result}}).encode())
        series = PromClient(fake.url).instant("up")
        tracemalloc.start()
        try:
            rows = refresh(PromClient(fake.url), FleetOptions()).rows
            peak_bytes = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert set(series[0].labels) == {"instance", "gpu", "state"}
    kept = kept_name("b" * 1_000_000)
    assert series[0].labels["instance"] == kept and len(kept) <= MAX_NAME_CHARS + 20
    assert len(rows) == 100 and max(len(r.instance) for r in rows) == len(kept)
    assert peak_bytes < 40 * 1024 * 1024


def test_once_json_writes_c1_controls_and_bidi_overrides_from_labels_escaped(
        capsys: pytest.CaptureFixture[str]) -> None:
    # JSON escapes ESC but not a C1 CSI (U+009B) or a right-to-left override: `--once --json`
    # passed them raw to the terminal.
    with fake_prometheus() as fake:
        box(fake, "evil\u009b2J\u202e:9400", 1)
        assert main(["fleet", "--prometheus", fake.url, "--once", "--json"]) == 0
    out = capsys.readouterr().out
    assert "\u009b" not in out and "\u202e" not in out and "\\u009b2J\\u202e" in out
    assert json.loads(out)["rows"][0]["instance"] == "evil\u009b2J\u202e:9400"


def test_an_error_status_whose_body_drips_is_said_by_its_status_within_the_deadline() -> None:
    dripped: list[int] = []

    def drip_401(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 100000\r\n\r\n")
        for _ in range(40):  # 2 s of drip against a 0.3 s deadline
            conn.sendall(b"x")
            dripped.append(1)
            time.sleep(0.05)

    with hostile(drip_401) as url:
        why, _ = _ask(url)
        time.sleep(0.5)  # the server finds the client gone at its next bytes
    # The client hung up while the body still dripped (before, it read on to the drip's end).
    assert why == "HTTP 401" and len(dripped) < 40


def test_a_tls_handshake_dripped_a_byte_at_a_time_costs_one_query_deadline() -> None:
    """An https URL whose server drips its handshake. Held before the watchdog too: Python's
    TLS handshake takes the socket's timeout as a deadline for the whole handshake, not per
    read (the watchdog is handed the socket only after it)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def drip_hello() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)  # the ClientHello
            try:
                # A handshake record of 16 KiB announced, then its bytes dripped: 3 s of them.
                conn.sendall(b"\x16\x03\x03\x40\x00")
                for _ in range(60):
                    conn.sendall(b"\x00")
                    time.sleep(0.05)
            except OSError:
                pass  # the client gave up: what this test wants

    server = threading.Thread(target=drip_hello, daemon=True)
    server.start()
    try:
        why, _ = _ask(f"https://127.0.0.1:{listener.getsockname()[1]}")
    finally:
        listener.close()
    assert "no answer within 0.3 s" in why


def test_a_resolver_that_never_answers_costs_one_query_deadline_and_one_lookup(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """`getaddrinfo` has no timeout: a resolver that does not answer held every query for its
    own retries (10-30 s). Now the query gives up at its deadline, says it was the lookup, and
    the next query waits for the same lookup rather than starting one more."""
    asked: list[str] = []
    release = threading.Event()

    def unanswered(host: str, *args: object, **kwargs: object) -> list[object]:
        asked.append(host)
        release.wait(30)
        raise socket.gaierror("the resolver gave up")

    monkeypatch.setattr(socket, "getaddrinfo", unanswered)
    client = PromClient("http://prom.example:9090", timeout_s=0.3)
    try:
        for _ in range(2):
            with pytest.raises(PromError, match=r"^no answer within 0\.3 s \(looking up "
                                                r"'prom\.example' took longer\)$"):
                client.instant("up")
    finally:
        release.set()
    assert asked == ["prom.example"]


def test_a_looked_up_address_is_used_for_a_while_then_looked_up_again(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    from gapwatch.fleet import client as fleet_client

    asked: list[str] = []
    real = socket.getaddrinfo

    def counted(host: str, *args: object, **kwargs: object) -> object:
        asked.append(host)
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", counted)

    def answer(conn: socket.socket) -> None:
        conn.sendall(_head(b"Content-Length: %d\r\n" % len(GOOD)) + GOOD)

    with hostile(answer) as url:
        client = PromClient(url.replace("127.0.0.1", "localhost"), timeout_s=2.0)
        assert client.instant("up") == [] and client.instant("up") == []
        assert asked == ["localhost"]  # a refresh's queries share one lookup
        monkeypatch.setattr(fleet_client, "RESOLVED_FOR_S", 0.0)
        assert client.instant("up") == []
        assert asked == ["localhost", "localhost"]


def test_a_name_that_does_not_resolve_is_said_as_unreachable(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    def none(host: str, *args: object, **kwargs: object) -> list[object]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", none)
    why, _ = _ask("http://no-such-prom.invalid:9090")
    assert why.startswith("cannot reach Prometheus:") and "not known" in why


def test_a_gpu_label_of_superscript_digits_is_sorted_not_a_traceback(
        capsys: pytest.CaptureFixture[str]) -> None:
    # "²".isdigit() holds but int("²") raises: one box's `gpu` label of "²" was a ValueError
    # out of the rows' sort, `fleet --once` a traceback and the screen "refresh failed".
    with fake_prometheus() as fake:
        box(fake, "good:9400", 2, "BREAKDOWN")
        box(fake, "odd:9400", 1, "GAPS")
        body = json.loads(fake.replies[promql("state")].body)
        body["data"]["result"][-1]["metric"]["gpu"] = "\u00b2"
        fake.replies[promql("state")] = Reply(body=json.dumps(body).encode())
        assert main(["fleet", "--prometheus", fake.url, "--once"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines[1:]] == [
        ["good:9400", "0"], ["good:9400", "1"], ["odd:9400", "\u00b2"]]


def test_a_state_query_refused_alone_is_rows_not_read_not_every_box_no_data(
        capsys: pytest.CaptureFixture[str]) -> None:
    # The lookback's state query is the heaviest; Prometheus's sample limit refused it while
    # `up` answered: every box became one "-" row, NO_DATA (a BREAKDOWN box among them), and
    # `--once` exited 0. A Prometheus that answers nothing was "(no gapwatch target)".
    with fake_prometheus() as fake:
        box(fake, "starved:9400", 2, "BREAKDOWN")
        box(fake, "fine:9400", 2, "CHAINED")
        fake.replies[promql("state")] = Reply(422, json.dumps({
            "status": "error", "errorType": "execution",
            "error": "query processing would load too many samples into memory"}).encode())
        result = refresh(PromClient(fake.url), FleetOptions())
        assert result.rows_failed
        assert main(["fleet", "--prometheus", fake.url, "--once"]) == 1
    out = capsys.readouterr()
    assert "NO_DATA" not in out.out and "no gapwatch target" not in out.out
    assert "rows not read" in out.out and "query state: HTTP 422: query processing" in out.err


def test_once_text_never_cuts_a_box_name_or_a_count_silently(
        capsys: pytest.CaptureFixture[str]) -> None:
    # `--once` cut each cell to the screen's width: two boxes whose names differ past the 21st
    # character printed the same, and 12345 late PoSts as "1234".
    with fake_prometheus() as fake:
        for port in (9400, 9401):
            box(fake, f"gpu-prover-0001.ams.example.net:{port}", 1, "GAPS")
        fake.replies[promql("post_last_latency_s")] = vector(
            ({"instance": "gpu-prover-0001.ams.example.net:9400"}, 125))
        fake.replies[promql("post_late")] = vector(
            ({"instance": "gpu-prover-0001.ams.example.net:9400"}, 12345))
        box(fake, "x" * 200, 1, "CHAINED")
        assert main(["fleet", "--prometheus", fake.url, "--once"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("gpu-prover-0001.ams.example.net:9400 ") and "125s/12345" in lines[1]
    assert lines[2].startswith("gpu-prover-0001.ams.example.net:9401 ")
    # cut, and said to be (both ends kept, as the screen cuts it: `layout.box_labels`)
    assert lines[3].startswith("x" * 32 + "…" + "x" * 31 + " ")


def test_the_same_gpu_answered_twice_keeps_its_worst_state() -> None:
    # Two jobs scraping one box (or a box claiming another's name): the last series in
    # Prometheus's order won, and a BREAKDOWN answered before its CHAINED twin was never shown.
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, "BREAKDOWN")
        box(fake, "b:9400", 1, "CHAINED")
        box(fake, "c:9400", 1, "CHAINED")
        box(fake, "c:9400", 1, "GAPS")
        rows = refresh(PromClient(fake.url), FleetOptions()).rows
    assert [(r.instance, r.gpu, r.state) for r in rows] == [
        ("b:9400", "0", "BREAKDOWN"), ("c:9400", "0", "GAPS")]


def _asked_in(client: PromClient, n: int) -> tuple[list[threading.Thread], list[str]]:
    """`n` queries of `client`, each on a thread of its own, started; what each raised."""
    why: list[str] = []

    def ask() -> None:
        try:
            client.instant("up")
        except PromError as exc:
            why.append(str(exc))

    askers = [threading.Thread(target=ask, daemon=True) for _ in range(n)]
    for t in askers:
        t.start()
    return askers, why


def _all_done(askers: list[threading.Thread]) -> bool:
    for t in askers:
        t.join(10)
    return not any(t.is_alive() for t in askers)


def _silent_until_stopped(n: int) -> list[str]:
    """`n` queries (60 s timeout) of a server that reads them and says nothing for a minute,
    aborted once all are in flight; each must end within 10 s: what each raised. A
    query the abort did not cut waits out the minute (a server that closed at 10 s let an
    abort that only flagged the query pass for one that cut it)."""
    release = threading.Event()
    arrived = threading.Event()
    def silent(conn: socket.socket) -> None:
        release.wait(60)

    with hostile(silent) as url:
        client = PromClient(url, timeout_s=60.0)
        askers, why = _asked_in(client, n)
        try:
            while len(client._in_flight) < n and all(t.is_alive() for t in askers):  # noqa: SLF001
                arrived.wait(0.01)
            client.abort()
            done = _all_done(askers)
            with pytest.raises(PromError, match="stopped"):  # and no later query starts
                client.instant("up")
        finally:
            release.set()
    assert done
    return why


def test_a_stop_while_prometheus_is_silent_cuts_the_query_in_flight_not_at_its_deadline(
        ) -> None:
    # The screen's refresh runs on a thread Python waits for at exit: a stop signal or `q`
    # while Prometheus said nothing left the process running to the refresh's deadline
    # (`--timeout`; 18 s of a 20 s one), its terminal already given back. `abort` cuts it.
    assert _silent_until_stopped(1) == ["stopped"]


def test_a_stop_cuts_every_query_in_flight_the_refreshs_and_a_box_details(
        ) -> None:
    """The screen's refresh and a box's detail query one client from two threads: the client
    held one query in flight, the second overwrote the first, and a stop cut only one. The
    other ran to its `--timeout` with the terminal given back (8.9 s after `q`)."""
    assert _silent_until_stopped(2) == ["stopped", "stopped"]


def test_a_stop_cuts_a_query_still_connecting() -> None:
    """A Prometheus behind a firewall that drops the SYN (here: a listener whose backlog is
    full): the watchdog had no socket until the connection was made, and a stop waited for
    the whole `--timeout`."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(8):  # the backlog filled: a further SYN is dropped, the connect hangs
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    try:
        client = PromClient(f"http://127.0.0.1:{port}", timeout_s=60.0)
        arrived = threading.Event()
        askers, why = _asked_in(client, 1)
        while not client._in_flight and askers[0].is_alive():  # noqa: SLF001 - connecting
            arrived.wait(0.01)
        client.abort()
        assert _all_done(askers) and why == ["stopped"]
    finally:
        for sock in (*fillers, listener):
            sock.close()


def test_a_stop_cuts_a_query_waiting_on_a_host_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolver that does not answer: the query waited on the lookup to its deadline,
    whatever stop came."""
    answer = threading.Event()

    def slow_lookup(*args: object, **kwargs: object) -> list[object]:
        answer.wait(30)
        raise socket.gaierror("not answered")

    monkeypatch.setattr(socket, "getaddrinfo", slow_lookup)
    client = PromClient("http://prom.invalid:9090", timeout_s=60.0)
    arrived = threading.Event()
    askers, why = _asked_in(client, 1)
    while not client._in_flight and askers[0].is_alive():  # noqa: SLF001 - looking up
        arrived.wait(0.01)
    client.abort()
    try:
        assert _all_done(askers) and why == ["stopped"]
    finally:
        answer.set()


def test_thousands_of_post_settings_for_a_box_of_many_gpus_are_merged_once_and_bounded(
        ) -> None:
    """A box of 100 GPU rows whose PoSt advice answer names 3,000 settings for `late` and
    3,000 verdicts no advice has: every series was set on every row, each looked for in the
    row's tuple and the tuple copied to add it (quadratic, times the rows: 2.8 s for 2,000,
    ~75 s for 20,000 on one row), and `--json` listed them all on every row. A box's advice is
    merged once: the verdicts the query asks for, each with its first MAX_POST_SETTINGS
    settings (~0.4 s here now against ~6 s before, not asserted: a timing is no test)."""
    n = 100
    state = [({"job": "gapwatch", "instance": "a", "gpu": str(g), "state": "CHAINED"}, 1.0)
             for g in range(n)]
    advice = [({"instance": "a", "verdict": "late", "setting": f"[s] n{i}"}, 1.0)
              for i in range(3000)]
    advice += [({"instance": "a", "verdict": f"v{i}", "setting": "none"}, 1.0)
               for i in range(3000)]
    with fake_prometheus() as fake:
        fake.replies[promql("state")] = vector(*state)
        fake.replies[promql("post_setting")] = vector(*advice)
        rows = refresh(PromClient(fake.url, timeout_s=30), FleetOptions(budget_s=30)).rows
    assert len(rows) == n
    kept = [f"[s] n{i}" for i in range(fleet_rows.MAX_POST_SETTINGS)]
    assert all(r.post_advice == {"late": tuple(kept)} for r in rows)


@pytest.mark.parametrize("answer", [
    {"status": "error", "errorType": "\x1b]52;c;ZXZpbA==\x07" + "T" * 3_000_000, "error": "x"},
    {"status": "\x1b]0;x\x07" + "S" * 3_000_000},
])
def test_an_error_answer_of_a_megabyte_error_type_or_status_is_said_cut(
        answer: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Prometheus's `errorType` (or a `status` that is not `success`) was said whole: a 3 MB
    answer's was a 3 MB line on stderr, in `--json`'s errors and on the screen's footer. It is
    cut as its `error` is, and shown written out."""
    with fake_prometheus() as fake:
        box(fake, "a:9400", 1)
        fake.replies[promql("busy_ratio")] = Reply(body=json.dumps(answer).encode())
        code = main(["fleet", "--prometheus", fake.url, "--once", "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    why = json.loads(out)["errors"]["busy_ratio"]
    assert why.startswith("Prometheus said ") and len(why) < 300
    assert len(err) < 400 and "\x1b" not in err and "\\x1b]" in err


def test_an_answer_of_half_a_million_tiny_series_is_refused_before_they_are_built() -> None:
    """16 MiB of series of no label (`{"metric":{},"value":[0,"1"]}`, 31 bytes each): 541,000
    of them were all built, 182 MB at the peak, before `MAX_SERIES` refused the answer. The
    series are counted first, each built only once they are known to be few enough."""
    n = (16 * 1024 * 1024 - 100) // 31
    body = (b'{"status":"success","data":{"resultType":"vector","result":['
            + b",".join([b'{"metric":{},"value":[0,"1"]}'] * n) + b"]}}")
    with fake_prometheus() as fake:
        fake.default = Reply(body=body)
        client = PromClient(fake.url, timeout_s=30)
        tracemalloc.start()
        try:
            with pytest.raises(PromError, match=f"answer has {n} series"):
                client.instant("up")
            peak_bytes = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak_bytes < 60 * 1024 * 1024  # ~31 MB of them unbuilt; 182 MB built


def test_a_range_answer_of_millions_of_points_is_refused_before_they_are_built() -> None:
    """A box's detail answered with one series of 2,000,000 points (16 MiB of `[0,"1"]`):
    every point was built, a tuple, a float and a string each, 474 MB at the peak (235 MB
    held while the detail read them). The points are counted first, and an answer of more
    than `MAX_POINTS` is refused unbuilt."""
    from gapwatch.fleet.client import MAX_POINTS

    n = (16 * 1024 * 1024 - 200) // 8
    body = (b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},'
            b'"values":[' + b",".join([b'[0,"1"]'] * n) + b"]}]}}")
    with fake_prometheus() as fake:
        fake.range_replies["x"] = Reply(body=body)
        client = PromClient(fake.url, timeout_s=30)
        tracemalloc.start()
        try:
            with pytest.raises(PromError, match=f"answer has {n} points \\(at most {MAX_POINTS}"):
                client.range("x", 0, 60, 60)
            peak_bytes = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        fake.range_replies["x"] = Reply(body=body.replace(b",".join([b'[0,"1"]'] * n),
                                                          b'[0,"1"],[60,"NaN"]'))
        assert client.range("x", 0, 60, 60)[0].points == ((0.0, 1.0), (60.0, None))
    assert peak_bytes < 80 * 1024 * 1024


def test_boxes_whose_names_differ_only_past_256_characters_are_rows_of_their_own(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Every label was cut at 256 characters, nothing said: two boxes whose names differ at
    # character 301 became one row (the second's GPUs merged into the first's).
    names = ["a" * 300 + "1", "a" * 300 + "2"]
    with fake_prometheus() as fake:
        for name in names:
            box(fake, name, 1)
        result = refresh(PromClient(fake.url), FleetOptions())
        assert main(["fleet", "--prometheus", fake.url, "--once"]) == 0
    assert sorted(r.instance for r in result.rows) == names
    # `--once` cuts each for display only, both ends kept around a "…", and they read apart.
    shown = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]
    assert len(shown) == 2 and len(set(shown)) == 2 and all("…" in s for s in shown)


def test_a_long_named_boxs_detail_asks_prometheus_about_its_whole_name() -> None:
    # The detail asked about the name cut at 256 characters, matched no series, and said "no
    # gap closed in the last 30 minutes" of a box with gaps.
    from gapwatch.fleet.detail import box_detail, detail_lines
    from gapwatch.fleet.queries import DETAIL_IDLE, more_matchers

    name = "a" * 300 + "1"
    opts = FleetOptions()
    with fake_prometheus() as fake:
        box(fake, name, 1)
        fake.range_replies[DETAIL_IDLE.format(sel_=more_matchers(opts.selector),
                                              instance=name)] = matrix(
            ({"gpu": "0", "kind": "pcie_starved"}, [(600.0, 12.5)]))
        client = PromClient(fake.url)
        (row,) = refresh(client, opts).rows
        lines = detail_lines(box_detail(client, opts, row.instance, now_s=700.0))
    assert row.instance == name
    assert len(lines) == 1 and "GPU0 idle 12.5s (pcie_starved 12.5s)" in lines[0]


def test_box_names_past_what_fleet_keeps_stay_apart_said_cut_counted_and_never_asked_about(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Past MAX_NAME_CHARS a name is kept as its start and a digest of the whole: two such
    # boxes are two rows, each marked cut; the refresh counts and says them; a detail says
    # the name is longer than fleet keeps instead of asking Prometheus about a name no series
    # has (and saying "no gap closed").
    from gapwatch.fleet.client import name_was_cut
    from gapwatch.fleet.detail import box_lines
    from gapwatch.ui.fleet import footer_text

    names = ["b" * (MAX_NAME_CHARS + 100) + "1", "b" * (MAX_NAME_CHARS + 100) + "2"]
    opts = FleetOptions()
    with fake_prometheus() as fake:
        for name in names:
            box(fake, name, 2)
        client = PromClient(fake.url)
        result = refresh(client, opts)
        asked = len(fake.asked)
        lines = box_lines(client, opts, result.rows[0].instance)
        assert len(fake.asked) == asked  # Prometheus was not asked about a cut name
        assert main(["fleet", "--prometheus", fake.url, "--once", "--json"]) == 0
    kept = {r.instance for r in result.rows}
    assert len(result.rows) == 4 and len(kept) == 2
    assert all(name_was_cut(k) and len(k) <= MAX_NAME_CHARS + 20 and "…" in k for k in kept)
    assert result.names_cut == 2
    said = f"2 box names longer than {MAX_NAME_CHARS:,} characters"
    assert any(said in line for line in result.error_lines("prom"))
    assert said in footer_text(result, "", "prom")  # the screen's footer says it too
    assert len(lines) == 1 and "longer than" in lines[0] and "no gap closed" not in lines[0]
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["names_cut"] == 2 and all(r["instance_cut"] for r in doc["rows"])
    assert said in err


def test_a_box_named_with_a_newline_or_other_controls_opens_its_detail() -> None:
    # Names were escaped for `\` and `"` only: a raw newline in the detail's PromQL string is
    # a parse error (`unterminated quoted string`), so the detail of such a box never opened.
    import re

    from gapwatch.fleet.detail import box_detail
    from gapwatch.fleet.targets import _unquoted

    name = 'b\n\r\t\x01\x1b\x7f\u0085\u2028\\"x:9400'
    with fake_prometheus() as fake:
        fake.range_replies["sum by (gpu, kind)"] = matrix(
            ({"gpu": "0", "kind": "pcie_starved"}, [(600.0, 12.5)]))
        minutes = box_detail(PromClient(fake.url), FleetOptions(), name, now_s=700.0)
        asked = [q for q in fake.asked if "instance=" in q]
    assert len(minutes) == 1 and len(asked) == 2
    for query in asked:
        assert query.isprintable(), query
        found = re.search(r'instance=("(?:[^"\\]|\\.)*")', query)
        assert found is not None and _unquoted(found.group(1)) == name
