"""routerlab.eval.analysis on hand-built results and on a small scripted demo session."""

from __future__ import annotations

import math
from collections.abc import Callable

import matplotlib

matplotlib.use("Agg")  # non-interactive: tests never open a window

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routerlab._runs.demo import make_demo_session
from routerlab.agents.errors import ConfigError
from routerlab.eval import analysis
from routerlab.eval.rate import rate
from routerlab.eval.scoring import ExampleResult

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


@pytest.fixture
def hand(make_result: Callable[..., ExampleResult]) -> dict[str, list[ExampleResult]]:
    return {"rules": _router_a(make_result), "llm": _router_b(make_result)}


def _check_attribution_partition(results: analysis.ResultsByRouter) -> None:
    """Every failure has exactly one class, every non-failure none, and the views agree."""
    n_failures = 0
    for rs in results.values():
        for r in rs:
            cls = analysis.attribute_failure(r)
            assert (cls is not None) == analysis.is_failure(r)
            assert cls is None or cls in analysis.ATTRIBUTION_CLASSES
            n_failures += cls is not None
    table = analysis.failure_attribution(results)
    counts = analysis.attribution_counts(results)
    assert len(table) == n_failures == int(counts.to_numpy().sum())
    assert not table.duplicated(["router", "example_id", "attempt"]).any()
    assert list(counts.columns) == list(analysis.ATTRIBUTION_CLASSES)
    assert list(counts.index) == list(results)
    for (router, cls), n in table.groupby(["router", "failure"]).size().items():
        assert counts.loc[router, cls] == n


def test_attribution_classes_follow_the_documented_order(hand):
    got = {(r.router, r.example_id): analysis.attribute_failure(r) for rs in hand.values() for r in rs}
    assert got == {
        ("rules", "e1"): None,
        ("rules", "e2"): "sql",
        ("rules", "e3"): "chain",
        ("rules", "e4"): "other",  # a crash is not blamed on the router despite route 0
        ("rules", "e5"): "other",
        ("rules", "e6"): None,  # invalid gold: neither success nor failure
        ("rules", "e7"): "sql",  # no EX value, but the SQL step failed
        ("llm", "e1"): "router",
        ("llm", "e2"): "sql",  # sql is checked before chain
        ("llm", "e3"): None,
        ("llm", "e4"): "other",
        ("llm", "e5"): "router",
        ("llm", "e6"): None,
        ("llm", "e7"): None,
    }
    counts = analysis.attribution_counts(hand)
    assert counts.loc["rules"].to_dict() == {"router": 0, "sql": 2, "chain": 1, "other": 2}
    assert counts.loc["llm"].to_dict() == {"router": 2, "sql": 1, "chain": 0, "other": 1}
    table = analysis.failure_attribution(hand)
    reason = table.set_index(["router", "example_id"]).loc[("llm", "e1"), "reason"]
    assert reason == "hand-made"  # the route score's reason explains a router failure
    _check_attribution_partition(hand)


_score = st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0]))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    route=st.sampled_from([0.0, 1.0]),
    ex=_score,
    chain=st.sampled_from([0.0, 1.0]),
    success=_score,
    outcome=st.sampled_from(["ok", "error", "timeout", "crash"]),
    failed_sql=st.booleans(),
)
def test_attribution_is_exhaustive_and_exclusive(make_result, route, ex, chain, success, outcome, failed_sql):
    r = make_result(
        "x", "rules", _s(route, ex, chain, success), outcome=outcome, tool_calls=_FAILED_SQL if failed_sql else None
    )
    _check_attribution_partition({"rules": [r]})
    cls = analysis.attribute_failure(r)
    if cls == "router":
        assert route == 0 and outcome in ("ok", "error")
    if cls == "chain":
        assert route == 1 and chain == 0 and not failed_sql and (ex is None or ex == 1)


