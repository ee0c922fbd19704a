"""Stop signals before a command takes them: a clean exit 0, never a traceback.

Who calls it: `gapwatch.__main__.run` (the `gapwatch` script and `python -m gapwatch`), first
thing, before the ~0.3 s of imports. Python's own SIGINT handler raises KeyboardInterrupt
wherever the main thread is (an import, a JSON decoder), which printed a traceback and exited
130; SIGTERM and SIGHUP killed the process outright (143, 129), an export's hidden temporary
left behind.

Here a stop signal (SIGINT, SIGTERM, SIGHUP) raises `StopRequested`, a `SystemExit` of status 0:
it unwinds the stack like any exit, so every `finally` and `except BaseException` runs (an
export removes its temporary) and Python prints no traceback for it. Further stop signals are
ignored for 2 s: the clean-up is not itself interrupted (a command that stops gracefully says
so when it gives the signals back: `stop_under_way`). Once the command is over (stopped or
not), `exiting` ignores them for good: Python's own shutdown puts back the default action of
every signal that has a Python handler (`_PySignal_Fini`) and then tears the modules down, tens
of milliseconds after a report; a second Ctrl-C there killed the process (-2, the shell's 130)
after it had said `gapwatch: stopped (SIGINT)`. SIG_IGN is the one disposition it leaves as
it is. What cannot be helped: a signal in the first ~35 ms, while the interpreter itself starts
and before this module runs, meets Python's defaults (SIGTERM and SIGHUP end the process, 143
and 129; SIGINT a KeyboardInterrupt). Raised where Python cannot
raise (a weakref callback of the import machinery), it is not printed and the signal comes
again a moment later (`_unraisable`). Commands that stop
gracefully instead (`record`, `replay --headless`, the dashboard) install their own handlers
over these (`gapwatch.engine.stop_signals`) while they run.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, ModuleType

#: The signals that ask gapwatch to stop (the same three as `engine.stop_signals`).
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopRequested(SystemExit):
    """A stop signal arrived: exit with status 0. `signal` says which."""

    def __init__(self, sig: signal.Signals) -> None:
        super().__init__(0)
        self.signal = sig


class _Pending:
    """The stop under way: the signal that asked for it, and whether its exception was
    swallowed (raised inside a weakref callback or a `__del__`, where Python only prints it)."""

    signal: signal.Signals | None = None
    swallowed = False
    since_mono = 0.0
    #: `_unraisable` is running: a stop signal landing in it is deferred (`resend`), never
    #: raised there (an exception raised in the hook is printed and lost, the command ran on).
    in_hook = False
    resend = False
    #: How many times `_stop` has run: `_send_again` waits for it to move after each signal
    #: it sends, so that it judges `resend` after the handler ran, not before.
    handled = 0


#: A stop signal this long after the first raises again (code that caught the first and went on
#: must still be stoppable); sooner, it is ignored while the clean-up runs.
_AGAIN_AFTER_S = 2.0


def _stop(signum: int, frame: FrameType | None) -> None:
    try:
        _raise_stop(signum)
    finally:
        # Last, once `resend` says what became of it: `_send_again` judges it after this.
        _Pending.handled += 1


def _raise_stop(signum: int) -> None:
    if _Pending.in_hook:
        _Pending.resend = True  # `_send_again` sends it once the hook is over
        return
    now = time.monotonic()
    if (_Pending.signal is not None and not _Pending.swallowed
            and now - _Pending.since_mono < _AGAIN_AFTER_S):
        return  # already stopping: the clean-up is not interrupted again
    if _Pending.signal is None:
        _Pending.signal, _Pending.since_mono = signal.Signals(signum), now
    _Pending.swallowed = False
    raise StopRequested(_Pending.signal)


def _unraisable(args: sys.UnraisableHookArgs) -> None:
    """A `StopRequested` raised where Python cannot raise (the import machinery's weakref
    callback: a stop signal during the imports printed "Exception ignored in ..." with a
    traceback, and the command ran on) is not printed: the signal is sent again a moment
    later, to land in a frame that can raise."""
    if not isinstance(args.exc_value, StopRequested):
        _previous_hook(args)
        return
    _Pending.in_hook = True
    try:
        _Pending.swallowed = True
        again = threading.Thread(target=_send_again, args=(args.exc_value.signal,), daemon=True)
        again.start()
    finally:
        _Pending.in_hook = False


#: How often `_send_again` looks, how many signals it sends at most, and how many looks it
#: waits for the main thread to run the handler of each (10 s: a loaded box).
_AGAIN_EVERY_S = 0.01
_AGAIN_TRIES = 100
_HANDLED_LOOKS = 1000


def _send_again(sig: signal.Signals) -> None:
    """The swallowed stop signal sent again a moment later, and again while each one lands in
    `_unraisable` itself (`_Pending.resend`: the thread's start can outlast the moment, on a
    loaded box, and a signal raised in the hook was lost: 2 runs in 160, 4 at once). After each
    signal it waits for the handler to have run (`_Pending.handled`) before it judges: it
    looked 10 ms after, and on a box at load 9 the main thread had not run the handler yet,
    ran it in the hook after this thread had returned, and the command ran on."""
    pid = os.getpid()
    time.sleep(_AGAIN_EVERY_S)
    for _ in range(_AGAIN_TRIES):
        seen = _Pending.handled
        _Pending.resend = False
        os.kill(pid, sig)
        for _ in range(_HANDLED_LOOKS):
            time.sleep(_AGAIN_EVERY_S)
            if _Pending.handled != seen:
                break
        if not _Pending.resend:
            return


_previous_hook = sys.unraisablehook


def quit_on_stop_signals() -> None:
    """From now on a stop signal ends the process with status 0 (main thread only)."""
    sys.unraisablehook = _unraisable
    for sig in STOP_SIGNALS:
        signal.signal(sig, _stop)


def stop_under_way(sig: signal.Signals) -> None:
    """Note a stop that another handler took (`engine.stop_signals.StopSignals`, as it gives
    the signals back here): further stop signals are ignored for `_AGAIN_AFTER_S`, as after a
    stop of our own, instead of cutting short what the command does after it (`record`'s
    summary)."""
    if _Pending.signal is None:
        _Pending.signal, _Pending.since_mono = sig, time.monotonic()


def exiting() -> None:
    """The command is over: stop signals are ignored (SIG_IGN) until the process ends (see the
    module docstring: Python's shutdown would otherwise give them their default action back
    while it still runs). Main thread only; elsewhere it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


@contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """Hold stop signals back (they wait, blocked) while the body runs: a file created and
    handed to the caller's clean-up in one step cannot be left behind by a signal between the
    two. Main thread only; elsewhere it holds nothing back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def import_held(name: str) -> ModuleType:
    """`importlib.import_module(name)` with stop signals held back (`stop_signals_deferred`):
    a stop raised while a module builds its msgspec decoders (`msgspec.json.Decoder(T)` calls
    back into Python to read `T`'s annotations) crashed the process (SIGSEGV, msgspec 0.23's
    error path: 10 runs in 200 of `replay` stopped during its imports on a loaded box, where
    the suite's `test_stop_anytime` failed on and off). The signal waits the moment the import
    takes (~0.3 s for a command's modules) and stops the process cleanly after it. Who calls
    it: `gapwatch.__main__.run` (the command line's module) and `cli.build_parser` (the
    command's)."""
    with stop_signals_deferred():
        return importlib.import_module(name)
