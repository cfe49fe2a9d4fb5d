"""The runner end to end with a scripted LM: store, MLflow, compare, resume without duplicates."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from routerlab._runs.runner import RunConfig
from routerlab._runs.session import SessionSpec, run_session
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.app.compare import render_compared
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.store import ResultsStore


def _lm():
    def reply(request):
        f = requested_field(request)
        if request.tools:
            return {"name": "chat", "args": {"message": "hi"}}
        values = {"sql": "SELECT count(*) FROM service_areas", "fixed_sql": "SELECT 1", "intent": "chat"}
        return answer_field(request, values.get(f, "ok"))

    return scripted_lm(reply)


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    spec = SessionSpec(
        routers=[("rules", {}), ("oracle", {})],
        config=RunConfig(limit=6, split="dev"),
        tracking_uri=f"sqlite:///{d}/mlflow.db",
        store_path=str(d / "results.duckdb"),
    )
    result = run_session(spec, console=Console(quiet=True), lm=_lm())
    return spec, result


def test_every_example_is_stored_once(session):
    spec, result = session
    store = ResultsStore(spec.store_path)
    for rid in result.run_ids:
        rs = store.results(rid)
        assert len(rs) == 6 and len({r.example_id for r in rs}) == 6
        assert all(r.outcome in ("ok", "error", "timeout", "crash") for r in rs)
        assert {"ex", "route", "chain_valid", "success"} <= set(rs[0].scores)
    runs = store.runs()
    assert set(runs["status"]) == {"FINISHED"}


def test_resume_runs_nothing_twice(session):
    spec, result = session
    again = run_session(spec, console=Console(quiet=True), lm=_lm(), resume=result.session_id)
    store = ResultsStore(spec.store_path)
    n = store.query(f"SELECT count(*) AS n FROM examples WHERE run_id LIKE '{result.session_id}.%'")["n"][0]
    assert n == 12 and again.run_ids == result.run_ids


def test_mlflow_runs_metrics_table_and_tool_spans(session):
    from mlflow import MlflowClient

    spec, _ = session
    client = MlflowClient(spec.tracking_uri)
    exp = client.get_experiment_by_name("routerlab/builtin")
    runs = client.search_runs([exp.experiment_id])
    children = [r for r in runs if r.data.tags.get("routerlab.kind") == "router-run"]
    parents = [r for r in runs if r.data.tags.get("routerlab.kind") == "comparison"]
    assert len(children) == 2 and len(parents) == 1
    assert all(c.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for c in children)
    rules = next(c for c in children if c.data.tags["routerlab.router"] == "rules")
    assert rules.data.params["router.name"] == "rules" and "router.args.fix_budget" in rules.data.params
    assert rules.data.params["dataset.name"] == "builtin" and len(rules.data.params["dataset.digest"]) == 64
    assert {"pipeline_route", "pipeline_route_low", "pipeline_route_high", "chain_valid"} <= set(rules.data.metrics)
    assert rules.info.status == "FINISHED"
    from routerlab.eval.tracking import load_examples

    table = load_examples(rules.info.run_id, spec.tracking_uri)
    assert len(table) == 6 and "score_route" in table.columns
    traces = client.search_traces(locations=[exp.experiment_id], run_id=rules.info.run_id, max_results=50)
    assert len(traces) == 6
    span_types = {s.span_type for t in traces for s in t.data.spans}
    assert "TOOL" in span_types


def test_compare_renders_every_format(session):
    spec, result = session
    c = build_comparison(ResultsStore(spec.store_path), result.run_ids)
    part = c.part("end_to_end")
    assert sorted(r.router for r in part.routers) == ["oracle", "rules"]
    assert [r.n for r in part.routers] == [6, 6] and part.router("oracle").baseline
    assert all(0.0 <= p.p <= 1.0 for p in part.pairs)
    assert "oracle *" in render_compared(c, "table")
    assert "oracle (baseline)" in render_compared(c, "markdown")
    assert json.loads(render_compared(c, "json"))
