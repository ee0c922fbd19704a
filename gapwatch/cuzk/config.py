"""cuzk's section of the config file (`[cuzk]`): its status endpoint and its synthesis limit.

Who calls it: `gapwatch.config.Config` (the whole file), the composition roots (the status
pollers, `CuzkProver`'s `max_parallel_synthesis`) and `gapwatch.cli` (`--cuzk-status URL`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit

from pydantic import Field, field_validator

from gapwatch.core.config import Section

#: What a path or query keeps as it is (RFC 3986's reserved characters, and `%` so that an
#: escape given stays one); the rest is percent-encoded UTF-8.
_URL_SAFE = "/%:@!$&'()*+,;="


def status_url(text: str) -> str:
    """A cuzk status address in its one canonical form, `http://HOST:PORT/PATH`.

    Accepts `http://host:port/status`, `http://host:port` and `host:port` (the path defaults to
    `/status`). Raises ValueError for anything else: cuzk's status server speaks plain HTTP.
    """
    raw = text.strip()
    if "://" not in raw:
        raw = "http://" + raw
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a status URL ({exc})") from None
    if parts.scheme != "http":
        raise ValueError(f"{text!r}: only http:// (cuzk's status server speaks plain HTTP)")
    if not parts.hostname or port is None:
        raise ValueError(f"{text!r}: give HOST:PORT, e.g. http://127.0.0.1:9821/status")
    if not (parts.netloc.isascii() and parts.netloc.isprintable()):
        raise ValueError(f"{text!r}: give the host as ASCII (its xn-- name)")
    # Sent as a browser sends it: the request is ASCII, so a path of other characters
    # (`/статус`) was never sent (every poll an `internal` UnicodeEncodeError), and a space
    # split the request line; an escape given (`%20`) is kept as it is.
    path = quote(parts.path or "/status", safe=_URL_SAFE)
    query = f"?{quote(parts.query, safe=_URL_SAFE + '?')}" if parts.query else ""
    return f"http://{parts.netloc}{path}{query}"


class CuzkConfig(Section):
    """The prover's own status endpoint (cuzk `[daemon] status_listen`, off in cuzk by default)."""

    #: `GET /status` URL(s) to poll; empty = off. `--cuzk-status URL` (repeatable) adds to it.
    status_url: list[str] = Field(default_factory=list)
    #: Seconds between polls. Each poll makes cuzk take the lock its GPU workers take on their
    #: hot path: about once a second is plenty for a monitor (see docs/cuzk-status.md).
    status_period_s: float = Field(1.0, ge=0.1, le=60)
    #: One deadline per poll (connect plus the whole answer): a poll that takes longer is
    #: abandoned and counted (`timeout`).
    status_timeout_s: float = Field(0.5, gt=0, le=10)
    #: cuzk's own `[pipeline] max_parallel_synthesis` (0 = its default, 18), copied: how many
    #: syntheses it runs, when its log does not say (`starting pipeline ... synth_worker_count`).
    #: With it and `/status`'s memory budget gapwatch applies cuzk's formula (engine.rs). None
    #: (the default): not given, so the count is not known without the log's line: cuzk's
    #: default taken for a prover configured otherwise said `1/~18` of 3 workers.
    max_parallel_synthesis: int | None = Field(None, ge=0, le=100_000)
    #: Seconds a WinningPoSt may take, arrival to proof: a Filecoin epoch, 30 s (cuzk's
    #: proving.proto:45 `CRITICAL = 4; // WinningPoSt: must complete within epoch`). Past it
    #: the block reward is lost. docs/post.md.
    winning_post_deadline_s: float = Field(30.0, gt=0, le=86_400)
    #: Seconds a WindowPoSt partition proof may take: Curio's `[Cuzk] ProveTimeout`, 30 min by
    #: default (curio documentation/en/experimental-features/cuzk-proving-daemon.md:148-163),
    #: after which Curio gives the proof up; also the 60-epoch challenge window. docs/post.md.
    window_post_deadline_s: float = Field(1800.0, gt=0, le=86_400)
    #: A PoSt past this share of its deadline is "at risk" (a warning); past the deadline, late.
    post_at_risk_share: float = Field(0.5, gt=0, le=1)

    @field_validator("status_url", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("status_url")
    @classmethod
    def _canonical(cls, value: list[str]) -> list[str]:
        out: list[str] = []
        for text in value:
            if not text.strip():
                continue
            url = status_url(text)
            if url not in out:
                out.append(url)
        return out
