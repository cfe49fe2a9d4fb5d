"""``routerlab route``: score each router's *first* decision on a split, without running sub-agents.

A full ``routerlab run`` executes every step a router chooses, so an LLM router on a CPU model
costs minutes per example. Whether the router sends a request to the right sub-agent is decided
by its first step, which costs one router call. This module replays only that step: the intent the
first decision implies (``RouteDecision.intent``, else the intent of its first tool) against the
example's gold intent or an accepted alternate. It is *first-decision intent accuracy*, not the
pipeline's ``route`` score, which also requires a clarification to have been asked and a refusal
to have run nothing (see docs/metrics.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from routerlab.agents.state import INTENTS, initial_state
from routerlab.benchmarks.example import Example
from routerlab.eval.confidence_calibration import calibration_summary
from routerlab.eval.robustness import diversion
from routerlab.eval.stats import bootstrap_ci

__all__ = ["FirstDecision", "first_decisions", "implied_intent", "intent_confusion", "summary_table"]


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


def implied_intent(decision: Any) -> str | None:
    """The intent a decision implies: its own ``intent``, else its first tool's, else None."""
    from routerlab.agents.plan import TOOL_INTENT

    if decision.intent in INTENTS:
        return decision.intent
    return TOOL_INTENT.get(decision.tool_calls[0]["name"]) if decision.tool_calls else None


def first_decisions(
    router_name: str,
    router_args: dict[str, Any],
    examples: Sequence[Example],
    lm: Any,
    *,
    on_done: Callable[[FirstDecision], None] | None = None,
) -> list[FirstDecision]:
    """Build the router inside a real pipeline (same binding as a run) and decide once per example.

    A router that raises on one example scores that example as wrong with the error's class; the
    others still run.

    Args:
        router_name: Registered router name.
        router_args: Its constructor arguments.
        examples: What to replay (schedule them by database for prefix reuse).
        lm: The LM the router (and, for binding, the sub-agents) would use.
        on_done: Called after each example (progress bars).
    """
    from routerlab import routers
    from routerlab.agents.graph import Pipeline

    pipeline = Pipeline(routers.router.build(router_name, **router_args), lm)
    engine = getattr(lm, "engine", None)
    out: list[FirstDecision] = []
    for e in examples:
        state = initial_state(e.question, e.db_path, hint=e.hint, oracle_intent=e.intent)
        scored0 = getattr(engine, "scored_tokens", 0)
        t0 = time.perf_counter()
        try:
            d = pipeline.router.decide(state)
        except Exception as exc:  # a crash is a scored failure, never a crashed evaluation
            fd = FirstDecision(e.id, e.intent, None, False, "", 0, 0, 0, time.perf_counter() - t0, type(exc).__name__)
        else:
            predicted = implied_intent(d)
            fd = FirstDecision(
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
            )
        out.append(fd)
        if on_done is not None:
            on_done(fd)
    return out


def summary_table(by_router: dict[str, list[FirstDecision]]) -> pd.DataFrame:
    """Accuracy with a 95 % bootstrap CI, recall per gold intent, confidence, calibration and cost.

    Columns: ``router, n, accuracy, ci_low, ci_high, diverted, recall_<intent>..., confidence, ece, lm_calls,
    prompt_tokens, completion_tokens, scored_tokens, p50_ms, lm_p50_ms, errors`` (``confidence`` is
    the mean confidence, ``ece`` its expected calibration error, see
    :mod:`routerlab.eval.confidence_calibration`; ``diverted`` the share of data questions sent away from
    SQL, :mod:`routerlab.eval.robustness`; cost columns are means per example, ``p50_ms`` the median
    wall time of one decision, ``lm_p50_ms`` the same over decisions that called the LM).
    """
    rows = []
    for label, ds in by_router.items():
        hits = [float(d.correct) for d in ds]
        lo, hi = bootstrap_ci(hits)
        row: dict[str, Any] = {
            "router": label,
            "n": len(ds),
            "accuracy": sum(hits) / len(hits) if hits else float("nan"),
            "ci_low": lo,
            "ci_high": hi,
            # next to accuracy: a data question chatted at, refused, asked back or declined
            "diverted": diversion((d.gold, d.predicted, d.correct) for d in ds).share,
        }
        for intent in INTENTS:
            mine = [d.correct for d in ds if d.gold == intent]
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
    return pd.DataFrame(rows)


def intent_confusion(decisions: Sequence[FirstDecision]) -> pd.DataFrame:
    """Counts of gold intent (rows) against predicted intent (columns; ``none``: no decision)."""
    cols = [*INTENTS, "none"]
    table = pd.DataFrame(0, index=list(INTENTS), columns=cols)
    for d in decisions:
        table.loc[d.gold, d.predicted or "none"] += 1
    return table
