"""The analysis in words: the best router per rate, the failure classes, the cost-quality front."""

from __future__ import annotations

import math

import pandas as pd

from routerlab.eval.analysis.cost import COST_COLUMNS, baseline_labels, cost_basis, pareto_front, router_cost
from routerlab.eval.analysis.failures import ATTRIBUTION_CLASSES, attribution_counts
from routerlab.eval.analysis.rates import RATE_METRICS, best_routers, rates_table
from routerlab.eval.analysis.results import ResultsByRouter

__all__ = ["conclusions"]


def _fmt(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.2f}"


def conclusions(results: ResultsByRouter, *, cost: str = "router_tokens_per_ex", quality: str = "success") -> str:
    """Conclusions computed from the results, as text.

    Three sections: ``Best router per metric`` (with its 95 % CI, ties and whether the CI
    clears the runner-up's), ``Dominant failure class per router`` and ``Cost-quality Pareto
    front`` (on ``cost`` against ``quality``, :data:`COST_BASIS` cost). Baselines are references:
    the best router and the front are chosen among the other routers (among all when every
    router is a baseline), and the baselines' own figures follow as references.

    Args:
        results: Results by router label.
        cost: A :data:`COST_COLUMNS` column.
        quality: A rate.
    """
    baselines = baseline_labels(results)
    candidates = {k: v for k, v in results.items() if k not in baselines} or dict(results)
    references = [b for b in baselines if b not in candidates]
    rates = rates_table(results)
    lines = ["Best router per metric (mean [95 % bootstrap CI], n applicable):"]
    best = best_routers(rates[rates["router"].isin(list(candidates))])
    for metric, name in RATE_METRICS.items():
        row = best[best["metric"] == metric] if not best.empty else best
        if row.empty:
            lines.append(f"  {name}: n/a (no router has an applicable example)")
            continue
        b = row.iloc[0]
        tied = " (tied)" if b["tied"] else ""
        text = f"  {name}: {b['best']}{tied} {_fmt(b['value'])} [{_fmt(b['ci_low'])}, {_fmt(b['ci_high'])}], n={b['n']}"
        if pd.isna(b["runner_up"]):
            alone = "; the only router besides the baselines" if references else "; the only router with a value"
            text += "; every router ties" if b["tied"] else alone
        elif b["separated"]:
            text += f"; CI above runner-up {b['runner_up']} ({_fmt(b['runner_up_value'])})"
        else:
            text += f"; CI overlaps runner-up {b['runner_up']} ({_fmt(b['runner_up_value'])}), not a clear win"
        lines.append(text)
    if references:
        by = rates.set_index(["router", "metric"])["value"]
        for ref in references:
            figures = ", ".join(f"{m} {_fmt(by.get((ref, m), math.nan))}" for m in RATE_METRICS)
            lines.append(f"  reference {ref}: {figures}")
    lines.append("Dominant failure class per router:")
    counts = attribution_counts(results)
    for label, row in counts.iterrows():
        total = int(row.sum())
        n = len(results[str(label)])
        if total == 0:
            lines.append(f"  {label}: no failures (of {n} results)")
            continue
        top = [c for c in ATTRIBUTION_CLASSES if row[c] == row.max()]
        lines.append(f"  {label}: {' and '.join(top)} ({int(row.max())} of {total} failures, {n} results)")
    costs = router_cost(results, quality=(quality,))
    # with only baselines there is nothing else to compare: the front is then over them
    front = pareto_front(costs.drop(columns="baseline") if not references else costs, cost, quality)
    lines.append(f"Cost-quality Pareto front ({COST_COLUMNS[cost]} vs {quality}; {cost_basis()}):")
    for label in front:
        lines.append(f"  {label}: cost {costs.loc[label, cost]:.4g}, {quality} {_fmt(costs.loc[label, quality])}")
    if not front:
        lines.append("  n/a (no router has both numbers)")
    for ref in references:
        lines.append(
            f"  reference {ref} (not a candidate): cost {costs.loc[ref, cost]:.4g}, "
            f"{quality} {_fmt(costs.loc[ref, quality])}"
        )
    return "\n".join(lines)
