"""When a cuzk failure line that names no job can be known to be one job's: the one rule of
`gapwatch.cuzk.post.PostTracker._unnamed_failure` (a PoSt failed) and
`gapwatch.cuzk.pipeline.PipelineFacts._monolithic_failed` (a monolithic job no longer in
flight), so the two never answer one log differently.

cuzk writes two failures naming no job (`log_lines.UNNAMED_FAILED_MESSAGES`): a monolithic
synthesis's `synthesis failed` / `synthesis task panicked` (engine.rs:2855, 2870, in span
`synth_single{proof_kind}`, 2099: a kind, no job) and the split prove finalizer's `GPU proving
failed` / `GPU proving task panicked` (977, 998 via 3257, in a task spawned at 3185 outside any
span). Its job is the one that alone could be failing then, and which could depends on the
lines read before the failure: the list is whole only where every line written before it was
read before it. That holds in one file written in order (cuzk's stdout and stderr both there:
`2>&1`, the journal) followed from the run's start line, the failure line and its candidate's
lines all read there. Read from two files (followed live, stdout ahead of stderr; sorted by
time offline, each file placed by its own clock) a second candidate's pickup written before the
failure may be read after it: the answer would depend on read order. There the line ends no
job; its callers count it.

Of several daemons (`gapwatch.cuzk.daemons`) each is followed apart: one `RunStream` a daemon
(`PostTracker` is one a daemon in `gapwatch.cuzk.watch.CuzkWatch`; `PipelineFacts` keeps one in
each `DaemonRun`), started by that daemon's own start line, and the candidates are that
daemon's jobs only: another daemon's job on its own GPU is no second candidate, and a line of
one daemon's file never placed by another's start line.
"""

from __future__ import annotations


class RunStream:
    """The stream of one daemon's current run's start line while the run has been followed
    whole from it (None: not so). Its owner sets it at the start line (`started`) and clears
    it where it loses sight of part of the run (`lost`: a restart, offsets beginning again,
    candidates dropped past a bound)."""

    __slots__ = ("stream",)

    def __init__(self) -> None:
        self.stream: str | None = None

    def started(self, stream: str) -> None:
        self.stream = stream

    def lost(self) -> None:
        self.stream = None

    def reads_whole(self, stream: str) -> bool:
        """Whether a line read on `stream` was read after every line of the run written
        before it."""
        return self.stream is not None and stream == self.stream

    def in_order(self, failure_stream: str, candidate_stream: str | None) -> bool:
        """Whether a failure line read on `failure_stream` can be the job whose lines were read
        on `candidate_stream`, that job being the only candidate read: both on the run's
        start-line stream, so no other candidate written before the failure is unread."""
        return self.reads_whole(failure_stream) and candidate_stream == failure_stream
