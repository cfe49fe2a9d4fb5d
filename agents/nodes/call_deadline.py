"""Deadline binding of tool calls: a model call the turn's deadline cut ends the turn."""

from __future__ import annotations

from routerlab.agents.lm.deadline import deadline_cut
from routerlab.agents.nodes.call_outcome import CallOutcome

__all__ = ["bind_deadline", "out_of_time"]


def out_of_time() -> bool:
    """The turn ran out of time: its remaining calls never start."""
    return deadline_cut() is not None


def bind_deadline(outcome: CallOutcome) -> CallOutcome:
    """``outcome``, or the failure that ends the turn when a model call of it was cut.

    A cut model call ends the turn even when the sub-agent caught it (and fell back).
    """
    if (cut := deadline_cut()) is not None:
        return outcome.failed(str(cut), cut.error_class, cut.turn_update())
    return outcome
