"""Rate limits on what is said: the first few messages of a kind are said, the rest are counted
and summed up once per interval.

Who calls it: the session (every notice, whatever its source: each one costs a line on stderr, a
toast and a record, under the lock the sampler needs) and the copy-trace reader (the library's
NOTE datagrams, per sender). Pure: the caller gives the times.

Why: any process that may write to the copy-trace socket could send 3,332 NOTEs of 60 KB, and
every one was a warning on stderr and in the recording, written under the session's lock: the GPU
samples had 0.6-0.8 s holes and the recording overflowed. A flood is information once ("N more
like this"), not N times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DIGITS = re.compile(r"\d+")
#: Characters of a message that decide its kind (after digits are folded).
KIND_CHARS = 60
#: The kind every message falls into once `max_kinds` kinds are being counted.
OTHER = "(other)"


def message_kind(level: str, message: str) -> str:
    """The kind a message counts under: its level and start, numbers folded, so that
    `GPU source failed: ... tick 17` and `... tick 18` are one kind."""
    return f"{level}|{_DIGITS.sub('#', message[:KIND_CHARS])}"


@dataclass(slots=True)
class _Kind:
    window_start_ns: int
    said: int = 0
    held: int = 0
    #: The latest message held back (the summary quotes it).
    last: str = ""


@dataclass(frozen=True, slots=True)
class Held:
    """Messages of one kind held back over an interval that has ended."""

    kind: str
    count: int
    latest: str
    interval_s: float

    @property
    def level(self) -> str:
        return self.kind.partition("|")[0]

    def text(self, what: str = "messages") -> str:
        return (f"{self.count} more {what} like this in the last {self.interval_s:g} s (only "
                f"counted; the latest: {self.latest})")


class RateLimit:
    """At most `burst` messages of a kind per `interval_ns`; the rest counted (`held_total`) and
    handed back by `due()` once their interval has ended."""

    def __init__(self, interval_ns: int, burst: int, max_kinds: int = 256) -> None:
        self.interval_ns = interval_ns
        self.burst = burst
        self.max_kinds = max_kinds
        self._kinds: dict[str, _Kind] = {}
        #: The earliest end of an interval with messages held back (`due()` is O(1) before it).
        self._next_due_ns: int | None = None
        self.held_total = 0

    def offer(self, kind: str, now_ns: int, message: str) -> bool:
        """True: say `message` now. False: it is held back (counted; `due()` sums it up)."""
        k = self._kinds.get(kind)
        if k is None:
            if len(self._kinds) >= self.max_kinds:
                self._forget(now_ns)
            if len(self._kinds) >= self.max_kinds:
                kind = OTHER
                k = self._kinds.get(kind)
            if k is None:
                k = self._kinds[kind] = _Kind(now_ns)
        if now_ns - k.window_start_ns >= self.interval_ns and k.held == 0:
            k.window_start_ns, k.said = now_ns, 0
        if k.said < self.burst and k.held == 0:
            k.said += 1
            return True
        k.held += 1
        k.last = message
        self.held_total += 1
        end = k.window_start_ns + self.interval_ns
        if self._next_due_ns is None or end < self._next_due_ns:
            self._next_due_ns = end
        return False

    def due(self, now_ns: int, flush: bool = False) -> list[Held]:
        """The kinds whose interval has ended (every kind, with `flush`) with messages held
        back; their counts start again."""
        if not flush and (self._next_due_ns is None or now_ns < self._next_due_ns):
            return []
        out: list[Held] = []
        next_due: int | None = None
        for kind, k in self._kinds.items():
            if not k.held:
                continue
            end = k.window_start_ns + self.interval_ns
            if flush or now_ns >= end:
                # At a flush the interval may not be over: the summary covers what it spans.
                span_ns = min(self.interval_ns, max(0, now_ns - k.window_start_ns))
                out.append(Held(kind, k.held, k.last, round(span_ns / 1e9, 1)))
                # The summary is this interval's one message; the next starts now.
                k.window_start_ns, k.said, k.held, k.last = now_ns, 1, 0, ""
            elif next_due is None or end < next_due:
                next_due = end
        self._next_due_ns = next_due
        return out

    def _forget(self, now_ns: int) -> None:
        """Drop the kinds with nothing held whose interval has ended (bounded memory)."""
        for kind in [kind for kind, k in self._kinds.items()
                     if not k.held and now_ns - k.window_start_ns >= self.interval_ns]:
            del self._kinds[kind]
