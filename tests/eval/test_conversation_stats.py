"""Conversation-clustered intervals: turns of one conversation are resampled together.

Hypothesis (the issue's): a conversation duplicated k times must not narrow its interval k-fold.
Turns repeated inside their conversation, or a conversation replayed as k attempts, carry no new
information about other conversations; a bootstrap over turns would count them as independent
draws and shrink the interval by about sqrt(k), the bootstrap over conversations does not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from routerlab.eval.conversation_metrics import conversation_summary, turn_bucket
from routerlab.eval.scoring import ExampleResult
from routerlab.eval.stats import (
    bootstrap_ci,
    cluster_bootstrap_ci,
    paired_bootstrap_diff,
    paired_cluster_bootstrap_diff,
)
from tests.conftest import figures_of, turn_result

#: outcomes of 3-12 conversations of 1-6 turns each, 0/1 per turn
CONVERSATIONS = st.lists(st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=6), min_size=3, max_size=12)


def _flat(convs: list[list[float]], k: int = 1) -> tuple[list[float], list[str]]:
    """Every turn's value and its conversation, each turn repeated ``k`` times in its conversation."""
    values = [v for c in convs for v in c for _ in range(k)]
    clusters = [f"c{i}" for i, c in enumerate(convs) for _ in c for _ in range(k)]
    return values, clusters


