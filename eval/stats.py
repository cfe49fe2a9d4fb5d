"""Statistics for comparisons: bootstrap CIs, McNemar's exact test, paired bootstrap, pass^k."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest, norm

__all__ = [
    "Detectable",
    "McNemarResult",
    "bootstrap_ci",
    "cluster_bootstrap_ci",
    "cluster_bootstrap_ratio_ci",
    "mcnemar_exact",
    "min_detectable_diff",
    "n_needed",
    "paired_bootstrap_diff",
    "paired_cluster_bootstrap_diff",
    "paired_sign_flip_p",
    "pass_at_k",
    "pass_hat_k",
]


def _cluster_sums(values: Sequence[float] | np.ndarray, clusters: Sequence[object]) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster (first-seen order): the sum of its values and its number of values."""
    if len(values) != len(clusters):
        raise ValueError(f"values and clusters differ in length: {len(values)} vs {len(clusters)}")
    index: dict[object, int] = {}
    ids = np.asarray([index.setdefault(c, len(index)) for c in clusters], dtype=int)
    x = np.asarray(values, dtype=float)
    sums = np.bincount(ids, weights=x, minlength=len(index)) if x.size else np.zeros(0)
    counts = np.bincount(ids, minlength=len(index)).astype(float) if x.size else np.zeros(0)
    return sums, counts


def _resampled_means(values: np.ndarray, clusters: Sequence[object] | None, n_resamples: int, seed: int) -> np.ndarray:
    """The bootstrap's one resampling core: the pooled mean of each of ``n_resamples`` resamples.

    A resample draws clusters with replacement, as many as there are, and pools the values of
    the clusters drawn. With ``clusters`` None every item is its own cluster: the plain
    bootstrap of the mean (the same draws give the same means to the last bit, since a cluster
    of one item sums to that item and counts 1).
    """
    sums, counts = _cluster_sums(values, clusters if clusters is not None else range(values.size))
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, sums.size, size=(n_resamples, sums.size))
    return sums[pick].sum(axis=1) / counts[pick].sum(axis=1)


