"""What each router costs: latency, the router's own LM calls and tokens, risk-coverage, the Pareto front.

:data:`COST_BASIS` chooses the cost the tables and figures show (cold: as if no LM call had
been cached; observed: as the run measured it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from routerlab.eval.analysis.results import ResultsByRouter
from routerlab.eval.metrics import cold_latency, latency_summary, usage_summary
from routerlab.eval.rate import rate
from routerlab.eval.risk import risk_coverage, risk_summary
from routerlab.eval.scoring import ExampleResult

__all__ = [
    "COST_BASIS",
    "COST_COLUMNS",
    "baseline_labels",
    "cost_basis",
    "latency_frame",
    "latency_table",
    "pareto_front",
    "risk_coverage_frame",
    "router_cost",
]

#: the router's own cost per example (columns of :func:`router_cost`), with display names and units
COST_COLUMNS: dict[str, str] = {
    "router_lm_calls_per_ex": "router LM calls per example (calls)",
    "router_tokens_per_ex": "router tokens per example (tokens)",
    "router_lm_s_per_ex": "router LM time per example (s)",
    "route_node_s_per_ex": "route node time per example (s)",
}

#: which cost the cost tables and figures show. Results measure the cost each run observed, and an
#: LM call served from the response cache (often left by an earlier router of the same session)
#: costs nothing there; when results also carry the cost of an uncached run, set this to "cold".
COST_BASIS = "cold"
#: how each cost basis is named on tables and figures
_COST_BASIS_TEXT: dict[str, str] = {
    "observed": "observed cost: as the run measured it, cached LM calls count as free",
    "cold": "cold cost: as if no LM call had been cached",
}


def risk_coverage_frame(results: ResultsByRouter) -> pd.DataFrame:
    """Each router's risk-coverage curve (:func:`routerlab.eval.risk.risk_coverage`) in long form.

    Returns:
        One row per point: ``router, threshold, coverage, risk, aurc`` (``aurc`` repeated per
        router, the figure :func:`routerlab.eval.risk.risk_summary` reports). Routers without
        answered data questions have no rows.
    """
    rows = []
    for label, rs in results.items():
        aurc = risk_summary(list(rs)).aurc
        rows += [
            {"router": label, "threshold": t, "coverage": c, "risk": k, "aurc": aurc}
            for t, c, k in risk_coverage(list(rs))
        ]
    return pd.DataFrame(rows, columns=["router", "threshold", "coverage", "risk", "aurc"])


def latency_frame(results: ResultsByRouter) -> pd.DataFrame:
    """Latencies in long form for distribution plots.

    Returns:
        One row per (result, stage): ``router, example_id, attempt, stage, seconds``. Stages are
        ``end_to_end`` and ``node.<name>`` for each graph node the example visited; unlike
        :func:`routerlab.eval.metrics.latency_summary`, nodes never visited are left out instead of counted
        as 0 s, so a distribution shows only real visits.
    """
    rows = []
    for label, rs in results.items():
        for r in rs:
            base = {"router": label, "example_id": r.example_id, "attempt": r.attempt}
            end_to_end = max(r.latency_s, cold_latency(r)) if COST_BASIS == "cold" else r.latency_s
            rows.append({**base, "stage": "end_to_end", "seconds": end_to_end})
            rows += [{**base, "stage": f"node.{n}", "seconds": s} for n, s in r.node_latency_s.items()]
    return pd.DataFrame(rows, columns=["router", "example_id", "attempt", "stage", "seconds"])


def latency_table(results: ResultsByRouter) -> pd.DataFrame:
    """Latency percentiles per router and series, in seconds, each series named with its cost basis.

    Returns:
        Index ``(router, series)`` (``end_to_end (cold)``, ``router_lm (cold)``,
        ``subagent_lm (cold)``, ``node.<name> (observed)``; ``(observed)`` throughout when
        :data:`COST_BASIS` is observed); columns ``p50, p95, p99, mean``.
    """
    frames = {label: _latency_series(list(rs)) for label, rs in results.items() if rs}
    if not frames:
        return pd.DataFrame(columns=["p50", "p95", "p99", "mean"])
    return pd.concat(frames, names=["router", "series"])


def _latency_series(results: list[ExampleResult]) -> pd.DataFrame:
    """One router's latency percentiles, each series named with its cost basis.

    End-to-end and LM times follow :data:`COST_BASIS` (cold: as first computed, the figures
    ``routerlab compare`` shows); node times exist only as observed.
    """
    observed = pd.DataFrame(latency_summary(results)).T
    if COST_BASIS != "cold":
        return observed.rename(index=lambda s: f"{s} (observed)").rename_axis("series")
    cold = pd.DataFrame(
        {
            # as the latency figure draws it (latency_frame)
            "end_to_end": _pct_row([max(r.latency_s, cold_latency(r)) for r in results]),
            "router_lm": _pct_row([max(r.router_usage.latency_s, r.router_usage.cold_latency_s) for r in results]),
            "subagent_lm": _pct_row(
                [max(r.subagent_usage.latency_s, r.subagent_usage.cold_latency_s) for r in results]
            ),
        }
    ).T.rename(index=lambda s: f"{s} (cold)")
    nodes = observed[observed.index.str.startswith("node.")].rename(index=lambda s: f"{s} (observed)")
    return pd.concat([cold, nodes]).rename_axis("series")


def _pct_row(values: list[float]) -> dict[str, float]:
    """``p50, p95, p99, mean`` of ``values`` (NaN for none), as :func:`latency_summary` gives them."""
    if not values:
        return dict.fromkeys(("p50", "p95", "p99", "mean"), math.nan)
    a = np.asarray(values, dtype=float)
    return {
        "p50": float(np.percentile(a, 50)),
        "p95": float(np.percentile(a, 95)),
        "p99": float(np.percentile(a, 99)),
        "mean": float(a.mean()),
    }


def cost_basis() -> str:
    """The name of the cost the tables and figures show (observed or cold), with what it means."""
    return _COST_BASIS_TEXT[COST_BASIS]


def baseline_labels(results: ResultsByRouter) -> list[str]:
    """Labels whose router is a baseline (:data:`routerlab.routers.BASELINES`): references, not candidates.

    A label's router is the ``router`` of its results; a label without results is judged by its
    first word (labels read ``oracle (baseline)``).
    """
    # imported here: the routers package pulls in DSPy, which the analyses do not need
    from routerlab.routers import BASELINES

    return [
        label
        for label, rs in results.items()
        if (rs[0].router if len(rs) else str(label).split(" ", 1)[0]) in BASELINES
    ]


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


# A cold figure is never below the observed one (cache hits only make a run cheaper), so the
# larger of the two is right for results whose cold record is missing (MLflow tables keep totals).
def _router_tokens(r: ExampleResult) -> float:
    u = r.router_usage
    observed = u.prompt_tokens + u.completion_tokens
    return float(max(observed, u.cold_prompt_tokens + u.cold_completion_tokens) if COST_BASIS == "cold" else observed)


def _router_lm_s(r: ExampleResult) -> float:
    u = r.router_usage
    return max(u.latency_s, u.cold_latency_s) if COST_BASIS == "cold" else u.latency_s


def router_cost(results: ResultsByRouter, quality: Sequence[str] = ("route", "success")) -> pd.DataFrame:
    """The router's own cost per example next to its accuracy.

    The costs are those of :data:`COST_BASIS` (see :func:`cost_basis`).

    Args:
        results: Results by router label.
        quality: Rates to put next to the costs.

    Returns:
        Index: router labels; columns :data:`COST_COLUMNS` (router LM calls and tokens from
        :func:`routerlab.eval.metrics.usage_summary`, mean router LM seconds, mean seconds in the ``route``
        node, 0 for a result that never reached it), one column per ``quality`` rate and
        ``baseline`` (True for a baseline, which :func:`pareto_front` leaves out).
    """
    rows = {}
    for label, seq in results.items():
        rs = list(seq)
        usage = usage_summary(rs)
        row: dict[str, float] = {
            "router_lm_calls_per_ex": usage["router_lm_calls_per_ex"],
            "router_tokens_per_ex": _mean([_router_tokens(r) for r in rs]),
            "router_lm_s_per_ex": _mean([_router_lm_s(r) for r in rs]),
            # the route node's time holds the router's LM time: swap in the cold figure there too
            "route_node_s_per_ex": _mean(
                [r.node_latency_s.get("route", 0.0) - r.router_usage.latency_s + _router_lm_s(r) for r in rs]
            ),
        }
        row |= {q: rate(rs, q).value for q in quality}
        rows[label] = row
    frame = pd.DataFrame.from_dict(rows, orient="index").rename_axis("router")
    baselines = set(baseline_labels(results))
    frame["baseline"] = [label in baselines for label in frame.index]
    return frame


def pareto_front(points: pd.DataFrame, cost: str, quality: str) -> list[str]:
    """Index labels of the points no other point beats (cost no higher, quality no lower, one strictly).

    Baselines are references, not candidates: rows whose ``baseline`` column is True neither
    join the front nor push a router off it (an oracle at no cost would otherwise beat them all).

    Args:
        points: One row per router (e.g. :func:`router_cost`).
        cost: The column to minimise.
        quality: The column to maximise.

    Returns:
        The non-dominated labels, cheapest first (points with a NaN are never on the front).
    """
    if "baseline" in points.columns:
        points = points[~points["baseline"].astype(bool)]
    sub = points[[cost, quality]].dropna()
    front = []
    for label, row in sub.iterrows():
        dominated = (
            (sub[cost] <= row[cost])
            & (sub[quality] >= row[quality])
            & ((sub[cost] < row[cost]) | (sub[quality] > row[quality]))
        ).any()
        if not dominated:
            front.append(label)
    return sorted(front, key=lambda lab: (sub.loc[lab, cost], -sub.loc[lab, quality]))
