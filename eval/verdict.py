"""A verdict a person can act on: the best router on an axis, what is significant, the cheapest good one.

A comparison table answers "how did each router do"; the question behind it is "which router
should I use". For one axis (a 0/1 outcome per example: first-decision accuracy, EX...) this
module names the best router with its 95 % interval, tests it against every other router on the
examples both ran (exact McNemar, docs/metrics.md section 4.2; for turns of conversations the
paired sign-flip test over whole conversations, with the interval resampling them, as ``compare``
decides), and names the cheapest router
whose rate lies inside the best one's interval: the one to use when the difference cannot be
told apart from noise. Baselines (perfect routing, random) are shown for reference, never chosen.

Every line has to mean something: with one router there is no "best" (its rate is shown, not
ranked); a part whose sample detects only differences of :data:`SMOKE_MDD` or more (the minimum
detectable difference of :func:`routerlab.eval.stats.min_detectable_diff`, as ``compare`` reports
it) is labelled a smoke check ("too few to compare"), never a finding; an interval from a
bootstrap whose outcomes were all the same is not printed as ``[1.00, 1.00]`` but said to be
degenerate; and a latency names its statistic and shows its tail (p50 with p95, or the mean).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from routerlab.eval.scoring import ExampleResult, did_run
from routerlab.eval.stats import (
    bootstrap_ci,
    cluster_bootstrap_ci,
    mcnemar_exact,
    min_detectable_diff,
    paired_sign_flip_p,
)

__all__ = [
    "ALPHA",
    "AXES",
    "SMOKE_MDD",
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
#: a part whose minimum detectable difference (80 % power, paired) is at least this large is a
#: smoke check: it could only tell apart routers half a scale apart, which no choice between two
#: working routers turns on, so its "best" would be noise (n=5 detects only 0.97 or more)
SMOKE_MDD = 0.5
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
        better_than: ``router -> p`` for routers it beats significantly (exact McNemar; the paired
            sign-flip over whole conversations for turns of conversations).
        not_told_apart: ``router -> p`` for routers this sample cannot tell from it (the same test).
        cheapest: The cheapest candidate whose rate lies inside ``ci`` (``best`` itself when none is
            cheaper), with its cost.
        cheapest_cost: That router's cost.
        cost_label: How cost is measured (``ms per decision``, ``s per request, cold``).
        references: Baselines' rates, for reference (``oracle``: perfect routing).
        rates: Every candidate router's rate (best first).
        costs: Every candidate router's cost.
        tails: Every candidate router's cost tail (``tail_label``: p95), when one was given.
        tail_label: The statistic of ``tails`` (``p95``).
        mdd: The smallest difference from the best router this sample detects (80 % power, paired;
            the most sensitive of its pairs; with one router, what a second one on the same examples
            could show at best).
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
    rates: dict[str, float] = field(default_factory=dict)
    costs: dict[str, float] = field(default_factory=dict)
    tails: dict[str, float] = field(default_factory=dict)
    tail_label: str = "p95"
    mdd: float = math.nan

    @property
    def significant(self) -> bool:
        """At least one difference from the best router is significant."""
        return bool(self.better_than)

    @property
    def smoke(self) -> bool:
        """The sample is too small to tell routers apart (its MDD is :data:`SMOKE_MDD` or more)."""
        return math.isnan(self.mdd) or self.mdd >= SMOKE_MDD

    @property
    def single(self) -> bool:
        """Only one candidate router has outcomes on this axis: there is nothing to rank."""
        return not self.better_than and not self.not_told_apart

    @property
    def degenerate(self) -> bool:
        """The best router's bootstrap interval has no width (every outcome the same)."""
        return self.ci[0] == self.ci[1]


