"""The verdict: best router per axis with its interval, significant differences, cheapest good router."""

from __future__ import annotations

import math

from routerlab.eval.stats import bootstrap_ci, mcnemar_exact
from routerlab.eval.verdict import axis_verdict


def _outcomes(pattern: str) -> dict[str, bool]:
    return {f"e{i:03d}": c == "1" for i, c in enumerate(pattern)}


A = "1" * 90 + "0" * 10  # 0.90
B = "1" * 86 + "0" * 14  # 0.86: 4 discordant pairs against A, not significant
C = "1" * 60 + "0" * 40  # 0.60: 30 discordant pairs, significant


def test_best_significance_and_cheapest_within_the_interval() -> None:
    outcomes = {"slow_best": _outcomes(A), "cheap_close": _outcomes(B), "poor": _outcomes(C)}
    outcomes["oracle"] = _outcomes("1" * 100)
    cost = {"slow_best": 500.0, "cheap_close": 1.0, "poor": 0.5, "oracle": 0.0}
    v = axis_verdict("routing accuracy", outcomes, cost, cost_label="ms per decision", baselines=("oracle",))
    assert v is not None
    # the baseline is a reference, never the answer
    assert v.best == "slow_best" and v.references == {"oracle": 1.0}
    assert v.ci == bootstrap_ci([1.0] * 90 + [0.0] * 10)
    p_poor = mcnemar_exact([c == "1" for c in A], [c == "1" for c in C]).p_value
    assert v.better_than == {"poor": p_poor} and p_poor < 0.05
    assert set(v.not_told_apart) == {"cheap_close"} and v.significant
    # poor is cheaper still, but significantly worse: the cheapest *good* router is cheap_close
    assert v.cheapest == "cheap_close" and v.cheapest_cost == 1.0


def test_tests_pair_only_the_examples_both_ran() -> None:
    full = _outcomes(A)
    half = {k: v for k, v in _outcomes(C).items() if int(k[1:]) < 50}  # 50 examples, all right
    v = axis_verdict("EX", {"a": full, "b": half}, {"a": 1.0, "b": 2.0}, cost_label="s")
    assert v is not None and v.best == "b" and v.n == 50
    # on their 50 common examples both are right every time: nothing to tell apart
    assert v.not_told_apart == {"a": 1.0}


def test_no_candidate_gives_no_verdict_and_unknown_cost_is_never_cheapest() -> None:
    assert axis_verdict("EX", {"oracle": _outcomes(A)}, {}, cost_label="s", baselines=("oracle",)) is None
    v = axis_verdict("EX", {"a": _outcomes(A), "b": _outcomes(A)}, {"a": math.nan, "b": 3.0}, cost_label="s")
    assert v is not None and v.cheapest == "b"


def test_one_router_is_not_ranked_and_says_there_is_nothing_to_compare() -> None:
    """Among one router there is no "best": its rate is shown, and the line says it is alone."""
    v = axis_verdict("EX", {"hybrid": _outcomes(A)}, {"hybrid": 2.0}, cost_label="s per request, cold p50")
    assert v is not None and v.single and not v.smoke
    assert v.best == "hybrid" and v.value == 0.9 and not v.better_than and not v.not_told_apart


def test_a_part_too_small_to_tell_routers_apart_is_a_smoke_check() -> None:
    """n=5 detects only differences of 0.97 or more (compare's MDD): labelled, never ranked."""
    five = {"hybrid": _outcomes("11111"), "rules": _outcomes("11000")}
    tails = {"hybrid": 20.9, "rules": 0.3}
    v = axis_verdict("end-to-end success", five, {"hybrid": 0.1, "rules": 0.2}, cost_label="s per request, cold p50",
                     tails=tails)  # fmt: skip
    assert v is not None and v.smoke and v.mdd >= 0.5
    # the heavy tail is kept beside the median it would hide behind
    assert v.tails == tails and v.costs == {"hybrid": 0.1, "rules": 0.2}
    # one router on five examples: too few as well, and what n=5 could detect is the floor of compare's MDD
    alone = axis_verdict("EX", {"hybrid": _outcomes("11111")}, {}, cost_label="s")
    assert alone is not None and alone.smoke and round(alone.mdd, 2) == 0.97
    two = axis_verdict("EX", {"hybrid": _outcomes("11"), "rules": _outcomes("10")}, {}, cost_label="s")
    assert two is not None and two.smoke and two.mdd > 1


def test_a_degenerate_interval_is_never_printed_as_an_interval() -> None:
    outcomes = {"perfect": _outcomes("1" * 100), "poor": _outcomes(C)}
    v = axis_verdict("routing accuracy", outcomes, {"perfect": 1.0, "poor": 1.0}, cost_label="ms per decision, mean")
    assert v is not None and v.degenerate and not v.smoke and v.ci == (1.0, 1.0)


def test_turns_of_conversations_are_tested_and_resampled_whole() -> None:
    """12 discordant turns of 3 conversations are 3 independent units, not 12 (as compare decides)."""
    from routerlab.eval.stats import mcnemar_exact, paired_sign_flip_p
    from routerlab.eval.verdict import axis_verdict

    turns = [f"c{c}-t{t}" for c in range(3) for t in range(4)]
    outcomes = {"a": dict.fromkeys(turns, True), "b": dict.fromkeys(turns, False)}
    cost = {"a": 1.0, "b": 1.0}
    # as single requests: McNemar on 12 discordant pairs, significant
    single = axis_verdict("success", outcomes, cost, cost_label="s")
    assert single is not None and single.better_than == {"b": mcnemar_exact([True] * 12, [False] * 12).p_value}
    assert single.better_than["b"] < 0.001
    # as turns of 3 conversations: the sign-flip over 3 clusters (p = 2/8), not significant
    clusters = {t: t.split("-")[0] for t in turns}
    clustered = axis_verdict("success", outcomes, cost, cost_label="s", clusters=clusters)
    assert clustered is not None and clustered.better_than == {}
    expected = paired_sign_flip_p([1.0] * 12, [0.0] * 12, [clusters[t] for t in turns])
    assert clustered.not_told_apart == {"b": expected} and expected == 0.25
    # and the interval resamples conversations whole: the cluster bootstrap of the best router's turns
    from routerlab.eval.stats import bootstrap_ci, cluster_bootstrap_ci

    mixed = {"a": {t: t.startswith("c0") or t.endswith("t0") for t in turns}, "b": dict.fromkeys(turns, False)}
    values = [float(mixed["a"][t]) for t in turns]
    wide = axis_verdict("success", mixed, cost, cost_label="s", clusters=clusters)
    narrow = axis_verdict("success", mixed, cost, cost_label="s")
    assert wide is not None and narrow is not None and wide.value == narrow.value == 0.5
    assert wide.ci == cluster_bootstrap_ci(values, [clusters[t] for t in turns])
    assert narrow.ci == bootstrap_ci(values) and wide.ci != narrow.ci
