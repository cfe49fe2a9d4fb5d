"""A verdict a person can act on: the best router on an axis, what is significant, the cheapest good one.

For one axis (a 0/1 outcome per example: routing accuracy, served, EX...) :func:`axis_verdict`
names the best router with its 95 % interval, tests it against every other router on the
examples both ran (exact McNemar, docs/metrics.md section 4.2; for turns of conversations the
paired sign-flip test over whole conversations, with the interval resampling them), and names
the cheapest router whose rate lies inside the best one's interval: the one to use when the
difference cannot be told apart from noise. Baselines (always SQL, perfect routing, random) are
shown for reference, never chosen. A sample that detects only differences of :data:`SMOKE_MDD`
or more (:func:`routerlab.eval.stats.min_detectable_diff`) is a smoke check ("too few to
compare"), never a finding. The session's comparison (:mod:`routerlab.eval.analysis.build`)
calls it once per part and verdict measure; :mod:`routerlab.eval.analysis.words` words it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from routerlab.eval.stats import (
    bootstrap_ci,
    cluster_bootstrap_ci,
    mcnemar_exact,
    min_detectable_diff,
    paired_sign_flip_p,
)

__all__ = ["ALPHA", "SMOKE_MDD", "AxisVerdict", "axis_verdict"]

#: the level at which a difference is called significant
ALPHA = 0.05
#: a part whose minimum detectable difference (80 % power, paired) is at least this large is a
#: smoke check: it could only tell apart routers half a scale apart, which no choice between two
#: working routers turns on, so its "best" would be noise (n=5 detects only 0.97 or more)
SMOKE_MDD = 0.5


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
