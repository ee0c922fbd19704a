"""The terminal the dashboard needs: a screen to draw on, and the keyboard kept for it when the
prover's log arrives on standard input.

Who calls it: `gapwatch watch`, `demo` and `replay` before they start the dashboard.

Textual draws on standard error. When that is not a terminal (`gapwatch demo > out 2>&1`, a
cron job) there is no one to see the dashboard and it would write screen updates to the file
until killed: `require_terminal` refuses that up front and names the headless command. With
`journalctl -fu cuzk | gapwatch watch --log -`, standard input is the log pipe, and Textual reads
its keys from standard input: log text would be taken for key presses (an `s` in a line takes a
snapshot) and `q` would never arrive. So the pipe is moved to a new descriptor for the log
follower, and standard input is reopened on the controlling terminal (`/dev/tty`).
"""

from __future__ import annotations

import os

from gapwatch.sources import SourceUnavailable


def detach_piped_stdin(log_paths: list[str]) -> int:
    """Return the descriptor `--log -` should read: 0, or the pipe moved off standard input.

    Raises:
        SourceUnavailable: stdin is a pipe for `--log -` but there is no terminal to take the
            keyboard from (run headless instead: `gapwatch record --log -`).
    """
    if "-" not in log_paths or os.isatty(0):
        return 0
    try:
        tty = os.open("/dev/tty", os.O_RDONLY)
    except OSError as exc:
        raise SourceUnavailable(
            f"--log - reads the log from standard input, but the dashboard also needs a "
            f"terminal for its keys and none is available ({exc.strerror}); run headless with "
            f"`gapwatch record --log - --out FILE` (or --prometheus) instead") from None
    log_fd = os.dup(0)
    os.dup2(tty, 0)
    os.close(tty)
    return log_fd


def require_terminal(command: str) -> None:
    """Raise SourceUnavailable unless standard error (where the dashboard draws) is a terminal
    with a size.

    Raises:
        SourceUnavailable: no terminal to draw on; the message names the headless way.
    """
    headless = ("gapwatch replay FILE --headless" if command == "replay"
                else "gapwatch record --out FILE (or --prometheus HOST:PORT)")
    if not os.isatty(2):
        raise SourceUnavailable(
            f"the dashboard draws on a terminal, and standard error is not one (redirected to a "
            f"file or a pipe?); run headless instead: {headless}")
    size = _size_of(2)
    if size is not None and (size.columns == 0 or size.lines == 0):
        # A pty nobody gave a size (`script` with no terminal behind it, some `docker exec -t`):
        # the dashboard laid itself out again and again at 100 % of a core, and a SIGTERM was
        # never served (its loop never got to it).
        raise SourceUnavailable(
            f"the terminal on standard error says its size is {size.columns}x{size.lines} (a "
            f"pseudo-terminal nobody gave a size?); give it one (`stty cols 80 rows 24`) or run "
            f"headless instead: {headless}")


def _size_of(fd: int) -> os.terminal_size | None:
    """The terminal's size on `fd`, or None where it cannot be read (then Textual's own
    fallback applies)."""
    try:
        return os.get_terminal_size(fd)
    except OSError:
        return None