def _interval(means: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval of the resampled means."""
    alpha = (1 - confidence) / 2
    return (float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha)))


def _mean_ci(
    values: Sequence[float], clusters: Sequence[object] | None, confidence: float, n_resamples: int, seed: int
) -> tuple[float, float]:
    x = np.asarray(values, dtype=float)
    if clusters is not None and len(values) != len(clusters):
        raise ValueError(f"values and clusters differ in length: {len(values)} vs {len(clusters)}")
    if x.size == 0:
        return (math.nan, math.nan)
    if np.all(x == x[0]):
        return (float(x[0]), float(x[0]))
    return _interval(_resampled_means(x, clusters, n_resamples, seed), confidence)


def _paired_diff(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[object] | None,
    confidence: float,
    n_resamples: int,
    seed: int,
) -> tuple[float, float, float, float]:
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.size} vs {y.size}")
    d = y - x
    if d.size == 0:
        return (math.nan, math.nan, math.nan, math.nan)
    if np.all(d == d[0]):
        return (float(d[0]), float(d[0]), float(d[0]), 1.0 if d[0] == 0 else 0.0)
    means = _resampled_means(d, clusters, n_resamples, seed)
    p = 2 * min(float(np.mean(means <= 0)), float(np.mean(means >= 0)))
    return (float(d.mean()), *_interval(means, confidence), min(1.0, p))


def bootstrap_ci(
    values: Sequence[float], *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean.

    Returns ``(nan, nan)`` for no values and ``(v, v)`` when every value is ``v``.
    """
    return _mean_ci(values, None, confidence, n_resamples, seed)


def cluster_bootstrap_ci(
    values: Sequence[float],
    clusters: Sequence[object],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile CI of the mean of ``values`` from a bootstrap over whole clusters.

    The turns of one conversation are not independent (a follow-up fails with the turn it builds
    on): resampling turns would count a conversation of ten turns as ten independent draws and
    give intervals too narrow. Resampling conversations whole (each resample pools the values of
    the conversations drawn) keeps that dependence; with one value per cluster it is
    :func:`bootstrap_ci`.

    Args:
        values: One value per item (turn).
        clusters: The cluster (conversation id) of each item; an item alone is its own cluster.
        confidence: Coverage of the interval.
        n_resamples: Bootstrap resamples.
        seed: Seed of the resampling.

    Returns:
        ``(low, high)``; ``(nan, nan)`` for no values, ``(v, v)`` when every value is ``v``.

    Raises:
        ValueError: ``values`` and ``clusters`` differ in length.
    """
    return _mean_ci(values, clusters, confidence, n_resamples, seed)


def cluster_bootstrap_ratio_ci(
    numerators: Sequence[float],
    denominators: Sequence[float],
    clusters: Sequence[object],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile CI of ``sum(numerators) / sum(denominators)`` from a bootstrap over whole clusters.

    A ratio of two counts of the same items (questions asked per turn served): each resample
    draws clusters as :func:`cluster_bootstrap_ci` does and divides the two pooled sums; a
    resample whose denominator sums to 0 has no ratio and is left out.

    Returns:
        ``(low, high)``; ``(nan, nan)`` when no item or no resample has a ratio.

    Raises:
        ValueError: The three sequences differ in length.
    """
    if len(numerators) != len(denominators):
        raise ValueError(f"numerators and denominators differ in length: {len(numerators)} vs {len(denominators)}")
    top, _ = _cluster_sums(numerators, clusters)
    bottom, _ = _cluster_sums(denominators, clusters)
    if not top.size:
        return (math.nan, math.nan)
    pick = np.random.default_rng(seed).integers(0, top.size, size=(n_resamples, top.size))
    num, den = top[pick].sum(axis=1), bottom[pick].sum(axis=1)
    ratios = num[den > 0] / den[den > 0]
    return _interval(ratios, confidence) if ratios.size else (math.nan, math.nan)


def paired_bootstrap_diff(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float, float, float]:
    """Mean of ``b - a`` over paired examples, its bootstrap CI and a two-sided bootstrap p-value.

    Returns:
        ``(mean_diff, low, high, p_value)``; the p-value is twice the smaller tail mass of the
        resampled differences around 0 (1.0 when every difference is 0).
    """
    return _paired_diff(a, b, None, confidence, n_resamples, seed)


def paired_cluster_bootstrap_diff(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[object],
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float, float, float]:
    """:func:`paired_bootstrap_diff` resampling whole clusters (conversations) of paired items.

    Returns:
        ``(mean_diff, low, high, p_value)`` of ``b - a`` over the items; the p-value is twice the
        smaller tail mass of the resampled differences around 0 (1.0 when every difference is 0).

    Raises:
        ValueError: The samples or the clusters differ in length.
    """
    return _paired_diff(a, b, clusters, confidence, n_resamples, seed)


#: up to this many clusters with a non-zero difference the sign-flip test enumerates every flip
_EXACT_FLIPS = 16


def paired_sign_flip_p(
    a: Sequence[float], b: Sequence[float], clusters: Sequence[object], *, n_resamples: int = 10_000, seed: int = 0
) -> float:
    """Two-sided paired sign-flip (permutation) p-value of ``sum(b - a)``, flipping whole clusters.

    Under "no difference" each cluster's summed difference is as likely positive as negative, so
    flipping the signs of whole clusters gives the null distribution of the total. For 0/1 scores
    of single requests (every item its own cluster) this is exactly McNemar's exact test (the
    discordant pairs are the non-zero differences); it extends McNemar to graded scores and to
    turns of conversations, which are not independent. Exact up to :data:`_EXACT_FLIPS` clusters
    with a non-zero difference, Monte Carlo (seeded, with the +1 correction) above.

    Raises:
        ValueError: The samples or the clusters differ in length.
    """
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if d.shape != (len(a),) or len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} vs {len(b)}")
    sums, _ = _cluster_sums(d, clusters)
    sums = sums[np.abs(sums) > 1e-12]
    if sums.size == 0:
        return 1.0
    observed = abs(float(sums.sum())) - 1e-9
    if sums.size <= _EXACT_FLIPS:
        signs = 1 - 2 * ((np.arange(2**sums.size)[:, None] >> np.arange(sums.size)) & 1)
        return float(np.mean(np.abs(signs @ sums) >= observed))
    rng = np.random.default_rng(seed)
    signs = rng.choice((-1.0, 1.0), size=(n_resamples, sums.size))
    return float((np.sum(np.abs(signs @ sums) >= observed) + 1) / (n_resamples + 1))


@dataclass(frozen=True)
class McNemarResult:
    """Discordant counts (b01: a wrong & b right; b10: a right & b wrong) and the exact p-value."""

    b01: int
    b10: int
    p_value: float


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> McNemarResult:
    """Exact two-sided McNemar test on paired outcomes (binomial on the discordant pairs)."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} vs {len(b)}")
    b01 = sum(1 for x, y in zip(a, b, strict=True) if not x and y)
    b10 = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    n = b01 + b10
    p = 1.0 if n == 0 else float(binomtest(b10, n, 0.5, alternative="two-sided").pvalue)
    return McNemarResult(b01, b10, min(1.0, p))


def pass_hat_k(successes: Sequence[Sequence[bool]], k: int) -> float:
    """pass^k (tau-bench): mean over examples of C(c, k) / C(n, k), all k tries succeed."""
    vals = []
    for s in successes:
        n, c = len(s), sum(bool(x) for x in s)
        if n < k:
            raise ValueError(f"an example has {n} tries, fewer than k={k}")
        vals.append(math.comb(c, k) / math.comb(n, k))
    return float(np.mean(vals)) if vals else math.nan


def pass_at_k(successes: Sequence[Sequence[bool]], k: int) -> float:
    """pass@k: mean over examples of 1 - C(n - c, k) / C(n, k), at least one of k tries succeeds."""
    vals = []
    for s in successes:
        n, c = len(s), sum(bool(x) for x in s)
        if n < k:
            raise ValueError(f"an example has {n} tries, fewer than k={k}")
        vals.append(1 - math.comb(n - c, k) / math.comb(n, k))
    return float(np.mean(vals)) if vals else math.nan


@dataclass(frozen=True)
class Detectable:
    """What a paired comparison of this size can detect.

    Attributes:
        n: Pairs.
        sd: Standard deviation of the paired differences used for planning: the observed one,
            but never below ``sqrt(3 / n)`` (with no discordant pair seen, 3/n is the 95 % upper
            bound of the discordant share, the "rule of three").
        mdd: Minimum detectable difference: the smallest true mean difference a two-sided test
            at ``alpha`` detects with probability ``power`` (normal approximation); a value above
            1 means no difference between two rates can be detected.
        alpha / power: The test's level and the power asked for.
    """

    n: int
    sd: float
    mdd: float
    alpha: float = 0.05
    power: float = 0.8


def _z(alpha: float, power: float) -> float:
    return float(norm.ppf(1 - alpha / 2) + norm.ppf(power))


def min_detectable_diff(
    a: Sequence[float], b: Sequence[float], *, alpha: float = 0.05, power: float = 0.8
) -> Detectable:
    """The minimum difference a paired test on these ``n`` pairs detects (80 % power by default).

    ``mdd = (z_{1-alpha/2} + z_{power}) * sd / sqrt(n)`` over the paired differences ``b - a``
    (the normal approximation of McNemar's test for 0/1 scores, of the paired t-test for graded
    ones; optimistic for very small n).

    Raises:
        ValueError: When the samples differ in length.
    """
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} vs {len(b)}")
    n = len(a)
    if n == 0:
        return Detectable(0, math.nan, math.nan, alpha, power)
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    sd = max(float(d.std(ddof=1)) if n > 1 else 0.0, math.sqrt(3 / n))
    return Detectable(n, sd, _z(alpha, power) * sd / math.sqrt(n), alpha, power)


def n_needed(diff: float, sd: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Pairs needed to detect a true mean difference ``diff`` when differences have spread ``sd``.

    Raises:
        ValueError: For a zero or non-finite ``diff`` or ``sd``.
    """
    if diff == 0 or not math.isfinite(diff) or not math.isfinite(sd):
        raise ValueError(f"need a non-zero finite difference and spread, got diff={diff}, sd={sd}")
    return math.ceil((_z(alpha, power) * sd / abs(diff)) ** 2)
