"""Stop signals: SIGTERM ends a run the way Ctrl-C does (runs closed KILLED, resume printed).

A scheduler, ``timeout`` or ``docker stop`` sends SIGTERM; Python's default for it ends the
process at once, leaving runs RUNNING and no resume command. :func:`stop_signals` turns it into
the same ``KeyboardInterrupt`` that Ctrl-C raises, and remembers which signal arrived so the exit
code can say so (128 + the signal's number).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["StopSignal", "stop_signals"]


@dataclass
class StopSignal:
    """Which stop signal arrived (None: none yet, or Ctrl-C before the handler saw it)."""

    signum: int | None = None

    @property
    def name(self) -> str:
        """``SIGTERM``, ``SIGINT`` (the default when no handled signal arrived)."""
        return signal.Signals(self.signum).name if self.signum is not None else "SIGINT"

    @property
    def exit_code(self) -> int:
        """The shell's convention: 128 + signal number (130 for Ctrl-C, 143 for SIGTERM)."""
        return 128 + (self.signum if self.signum is not None else signal.SIGINT)


@contextmanager
def stop_signals() -> Iterator[StopSignal]:
    """Within the block, SIGTERM and SIGINT raise ``KeyboardInterrupt`` in the main thread.

    Outside the main thread (signals cannot be handled there) the block runs unchanged. The
    previous handlers are restored on exit.
    """
    seen = StopSignal()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def handler(signum: int, _frame: object) -> None:
        seen.signum = signum
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield seen
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
