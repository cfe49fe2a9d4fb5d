"""The comparison model's end-to-end part on hand-built results and on a small scripted demo session.

The hand-built pair is stored in a real DuckDB results store and read back by
:func:`~routerlab.eval.analysis.build.build_comparison`, as every view reads a session.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from routerlab.agents.errors import ConfigError
from routerlab.app.demo import make_demo_session
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.analysis.model import Part, SessionComparison
from routerlab.eval.metrics import cold_latency
from routerlab.eval.rate import rate
from routerlab.eval.scoring import ExampleResult
from routerlab.eval.store import END_TO_END, ResultsStore, part_run_id
from tests.eval.conftest import build_dataset

# -- a hand-built comparison of two routers over seven examples --------------------------------
#
# e1 sql      A passes                       B misroutes to chat             -> B: router
# e2 sql      A right route, wrong rows      B wrong rows and invalid chain  -> A: sql, B: sql
# e3 chat     A invalid chain                B passes                        -> A: chain
# e4 sql      A crashed                      B timed out                     -> A: other, B: other
# e5 explain  A ends in error, scores clean  B misroutes to refuse           -> A: other, B: router
# e6 sql      both: invalid gold (success None), not failures
# e7 sql      A's generate_sql failed        B passes                        -> A: sql

_FAILED_SQL = (
    ("data_discovery", {"question": "q"}, {"tables": ["areas"]}, "success"),
    ("generate_sql", {"question": "q"}, {"error": "no such column"}, "error"),
)


def _s(route: float, ex: float | None, chain: float, success: float | None) -> dict[str, float | None]:
    return {"route": route, "ex": ex, "chain_valid": chain, "success": success}


def _router_a(build_result: Callable[..., ExampleResult]) -> list[ExampleResult]:
    return [
        build_result("e1", "rules", _s(1, 1, 1, 1), router_tokens=(0, 0), lm_calls=(0, 2)),
        build_result("e2", "rules", _s(1, 0, 1, 0), router_tokens=(0, 0), lm_calls=(0, 2)),
        build_result("e3", "rules", _s(1, None, 0, 0), intent="chat", router_tokens=(0, 0), lm_calls=(0, 2)),
        build_result(
            "e4",
            "rules",
            _s(0, 0, 0, 0),
            outcome="crash",
            predicted_intent="none",
            tool_calls=[],
            router_tokens=(0, 0),
            lm_calls=(0, 0),
        ),
        build_result(
            "e5",
            "rules",
            _s(1, None, 1, 0),
            intent="explain",
            outcome="error",
            tool_calls=["explain_sql"],
            router_tokens=(0, 0),
            lm_calls=(0, 1),
        ),
        build_result("e6", "rules", _s(1, None, 1, None), router_tokens=(0, 0), lm_calls=(0, 2)),
        build_result("e7", "rules", _s(1, None, 1, 0), tool_calls=_FAILED_SQL, router_tokens=(0, 0), lm_calls=(0, 2)),
    ]


def _router_b(build_result: Callable[..., ExampleResult]) -> list[ExampleResult]:
    return [
        build_result("e1", "llm", _s(0, 0, 1, 0), predicted_intent="chat", tool_calls=["chat"]),
        build_result("e2", "llm", _s(1, 0, 0, 0)),
        build_result("e3", "llm", _s(1, None, 1, 1), intent="chat", tool_calls=["chat"]),
        build_result("e4", "llm", _s(1, 0, 1, 0), outcome="timeout"),
        build_result(
            "e5", "llm", _s(0, None, 1, 0), intent="explain", predicted_intent="refuse", tool_calls=["refuse"]
        ),
        build_result("e6", "llm", _s(1, None, 1, None)),
        build_result("e7", "llm", _s(1, 1, 1, 1)),
    ]


SESSION = "20261206-060000-hand"


@pytest.fixture
def hand(make_result: Callable[..., ExampleResult]) -> dict[str, list[ExampleResult]]:
    return {"rules": _router_a(make_result), "llm": _router_b(make_result)}


@pytest.fixture
def part(hand: dict[str, list[ExampleResult]], tmp_path: Path) -> Part:
    """The hand-built pair as a session's end-to-end part, stored and read back."""
    store = ResultsStore(tmp_path / "results.duckdb")
    for router, results in hand.items():
        rid = part_run_id(SESSION, router, END_TO_END)
        store.create_run(rid, router=router, lm="scripted", dataset=build_dataset(), split="dev")
        store.add_results(rid, results)
        store.finish_run(rid)
    model = build_comparison(ResultsStore(tmp_path / "results.duckdb", read_only=True), SESSION)
    assert [p.key for p in model.parts] == [END_TO_END]
    return model.part(END_TO_END)


#: the part's measure -> the stored score it reads
_SCORERS = {"success": "success", "ex": "ex", "pipeline_route": "route", "chain_valid": "chain_valid"}


def test_rates_are_the_scores_rates_with_intervals(hand, part):
    assert part.verdict_measures[0] == "success"
    for r in part.routers:
        for key, scorer in _SCORERS.items():
            expected = rate(hand[r.router], scorer)
            got = r.rates[key]
            assert got.n == expected.n and got.value == pytest.approx(expected.value), (r.router, key)
            assert got.low <= got.value <= got.high
    # e6's gold is invalid: outside the denominator, neither a success nor a failure
    rules, llm = part.router("rules").rates["success"], part.router("llm").rates["success"]
    assert (rules.value, rules.n, rules.count) == (pytest.approx(1 / 6), 6, 1)
    assert (llm.value, llm.n, llm.count) == (pytest.approx(2 / 6), 6, 2)


