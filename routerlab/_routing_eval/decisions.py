"""``routerlab route``: score each router's *first* decision on a split, without running sub-agents.

A full ``routerlab run`` executes every step a router chooses, so an LLM router on a CPU model
costs minutes per example. Whether the router sends a request to the right sub-agent is decided
by its first step, which costs one router call. This module replays only that step: the intent the
first decision implies (``RouteDecision.intent``, else the intent of its first tool) against the
example's gold intent or an accepted alternate. It is *first-decision intent accuracy*, not the
pipeline's ``route`` score, which also requires a clarification to have been asked and a refusal
to have run nothing (see docs/metrics.md).

A turn of a conversation is decided with the conversation's earlier turns as its history, exactly
as ``ask --conversation`` hands them to the router, and ``summary_table`` adds accuracy on first
turns and on follow-ups (docs/conversations.md §2).

The assistant keeps each finished turn as a :class:`~routerlab.agents.turn_history.Turn`
(question, answer, intent, the SQL that ran, its columns, row count and one-line summary, the
tables it used), and ``ask --conversation`` passes those of the earlier turns to the router of the
next one. ``route`` runs no sub-agent, so it builds the same turns from the dataset:

* ``gold`` (default): each earlier turn as the assistant would hold it had it answered that turn
  right: the gold intent; for an intent whose chain executes SQL (sql, clarify, fix) the gold SQL,
  run read-only on the turn's database for its columns, row count and summary (the same summary
  the execution tool writes, which is also the answer), and the tables it reads. One wrong
  decision therefore never changes what the following turns see.
* ``predicted``: each earlier turn as the router itself decided it: its predicted intent; the gold
  SQL and its result only when that intent's chain executes SQL (the sub-agents are taken to do
  their part right: ``route`` measures routing), else no SQL and no answer. A turn routed to a
  refusal leaves nothing for its follow-up to build on, as it would in the assistant.

Turns without SQL (chat, refuse, explain, unanswerable) keep an empty answer: the dataset holds no
reply text for them, and the routers read the intent and the question of such turns.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlglot import exp, parse_one

from routerlab import routers
from routerlab._runs.runner import conversation_units
from routerlab.agents.db import open_database
from routerlab.agents.errors import RouterlabError
from routerlab.agents.plan import CHAINS, TOOL_INTENT
from routerlab.agents.state import INTENTS, initial_state
from routerlab.agents.tools.subagents import result_summary
from routerlab.agents.turn_history import Turn, turn_without_sql
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders._common import check_choice
from routerlab.eval.confidence_calibration import calibration_summary
from routerlab.eval.robustness import diversion
from routerlab.eval.stats import cluster_bootstrap_ci

__all__ = [
    "HISTORIES",
    "FirstDecision",
    "decisions_frame",
    "first_decisions",
    "gold_turn",
    "implied_intent",
    "predicted_turn",
    "runs_sql",
    "summary_table",
]


# -- the earlier turns a router sees on a follow-up ----------------------------------------------

#: settings of the execution tool (agents/tools/context.py) the summary is computed with
_MAX_ROWS = 1000
_TIMEOUT_S = 10.0


def runs_sql(intent: str | None) -> bool:
    """Whether the canonical chain of ``intent`` executes SQL (sql, clarify, fix)."""
    return intent is not None and "execute_sql_and_analyze_result" in CHAINS.get(intent, ())  # type: ignore[call-overload]


def _tables(sql: str, dialect: str, names: list[str]) -> list[str]:
    """The database's tables that ``sql`` reads, in the database's spelling (what linking finds)."""
    real = {n.lower(): n for n in names}
    try:
        ast = parse_one(sql, read=dialect)
    except Exception:  # an unparsable gold query still gives its turn; only the tables are lost
        return []
    return sorted({real[t.name.lower()] for t in ast.find_all(exp.Table) if t.name.lower() in real})


def gold_turn(example: Example) -> Turn:
    """The turn the assistant keeps after answering ``example`` right (see the module docstring).

    A gold query that does not run leaves the turn as a failed execution leaves it: no SQL and
    the error class.
    """
    turn = turn_without_sql(example.question, example.intent)
    if not (runs_sql(example.intent) and example.gold_sql):
        return turn
    db = open_database(example.db_path)
    try:
        result = db.execute(example.gold_sql, timeout_s=_TIMEOUT_S, max_rows=_MAX_ROWS)
    except RouterlabError as exc:
        return turn_without_sql(example.question, example.intent, error_class=exc.error_class)
    summary = result_summary(result.columns, result.rows, result.row_count, result.truncated)
    return Turn(
        **{
            **turn,
            "answer": summary,
            "sql": example.gold_sql,
            "columns": list(result.columns),
            "row_count": result.row_count,
            "summary": summary,
            "tables": _tables(example.gold_sql, db.dialect, [t.name for t in db.tables()]),
        }
    )


def predicted_turn(gold: Turn, predicted: str | None) -> Turn:
    """The turn as the router decided it: its intent, and the gold result only if that intent runs SQL."""
    if runs_sql(predicted) and gold.get("sql"):
        return Turn(**{**gold, "intent": predicted})
    return turn_without_sql(gold["question"], predicted)


HistoryTurn = Callable[[Turn, Any], Turn]
"""``(gold turn, the router's predicted intent) -> the turn later turns see``."""

#: ``--history`` choices: how an earlier turn is kept, given its gold turn and the decision on it
HISTORIES: dict[str, HistoryTurn] = {
    "gold": lambda gold, predicted: gold,
    "predicted": predicted_turn,
}


@dataclass(frozen=True)
class FirstDecision:
    """One router's first decision on one example.

    Attributes:
        example_id: The example.
        gold: Its gold intent.
        predicted: The intent the decision implies (``None``: no decision, e.g. an invalid call).
        correct: ``predicted`` is the gold intent or an accepted alternate.
        method: How the router decided.
        lm_calls: The router's own LM calls for this decision (cache hits included).
        prompt_tokens: The router's prompt tokens.
        completion_tokens: The router's completion tokens.
        seconds: Wall time of ``decide`` (cached LM answers make it near zero).
        error: The exception class, when deciding raised.
        confidence: The decision's confidence (NaN when deciding raised).
        scored_tokens: Tokens the embedded engine evaluated for one-pass scoring in this decision
            (a reused prompt prefix is not evaluated again; generation calls count none here).
        conversation: The example's conversation (None: a single request).
        turn: Its position in the conversation (1 for a single request).
        history_turns: Earlier turns the router was shown.
        lm_seconds: Seconds the router's own LM calls took in this decision (part of ``seconds``).
    """

    example_id: str
    gold: str
    predicted: str | None
    correct: bool
    method: str
    lm_calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    error: str | None = None
    confidence: float = math.nan
    scored_tokens: int = 0
    conversation: str | None = None
    turn: int = 1
    history_turns: int = 0
    lm_seconds: float = 0.0


def implied_intent(decision: Any) -> str | None:
    """The intent a decision implies: its own ``intent``, else its first tool's, else None."""
    if decision.intent in INTENTS:
        return decision.intent
    return TOOL_INTENT.get(decision.tool_calls[0]["name"]) if decision.tool_calls else None


def _decide(router: Any, e: Example, history: list[Any], engine: Any) -> FirstDecision:
    """One decision on one example; a router that raises scores a wrong decision with its error class."""
    state = initial_state(e.question, e.db_path, hint=e.hint, oracle_intent=e.intent, history=history)
    where: dict[str, Any] = {"conversation": e.conversation, "turn": e.turn, "history_turns": len(history)}
    scored0 = getattr(engine, "scored_tokens", 0)
    t0 = time.perf_counter()
    try:
        d = router.decide(state)
    except Exception as exc:  # a crash is a scored failure, never a crashed evaluation
        return FirstDecision(
            e.id, e.intent, None, False, "", 0, 0, 0, time.perf_counter() - t0, type(exc).__name__, **where
        )
    predicted = implied_intent(d)
    return FirstDecision(
        e.id,
        e.intent,
        predicted,
        predicted in e.accepted_intents,
        d.method,
        d.usage.lm_calls,
        d.usage.prompt_tokens,
        d.usage.completion_tokens,
        time.perf_counter() - t0,
        confidence=float(d.confidence),
        scored_tokens=getattr(engine, "scored_tokens", 0) - scored0,
        lm_seconds=float(d.usage.latency_s),
        **where,
    )


def first_decisions(
    router_name: str,
    router_args: dict[str, Any],
    examples: Sequence[Example],
    lm: Any,
    *,
    on_done: Callable[[FirstDecision], None] | None = None,
    history: str = "gold",
    router: Any | None = None,
) -> list[FirstDecision]:
    """Build the router inside a real pipeline (same binding as a run) and decide once per example.

    A router that raises on one example scores that example as wrong with the error's class; the
    others still run. A conversation's turns are decided in turn order, each with the earlier
    turns of the conversation present in ``examples`` as its history (``history``: ``gold`` or
    ``predicted``, see the module docstring); single requests see none.

    Args:
        router_name: Registered router name.
        router_args: Its constructor arguments.
        examples: What to replay (schedule them by database for prefix reuse).
        lm: The LM the router (and, for binding, the sub-agents) would use.
        on_done: Called after each example (progress bars).
        history: How earlier turns are kept: ``gold`` or ``predicted``.
        router: The router already built from ``router_name`` and ``router_args`` (``routerlab
            route`` builds every router, and logs its recorded arguments, before deciding).

    Returns:
        One decision per example, conversations' turns in turn order.

    Raises:
        ConfigError: An unknown ``history``.
    """
    keep = HISTORIES[check_choice("history", history, tuple(HISTORIES))]
    built = router if router is not None else routers.router.build(router_name, **router_args)
    pipeline = routers.build_pipeline(built, lm)
    engine = getattr(lm, "engine", None)
    out: list[FirstDecision] = []
    for unit in conversation_units(examples):
        earlier: list[Any] = []
        for e in unit:
            fd = _decide(pipeline.router, e, list(earlier), engine)
            if e.conversation is not None:
                earlier.append(keep(gold_turn(e), fd.predicted))
            out.append(fd)
            if on_done is not None:
                on_done(fd)
    return out


def summary_table(by_router: dict[str, list[FirstDecision]]) -> pd.DataFrame:
    """Accuracy with a 95 % bootstrap CI, recall per gold intent, confidence, calibration and cost.

    Columns: ``router, n, accuracy, ci_low, ci_high, diverted, macro_recall, [n_first, acc_first,
    n_followup, acc_followup,] recall_<intent>..., confidence, ece, lm_calls,
    prompt_tokens, completion_tokens, scored_tokens, p50_ms, lm_p50_ms, errors`` (``confidence`` is
    the mean confidence, ``ece`` its expected calibration error, see
    :mod:`routerlab.eval.confidence_calibration`; ``diverted`` the share of data questions sent away from
    SQL, :mod:`routerlab.eval.robustness`; ``macro_recall`` the mean of ``recall_<intent>`` over the
    gold intents present; cost columns are means per example, ``p50_ms`` the median
    wall time of one decision, ``lm_p50_ms`` the same over decisions that called the LM). The
    CI resamples conversations whole (a single request is its own); the ``first`` / ``followup``
    columns (turn 1 / turns 2+) appear when some example belongs to a conversation. A
    ``recall_<intent>`` column appears only for intents some router was scored on: an intent absent
    from the set has no recall, and a column of NaN reads like a failure.
    """
    rows = []
    for label, ds in by_router.items():
        hits = [float(d.correct) for d in ds]
        # turns of one conversation are not independent: resample conversations whole
        lo, hi = cluster_bootstrap_ci(hits, [d.conversation or f"\0{d.example_id}" for d in ds])
        row: dict[str, Any] = {
            "router": label,
            "n": len(ds),
            "accuracy": sum(hits) / len(hits) if hits else float("nan"),
            "ci_low": lo,
            "ci_high": hi,
            # next to accuracy: a data question chatted at, refused, asked back or declined
            "diverted": diversion((d.gold, d.predicted, d.correct) for d in ds).share,
        }
        recall = {intent: [d.correct for d in ds if d.gold == intent] for intent in INTENTS}
        present = [sum(hits) / len(hits) for hits in recall.values() if hits]
        # every intent present weighs alike: a router that never asks back cannot hide behind sql
        row["macro_recall"] = sum(present) / len(present) if present else float("nan")
        if any(d.conversation for d in ds):
            for name, part in (("first", [d for d in ds if d.turn == 1]), ("followup", [d for d in ds if d.turn > 1])):
                row[f"n_{name}"] = len(part)
                row[f"acc_{name}"] = sum(d.correct for d in part) / len(part) if part else float("nan")
        for intent, mine in recall.items():
            row[f"recall_{intent}"] = sum(mine) / len(mine) if mine else float("nan")
        decided = [d for d in ds if d.error is None]
        calib = calibration_summary([d.confidence for d in decided], [d.correct for d in decided])
        row["confidence"] = calib["mean_confidence"]
        row["ece"] = calib["ece"]
        frame = pd.DataFrame([d.__dict__ for d in ds])
        for col in ("lm_calls", "prompt_tokens", "completion_tokens", "scored_tokens"):
            row[col] = float(frame[col].mean()) if len(frame) else float("nan")
        row["p50_ms"] = 1000 * float(frame["seconds"].median()) if len(frame) else float("nan")
        # a hybrid asks the LM on few examples: its overall median hides what an LM decision costs
        with_lm = frame[frame["lm_calls"] > 0] if len(frame) else frame
        row["lm_p50_ms"] = 1000 * float(with_lm["seconds"].median()) if len(with_lm) else float("nan")
        row["errors"] = int(frame["error"].notna().sum()) if len(frame) else 0
        rows.append(row)
    table = pd.DataFrame(rows)
    absent = [c for c in table.columns if c.startswith("recall_") and table[c].isna().all()]
    return table.drop(columns=absent)


def decisions_frame(label: str, decisions: Sequence[FirstDecision]) -> pd.DataFrame:
    """One router's first decisions, one row each, with a ``router`` column (``--out``, ``decisions.csv``)."""
    return pd.DataFrame([d.__dict__ for d in decisions]).assign(router=label)
