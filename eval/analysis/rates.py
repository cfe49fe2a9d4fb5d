"""Rates with their CIs per router, the best router per rate, success per intent, confusion tables.

Rates and CIs come from :mod:`routerlab.eval.metrics` (``docs/metrics.md``), so they match
``routerlab compare`` and MLflow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from routerlab.eval.analysis.results import ResultsByRouter
from routerlab.eval.metrics import confusion_matrix, per_intent
from routerlab.eval.rate import rate
from routerlab.eval.scorers import DEFAULT_SCORERS, HEADLINE_SCORERS, SCORER_TITLES

__all__ = ["RATE_METRICS", "best_routers", "confusion_matrices", "rates_table", "success_per_intent"]

#: the four rates compared, with their display names (both from the one scorer list, eval/scorers)
#: in the default scorers' table order
RATE_METRICS: dict[str, str] = {name: SCORER_TITLES[name] for name in DEFAULT_SCORERS if name in HEADLINE_SCORERS}


def rates_table(results: ResultsByRouter, metrics: Sequence[str] = tuple(RATE_METRICS)) -> pd.DataFrame:
    """Per-router rates with 95 % bootstrap CIs (:func:`routerlab.eval.rate.rate`).

    Args:
        results: Results by router label.
        metrics: Scorer names (default EX, chain validity, routing accuracy, success).

    Returns:
        One row per (router, metric): ``router, metric, value, ci_low, ci_high, n, n_invalid,
        n_empty`` (``n_empty``: matches of two empty results, docs/metrics.md §3.1); ``value``
        is NaN and ``n`` 0 when the scorer applies to no result.
    """
    rows = []
    for label, rs in results.items():
        for m in metrics:
            r = rate(list(rs), m)
            rows.append(
                {
                    "router": label,
                    "metric": m,
                    "value": r.value,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                    "n": r.n,
                    "n_invalid": r.n_invalid,
                    "n_empty": r.n_empty,
                }
            )
    return pd.DataFrame(rows, columns=["router", "metric", "value", "ci_low", "ci_high", "n", "n_invalid", "n_empty"])


def success_per_intent(results: ResultsByRouter) -> pd.DataFrame:
    """End-to-end success within each gold intent, per router (:func:`routerlab.eval.metrics.per_intent`).

    Returns:
        One row per (router, intent present): ``router, intent, value, ci_low, ci_high, n``.
    """
    rows = [
        {"router": label, "intent": intent, "value": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high, "n": r.n}
        for label, rs in results.items()
        for intent, r in per_intent(list(rs), "success").items()
    ]
    return pd.DataFrame(rows, columns=["router", "intent", "value", "ci_low", "ci_high", "n"])


def best_routers(rates: pd.DataFrame) -> pd.DataFrame:
    """The best router per metric of a :func:`rates_table`, and whether it is clearly ahead.

    Returns:
        One row per metric with a value: ``metric, best`` (labels tied at the top, comma
        separated), ``tied`` (more than one best), ``value, ci_low, ci_high, n`` (of the first best), ``runner_up`` and
        ``runner_up_value`` (the best of the others, None when all tie) and ``separated``: True
        when the best's CI lies entirely above the runner-up's (a conservative check; use
        ``routerlab compare`` for paired tests).
    """
    rows = []
    for metric in dict.fromkeys(rates["metric"]):
        sub = rates[(rates["metric"] == metric) & rates["value"].notna()]
        if sub.empty:
            continue
        top = sub["value"].max()
        best = sub[np.isclose(sub["value"], top)]
        rest = sub[~np.isclose(sub["value"], top)]
        first = best.iloc[0]
        runner = rest.loc[rest["value"].idxmax()] if not rest.empty else None
        rows.append(
            {
                "metric": metric,
                "best": ", ".join(best["router"]),
                "tied": len(best) > 1,
                "value": float(first["value"]),
                "ci_low": float(first["ci_low"]),
                "ci_high": float(first["ci_high"]),
                "n": int(first["n"]),
                "runner_up": None if runner is None else str(runner["router"]),
                "runner_up_value": math.nan if runner is None else float(runner["value"]),
                "separated": bool(runner is not None and best["ci_low"].min() > runner["ci_high"]),
            }
        )
    return pd.DataFrame(rows)


def confusion_matrices(results: ResultsByRouter) -> dict[str, pd.DataFrame]:
    """Gold intent (rows) x predicted intent (columns, plus ``none``) counts per router.

    Uses :func:`routerlab.eval.metrics.confusion_matrix`: every result counts once, so each matrix sums to
    the router's number of results.
    """
    return {label: confusion_matrix(list(rs)) for label, rs in results.items()}
