"""A verdict a person can act on: the best router on an axis, what is significant, the cheapest good one.

A comparison table answers "how did each router do"; the question behind it is "which router
should I use". For one axis (a 0/1 outcome per example: first-decision accuracy, EX...) this
module names the best router with its 95 % interval, tests it against every other router on the
examples both ran (exact McNemar, docs/metrics.md section 4.2), and names the cheapest router
whose rate lies inside the best one's interval: the one to use when the difference cannot be
told apart from noise. Baselines (perfect routing, random) are shown for reference, never chosen.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from routerlab.eval.scoring import ExampleResult, did_run
from routerlab.eval.stats import bootstrap_ci, mcnemar_exact

__all__ = [
    "ALPHA",
    "AXES",
    "AxisVerdict",
    "axis_verdict",
    "intervals_table",
    "render_verdict",
    "render_verdict_markdown",
    "verdicts_from_results",
]

#: the level at which a difference is called significant
ALPHA = 0.05
#: end-to-end axes, in the order a verdict lists them: (name, scorer); the first sorts the tables
AXES: tuple[tuple[str, str], ...] = (("end-to-end success", "success"), ("EX", "ex"))
#: a value at least this close to 1 counts as correct
_CORRECT = 1.0 - 1e-9


@dataclass(frozen=True)
class AxisVerdict:
    """The verdict on one axis.

    Attributes:
        axis: What was measured (``routing accuracy``, ``EX``...).
        n: Examples the best router was scored on.
        best: The best candidate router (highest rate; ties go to the cheaper one).
        value: Its rate.
        ci: Its 95 % bootstrap interval.
        better_than: ``router -> McNemar p`` for routers it beats significantly.
        not_told_apart: ``router -> McNemar p`` for routers this sample cannot tell from it.
        cheapest: The cheapest candidate whose rate lies inside ``ci`` (``best`` itself when none is
            cheaper), with its cost.
        cheapest_cost: That router's cost.
        cost_label: How cost is measured (``ms per decision``, ``s per request, cold``).
        references: Baselines' rates, for reference (``oracle``: perfect routing).
    """

    axis: str
    n: int
    best: str
    value: float
    ci: tuple[float, float]
    better_than: dict[str, float] = field(default_factory=dict)
    not_told_apart: dict[str, float] = field(default_factory=dict)
    cheapest: str = ""
    cheapest_cost: float = math.nan
    cost_label: str = ""
    references: dict[str, float] = field(default_factory=dict)

    @property
    def significant(self) -> bool:
        """At least one difference from the best router is significant."""
        return bool(self.better_than)


def axis_verdict(
    axis: str,
    outcomes: Mapping[str, Mapping[str, bool]],
    cost: Mapping[str, float],
    *,
    cost_label: str,
    baselines: Sequence[str] = (),
    seed: int = 0,
) -> AxisVerdict | None:
    """The verdict on one axis from each router's per-example outcomes.

    Args:
        axis: Name of the axis.
        outcomes: ``router -> example id -> correct`` (examples an axis does not apply to are absent).
        cost: ``router -> cost`` (lower is cheaper; NaN: unknown, never the cheapest).
        cost_label: Unit of ``cost`` for the printed line.
        baselines: Routers shown for reference only.
        seed: Bootstrap seed (the same input always gives the same interval).

    Returns:
        None when no candidate router has an outcome on this axis.
    """
    rates = {r: sum(o.values()) / len(o) for r, o in outcomes.items() if o}
    candidates = [r for r in rates if r not in baselines]
    if not candidates:
        return None

    def cost_of(r: str) -> float:
        c = cost.get(r, math.nan)
        return math.inf if math.isnan(c) else c

    best = max(candidates, key=lambda r: (rates[r], -cost_of(r)))
    mine = outcomes[best]
    ci = bootstrap_ci([float(v) for v in mine.values()], seed=seed)
    better, tied = {}, {}
    for other in candidates:
        if other == best:
            continue
        common = sorted(set(mine) & set(outcomes[other]))
        p = mcnemar_exact([mine[i] for i in common], [outcomes[other][i] for i in common]).p_value
        (better if p < ALPHA and rates[best] > rates[other] else tied)[other] = p
    inside = [r for r in candidates if ci[0] <= rates[r] <= ci[1] and r not in better]
    cheapest = min(inside, key=lambda r: (cost_of(r), -rates[r]))
    return AxisVerdict(
        axis=axis,
        n=len(mine),
        best=best,
        value=rates[best],
        ci=(float(ci[0]), float(ci[1])),
        better_than=dict(sorted(better.items(), key=lambda kv: kv[1])),
        not_told_apart=dict(sorted(tied.items(), key=lambda kv: kv[1])),
        cheapest=cheapest,
        cheapest_cost=cost.get(cheapest, math.nan),
        cost_label=cost_label,
        references={r: v for r, v in rates.items() if r in baselines},
    )


def _p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def _cost(v: AxisVerdict) -> str:
    if math.isnan(v.cheapest_cost):
        return "cost unknown"
    digits = 1 if v.cheapest_cost < 100 else 0
    return f"{v.cheapest_cost:.{digits}f} {v.cost_label}"


def render_verdict(verdicts: Sequence[AxisVerdict], *, width: int = 118) -> str:
    """The verdict as a few wrapped lines (never wider than ``width``)."""
    lines = ["verdict"]
    for v in verdicts:
        head = f"{v.axis} (n={v.n}): best {v.best} {v.value:.2f} [{v.ci[0]:.2f}, {v.ci[1]:.2f}]"
        parts = [head]
        if v.better_than:
            parts.append("significantly better than " + ", ".join(f"{r} ({_p(p)})" for r, p in v.better_than.items()))
        if v.not_told_apart:
            parts.append("not told apart from " + ", ".join(v.not_told_apart))
        if not v.better_than and not v.not_told_apart:
            parts.append("the only router on this axis")
        if v.cheapest != v.best:
            parts.append(f"cheapest within its interval: {v.cheapest} ({_cost(v)})")
        else:
            parts.append(f"also the cheapest within its interval ({_cost(v)})")
        if v.references:
            parts.append("reference: " + ", ".join(f"{r} {x:.2f}" for r, x in v.references.items()))
        text = "; ".join(parts)
        lines += textwrap.wrap(text, width=width, initial_indent="  ", subsequent_indent="      ")
    if not verdicts:
        # a bare heading reads like a lost result: say why there is nothing to judge
        lines += textwrap.wrap(
            "no router to judge: every router that ran is a baseline, or none has a scored example;"
            " the table above compares them (routerlab compare SESSION for paired tests)",
            width=width,
            initial_indent="  ",
            subsequent_indent="      ",
        )
    return "\n".join(lines)


def verdicts_from_results(
    results: Mapping[str, Sequence[ExampleResult]], *, baselines: Sequence[str] = (), seed: int = 0
) -> list[AxisVerdict]:
    """Verdicts on each of :data:`AXES` from stored results, with cold p50 latency as the cost.

    Args:
        results: ``router label -> results`` (examples that never ran are left out).
        baselines: Labels shown for reference only.
        seed: Bootstrap seed.
    """
    # imported here: compare imports the scorers' aggregates, which a verdict of decisions needs not
    from routerlab.eval.compare import cold_cost_figures

    ran = {label: [r for r in rs if did_run(r)] for label, rs in results.items()}
    cost = {label: float(cold_cost_figures(rs)["cold_latency_p50_s"]) if rs else math.nan for label, rs in ran.items()}
    out = []
    for axis, scorer in AXES:
        outcomes = {
            label: {
                f"{r.example_id}#{r.attempt}": (r.value(scorer) or 0.0) >= _CORRECT
                for r in rs
                if r.value(scorer) is not None
            }
            for label, rs in ran.items()
        }
        v = axis_verdict(
            axis, outcomes, cost, cost_label="s per request, cold p50", baselines=tuple(baselines), seed=seed
        )
        if v is not None:
            out.append(v)
    return out


def render_verdict_markdown(verdicts: Sequence[AxisVerdict]) -> str:
    """The verdict as Markdown bullets (the report's first section)."""
    lines = []
    for v in verdicts:
        text = render_verdict([v], width=10_000).splitlines()[1].strip()
        head, _, rest = text.partition(": best ")
        lines.append(f"- **{head}**: best **{rest.split(' ', 1)[0]}** {rest.split(' ', 1)[1]}")
    return "\n".join(lines) if lines else "- no router ran on any axis"


def _empties(rates: Any) -> list[int]:
    """The ``n_empty`` column (docs/metrics.md §3.1), zeros for a table written before it existed."""
    return [0] * len(rates) if "n_empty" not in rates else [int(x) for x in rates["n_empty"]]


def intervals_table(rates: Any, sort_by: str = "success") -> Any:
    """Rates as ``value [low, high]`` per router (rows) and metric (columns), best ``sort_by`` first.

    Args:
        rates: :func:`routerlab.eval.analysis.rates_table` output (``router, metric, value, ci_low,
            ci_high, n``).
        sort_by: The metric whose value orders the rows (the verdict's first axis).
    """
    import pandas as pd

    cells = rates.assign(
        shown=[
            "n/a" if not n else f"{v:.2f} [{lo:.2f}, {hi:.2f}]" + (f" ({int(e)} empty)" if e else "")
            for v, lo, hi, n, e in zip(
                rates["value"], rates["ci_low"], rates["ci_high"], rates["n"], _empties(rates), strict=True
            )
        ]
    )
    table = cells.pivot(index="router", columns="metric", values="shown")
    order = rates[rates["metric"] == sort_by].set_index("router")["value"].fillna(-1.0).sort_values(ascending=False)
    columns = [sort_by, *[c for c in table.columns if c != sort_by]]
    return pd.DataFrame(table.loc[list(order.index), columns]).rename_axis(columns=None)