def axis_verdict(
    axis: str,
    outcomes: Mapping[str, Mapping[str, bool]],
    cost: Mapping[str, float],
    *,
    cost_label: str,
    baselines: Sequence[str] = (),
    seed: int = 0,
    tails: Mapping[str, float] | None = None,
    tail_label: str = "p95",
    clusters: Mapping[str, str] | None = None,
) -> AxisVerdict | None:
    """The verdict on one axis from each router's per-example outcomes.

    Args:
        axis: Name of the axis.
        outcomes: ``router -> example id -> correct`` (examples an axis does not apply to are absent).
        cost: ``router -> cost`` (lower is cheaper; NaN: unknown, never the cheapest).
        cost_label: Unit and statistic of ``cost`` for the printed line (``s per request, cold
            p50``, ``ms per decision, mean``): a latency always says which statistic it is.
        baselines: Routers shown for reference only.
        seed: Bootstrap seed (the same input always gives the same interval).
        tails: ``router -> tail of the cost`` (its p95 when ``cost`` is a median), printed beside
            it so a median never hides a heavy tail.
        tail_label: The statistic of ``tails``.
        clusters: ``example id -> conversation`` for turns of conversations (absent or None: a
            single request, its own cluster). The turns of one conversation are not independent:
            with any conversation, the interval resamples conversations whole and the test is the
            paired sign-flip over whole conversations, as ``routerlab compare`` decides; without,
            exact McNemar (the same test for independent 0/1 pairs).

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
    clustered = bool(clusters) and any(clusters.values())  # type: ignore[union-attr]

    def cluster(example: str) -> str:
        return (clusters or {}).get(example) or f"\0{example}"

    if clustered:
        ci = cluster_bootstrap_ci([float(v) for v in mine.values()], [cluster(i) for i in mine], seed=seed)
    else:
        ci = bootstrap_ci([float(v) for v in mine.values()], seed=seed)
    better: dict[str, float] = {}
    tied: dict[str, float] = {}
    # with no other router, what a second one on the same examples could detect at best
    mdds = [min_detectable_diff([0.0] * len(mine), [0.0] * len(mine)).mdd]
    for other in candidates:
        if other == best:
            continue
        common = sorted(set(mine) & set(outcomes[other]))
        a, b = [mine[i] for i in common], [outcomes[other][i] for i in common]
        if clustered:
            fa, fb = [float(x) for x in a], [float(x) for x in b]
            p = paired_sign_flip_p(fa, fb, [cluster(i) for i in common], seed=seed) if common else math.nan
        else:
            p = mcnemar_exact(a, b).p_value
        (better if p < ALPHA and rates[best] > rates[other] else tied)[other] = p
        if common:
            mdds.append(min_detectable_diff([float(x) for x in a], [float(x) for x in b]).mdd)
    if len(mdds) > 1:
        mdds = mdds[1:]
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
        rates={r: rates[r] for r in sorted(candidates, key=lambda r: (-rates[r], cost_of(r)))},
        costs={r: cost.get(r, math.nan) for r in candidates},
        tails={r: tails[r] for r in candidates if r in tails} if tails else {},
        tail_label=tail_label,
        mdd=float(min(mdds)),
    )


def _p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def _num(x: float) -> str:
    return f"{x:.{1 if x < 100 else 0}f}"


def _cost_of(v: AxisVerdict, router: str) -> str:
    """``0.1 s per request, cold p50; p95 20.9``: the cost with its statistic and its tail."""
    c = v.costs.get(router, v.cheapest_cost if router == v.cheapest else math.nan)
    if math.isnan(c):
        return "cost unknown"
    tail = v.tails.get(router, math.nan)
    return f"{_num(c)} {v.cost_label}" + ("" if math.isnan(tail) else f"; {v.tail_label} {_num(tail)}")


def _interval(v: AxisVerdict) -> str:
    """The best router's interval, or why it has none (a bootstrap of identical outcomes)."""
    if v.degenerate:
        return f"(all {v.n} outcomes alike: the bootstrap interval is degenerate, no interval)"
    return f"[{v.ci[0]:.2f}, {v.ci[1]:.2f}]"


