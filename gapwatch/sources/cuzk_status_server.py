"""A loopback HTTP server that answers like cuzk's status server, for provers that are not cuzk.

Who runs it: the simulated prover (`gapwatch demo`, `--source sim:*` at speed > 0) to serve its
own pipeline, `bench/gpu_loadgen.py --status-listen` to serve the load generator's, and the tests
(scripted documents and faults through `respond`). Standard library only, so the load generator
can use it on a GPU box.

It behaves as cuzk's hand-written server does (`../shared/reference/cuzk-status.md`): raw TCP,
one read of at most 4 KiB per connection, only the request line is looked at; `GET /status...`
gets `200` with `Content-Type: application/json`, `Content-Length`,
`Access-Control-Allow-Origin: *` and `Connection: close`; anything else `404 Not Found` (text);
a document that cannot be built gets `500` with `{"error": "..."}`; then the connection is
closed: one request per connection, no keep-alive. Connections are served one at a time.

A prover that dies takes its server with it: `stop_listening` closes the listening socket (a
connection is refused, as nothing listens on the port any more) and `listen_again` binds the
same address again, as the restarted process does (`NotServing` from `document()`: a request
taken just before closes with no answer).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any

#: cuzk reads at most this much of a request, once.
REQUEST_BYTES = 4096


class NotServing(Exception):
    """Raised by `document()` when the process behind the server is gone (a killed prover): the
    connection is closed with no answer, as the kernel closes a dead process's sockets."""


def http_response(status: int, reason: str, body: bytes,
                  content_type: str = "application/json") -> bytes:
    """The bytes cuzk's server writes for one answer (headers as it sends them)."""
    head = (f"HTTP/1.1 {status} {reason}\r\n"
            f"Content-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Access-Control-Allow-Origin: *\r\n"
            "Connection: close\r\n\r\n")
    return head.encode("ascii") + body


def not_found() -> bytes:
    return http_response(404, "Not Found", b"Not Found", "text/plain")


class CuzkStatusServer:
    """Serve `document()` (a JSON-able dict, or bytes as they are) at `GET /status`.

    `respond(request_line)`, when given, returns the whole raw answer instead (tests script
    states and faults with it: slow, truncated, invalid, any status); it may block (a slow
    server) and may return b"" to close without answering.
    """

    def __init__(self, document: Callable[[], dict[str, Any] | bytes] | None = None, *,
                 host: str = "127.0.0.1", port: int = 0,
                 respond: Callable[[str], bytes] | None = None) -> None:
        if document is None and respond is None:
            raise ValueError("give document or respond")
        self._document = document
        self._respond = respond
        sock = _listening_socket(host, port)
        #: The listening socket; None while not listening (`stop_listening`).
        self._sock: socket.socket | None = sock
        self._sock_lock = threading.Lock()
        self.host = host
        self.port = int(sock.getsockname()[1])
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.requests = 0
        self.request_lines: list[str] = []

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/status"

    def start(self) -> CuzkStatusServer:
        self._thread = threading.Thread(target=self._serve, name="gapwatch-status-server",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.stop_listening()

    def stop_listening(self) -> None:
        """Nothing listens on the port from now on: a connection is refused, as a dead
        process's port refuses it. Never waits on the serving thread (the prover calls it
        holding its own lock, which a request in flight may be waiting for)."""
        with self._sock_lock:
            sock, self._sock = self._sock, None
        if sock is None:
            return
        try:
            sock.shutdown(socket.SHUT_RDWR)  # wakes an accept in progress (Linux)
        except OSError:
            pass
        sock.close()

    def listen_again(self) -> str | None:
        """Listen on the same address again (a restarted prover binds its configured one);
        None when listening, else why it cannot (the port taken meanwhile), as the words of
        the bind's error."""
        if self._stop.is_set():
            return None  # stopped for good: nothing to listen for
        try:
            sock = _listening_socket(self.host, self.port)
        except OSError as exc:
            return str(exc.strerror or exc)
        with self._sock_lock:
            old, self._sock = self._sock, sock
        if old is not None:
            old.close()
        return None

    def __enter__(self) -> CuzkStatusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        while not self._stop.is_set():
            sock = self._sock
            if sock is None:  # not listening: a prover that is down
                self._stop.wait(0.05)
                continue
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if sock is self._sock:
                    return  # the listening socket failed
                continue  # closed by stop_listening (or stop)
            with conn:
                try:
                    self._handle(conn)
                except OSError:
                    pass  # the client went away: nothing to answer

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(2.0)
        data = conn.recv(REQUEST_BYTES)
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        self.requests += 1
        if len(self.request_lines) < 1000:
            self.request_lines.append(line)
        if self._respond is not None:
            answer = self._respond(line)
        else:
            answer = self._answer(line)
        if answer:
            conn.sendall(answer)

    def _answer(self, line: str) -> bytes:
        parts = line.split(" ")
        if len(parts) < 2 or parts[0] != "GET" or not parts[1].startswith("/status"):
            return not_found()
        assert self._document is not None
        try:
            doc = self._document()
            body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        except NotServing:
            return b""
        except Exception as exc:  # noqa: BLE001 - cuzk answers 500 when serialisation fails
            return http_response(500, "Internal Server Error",
                                 json.dumps({"error": str(exc)}).encode())
        return http_response(200, "OK", body)


def _listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on `host:port` (0: any free port), its accepts timed out often
    enough for the serving loop to look at its stop flag."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(16)
    except OSError:
        sock.close()
        raise
    sock.settimeout(0.2)  # the accept loop looks at the stop flag this often
    return sock
