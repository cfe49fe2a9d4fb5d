"""Fitting hybrid's thresholds from its parts' first decisions: the decision rule case by case,
the grid's ends, the choice, and agreement with the real router on the embedded model."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routerlab._routing_eval.decisions import FirstDecision
from routerlab.benchmarks.builtin import load_builtin
from routerlab.benchmarks.selection import schedule
from routerlab.fit.hybrid_fit import fit_hybrid, hybrid_decisions, hybrid_grid


def _d(eid: str, gold: str, predicted: str, conf: float, method: str = "hybrid:logprob", error=None) -> FirstDecision:
    return FirstDecision(eid, gold, predicted, predicted == gold, method, 1, 0, 0, 0.0, error, conf)


RULES = [
    _d("a", "sql", "sql", 0.9, "rules:data_question"),  # confident rules: kept whatever the LM says
    _d("b", "chat", "sql", 0.5, "rules:fallback"),  # unsure rules, sure LM: the LM's answer
    _d("c", "clarify", "sql", 0.5, "rules:fallback"),  # unsure rules, unsure LM: the rules' answer
    _d("d", "refuse", "sql", 0.5, "rules:fallback"),  # the LM raised: the rules' answer
    _d("e", "explain", "sql", 0.5, "rules:fallback"),  # the LM generated (confidence 1.0): the LM's, as the router
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
    assert hybrid_decisions(RULES, LM, 0.8, 0.5) == ["sql", "chat", "sql", "sql", "explain"]
    # a lower LM threshold lets the unsure LM decide too
    assert hybrid_decisions(RULES, LM, 0.8, 0.3) == ["sql", "chat", "clarify", "sql", "explain"]
    # above every rule confidence the LM is asked everywhere
    assert hybrid_decisions(RULES, LM, 1.01, 0.0) == ["chat", "chat", "clarify", "sql", "explain"]
    # below every rule confidence it is never asked
    assert hybrid_decisions(RULES, LM, 0.0, 0.0) == [d.predicted for d in RULES]


def test_the_grid_tries_each_rule_level_and_the_fit_picks_its_best_row():
    grid = hybrid_grid(RULES, LM, ACCEPTED, lm_thresholds=(0.0, 0.5))
    assert sorted(set(grid.threshold)) == [0.5, 0.9, 1.01]
    never = grid[(grid.threshold == 0.5)]
    assert (never.accuracy == 1 / 5).all() and (never.asked == 0).all()
    fit = fit_hybrid(RULES, LM, ACCEPTED, lm_thresholds=(0.0, 0.5))
    # (0.9, 0.0) gets a, b, c, e right: the best accuracy, and the fewest LM calls among equals
    assert (fit.threshold, fit.lm_threshold, fit.accuracy, fit.asked, fit.n) == (0.9, 0.0, 4 / 5, 4 / 5, 5)
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
    # one-pass scores (hybrid:logprob); lm_backed on or off is modelled alike (the scripted test below)
    lm = first_decisions("hybrid", {"threshold": 1.01, "lm_threshold": 0.0, "lm_backed": False}, examples, model)
    assert all(d.method == "hybrid:logprob" for d in lm)
    for t, u in ((0.81, 0.5), (0.9, 0.0)):
        real = first_decisions("hybrid", {"threshold": t, "lm_threshold": u, "lm_backed": False}, examples, model)
        assert [d.predicted for d in real] == hybrid_decisions(rules, lm, t, u)


_SINGERS = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Rose White', 'France', 41);
"""
#: request -> (gold intent, the tool the scripted LM calls for it)
_REQUESTS = {
    "How many singers are from France?": ("sql", "chat"),  # the LM's chat is not backed: the rules' sql
    "Hello there!": ("chat", "chat"),  # agreed
    "Delete every singer from France": ("refuse", "refuse"),  # backed by the rules' unsafe_verb
    "List all sponsors of the singers.": ("unanswerable", "chat"),  # a gap the rules see; chat unbacked
    "Which singer is the best?": ("clarify", "ask_human"),
    "What is the average age of singers?": ("sql", "data_discovery"),
}
_ARGS = {
    "chat": {"message": "Hello!"},
    "ask_human": {"question": "Which one?"},
    "refuse": {"reason": "no"},
    "data_discovery": {"question": "q"},
}


@pytest.mark.parametrize("lm_backed", [True, False])
def test_the_fitted_rule_matches_the_real_router_with_lm_backed_on_or_off(lm_backed, tmp_path, monkeypatch):
    """On a real SQLite file, with a scripted LM (generation path): the two parts predict the router at each pair."""
    import sqlite3

    from routerlab._routing_eval.decisions import first_decisions
    from routerlab.agents.lm import scripted_lm
    from routerlab.agents.lm.messages import text_of
    from routerlab.benchmarks.example import Example

    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "singers.sqlite"
    con = sqlite3.connect(path)
    con.executescript(_SINGERS)
    con.close()

    def reply(request):
        said = " ".join(text_of(m) for m in request.messages)
        tool = next((t for q, (_, t) in _REQUESTS.items() if q in said), "chat")
        return {"name": tool, "args": _ARGS[tool]}

    model = scripted_lm(reply)
    examples = [
        Example(f"s{i}", q, "singers", str(path), gold, gold_sql="SELECT 1" if gold == "sql" else None,
                user_reply="the youngest" if gold == "clarify" else None)
        for i, (q, (gold, _)) in enumerate(_REQUESTS.items())
    ]  # fmt: skip
    common = {"one_pass": False, "lm_backed": lm_backed}
    rules = first_decisions("rules", {}, examples, model)
    lm = first_decisions("hybrid", {"threshold": 1.01, "lm_threshold": 0.0, **common}, examples, model)
    unbacked = [d.example_id for d in lm if "(lm-unbacked:" in d.method]
    assert bool(unbacked) is lm_backed  # the setting matters on these requests
    for t, u in ((1.01, 0.0), (0.9, 0.5), (0.85, 0.0), (0.5, 0.0)):
        real = first_decisions("hybrid", {"threshold": t, "lm_threshold": u, **common}, examples, model)
        assert [d.predicted for d in real] == hybrid_decisions(rules, lm, t, u), (t, u)
    accepted = {e.id: e.accepted_intents for e in examples}
    assert fit_hybrid(rules, lm, accepted).n == len(examples)
