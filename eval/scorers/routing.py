"""Routing accuracy and end-to-end success per intent."""

from __future__ import annotations

from routerlab.agents.trace import Trace
from routerlab.benchmarks.example import Example
from routerlab.eval.scorers.execution import ExecutionAccuracy, shared_verdict
from routerlab.eval.scoring import Score, Scorer, scorer

__all__ = ["RouteAccuracy", "Success", "asked", "ran_sql"]

_DATA_TOOLS = ("data_discovery", "generate_sql", "fix_sql", "execute_sql_and_analyze_result")


def asked(trace: Trace) -> bool:
    """The agent asked the user a clarifying question."""
    return bool(trace.ask_human) or "ask_human" in trace.tool_names


def ran_sql(trace: Trace) -> bool:
    """Any SQL reached the database, or a SQL-producing call succeeded."""
    return trace.executed or any(
        c["name"] in ("generate_sql", "fix_sql", "execute_sql_and_analyze_result") and c.get("status") == "success"
        for c in trace.tool_calls
    )


@scorer("route")
class RouteAccuracy(Scorer):
    """1 when the router's intent is the gold intent or an accepted alternate.

    Special cases: ``clarify`` counts only if the agent actually asked; ``refuse`` only if no SQL
    was produced or run.
    """

    def score(self, example: Example, trace: Trace) -> Score:
        """Compare ``trace.intent`` with ``example.accepted_intents``."""
        got = trace.intent
        if got not in example.accepted_intents:
            return Score(self.name, 0.0, f"routed as {got}, expected {example.intent}", {"predicted": got})
        if got == "clarify" and not asked(trace):
            return Score(self.name, 0.0, "clarify intent but no question was asked", {"predicted": got})
        if got == "refuse" and ran_sql(trace):
            return Score(self.name, 0.0, "refuse intent but SQL was produced or run", {"predicted": got})
        return Score(self.name, 1.0, f"routed as {got}", {"predicted": got})


@scorer("success")
class Success(Scorer):
    """End-to-end success, defined per gold intent (docs/metrics.md).

    sql, fix: EX == 1. clarify: asked a question and, after the scripted reply, EX == 1.
    explain: explain_sql succeeded and nothing was executed. chat: a final answer with no data
    tool called. refuse: the refuse tool ran and nothing was produced or executed. unanswerable:
    the abstain tool ran.

    For sql, fix and clarify it takes the very verdict the run's ``ex`` scorer gave the same
    trace (whatever its mode and limits), so the predicted SQL runs once and ``success`` never
    disagrees with ``ex``. Only when no ``ex`` scorer ran (or ``ex_mode`` asks for another mode)
    does it compute one, with default limits.

    Args:
        ex_mode: None (default): the ``ex`` scorer's verdict. A mode name: EX in that mode.
    """

    def __init__(self, ex_mode: str | None = None) -> None:
        self.ex_mode = ex_mode
        self._ex = ExecutionAccuracy(mode=ex_mode or "spider")

    def _ex_verdict(self, example: Example, trace: Trace) -> Score:
        if self.ex_mode is None:
            shared = shared_verdict(example, trace)
            if shared is not None:
                return shared
        return self._ex.score(example, trace)

    def _tool_ok(self, trace: Trace, name: str) -> bool:
        return any(c["name"] == name and c.get("status") == "success" for c in trace.tool_calls)

    def score(self, example: Example, trace: Trace) -> Score:
        """Success of the whole turn for the example's intent."""
        intent = example.intent
        if intent in ("sql", "fix", "clarify"):
            if intent == "clarify" and not asked(trace):
                return Score(self.name, 0.0, "did not ask a clarifying question")
            ex = self._ex_verdict(example, trace)
            if ex.value is None:
                return Score(self.name, None, ex.reason, ex.detail)
            return Score(self.name, ex.value, f"EX {ex.reason}")
        if intent == "explain":
            ok = self._tool_ok(trace, "explain_sql") and not trace.executed
            return Score(self.name, float(ok), "explained" if ok else "no successful explain_sql")
        if intent == "chat":
            ok = bool(trace.answer) and not trace.error and not any(n in _DATA_TOOLS for n in trace.tool_names)
            return Score(self.name, float(ok), "answered without data access" if ok else "touched data or failed")
        if intent == "refuse":
            ok = self._tool_ok(trace, "refuse") and not ran_sql(trace)
            return Score(self.name, float(ok), "refused" if ok else "did not refuse cleanly")
        if intent == "unanswerable":
            ok = self._tool_ok(trace, "abstain")
            return Score(self.name, float(ok), "abstained" if ok else "did not abstain")
        return Score(self.name, None, f"unknown intent {intent}")
