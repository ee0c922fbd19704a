"""How many files the process may open (`ulimit -n`), and the one-line refusal when too few.

Who calls it: `gapwatch.cli.main`, before a command starts. A live command holds about 15 open
at once (the recording and its lock, sockets for `/metrics`, the copy trace and the status
poller, log files, the simulated prover's server, the selector's epoll) and opens more as it
goes; at `ulimit -n 10` the status poller failed every poll and other failures surfaced as
tracebacks. Below `MIN_LIVE_OPEN_FILES` a live command is refused with one line instead, and a
command that runs out later says so in one line (`out_of_files`).
"""

from __future__ import annotations

import errno
import resource

#: The fewest open files a live command (record, watch, demo, replay) is started with.
MIN_LIVE_OPEN_FILES = 20
LIVE_COMMANDS = ("record", "watch", "demo", "replay")


def open_files_limit() -> int | None:
    """The soft limit on open files, or None when unlimited or unknown."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)


def too_few_open_files(command: str) -> str | None:
    """Why `command` cannot start with this process's open-file limit, or None."""
    limit = open_files_limit()
    if command not in LIVE_COMMANDS or limit is None or limit >= MIN_LIVE_OPEN_FILES:
        return None
    return (f"only {limit} open files are allowed (ulimit -n {limit}); gapwatch {command} needs "
            f"at least {MIN_LIVE_OPEN_FILES}: raise it (ulimit -n 1024) and run it again")


#: The commands that follow their logs live, each file held open (`replay` reads its logs
#: whole, one after the other).
FOLLOWING_COMMANDS = ("record", "watch", "demo")
#: Open files one followed log may hold at once: the file, and its rotated predecessor while
#: it is drained.
FILES_PER_LOG = 2


def too_few_for_logs(command: str, n_logs: int) -> str | None:
    """Why `command` cannot follow `n_logs` log files with this process's open-file limit, or
    None. Each followed file is held open: 3,000 of them (`[logs] paths` of a 64 KiB config)
    took every descriptor at `ulimit -n 1024`, the recording, sockets and pollers found none,
    and `record` stopped after a second ("out of open files")."""
    limit = open_files_limit()
    needed = MIN_LIVE_OPEN_FILES + FILES_PER_LOG * n_logs
    if command not in FOLLOWING_COMMANDS or limit is None or limit >= needed:
        return None
    return (f"{n_logs} log files to follow need about {needed} open files, and only {limit} "
            f"are allowed (ulimit -n {limit}): raise it (ulimit -n {_enough(needed)}) or "
            "follow fewer")


def _enough(needed: int) -> int:
    """A limit to suggest for `needed` open files: 1024 (the usual default), else twice."""
    return max(1024, 2 * needed)


def out_of_files(exc: OSError) -> str | None:
    """The one line for an `OSError` that is the open-file limit, or None for any other.
    The limit suggested is above the one met (it said "raise the limit (ulimit -n 1024)" of a
    process already at 1024)."""
    if exc.errno not in (errno.EMFILE, errno.ENFILE):
        return None
    limit = open_files_limit()
    if limit is None:
        return "out of open files (the system's limit): raise it and run it again"
    return (f"out of open files (ulimit -n {limit}): raise the limit "
            f"(ulimit -n {_enough(limit)}) and run it again")