def _width(ci: tuple[float, float]) -> float:
    return ci[1] - ci[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(convs=CONVERSATIONS, k=st.integers(min_value=2, max_value=8))
def test_duplicating_a_conversations_turns_does_not_narrow_its_interval(convs, k):
    values, clusters = _flat(convs)
    assume(0 < sum(values) < len(values))  # a constant sample has a zero-width interval anyway
    once = cluster_bootstrap_ci(values, clusters)
    dup_values, dup_clusters = _flat(convs, k)
    dup = cluster_bootstrap_ci(dup_values, dup_clusters)
    # the same conversations drawn, each with k times the turns: the same pooled means
    assert dup == pytest.approx(once)
    # so the interval keeps its width: nowhere near the k-fold (or sqrt(k)-fold) narrowing
    assert _width(dup) >= _width(once) - 1e-9


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(convs=CONVERSATIONS, k=st.integers(min_value=2, max_value=5))
def test_a_run_whose_conversations_repeat_k_times_keeps_its_intervals(convs, k):
    """Through conversation_summary: k attempts of every conversation give the same intervals."""
    assume(0 < sum(v for c in convs for v in c) < sum(len(c) for c in convs))
    once = conversation_summary(_results(convs, attempts=1))
    dup = conversation_summary(_results(convs, attempts=k))
    assert once is not None and dup is not None
    for level in ("per_question", "per_conversation"):
        a, b = getattr(once, level)["ex"], getattr(dup, level)["ex"]
        assert b.n == a.n * k and b.value == pytest.approx(a.value)
        assert (b.ci_low, b.ci_high) == pytest.approx((a.ci_low, a.ci_high))


def _results(convs: list[list[float]], attempts: int = 1) -> list[ExampleResult]:
    return [
        turn_result(f"c{i}", t, len(c), v, a)
        for a in range(attempts)
        for i, c in enumerate(convs)
        for t, v in enumerate(c, start=1)
    ]


def test_single_requests_get_the_plain_bootstrap():
    values = [1, 0, 1, 1, 0, 1, 0, 1, 1, 1]
    assert cluster_bootstrap_ci(values, list(range(10)), seed=3) == bootstrap_ci(values, seed=3)
    a, b = [1, 0, 1, 0, 1, 1], [1, 1, 1, 0, 0, 1]
    assert paired_cluster_bootstrap_diff(a, b, list("abcdef")) == paired_bootstrap_diff(a, b)


def test_two_conversations_known_case():
    """One conversation all right, one all wrong: any pooled resample is 0, 1/2 or 1."""
    values, clusters = [1.0] * 4 + [0.0] * 4, ["a"] * 4 + ["b"] * 4
    assert cluster_bootstrap_ci(values, clusters) == (0.0, 1.0)
    lo, hi = bootstrap_ci(values)
    assert 0 < lo < 0.5 < hi < 1  # the turn bootstrap pretends to know more
    with pytest.raises(ValueError, match="differ in length"):
        cluster_bootstrap_ci(values, clusters[:-1])


def test_paired_cluster_test_resamples_conversations():
    # b beats a on every turn of conversation x, loses on every turn of y: no evidence either way
    a = [0.0] * 5 + [1.0] * 5
    b = [1.0] * 5 + [0.0] * 5
    diff, low, high, p = paired_cluster_bootstrap_diff(a, b, ["x"] * 5 + ["y"] * 5)
    assert diff == 0 and (low, high) == (-1.0, 1.0) and p == 1.0
    _, plow, phigh, _ = paired_bootstrap_diff(a, b)
    assert phigh - plow < high - low


def test_question_interaction_and_turn_buckets_case_by_case(tmp_path):
    convs = [[1.0, 1.0, 1.0, 1.0, 0.0], [1.0, 0.0], [1.0, 1.0, 1.0]]
    s = conversation_summary(_results(convs))
    assert s is not None and s.conversations == 3
    assert s.per_question["ex"].value == pytest.approx(8 / 10) and s.per_question["ex"].n == 10
    assert s.per_conversation["ex"].value == pytest.approx(1 / 3)
    assert [turn_bucket(t) for t in (1, 2, 3, 4, 9)] == ["1", "2", "3", "4+", "4+"]
    assert {k: (r["ex"].n, r["ex"].value) for k, r in s.per_turn.items()} == {
        "1": (3, 1.0),
        "2": (3, pytest.approx(2 / 3)),
        "3": (2, 1.0),
        "4+": (2, 0.5),
    }
    row = figures_of(tmp_path / "r.duckdb", _results(convs))
    metrics = row.figures
    assert metrics["question.ex"] == pytest.approx(0.8) and metrics["question.ex_n"] == 10
    assert metrics["conversation.ex"] == pytest.approx(1 / 3)
    assert metrics["turn.4plus.ex"] == 0.5 and metrics["turn.4plus.ex_n"] == 2
    assert all(math.isfinite(metrics[f"turn.{k}.ex_ci_low"]) for k in ("1", "2", "3", "4plus"))
    # the overall ex rate of the run is clustered too: its interval is the question-level one
    assert (row.rates["ex"].low, row.rates["ex"].high) == (
        metrics["question.ex_ci_low"],
        metrics["question.ex_ci_high"],
    )
    # the comparison's words for them (every view: console, report, API)
    from routerlab.eval.analysis.words import CONVERSATION_FIGURES, figure_text
    from routerlab.eval.store import END_TO_END

    names = dict(CONVERSATION_FIGURES[END_TO_END])
    assert names["conversation.ex"] == "interaction EX" and names["turn.4plus.ex"] == "turn 4+ EX"
    assert figure_text(metrics, "turn.4plus.ex").startswith("0.50")


def test_intervals_cover_the_conversation_level_truth_more_honestly():
    """Simulated runs with strongly correlated turns: the clustered 95 % interval covers the true rate
    about 95 % of the time, the turn bootstrap far less often."""
    rng = np.random.default_rng(0)
    covered_cluster = covered_turn = 0
    trials = 200
    for _ in range(trials):
        # 20 conversations of 5 turns; a conversation is all right (p = 0.6) or all wrong
        right = rng.random(20) < 0.6
        values = [float(r) for r in right for _ in range(5)]
        clusters = [i for i in range(20) for _ in range(5)]
        lo, hi = cluster_bootstrap_ci(values, clusters, n_resamples=500)
        covered_cluster += lo <= 0.6 <= hi
        lo, hi = bootstrap_ci(values, n_resamples=500)
        covered_turn += lo <= 0.6 <= hi
    assert covered_cluster / trials > 0.85
    assert covered_turn / trials < covered_cluster / trials - 0.2


def test_turns_with_first_decisions_only_have_no_conversation_or_outcome_summary():
    """A route session's turns (a ``first_decision`` score, no ``ex`` or ``success``) are not end-to-end figures."""
    import dataclasses

    from routerlab.eval.conversation_metrics import conversation_summary
    from routerlab.eval.outcomes import outcome_summary
    from routerlab.eval.scoring import Score
    from tests.conftest import turn_result

    routed = [
        dataclasses.replace(turn_result("c1", t, 2, None), scores={"first_decision": Score("first_decision", 1.0)})
        for t in (1, 2)
    ]
    assert conversation_summary(routed) is None and outcome_summary(routed) is None
    # one end-to-end turn is enough for both (a None value still says the scorer ran on it)
    ran = [turn_result("c1", 1, 2, 1.0), turn_result("c1", 2, 2, None)]
    assert conversation_summary(ran) is not None and outcome_summary(ran) is not None
