"""Fitting hybrid's thresholds from its parts' first decisions: the decision rule case by case,
the grid's ends, the choice, and agreement with the real router on the embedded model."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routerlab._routing_eval.decisions import FirstDecision
from routerlab._runs.selection import schedule
from routerlab.benchmarks.builtin import load_builtin
from routerlab.fit.hybrid_fit import fit_hybrid, hybrid_decisions, hybrid_grid


def _d(eid: str, gold: str, predicted: str, conf: float, method: str = "hybrid:logprob", error=None) -> FirstDecision:
    return FirstDecision(eid, gold, predicted, predicted == gold, method, 1, 0, 0, 0.0, error, conf)


RULES = [
    _d("a", "sql", "sql", 0.9, "rules:data_question"),  # confident rules: kept whatever the LM says
    _d("b", "chat", "sql", 0.5, "rules:fallback"),  # unsure rules, sure LM: the LM's answer
    _d("c", "clarify", "sql", 0.5, "rules:fallback"),  # unsure rules, unsure LM: the rules' answer
    _d("d", "refuse", "sql", 0.5, "rules:fallback"),  # the LM raised: the rules' answer
    _d("e", "explain", "sql", 0.5, "rules:fallback"),  # the LM generated (no probability): the rules'
]
LM = [
    _d("a", "sql", "chat", 0.99),
    _d("b", "chat", "chat", 0.8),
    _d("c", "clarify", "clarify", 0.4),
    _d("d", "refuse", None, float("nan"), "", "RuntimeError"),
    _d("e", "explain", "explain", 1.0, "hybrid:generation"),
]
ACCEPTED = {d.example_id: (d.gold,) for d in RULES}


def test_the_decision_rule_case_by_case():
    assert hybrid_decisions(RULES, LM, 0.8, 0.5) == ["sql", "chat", "sql", "sql", "sql"]
    # a lower LM threshold lets the unsure LM decide too
    assert hybrid_decisions(RULES, LM, 0.8, 0.3) == ["sql", "chat", "clarify", "sql", "sql"]
    # above every rule confidence the LM is asked everywhere
    assert hybrid_decisions(RULES, LM, 1.01, 0.0) == ["chat", "chat", "clarify", "sql", "sql"]
    # below every rule confidence it is never asked
    assert hybrid_decisions(RULES, LM, 0.0, 0.0) == [d.predicted for d in RULES]


def test_the_grid_tries_each_rule_level_and_the_fit_picks_its_best_row():
    grid = hybrid_grid(RULES, LM, ACCEPTED, lm_thresholds=(0.0, 0.5))
    assert sorted(set(grid.threshold)) == [0.5, 0.9, 1.01]
    never = grid[(grid.threshold == 0.5)]
    assert (never.accuracy == 1 / 5).all() and (never.asked == 0).all()
    fit = fit_hybrid(RULES, LM, ACCEPTED, lm_thresholds=(0.0, 0.5))
    # (0.9, 0.0) gets a, b, c right: the best accuracy, and the fewest LM calls among equals
    assert (fit.threshold, fit.lm_threshold, fit.accuracy, fit.asked, fit.n) == (0.9, 0.0, 3 / 5, 4 / 5, 5)
    assert fit.score == grid.score.max()


def test_parts_that_cover_different_examples_are_refused():
    with pytest.raises(ValueError, match="same examples"):
        hybrid_decisions(RULES, LM[:-1], 0.8, 0.5)
    with pytest.raises(ValueError, match="empty"):
        fit_hybrid([], [], {})


@given(
    st.lists(
        st.tuples(st.floats(0, 1), st.sampled_from(["sql", "chat"]), st.floats(0, 1), st.sampled_from(["sql", "chat"])),
        min_size=1,
        max_size=12,
    ),
)
def test_grid_ends_are_the_parts_alone_and_asking_grows_with_the_threshold(rows):
    rules = [_d(str(i), "sql", rp, rc, "rules:x") for i, (rc, rp, _, _) in enumerate(rows)]
    lm = [_d(str(i), "sql", lp, lc) for i, (_, _, lc, lp) in enumerate(rows)]
    grid = hybrid_grid(rules, lm, {str(i): ("sql",) for i in range(len(rows))}, lm_thresholds=(0.0,))
    top = grid[grid.threshold == grid.threshold.max()].iloc[0]
    assert top.accuracy == sum(p == "sql" for *_, p in rows) / len(rows) and top.asked == 1.0
    assert list(grid.asked) == sorted(grid.asked)


@pytest.mark.model
def test_the_fitted_rule_matches_the_real_router_on_the_embedded_model():
    """hybrid run with a pair decides what the two parts' decisions say it would."""
    from routerlab._routing_eval.decisions import first_decisions
    from routerlab.agents.lm import resolve_lm

    examples = schedule(load_builtin().split("dev"))[:10]
    model = resolve_lm("local:0.5b")
    rules = first_decisions("rules", {}, examples, model)
    # the fitted pair models the threshold rule alone: lm_backed (the rules' check on the LM's move) is off
    lm = first_decisions("hybrid", {"threshold": 1.01, "lm_threshold": 0.0, "lm_backed": False}, examples, model)
    assert all(d.method == "hybrid:logprob" for d in lm)
    for t, u in ((0.81, 0.5), (0.9, 0.0)):
        real = first_decisions("hybrid", {"threshold": t, "lm_threshold": u, "lm_backed": False}, examples, model)
        assert [d.predicted for d in real] == hybrid_decisions(rules, lm, t, u)
