"""A rate: the mean of one score over the examples it applies to, with its cluster-bootstrap CI.

Its own module because the run summary (:mod:`routerlab.eval.metrics`), the conversation and
outcome figures and the answer-or-abstain figures (:mod:`routerlab.eval.risk`) are all built on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from routerlab.eval.scoring import ExampleResult
from routerlab.eval.stats import bootstrap_ci, cluster_bootstrap_ci

__all__ = ["Rate", "cluster_of", "empty_note", "rate"]


@dataclass(frozen=True)
class Rate:
    """A mean over the applicable examples with its 95 % bootstrap CI.

    Attributes:
        value: Mean of the non-None score values (nan when none apply).
        n: Examples counted (value not None).
        ci_low / ci_high: Percentile bootstrap bounds.
        n_invalid: Examples excluded as invalid (e.g. their gold SQL failed).
        n_empty: Matches where both results were empty (``empty_match`` in the score's
            detail): counted in ``value``, shown apart so a rate resting on them is visible.
    """

    value: float
    n: int
    ci_low: float
    ci_high: float
    n_invalid: int = 0
    n_empty: int = 0

    @classmethod
    def of(cls, values: Sequence[float], clusters: Sequence[object] | None = None, *, seed: int = 0) -> Rate:
        """The mean of ``values`` with its CI, resampling ``clusters`` whole when given (NaN when empty)."""
        if not values:
            return cls(math.nan, 0, math.nan, math.nan)
        if clusters is None:
            low, high = bootstrap_ci(values, seed=seed)
        else:
            low, high = cluster_bootstrap_ci(values, clusters, seed=seed)
        return cls(float(np.mean(values)), len(values), low, high)

    def metrics(self, key: str, *, with_n: bool = True) -> dict[str, float]:
        """``key``, ``<key>_ci_low``, ``<key>_ci_high`` (and ``<key>_n``) for MLflow; none without examples."""
        if not self.n:
            return {}
        out = {key: self.value, f"{key}_ci_low": self.ci_low, f"{key}_ci_high": self.ci_high}
        return out | {f"{key}_n": float(self.n)} if with_n else out

    def fmt(self) -> str:
        """``0.62 [0.51, 0.72]``, with `` (3 empty)`` when some matches are empty-equals-empty."""
        if self.n == 0:
            return "n/a"
        return f"{self.value:.2f} [{self.ci_low:.2f}, {self.ci_high:.2f}]" + empty_note(self)


def empty_note(r: Rate) -> str:
    """`` (k empty)`` when ``k`` of the rate's matches are empty-equals-empty, else ``""``."""
    return f" ({r.n_empty} empty)" if r.n_empty else ""


def _empty_matches(results: Sequence[ExampleResult], scorer_name: str) -> int:
    """Results scored 1 by ``scorer_name`` on a match of two empty results."""
    return sum(
        1 for r in results if (s := r.scores.get(scorer_name)) is not None and s.value and s.detail.get("empty_match")
    )


def cluster_of(result: ExampleResult) -> str:
    """The unit a bootstrap resamples: a turn's conversation, else the example (and attempt) itself.

    The turns of one conversation are not independent (docs/metrics.md §10); with no conversation
    every result is its own cluster and the cluster bootstrap is the plain one.
    """
    return (
        f"conversation:{result.conversation}"
        if result.conversation
        else f"example:{result.example_id}:{result.attempt}"
    )


def rate(results: Sequence[ExampleResult], scorer_name: str) -> Rate:
    """Mean of one scorer over the examples it applies to (None values excluded).

    The CI resamples conversations whole when the results are turns of conversations.
    """
    kept = [(v, cluster_of(r)) for r in results if (v := r.value(scorer_name)) is not None]
    invalid = sum(1 for r in results if (s := r.scores.get(scorer_name)) and s.detail.get("invalid"))
    mean = Rate.of([v for v, _ in kept], [c for _, c in kept])
    return replace(mean, n_invalid=invalid, n_empty=_empty_matches(results, scorer_name))
