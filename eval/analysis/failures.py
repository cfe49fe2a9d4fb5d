"""Which examples failed and why: failure attribution, the per-example frame, disagreements.

Failure attribution puts every failed result (success below 1, or a timeout or crash) into
exactly one class, checked in this order:

1. ``other``: the example timed out or crashed (its scores say nothing about the router);
2. ``router``: wrong intent or wrong tool (``route`` score 0);
3. ``sql``: right route, but EX 0 or the SQL failed;
4. ``chain``: right route and SQL, but an invalid chain (``chain_valid`` 0);
5. ``other``: none of the above explains the failure (e.g. a chat turn that ended in error).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pandas as pd

from routerlab.agents.errors import ConfigError
from routerlab.eval.analysis.results import ResultsByRouter
from routerlab.eval.scoring import ExampleResult

__all__ = [
    "ATTRIBUTION_CLASSES",
    "attribute_failure",
    "attribution_counts",
    "disagreement_counts",
    "disagreements",
    "failure_attribution",
    "is_failure",
    "results_frame",
]

#: failure classes, in the order a failure is checked against them
ATTRIBUTION_CLASSES: tuple[str, ...] = ("router", "sql", "chain", "other")

#: outcomes that end an example before its scores can blame a component
_ABORTED = ("timeout", "crash")
#: tools whose failure is a failure of the SQL
_SQL_TOOLS = ("generate_sql", "fix_sql", "execute_sql_and_analyze_result")
#: error classes raised by executing SQL (routerlab.agents.errors)
_SQL_ERRORS = ("sql_error", "query_timeout", "guard_violation")
#: values at least this close to 1 count as a pass (as in routerlab.eval.analysis.build)
_PASS = 1.0 - 1e-9


def _question(result: ExampleResult) -> str | None:
    if result.trace is None:
        return None
    return next((str(m.get("content")) for m in result.trace.messages if m.get("role") == "user"), None)


def _tools(result: ExampleResult) -> str:
    return " > ".join(result.trace.tool_names) if result.trace is not None else ""


def results_frame(results: ResultsByRouter) -> pd.DataFrame:
    """One row per result: ids, intents, outcome, every score, latency, router cost, tools, SQL, failure.

    Args:
        results: Results by router label.

    Returns:
        Columns ``router, example_id, attempt, intent, predicted_intent, difficulty, outcome,
        error_class, error, score_<name>..., latency_s, router_lm_calls, router_tokens,
        router_lm_s, subagent_lm_calls, subagent_tokens, tools, sql, failure`` (``failure`` is
        the attribution class, None for a result that did not fail).
    """
    names = list(dict.fromkeys(n for rs in results.values() for r in rs for n in r.scores))
    rows = []
    for label, rs in results.items():
        for r in rs:
            row: dict[str, Any] = {
                "router": label,
                "example_id": r.example_id,
                "attempt": r.attempt,
                "intent": r.intent,
                "predicted_intent": r.predicted_intent,
                "difficulty": r.difficulty,
                "outcome": r.outcome,
                "error_class": r.error_class,
                "error": r.error,
            }
            row |= {f"score_{n}": r.value(n) for n in names}
            row |= {
                "latency_s": r.latency_s,
                "router_lm_calls": r.router_usage.lm_calls,
                "router_tokens": r.router_usage.prompt_tokens + r.router_usage.completion_tokens,
                "router_lm_s": r.router_usage.latency_s,
                "subagent_lm_calls": r.subagent_usage.lm_calls,
                "subagent_tokens": r.subagent_usage.prompt_tokens + r.subagent_usage.completion_tokens,
                "tools": _tools(r),
                "sql": r.trace.sql if r.trace is not None else None,
                "failure": attribute_failure(r),
            }
            rows.append(row)
    return pd.DataFrame(rows)


# -- failure attribution -----------------------------------------------------------------------


def _below_one(value: float | None) -> bool:
    return value is not None and value < _PASS


def is_failure(result: ExampleResult) -> bool:
    """True for a result that timed out or crashed, or whose success score is below 1.

    Results without a success score (invalid gold SQL) that finished are neither successes nor
    failures, as in the success rate's denominator.
    """
    return result.outcome in _ABORTED or _below_one(result.value("success"))


def _sql_failed(result: ExampleResult) -> bool:
    """EX 0, or the last SQL step of the trace failed, or the turn ended on an SQL error."""
    if _below_one(result.value("ex")):
        return True
    if result.error_class in _SQL_ERRORS:
        return True
    if result.trace is not None:
        sql_calls = [c for c in result.trace.tool_calls if c.get("name") in _SQL_TOOLS]
        return bool(sql_calls) and sql_calls[-1].get("status") == "error"
    return False


def attribute_failure(result: ExampleResult) -> str | None:
    """The failure class of one result (see the module docstring), None when it did not fail.

    Returns:
        ``router``, ``sql``, ``chain`` or ``other`` for a failure, else None.
    """
    if not is_failure(result):
        return None
    if result.outcome in _ABORTED:
        return "other"
    if _below_one(result.value("route")):
        return "router"
    if _sql_failed(result):
        return "sql"
    if _below_one(result.value("chain_valid")):
        return "chain"
    return "other"


def _reason(result: ExampleResult, cls: str) -> str:
    """Why a failure got its class: the deciding scorer's reason, or the error."""
    scorer = {"router": "route", "sql": "ex", "chain": "chain_valid"}.get(cls)
    score = result.scores.get(scorer) if scorer else None
    if score is not None and score.reason and _below_one(score.value):
        return score.reason
    if result.error:
        return result.error
    success = result.scores.get("success")
    return success.reason if success is not None else ""