def test_per_intent_rates_of_the_verdict_measure(part):
    for r in part.routers:
        assert set(r.per_intent) == {"sql", "chat", "explain"}
    assert part.router("llm").per_intent["chat"].value == 1.0
    assert part.router("rules").per_intent["chat"].value == 0.0


def test_failures_are_the_examples_scored_wrong_with_their_questions(part):
    failed = {r.router: [f.example_id for f in r.failures] for r in part.routers}
    # e6 (invalid gold) is no failure; a crash (rules e4) and a time-out (llm e4) are
    assert failed == {"rules": ["e2", "e3", "e4", "e5", "e7"], "llm": ["e1", "e2", "e4", "e5"]}
    e1 = next(f for f in part.router("llm").failures if f.example_id == "e1")
    assert (e1.intent, e1.decision, e1.question) == ("sql", "chat", "question of e1")


def test_confusion_counts_every_result_once(hand, part):
    for r in part.routers:
        assert sum(n for row in r.confusion.values() for n in row.values()) == len(hand[r.router])
    llm, rules = part.router("llm").confusion, part.router("rules").confusion
    assert llm["sql"]["chat"] == 1  # e1 misrouted
    assert llm["explain"]["refuse"] == 1  # e5 misrouted
    assert rules["sql"]["none"] == 1  # the crash decided nothing


def test_disagreements_are_the_examples_decided_differently_with_each_outcome(hand, part):
    decided = {r: {x.example_id: x.predicted_intent for x in rs} for r, rs in hand.items()}
    expected = sorted(e for e in decided["rules"] if decided["rules"][e] != decided["llm"][e])
    assert [d.example_id for d in part.disagreements] == expected and "e1" in expected
    e1 = next(d for d in part.disagreements if d.example_id == "e1")
    assert e1.question == "question of e1" and e1.intent == "sql"
    assert e1.decisions["llm"].intent == "chat" and not e1.decisions["llm"].correct
    assert e1.decisions["rules"].intent == "sql" and e1.decisions["rules"].correct


def test_cost_is_cold_medians_and_lm_use_per_request(hand, part):
    import numpy as np

    for r in part.routers:
        results = hand[r.router]
        cold = [cold_latency(x) for x in results]
        assert r.cost.unit == "s per request"
        assert r.cost.p50 == pytest.approx(float(np.percentile(cold, 50)))
        assert r.cost.p95 == pytest.approx(float(np.percentile(cold, 95)))
        calls = sum(x.router_usage.lm_calls + x.subagent_usage.lm_calls for x in results)
        assert r.cost.lm_calls == pytest.approx(calls / len(results))
        router_lm = sum(x.router_usage.cold_latency_s for x in results) / len(results)
        assert r.cost.router_lm == pytest.approx(router_lm)
    # the same sub-agent tokens; the llm router's own 110 per request on top (rules spends none)
    assert part.router("llm").cost.tokens - part.router("rules").cost.tokens == pytest.approx(110)


# -- a real (scripted) session -----------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    # one demo per pytest run: the notebook tests reuse the same directory (make_demo_session
    # finds it), because a session takes minutes on a loaded machine
    directory = tmp_path_factory.getbasetemp() / "routerlab-demo"
    store, uri, session = make_demo_session(directory)
    return directory, store, uri, session


def test_demo_session_builds_from_the_store_and_matches_mlflow(demo):
    from mlflow import MlflowClient

    from routerlab.eval.tracking import resolve_tracking_uri

    directory, store, uri, session = demo
    assert make_demo_session(directory) == (store, uri, session)  # reused, not rerun
    model: SessionComparison = build_comparison(ResultsStore(store, read_only=True), session)
    part = model.part(END_TO_END)
    assert sorted(r.router for r in part.routers) == ["oracle", "random", "rules"]
    assert all(r.status == "FINISHED" and r.n == 6 for r in part.routers)
    assert [r.router for r in part.routers if not r.baseline] == ["rules"]
    by_run = build_comparison(ResultsStore(store, read_only=True), [f"{session}.random", f"{session}.rules"])
    assert sorted(r.router for r in by_run.part(END_TO_END).routers) == ["random", "rules"]
    with pytest.raises(ConfigError):
        build_comparison(ResultsStore(store, read_only=True), "19990101-000000-dead")
    # every run's own MLflow metrics are the model's rates, rounded as the runs table shows them
    client = MlflowClient(resolve_tracking_uri(uri))
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    logged = {r.data.tags.get("routerlab.run_key"): r.data.metrics for r in runs}
    for r in part.routers:
        metrics = logged[r.run_id]
        assert metrics["success"] == round(r.rates["success"].value, 3)
        assert metrics["pipeline_route"] == round(r.rates["pipeline_route"].value, 3)
    # the oracle routes by the gold label: its confusion is a diagonal of 6
    oracle = part.router("oracle").confusion
    assert sum(oracle[g].get(g, 0) for g in oracle) == 6
