"""Statistics on inputs with known answers."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routerlab.eval.stats import (
    bootstrap_ci,
    cluster_bootstrap_ci,
    cluster_bootstrap_ratio_ci,
    mcnemar_exact,
    paired_bootstrap_diff,
    paired_cluster_bootstrap_diff,
    pass_at_k,
    pass_hat_k,
)


def test_mcnemar_known_values():
    a = [True] * 5 + [False] * 5
    b = [False] * 5 + [False] * 5
    r = mcnemar_exact(a, b)
    assert (r.b01, r.b10) == (0, 5)
    assert r.p_value == pytest.approx(0.0625)
    assert mcnemar_exact([True, False], [False, True]).p_value == 1.0
    assert mcnemar_exact([True, True], [True, True]).p_value == 1.0


def test_mcnemar_rejects_unpaired():
    with pytest.raises(ValueError):
        mcnemar_exact([True], [True, False])


def test_bootstrap_ci_contains_mean_and_is_deterministic():
    vals = [1, 0, 1, 1, 0, 1, 0, 1, 1, 1]
    lo, hi = bootstrap_ci(vals, seed=3)
    assert lo <= 0.7 <= hi
    assert (lo, hi) == bootstrap_ci(vals, seed=3)
    assert bootstrap_ci([1, 1, 1]) == (1.0, 1.0)
    assert all(math.isnan(x) for x in bootstrap_ci([]))


def test_paired_bootstrap_diff():
    d, lo, hi, p = paired_bootstrap_diff([0, 0, 0, 0, 1] * 4, [1, 1, 1, 1, 1] * 4)
    assert d == pytest.approx(0.8) and lo <= 0.8 <= hi and p < 0.05
    assert paired_bootstrap_diff([1, 0], [1, 0])[3] == 1.0


def test_pass_k():
    runs = [[True, True, False], [True, True, True], [False, False, False]]
    # pass^2: C(2,2)/C(3,2)=1/3, 1, 0 -> mean 4/9 ; pass@2: 1-C(1,2)/C(3,2)=1, 1, 0 -> 2/3
    assert pass_hat_k(runs, 2) == pytest.approx(4 / 9)
    assert pass_at_k(runs, 2) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        pass_hat_k([[True]], 2)


def test_min_detectable_difference_and_n_needed():
    from routerlab.eval.stats import min_detectable_diff, n_needed

    a, b = [0, 1, 0, 1] * 25, [1, 1, 0, 0] * 25  # 100 pairs, half of them discordant
    det = min_detectable_diff(a, b)
    sd = float(np.std(np.subtract(b, a), ddof=1))
    assert det.n == 100 and det.sd == pytest.approx(sd)
    assert det.mdd == pytest.approx((1.959964 + 0.841621) * sd / 10, rel=1e-5)
    # four times the pairs halve the detectable difference
    assert min_detectable_diff(a * 4, b * 4).mdd == pytest.approx(det.mdd / 2, rel=0.01)
    # identical runs: the spread is floored at sqrt(3/n), never a detectable difference of 0
    same = min_detectable_diff([1] * 6, [1] * 6)
    assert same.sd == pytest.approx(math.sqrt(0.5)) and same.mdd > 0.8
    assert n_needed(0.1, sd) == math.ceil(((1.959964 + 0.841621) * sd / 0.1) ** 2)
    with pytest.raises(ValueError):
        n_needed(0.0, sd)
    with pytest.raises(ValueError):
        min_detectable_diff([1], [1, 0])


def _samples(n: int):
    rng = np.random.default_rng(5)
    a = (rng.random(n) < 0.6).astype(float).tolist()
    b = (rng.random(n) < 0.7).astype(float).tolist()
    g = rng.random(n).round(2).tolist()
    return a, b, g, [f"c{int(v * 10)}" for v in rng.random(n)]


def test_the_four_bootstraps_give_what_they_gave_before_sharing_one_resampling_core():
    # recorded at 3f50fb9, when the plain and the cluster bootstrap each drew their own resamples
    a, b, g, clusters = _samples(40)
    assert bootstrap_ci(a) == (0.45, 0.75)
    assert cluster_bootstrap_ci(g, [f"c{i // 3}" for i in range(40)]) == (0.41124506578947373, 0.5821666666666665)
    assert paired_bootstrap_diff(a, b) == (0.05, -0.15, 0.25, 0.713)
    assert paired_cluster_bootstrap_diff(g, a, clusters, seed=2) == (
        0.10199999999999998,
        -0.12244138906348209,
        0.31695907928388745,
        0.357,
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0, 1), min_size=1, max_size=60),
    st.lists(st.floats(0, 1), min_size=60, max_size=60),
    st.integers(0, 2**16),
)
def test_one_item_per_cluster_is_the_plain_bootstrap_to_the_last_bit(a, b, seed):
    b = b[: len(a)]
    alone = list(range(len(a)))
    assert cluster_bootstrap_ci(a, alone, seed=seed, n_resamples=300) == bootstrap_ci(a, seed=seed, n_resamples=300)
    paired = paired_cluster_bootstrap_diff(a, b, alone, seed=seed, n_resamples=300)
    assert paired == paired_bootstrap_diff(a, b, seed=seed, n_resamples=300)


def test_clusters_of_the_wrong_length_are_refused():
    with pytest.raises(ValueError, match="values and clusters differ in length: 3 vs 2"):
        cluster_bootstrap_ci([1, 0, 1], ["a", "b"])
    with pytest.raises(ValueError, match="values and clusters differ in length"):
        paired_cluster_bootstrap_diff([1, 0, 1], [0, 0, 1], ["a", "b"])


def test_sign_flip_is_mcnemar_for_single_requests_and_flips_conversations_whole() -> None:
    from routerlab.eval.stats import paired_sign_flip_p

    a = [1, 1, 0, 0, 0, 0, 0, 1, 1, 1]
    b = [1, 0, 1, 1, 1, 1, 1, 1, 1, 0]
    singles = list(range(len(a)))
    assert paired_sign_flip_p(a, b, singles) == pytest.approx(
        mcnemar_exact([x == 1 for x in a], [x == 1 for x in b]).p_value
    )
    # five +1 differences: alone, p = 2/32; as one conversation they are one draw: nothing to test
    assert paired_sign_flip_p([0] * 5, [1] * 5, range(5)) == pytest.approx(2 / 32)
    assert paired_sign_flip_p([0] * 5, [1] * 5, ["c"] * 5) == 1.0
    assert paired_sign_flip_p([0.5, 0.5], [0.5, 0.5], [0, 1]) == 1.0
    # many clusters: Monte Carlo, seeded, never 0
    many = paired_sign_flip_p([0.0] * 40, [0.6] * 40, range(40))
    assert 0 < many < 0.001 and many == paired_sign_flip_p([0.0] * 40, [0.6] * 40, range(40))
    with pytest.raises(ValueError):
        paired_sign_flip_p([1], [1, 0], [0])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1), st.sampled_from("abcdef")), min_size=1, max_size=40),
    st.integers(0, 2**16),
)
def test_a_ratio_interval_holds_the_pooled_ratio_of_its_clusters(items, seed):
    asks, served, clusters = (list(x) for x in zip(*items, strict=True))
    low, high = cluster_bootstrap_ratio_ci(asks, served, clusters, seed=seed, n_resamples=300)
    if not sum(served):
        assert math.isnan(low) and math.isnan(high)
        return
    # every resample's ratio is one of some clusters' pooled ratio: within the clusters' extremes
    by = {c: (sum(a for a, _, k in items if k == c), sum(s for _, s, k in items if k == c)) for c in clusters}
    ratios = [a / s for a, s in by.values() if s]
    assert min(ratios) - 1e-9 <= low <= high
    if all(s for _, s in by.values()):
        assert high <= max(ratios) + 1e-9


def test_a_ratio_of_proportional_counts_has_no_width_and_lengths_must_agree():
    # two questions for every turn served, in every conversation: 2 in every resample
    assert cluster_bootstrap_ratio_ci([2, 4, 0], [1, 2, 0], ["a", "b", "b"]) == (2.0, 2.0)
    with pytest.raises(ValueError, match="numerators and denominators differ in length: 2 vs 1"):
        cluster_bootstrap_ratio_ci([1, 0], [1], ["a", "b"])
