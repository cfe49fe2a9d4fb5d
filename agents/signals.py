"""Stop signals: SIGTERM ends a run the way Ctrl-C does (runs closed KILLED, resume printed).

A scheduler, ``timeout`` or ``docker stop`` sends SIGTERM; Python's default for it ends the
process at once, leaving runs RUNNING and no resume command. :func:`stop_signals` turns it into
the same ``KeyboardInterrupt`` that Ctrl-C raises, and remembers which signal arrived so the exit
code can say so (128 + the signal's number).

A store write must not be cut in the middle: DuckDB turns a ``KeyboardInterrupt`` raised inside
a query into its own ``InterruptException`` ("Query interrupted"), which reads as a crash and
used to end the session FAILED with exit 1. Writes run under :func:`shield`: a stop signal that
arrives there is held until the write has committed, then raised.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["StopSignal", "is_stop", "native_call", "raise_held_stop", "shield", "stop_requested", "stop_signals"]


@dataclass
class StopSignal:
    """Which stop signal arrived (None: none yet, or Ctrl-C before the handler saw it)."""

    signum: int | None = None
    #: how many :func:`shield` blocks are open (a signal there is held, not raised)
    shielded: int = 0
    #: a signal arrived inside a shield and is raised when the outermost one closes
    pending: bool = False

    @property
    def name(self) -> str:
        """``SIGTERM``, ``SIGINT`` (the default when no handled signal arrived)."""
        return signal.Signals(self.signum).name if self.signum is not None else "SIGINT"

    @property
    def exit_code(self) -> int:
        """The shell's convention: 128 + signal number (130 for Ctrl-C, 143 for SIGTERM)."""
        return 128 + (self.signum if self.signum is not None else signal.SIGINT)


#: the watches of the open stop_signals blocks, innermost last (scoped: each block pops its own)
_watches: list[StopSignal] = []


@contextmanager
def stop_signals(signums: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)) -> Iterator[StopSignal]:
    """Within the block, SIGTERM and SIGINT raise ``KeyboardInterrupt`` in the main thread.

    Outside the main thread (signals cannot be handled there) the block runs unchanged. The
    previous handlers are restored on exit.

    Args:
        signums: The signals handled (both by default; :func:`native_call` takes SIGINT alone).
    """
    seen = StopSignal()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def handler(signum: int, _frame: object) -> None:
        seen.signum = signum
        if seen.shielded:
            seen.pending = True  # raised when the write under way has committed
            return
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {s: signal.signal(s, handler) for s in signums}
    _watches.append(seen)
    try:
        yield seen
    finally:
        _watches.remove(seen)
        for s, h in previous.items():
            signal.signal(s, h)


@contextmanager
def shield(*, raise_after: bool = True) -> Iterator[None]:
    """Hold stop signals while the block runs (a store write); raise the held one after it.

    Outside :func:`stop_signals`, or outside the main thread, the block runs unchanged. When the
    block itself raises, that error goes on (the signal stays recorded in the watch).

    Args:
        raise_after: False for the cleanup of a session already stopping: a second Ctrl-C must
            not cut the closing of its runs short, and is only recorded.

    Raises:
        KeyboardInterrupt: After the block, when a stop signal arrived during it (and ``raise_after``).
    """
    if not _watches or threading.current_thread() is not threading.main_thread():
        yield
        return
    seen = _watches[-1]
    seen.shielded += 1
    try:
        yield
    finally:
        seen.shielded -= 1
    if not seen.shielded and seen.pending:
        seen.pending = False
        if raise_after:
            raise KeyboardInterrupt(seen.name)


@contextmanager
def native_call() -> Iterator[None]:
    """Hold stop signals while native code that calls back into Python runs (a model's decode).

    Inside a :func:`stop_signals` block this is :func:`shield`. Outside one (``routerlab
    route``, a notebook), Python's default Ctrl-C handler would raise inside the callback, where
    ctypes swallows it: SIGINT is held for the call instead and raised as the usual
    ``KeyboardInterrupt`` when the call returns. A SIGINT handler someone else installed (or
    SIG_IGN) is left alone, and SIGTERM keeps its default (the process ends; nothing runs in C
    to swallow it).
    """
    if _watches or threading.current_thread() is not threading.main_thread():
        with shield():
            yield
        return
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    with stop_signals((signal.SIGINT,)), shield():
        yield


def stop_requested() -> bool:
    """Whether a stop signal has arrived in an open :func:`stop_signals` block.

    Native code that calls back into Python (llama.cpp's abort callback) asks this: a
    ``KeyboardInterrupt`` raised inside a ctypes callback is printed and swallowed, so the
    signal is held by :func:`shield` around the native call, and the callback ends the call
    early when this says so. One list scan, microseconds.
    """
    return any(w.signum is not None for w in _watches)


def raise_held_stop() -> None:
    """Raise the stop that arrived as ``KeyboardInterrupt`` now, dropping it from the shield.

    For a native call the signal cut short: its half-done work is discarded and the stop goes
    on at once, rather than after the shield closes (and never twice).

    Raises:
        KeyboardInterrupt: Always, named for the signal that arrived.
    """
    seen = next((w for w in reversed(_watches) if w.signum is not None), None)
    if seen is not None:
        seen.pending = False
    raise KeyboardInterrupt(seen.name if seen is not None else "SIGINT")


def is_stop(exc: BaseException) -> bool:
    """Whether ``exc`` is a stop: a ``KeyboardInterrupt``, or a library's "interrupted" error.

    DuckDB turns a signal that arrives inside a query into ``RuntimeError: Query interrupted``
    (or its ``InterruptException``); such an error counts as a stop only when a stop signal was
    seen, so a library's own failure is never mistaken for one.
    """
    if isinstance(exc, KeyboardInterrupt):
        return True
    return stop_requested() and ("Interrupt" in type(exc).__name__ or "interrupted" in str(exc).lower())