def failure_attribution(results: ResultsByRouter) -> pd.DataFrame:
    """Every failed result with its class.

    Returns:
        One row per failure: ``router, example_id, attempt, intent, predicted_intent, failure,
        reason``.
    """
    cols = ["router", "example_id", "attempt", "intent", "predicted_intent", "failure", "reason"]
    rows = []
    for label, rs in results.items():
        for r in rs:
            cls = attribute_failure(r)
            if cls is not None:
                rows.append(
                    {
                        "router": label,
                        "example_id": r.example_id,
                        "attempt": r.attempt,
                        "intent": r.intent,
                        "predicted_intent": r.predicted_intent,
                        "failure": cls,
                        "reason": _reason(r, cls),
                    }
                )
    return pd.DataFrame(rows, columns=cols)


def attribution_counts(results: ResultsByRouter) -> pd.DataFrame:
    """Failures per router and class.

    Returns:
        Index: router labels (every router, even without failures); columns
        :data:`ATTRIBUTION_CLASSES` (counts).
    """
    counts = pd.DataFrame(0, index=pd.Index(list(results), name="router"), columns=list(ATTRIBUTION_CLASSES))
    for label, rs in results.items():
        for r in rs:
            cls = attribute_failure(r)
            if cls is not None:
                counts.loc[label, cls] += 1
    return counts


# -- disagreements -----------------------------------------------------------------------------


def _keyed(rs: Sequence[ExampleResult]) -> dict[tuple[str, int], ExampleResult]:
    return {(r.example_id, r.attempt): r for r in rs}


def disagreements(results: ResultsByRouter, a: str, b: str) -> pd.DataFrame:
    """Examples where two routers' success differs, with the key steps of both traces.

    Results are paired by ``(example_id, attempt)``; only examples both routers ran count. A
    success of None (invalid gold) differs from 0 and from 1.

    Args:
        results: Results by router label.
        a: The first router's label.
        b: The second router's label.

    Returns:
        One row per disagreement: ``example_id, attempt, intent, question``, then for each
        router ``<label>.success``, ``.predicted_intent``, ``.tools`` (called tool names, in
        order), ``.sql`` and ``.error``.

    Raises:
        ConfigError: For an unknown label.
    """
    unknown = [x for x in (a, b) if x not in results]
    if unknown:
        raise ConfigError(
            f"unknown router label(s) {unknown}",
            expected=f"one of {list(results)}",
            found=", ".join(unknown),
            fix="use the labels of the loaded results (baselines read 'oracle (baseline)')",
        )
    ka, kb = _keyed(results[a]), _keyed(results[b])
    rows = []
    for key in sorted(ka.keys() & kb.keys()):
        ra, rb = ka[key], kb[key]
        if ra.value("success") == rb.value("success"):
            continue
        row: dict[str, Any] = {
            "example_id": key[0],
            "attempt": key[1],
            "intent": ra.intent,
            "question": _question(ra) or _question(rb),
        }
        for label, r in ((a, ra), (b, rb)):
            row |= {
                f"{label}.success": r.value("success"),
                f"{label}.predicted_intent": r.predicted_intent,
                f"{label}.tools": _tools(r),
                f"{label}.sql": r.trace.sql if r.trace is not None else None,
                f"{label}.error": r.error,
            }
        rows.append(row)
    fields = ("success", "predicted_intent", "tools", "sql", "error")
    cols = ["example_id", "attempt", "intent", "question", *(f"{x}.{f}" for x in (a, b) for f in fields)]
    return pd.DataFrame(rows, columns=cols)


def disagreement_counts(results: ResultsByRouter) -> pd.DataFrame:
    """How many paired examples each pair of routers disagrees on (success), as a symmetric matrix."""
    labels = list(results)
    counts = pd.DataFrame(0, index=pd.Index(labels, name="router"), columns=labels)
    for a, b in itertools.combinations(labels, 2):
        n = len(disagreements(results, a, b))
        counts.loc[a, b] = counts.loc[b, a] = n
    return counts