def _parts(v: AxisVerdict) -> tuple[str, list[str]]:
    """The line's head (axis and n) and its clauses, each a finding or a labelled non-finding."""
    head = f"{v.axis} (n={v.n})"
    refs = ["reference: " + ", ".join(f"{r} {x:.2f}" for r, x in v.references.items())] if v.references else []
    if v.smoke:
        rates = ", ".join(f"{r} {x:.2f} ({_cost_of(v, r)})" for r, x in (v.rates or {v.best: v.value}).items())
        return head, [
            f"too few to compare: n={v.n} detects "
            + ("no difference at all" if v.mdd > 1 else f"only differences of {v.mdd:.2f} or more")
            + " (80% power, paired), a smoke check, not a finding",
            f"rates {rates}",
            *refs,
        ]
    if v.single:
        return head, [
            f"{v.best} {v.value:.2f} {_interval(v)}",
            "the only router on this axis: nothing to compare it with",
            _cost_of(v, v.best),
            *refs,
        ]
    parts = [f"best {v.best} {v.value:.2f} {_interval(v)}"]
    if v.better_than:
        parts.append("significantly better than " + ", ".join(f"{r} ({_p(p)})" for r, p in v.better_than.items()))
    if v.not_told_apart:
        parts.append(
            "not told apart from "
            + ", ".join(v.not_told_apart)
            + f" (this n detects differences of {v.mdd:.2f} or more)"
        )
    if v.cheapest != v.best:
        parts.append(f"cheapest within its interval: {v.cheapest} ({_cost_of(v, v.cheapest)})")
    else:
        parts.append(f"also the cheapest within its interval ({_cost_of(v, v.best)})")
    return head, parts + refs


def render_verdict(verdicts: Sequence[AxisVerdict], *, width: int = 118) -> str:
    """The verdict as a few wrapped lines (never wider than ``width``)."""
    lines = ["verdict"]
    for v in verdicts:
        head, parts = _parts(v)
        text = f"{head}: " + "; ".join(parts)
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


def _clusters(results: Mapping[str, Sequence[ExampleResult]]) -> dict[str, str]:
    """``example id#attempt -> conversation`` of every turn of a conversation among ``results``."""
    return {f"{r.example_id}#{r.attempt}": r.conversation for rs in results.values() for r in rs if r.conversation}


def verdicts_from_results(
    results: Mapping[str, Sequence[ExampleResult]], *, baselines: Sequence[str] = (), seed: int = 0
) -> list[AxisVerdict]:
    """Verdicts on each of :data:`AXES` from stored results, with cold p50 latency (and p95) as the cost.

    Args:
        results: ``router label -> results`` (examples that never ran are left out).
        baselines: Labels shown for reference only.
        seed: Bootstrap seed.
    """
    # imported here: compare imports the scorers' aggregates, which a verdict of decisions needs not
    from routerlab.eval.compare import cold_cost_figures

    ran = {label: [r for r in rs if did_run(r)] for label, rs in results.items()}
    figures = {label: cold_cost_figures(rs) for label, rs in ran.items() if rs}
    cost = {label: float(f["cold_latency_p50_s"]) for label, f in figures.items()}
    # the median with its tail: one slow pipeline in five hides behind a p50
    tails = {label: float(f["cold_latency_p95_s"]) for label, f in figures.items()}
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
            axis,
            outcomes,
            cost,
            cost_label="s per request, cold p50",
            baselines=tuple(baselines),
            seed=seed,
            tails=tails,
            clusters=_clusters(ran),
        )
        if v is not None:
            out.append(v)
    return out


def render_verdict_markdown(verdicts: Sequence[AxisVerdict]) -> str:
    """The verdict as Markdown bullets (the report's first section)."""
    lines = []
    for v in verdicts:
        head, parts = _parts(v)
        first, rest = parts[0], parts[1:]
        if first.startswith("best "):
            first = f"best **{v.best}**{first[len('best ') + len(v.best) :]}"
        lines.append(f"- **{head}**: " + "; ".join([first, *rest]))
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