def test_rates_reuse_eval_metrics_and_have_cis(hand):
    rates = analysis.rates_table(hand)
    assert set(rates["metric"]) == set(analysis.RATE_METRICS)
    assert len(rates) == 2 * len(analysis.RATE_METRICS)
    for row in rates.itertuples():
        expected = rate(hand[row.router], row.metric)
        assert row.n == expected.n
        assert row.value == pytest.approx(expected.value, nan_ok=True)
        assert row.ci_low <= row.value <= row.ci_high
    success = rates.set_index(["router", "metric"])
    assert success.loc[("rules", "success"), "value"] == pytest.approx(1 / 6)  # e6 is outside the denominator
    assert success.loc[("rules", "success"), "n"] == 6
    assert success.loc[("llm", "success"), "value"] == pytest.approx(2 / 6)

    per_intent = analysis.success_per_intent(hand).set_index(["router", "intent"])
    assert set(per_intent.index) == {(r, i) for r in hand for i in ("sql", "chat", "explain")}
    assert per_intent.loc[("llm", "chat"), "value"] == 1.0 and per_intent.loc[("rules", "chat"), "value"] == 0.0


def test_confusion_matrices_count_every_result_once(hand):
    matrices = analysis.confusion_matrices(hand)
    assert set(matrices) == set(hand)
    for label, m in matrices.items():
        assert int(m.to_numpy().sum()) == len(hand[label])
        assert list(m.columns)[-1] == "none"
    assert matrices["llm"].loc["sql", "chat"] == 1  # e1 misrouted
    assert matrices["llm"].loc["explain", "refuse"] == 1  # e5 misrouted
    assert matrices["rules"].loc["sql", "none"] == 1  # the crash predicted no intent


def test_disagreements_are_exactly_the_examples_whose_success_differs(hand):
    d = analysis.disagreements(hand, "rules", "llm")
    assert sorted(d["example_id"]) == ["e1", "e3", "e7"]
    row = d.set_index("example_id").loc["e1"]
    assert row["rules.success"] == 1.0 and row["llm.success"] == 0.0
    assert row["llm.predicted_intent"] == "chat" and row["llm.tools"] == "chat"
    assert row["rules.tools"] == "data_discovery > generate_sql > run_sql" and row["rules.sql"] == "SELECT 1"
    assert row["question"] == "question of e1"
    assert "rules.error" in d.columns and "llm.error" in d.columns
    assert len(analysis.disagreements(hand, "rules", "rules")) == 0
    counts = analysis.disagreement_counts(hand)
    assert counts.loc["rules", "llm"] == counts.loc["llm", "rules"] == 3
    with pytest.raises(ConfigError):
        analysis.disagreements(hand, "rules", "nobody")


def test_latency_cost_and_pareto(hand):
    lat = analysis.latency_frame(hand)
    e2e = lat[lat["stage"] == "end_to_end"]
    assert len(e2e) == 14 and set(lat["stage"]) >= {"node.route", "node.tools"}
    table = analysis.latency_table(hand)
    # the end-to-end and LM series are cold cost, the per-node ones observed: each is labelled
    assert ("rules", "end_to_end (cold)") in table.index and ("rules", "node.route (observed)") in table.index
    assert list(table.columns) == ["p50", "p95", "p99", "mean"]

    costs = analysis.router_cost(hand)
    assert list(costs.columns) == [*analysis.COST_COLUMNS, "route", "success", "baseline"]
    assert not costs["baseline"].any()
    assert costs.loc["rules", "router_tokens_per_ex"] == 0 and costs.loc["llm", "router_tokens_per_ex"] == 110
    assert costs.loc["llm", "router_lm_calls_per_ex"] == 1
    assert costs.loc["rules", "route_node_s_per_ex"] == pytest.approx(0.2)

    points = pd.DataFrame(
        {"cost": [0, 1, 2, 2, 3, math.nan], "quality": [0.2, 0.5, 0.5, 0.9, 0.9, 1.0]},
        index=["free", "cheap", "dominated", "good", "pricey", "unknown"],
    )
    assert analysis.pareto_front(points, "cost", "quality") == ["free", "cheap", "good"]


@pytest.fixture
def with_oracle(hand, make_result):
    """The hand-built pair plus a free, always-right oracle baseline (labelled as the CLI labels it)."""
    ids = [r.example_id for r in hand["rules"]]
    oracle = [make_result(e, "oracle", _s(1, 1, 1, 1), router_tokens=(0, 0), lm_calls=(0, 2)) for e in ids]
    return {**hand, "oracle (baseline)": oracle}


