"""Calibration of real runs: the first route decision's confidence in compare JSON, MLflow and the table."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from routerlab._runs.runner import RunConfig
from routerlab._runs.session import SessionSpec, run_session
from routerlab.agents.lm import scripted_lm
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.confidence_calibration import expected_calibration_error, first_confidence
from routerlab.eval.store import ResultsStore


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    d = tmp_path_factory.mktemp("calib")
    spec = SessionSpec(
        routers=[("rules", {}), ("oracle", {})],
        config=RunConfig(limit=12, split="dev"),
        tracking_uri=f"sqlite:///{d}/mlflow.db",
        store_path=str(d / "results.duckdb"),
    )
    lm = scripted_lm(lambda request: {"fields": {"sql": "SELECT 1", "intent": "chat"}})
    return spec, run_session(spec, console=Console(quiet=True), lm=lm)


def test_compare_json_carries_each_runs_calibration(session):
    spec, result = session
    store = ResultsStore(spec.store_path)
    data = json.loads(build_comparison(store, result.run_ids).to_json())
    (part,) = data["parts"]
    for run in part["routers"]:
        results = [r for r in store.results(run["run_id"]) if r.outcome == "ok"]
        confs = [first_confidence(r) for r in results]
        assert None not in confs and len(confs) == run["figures"]["calibration.n"] > 0
        hits = [r.predicted_intent == r.intent for r in results]
        assert run["figures"]["calibration.ece"] == pytest.approx(expected_calibration_error(confs, hits))
    rules = next(r for r in part["routers"] if r["router"] == "rules")
    oracle = next(r for r in part["routers"] if r["router"] == "oracle")
    # the oracle is always right and always sure: perfectly calibrated; the rules are not
    assert oracle["figures"]["calibration.ece"] == pytest.approx(0.0)
    assert rules["figures"]["calibration.ece"] > 0.0


def test_mlflow_logs_calibration_and_the_confidence_column(session):
    from mlflow import MlflowClient

    from routerlab.eval.tracking import load_examples

    spec, _ = session
    client = MlflowClient(spec.tracking_uri)
    exp = client.get_experiment_by_name("routerlab/builtin")
    runs = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("routerlab.kind") == "router-run"]
    rules = next(r for r in runs if r.data.tags["routerlab.router"] == "rules")
    assert {"calibration.ece", "calibration.n"} <= set(rules.data.metrics)
    table = load_examples(rules.info.run_id, spec.tracking_uri)
    assert table["confidence"].between(0, 1).all()
    ok = table[table["outcome"] == "ok"]  # a crashed turn is not a routing decision to calibrate
    assert rules.data.metrics["calibration.n"] == len(ok)