def test_baselines_are_references_not_pareto_candidates(with_oracle):
    assert analysis.baseline_labels(with_oracle) == ["oracle (baseline)"]
    # an empty run is judged by its label
    assert analysis.baseline_labels({"random (baseline)": [], "rules": []}) == ["random (baseline)"]
    costs = analysis.router_cost(with_oracle)
    assert costs["baseline"].tolist() == [False, False, True]
    # at no cost and always right the oracle would dominate both routers; it is not a candidate
    assert analysis.pareto_front(costs, "router_tokens_per_ex", "success") == ["rules", "llm"]
    assert analysis.pareto_front(costs.drop(columns="baseline"), "router_tokens_per_ex", "success") == [
        "oracle (baseline)"
    ]


def test_results_frame_has_one_row_per_result(hand):
    frame = analysis.results_frame(hand)
    assert len(frame) == 14
    assert {"router", "example_id", "score_success", "tools", "sql", "failure"} <= set(frame.columns)
    assert frame.set_index(["router", "example_id"]).loc[("llm", "e1"), "failure"] == "router"


# -- a real (scripted) session -----------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    # one demo per pytest run: the notebook tests reuse the same directory (make_demo_session
    # finds it), because a session takes minutes on a loaded machine
    directory = tmp_path_factory.getbasetemp() / "routerlab-demo"
    store, uri, session = make_demo_session(directory)
    return directory, store, uri, session


def test_demo_session_loads_from_the_store_and_from_mlflow(demo):
    directory, store, uri, session = demo
    assert make_demo_session(directory) == (store, uri, session)  # reused, not rerun
    data = analysis.load_store(store, session=session)
    assert list(data) == ["rules", "oracle (baseline)", "random (baseline)"]
    assert list(data.runs["status"]) == ["FINISHED"] * 3 and list(data.runs["n_results"]) == [6] * 3
    assert all(r.trace is not None for rs in data.values() for r in rs)
    by_run_ids = analysis.load_store(store, run_ids=[f"{session}.random", f"{session}.rules"])
    assert list(by_run_ids) == ["random (baseline)", "rules"]
    with pytest.raises(ConfigError):
        analysis.load_store(store, session="19990101-000000-dead")

    mlf = analysis.load_mlflow(uri, session=session, experiment="routerlab/builtin")
    assert list(mlf) == list(data) and mlf.source == "mlflow"
    # n_invalid needs the score details, which the MLflow table does not keep
    columns = ["value", "ci_low", "ci_high", "n"]
    store_rates = analysis.rates_table(data).set_index(["router", "metric"])[columns]
    mlflow_rates = analysis.rates_table(mlf).set_index(["router", "metric"])[columns]
    pd.testing.assert_frame_equal(store_rates, mlflow_rates)
    # and both agree with the metrics the run logged
    for row in mlf.runs.itertuples():
        logged = mlf.runs.loc[row.Index, "metrics.route"]
        assert store_rates.loc[(row.label, "route"), "value"] == pytest.approx(logged)
    assert analysis.confusion_matrices(mlf)["rules"].equals(analysis.confusion_matrices(data)["rules"])
    one = analysis.load_mlflow(uri, run_ids=[mlf.runs.loc[0, "run_id"]])
    assert list(one) == ["rules"]


def test_demo_session_analyses(demo):
    _, store, _, session = demo
    data = analysis.load_store(store, session=session)
    _check_attribution_partition(data)
    matrices = analysis.confusion_matrices(data)
    for label, m in matrices.items():
        assert int(m.to_numpy().sum()) == len(data[label]) == 6
    oracle = matrices["oracle (baseline)"].to_numpy()
    assert oracle.trace() == 6  # the oracle routes by the gold label
    for a, b in [("rules", "random (baseline)"), ("oracle (baseline)", "random (baseline)")]:
        got = set(analysis.disagreements(data, a, b)["example_id"])
        sa = {r.example_id: r.value("success") for r in data[a]}
        sb = {r.example_id: r.value("success") for r in data[b]}
        assert got == {k for k in sa if sa[k] != sb[k]}
