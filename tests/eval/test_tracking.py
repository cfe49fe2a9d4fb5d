"""MLflow tracking against a real SQLite store: runs, params, metrics, tables, inputs, traces, resume."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities import SpanStatusCode, SpanType

from routerlab.agents.errors import ConfigError
from routerlab.agents.registry import Registry
from routerlab.eval.tracking import (
    MlflowSink,
    examples_frame,
    flatten_params,
    load_examples,
    load_runs,
    metric_name,
    resolve_tracking_uri,
)

pytestmark = pytest.mark.timeout(600)


@dataclass
class ThresholdRouter:
    """A stand-in router built through a registry, so its arguments are recorded."""

    threshold: float = 0.5
    fallback: str = "llm"


_routers: Registry[ThresholdRouter] = Registry("router")
_routers("toy-hybrid")(ThresholdRouter)


@pytest.fixture(scope="module")
def uri(tmp_path_factory) -> str:
    # one store for the module: creating an MLflow schema costs seconds; tests use their own
    # datasets, hence their own experiments
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture
def sink(uri):
    with MlflowSink(uri) as s:
        yield s


def _results(make_result, router="toy-hybrid", n=4):
    out = [
        make_result(
            f"e{i}",
            router,
            {"ex": float(i % 2), "route": 1.0, "success": None if i == 0 else 1.0},
            latency=1.0 + i,
        )
        for i in range(n - 1)
    ]
    out.append(
        make_result(
            f"e{n - 1}",
            router,
            {"ex": 0.0, "route": 0.0},
            outcome="error",
            latency=0.5,
            tool_calls=[
                ("generate_sql", {"question": "q"}, {"sql": "SELEC x"}, "success"),
                ("run_sql", {"sql": "SELEC x"}, {"error": "syntax error"}, "error"),
            ],
        )
    )
    return out


# -- helpers -----------------------------------------------------------------------------------


def test_flatten_params_and_metric_names():
    flat = flatten_params(
        {
            "router": {"name": "hybrid", "args": {"threshold": 0.7, "rules": ["a", "b"]}},
            "limit": None,
            "empty": {},
        }
    )
    assert flat == {
        "router.name": "hybrid",
        "router.args.threshold": "0.7",
        "router.args.rules": '["a", "b"]',
        "limit": "null",
        "empty": "{}",
    }
    assert metric_name("success.sql") == "success.sql"
    assert metric_name("latency p50 (s)") == "latency p50 _s_"
    assert metric_name("a:b/../c") == "a_b/_/c"
    assert metric_name("/x//y/") == "x/y"
    assert len(flatten_params({"k": "v" * 7000})["k"]) == 6000


def test_relative_sqlite_uri_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert resolve_tracking_uri(None) == f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///other.db")
    assert resolve_tracking_uri(None) == f"sqlite:///{tmp_path / 'other.db'}"
    assert resolve_tracking_uri("http://127.0.0.1:5000") == "http://127.0.0.1:5000"


def test_examples_frame_columns(make_result):
    frame = examples_frame(_results(make_result))
    assert list(frame.columns) == [
        "example_id",
        "attempt",
        "intent",
        "predicted_intent",
        "confidence",
        "difficulty",
        "outcome",
        "error_class",
        "score_ex",
        "score_route",
        "score_success",
        "latency_s",
        "router_lm_calls",
        "router_tokens",
        "subagent_lm_calls",
        "subagent_tokens",
        "sql",
    ]
    assert frame["router_tokens"].tolist() == [110] * 4


# -- runs --------------------------------------------------------------------------------------


def test_parent_and_child_runs_with_params_tags_and_dataset_input(sink, uri, make_dataset):
    ds = make_dataset(name="params-ds")
    router = _routers.build("toy-hybrid", threshold=0.7)
    parent = sink.start_parent("compare s1", {"session": "s1", "routers": "toy-hybrid,llm"}, dataset=ds, run_key="s1")
    child = sink.start_run(
        router,
        "local:0.5b",
        ds,
        {"split": "dev", "limit": 4, "pipeline": {"max_steps": 6}},
        parent_run_id=parent,
        run_key="s1.toy-hybrid",
    )
    client = MlflowClient(uri)
    run = client.get_run(child)
    params, tags = run.data.params, run.data.tags
    assert params["router.kind"] == "router"
    assert params["router.name"] == "toy-hybrid"
    assert params["router.args.threshold"] == "0.7"
    assert params["router.args.fallback"] == "llm"
    assert params["lm.spec"] == "local:0.5b"
    assert (params["dataset.name"], params["dataset.version"], params["dataset.split"]) == (
        "params-ds",
        "1",
        "dev",
    )
    assert params["dataset.digest"] == ds.digest()
    assert params["config.limit"] == "4" and params["config.pipeline.max_steps"] == "6"
    assert len(params["git.commit"]) == 40 or params["git.commit"] == "unknown"
    assert params["routerlab.version"]
    assert tags["routerlab.router"] == "toy-hybrid" and tags["routerlab.lm"] == "local:0.5b"
    assert tags["routerlab.dataset"] == "params-ds"
    assert tags["routerlab.kind"] == "router-run" and tags["routerlab.status"] == "RUNNING"
    assert tags["routerlab.run_key"] == "s1.toy-hybrid"
    assert tags["mlflow.parentRunId"] == parent  # nested under the comparison
    exp = client.get_experiment(run.info.experiment_id)
    assert exp.name == "routerlab/params-ds"
    parent_run = client.get_run(parent)
    assert parent_run.data.tags["routerlab.kind"] == "comparison"
    assert parent_run.data.params["session"] == "s1"
    assert parent_run.info.experiment_id == run.info.experiment_id

    (inp,) = run.inputs.dataset_inputs
    assert inp.dataset.name == "params-ds/dev"
    assert inp.dataset.digest == ds.digest()[:10]
    assert {t.key: t.value for t in inp.tags}["mlflow.data.context"] == "dev"
    assert '"num_rows": 4' in inp.dataset.profile

    frame = load_runs(uri, experiment="routerlab/params-ds", tags={"routerlab.kind": "router-run"})
    assert frame["run_id"].tolist() == [child]
    assert frame.loc[0, "parent_run_id"] == parent
    assert frame.loc[0, "params.router.args.threshold"] == "0.7"


def test_finish_run_logs_the_example_table_and_computes_no_metric(sink, uri, make_dataset, make_result):
    """A run's metrics are the comparison model's (logged by whoever builds it), never the sink's own."""
    ds = make_dataset(name="metrics-ds")
    run_id = sink.start_run("toy-hybrid", "scripted", ds, {"split": "dev"})
    results = _results(make_result)
    sink.finish_run(run_id, results)
    run = MlflowClient(uri).get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["routerlab.status"] == "FINISHED"
    assert run.data.metrics == {}

    table = load_examples(run_id, uri)
    assert table["example_id"].tolist() == ["e0", "e1", "e2", "e3"]
    assert table["score_ex"].tolist() == [0.0, 1.0, 0.0, 0.0]
    assert table["outcome"].tolist()[-1] == "error"
    assert table["sql"].tolist()[0] == "SELECT 1"
    frame = load_runs(uri, run_ids=[run_id])
    assert frame.loc[0, "params.router.name"] == "toy-hybrid"


def test_a_failed_run_does_not_look_successful(sink, uri, make_dataset, make_result):
    ds = make_dataset(name="failed-ds")
    run_id = sink.start_run("toy-hybrid", "scripted", ds, {"split": "dev"})
    sink.finish_run(run_id, _results(make_result)[:2], status="FAILED", error="the LM server went away")
    run = MlflowClient(uri).get_run(run_id)
    assert run.info.status == "FAILED"
    assert run.data.tags["routerlab.status"] == "FAILED"
    assert run.data.tags["routerlab.error"] == "the LM server went away"
    killed = sink.start_run("toy-hybrid", "scripted", ds, {"split": "dev"})
    sink.finish_run(killed, [], status="KILLED")
    assert MlflowClient(uri).get_run(killed).info.status == "KILLED"
    with pytest.raises(ConfigError, match="unknown final run status"):
        sink.finish_run(killed, [], status="DONE")


def test_resume_finds_and_reopens_the_same_run(uri, make_dataset, make_result):
    ds = make_dataset(name="resume-ds")
    results = _results(make_result)
    with MlflowSink(uri) as first:
        parent = first.start_parent("compare s2", {"session": "s2"}, dataset=ds, run_key="s2")
        run_id = first.start_run("toy-hybrid", "scripted", ds, {"split": "dev"}, parent, run_key="s2.toy-hybrid")
        first.finish_run(run_id, results[:2], status="KILLED")  # interrupted after two examples
        first.finish_parent(parent, status="KILLED")

    with MlflowSink(uri) as second:  # a new process: `routerlab run --resume s2`
        assert second.find_run("s2.toy-hybrid") == run_id
        assert second.find_run("s2.toy-hybrid", unfinished_only=True) == run_id
        assert second.find_run("s2.nope") is None
        assert second.start_parent("compare s2", {"session": "s2"}, dataset=ds, run_key="s2") == parent
        again = second.start_run("toy-hybrid", "scripted", ds, {"split": "dev"}, parent, run_key="s2.toy-hybrid")
        assert again == run_id
        client = MlflowClient(uri)
        assert client.get_run(run_id).info.status == "RUNNING"
        assert client.get_run(run_id).data.tags["routerlab.status"] == "RUNNING"
        second.finish_run(run_id, results, status="FINISHED")
        second.finish_parent(parent)
        assert second.find_run("s2.toy-hybrid", unfinished_only=True) is None

    runs = load_runs(uri, experiment="routerlab/resume-ds", tags={"routerlab.run_key": "s2.toy-hybrid"})
    assert runs["run_id"].tolist() == [run_id]  # no duplicate run
    assert runs.loc[0, "status"] == "FINISHED"
    table = load_examples(run_id, uri)
    assert table["example_id"].tolist() == ["e0", "e1", "e2", "e3"]  # replaced, not appended


# -- traces ------------------------------------------------------------------------------------


def test_one_trace_per_example_with_tool_spans(sink, uri, make_dataset, make_result):
    ds = make_dataset(name="traces-ds")
    run_id = sink.start_run("toy-hybrid", "scripted", ds, {"split": "dev"})
    results = _results(make_result)
    ids = [sink.log_example(run_id, r) for r in results]
    assert all(ids)
    sink.finish_run(run_id, results)  # flushes the traces exported in the background
    client = MlflowClient(uri)
    experiment_id = client.get_run(run_id).info.experiment_id
    traces = client.search_traces(locations=[experiment_id], run_id=run_id)
    assert len(traces) == 4
    assert {t.info.tags["routerlab.example_id"] for t in traces} == {"e0", "e1", "e2", "e3"}
    assert {t.info.tags["routerlab.run_id"] for t in traces} == {run_id}

    (bad,) = client.search_traces(
        locations=[experiment_id], run_id=run_id, filter_string="tag.`routerlab.example_id` = 'e3'"
    )
    trace = client.get_trace(bad.info.trace_id)
    root = next(s for s in trace.data.spans if s.parent_id is None)
    assert root.name == "example e3"
    assert root.inputs["question"] == "question of e3"
    assert root.outputs["sql"] == "SELECT 1"
    assert root.status.status_code == SpanStatusCode.ERROR  # outcome "error"
    tools = [s for s in trace.data.spans if s.span_type == SpanType.TOOL]
    assert [s.name for s in tools] == ["generate_sql", "run_sql"]
    assert tools[1].inputs == {"sql": "SELEC x"}
    assert tools[1].outputs == {"error": "syntax error"}
    assert tools[1].status.status_code == SpanStatusCode.ERROR
    assert tools[0].status.status_code == SpanStatusCode.OK
    by_id = {s.span_id: s for s in trace.data.spans}
    assert {by_id[s.parent_id].name for s in tools} == {"tools"}  # under the graph node that ran them
    agents = [s for s in trace.data.spans if s.span_type == SpanType.AGENT]
    assert len(agents) == 1 and by_id[agents[0].parent_id].name == "route"
    assert agents[0].outputs["intent"] == "sql"
    nodes = {s.name for s in trace.data.spans if s.span_type == SpanType.CHAIN and s.parent_id == root.span_id}
    assert nodes == {"route", "dispatch", "tools", "respond"}
    failing = client.search_traces(
        locations=[experiment_id], run_id=run_id, filter_string="tag.`routerlab.score.ex` = '0.0'"
    )
    assert len(failing) == 3


def test_traces_from_worker_threads(sink, uri, make_dataset, make_result):
    ds = make_dataset(name="threads-ds")
    run_id = sink.start_run("toy-hybrid", "scripted", ds, {"split": "dev"})
    results = [make_result(f"e{i}", "toy-hybrid", {"ex": 1.0}) for i in range(8)]
    threads = [threading.Thread(target=sink.log_example, args=(run_id, r)) for r in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sink.flush()
    client = MlflowClient(uri)
    traces = client.search_traces(locations=[client.get_run(run_id).info.experiment_id], run_id=run_id)
    assert len(traces) == 8


def test_traces_can_be_turned_off(uri, make_dataset, make_result):
    before = mlflow.get_tracking_uri()
    with MlflowSink(uri, traces=False) as sink:
        assert mlflow.get_tracking_uri() == before  # a sink without traces leaves the process alone
        run_id = sink.start_run("toy-hybrid", "scripted", make_dataset(name="notrace-ds"), {"split": "dev"})
        assert sink.log_example(run_id, make_result("e0")) is None
        sink.finish_run(run_id, [make_result("e0")])
    client = MlflowClient(uri)
    assert client.search_traces(locations=[client.get_run(run_id).info.experiment_id], run_id=run_id) == []


def test_close_restores_the_process_tracking_uri(uri, tmp_path):
    previous = mlflow.get_tracking_uri() if mlflow.tracking.is_tracking_uri_set() else None
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        with MlflowSink(uri):
            assert mlflow.get_tracking_uri() == uri
        assert mlflow.get_tracking_uri() == f"sqlite:///{tmp_path / 'other.db'}"
    finally:
        mlflow.set_tracking_uri(previous)


def test_fixed_experiment_name_and_unknown_experiment(uri, make_dataset):
    with MlflowSink(uri, experiment="routerlab/custom", traces=False) as sink:
        parent = sink.start_parent("compare x", {})
        run_id = sink.start_run("toy-hybrid", "scripted", make_dataset(name="whatever"), {}, parent)
    client = MlflowClient(uri)
    assert client.get_experiment(client.get_run(run_id).info.experiment_id).name == "routerlab/custom"
    assert client.get_run(run_id).data.params["dataset.split"] == "all"
    with pytest.raises(ConfigError, match="no MLflow experiment"):
        load_runs(uri, experiment="routerlab/none")
    with pytest.raises(ConfigError, match=r"no examples\.json"):
        load_examples(parent, uri)
    with MlflowSink(uri, traces=False) as fresh, pytest.raises(ConfigError, match="no MLflow experiment"):
        fresh.start_parent("compare y", {})


def _hand_back_script():
    """A scripted LM: triage sends a greeting to the sql agent, which hands it back; then chat."""
    import re

    from routerlab.agents.lm import scripted_lm

    def reply(request):
        if not request.tools:  # the chat sub-agent's program
            field = re.search(r"Your output fields are:\n1\. `(\w+)`", str(request.system or ""))
            return {"fields": {field.group(1) if field else "reply": "Hello! Ask me about your data."}}
        tools = {t.name for t in request.tools}
        if "transfer_to_sql" in tools:
            back = "handed this request back" in str(request.system)
            return {"name": "transfer_to_chat" if back else "transfer_to_sql", "args": {}}
        if "data_discovery" in tools:
            return {"name": "transfer_to_triage", "args": {"reason": "a greeting, not a data question"}}
        return {"name": "chat", "args": {"message": "hello there"}}

    return scripted_lm(reply)


def test_every_agent_activation_is_an_agent_span_under_its_decision(sink, uri, make_dataset, sales_db):
    # the real runner, pipeline and handoff router; only the LM is scripted
    from routerlab._runs.runner import RouterRun, RunConfig, build_scorers
    from routerlab.benchmarks.example import Example

    config = RunConfig(lm="scripted")
    run = RouterRun("handoff", {}, _hand_back_script(), config, build_scorers(config))
    example = Example(id="hb", question="hello there", db_id="sales", db_path=str(sales_db), intent="chat")
    result = run.run_example(example)
    assert result.outcome == "ok" and result.trace.tool_names == ["chat"]
    assert result.trace.route_decisions[0]["method"] == "handoff:triage>sql>triage>chat"

    run_id = sink.start_run("handoff", "scripted", make_dataset(name="handback-ds"), {"split": "dev"})
    trace_id = sink.log_example(run_id, result)
    sink.finish_run(run_id, [result])
    trace = MlflowClient(uri).get_trace(trace_id)
    spans = trace.data.spans
    by_id = {s.span_id: s for s in spans}
    (decision,) = [s for s in spans if s.name == "decision 0"]
    assert decision.span_type == SpanType.CHAIN and by_id[decision.parent_id].name == "route"
    assert decision.attributes["method"] == "handoff:triage>sql>triage>chat"
    assert decision.attributes["routerlab.agents"] == ["triage", "sql", "triage", "chat"]
    assert "activations" not in decision.outputs and decision.outputs["intent"] == "chat"
    agents = sorted((s for s in spans if s.span_type == SpanType.AGENT), key=lambda s: s.start_time_ns)
    assert [s.name for s in agents] == ["triage", "sql", "triage", "chat"]
    assert {s.parent_id for s in agents} == {decision.span_id}
    attrs = [s.attributes for s in agents]
    assert [(a["routerlab.source"], a["routerlab.via"]) for a in attrs] == [
        (None, None),
        ("triage", "transfer_to_sql"),
        ("sql", "transfer_to_triage"),
        ("triage", "transfer_to_chat"),
    ]
    assert attrs[0]["routerlab.reason"] == "a new turn"
    assert attrs[2]["routerlab.reason"] == agents[2].inputs["reason"] == "a greeting, not a data question"
    calls = [a["routerlab.calls"] for a in attrs]
    assert calls == [["transfer_to_sql"], ["transfer_to_triage"], ["transfer_to_chat"], ["chat"]]
    assert [a["routerlab.outcome"] for a in attrs] == ["handoff", "handoff", "handoff", "host_call"]
    assert all(a["routerlab.lm_calls"] == 1 and a["routerlab.prompt_tokens"] > 0 for a in attrs)
    assert agents[1].outputs["calls"][0]["args"] == {"reason": "a greeting, not a data question"}
    assert all(s.status.status_code == SpanStatusCode.OK for s in agents)
    # spans are laid end to end inside their decision, which covers them
    assert all(a.end_time_ns <= b.start_time_ns for a, b in itertools.pairwise(agents))
    assert decision.start_time_ns <= agents[0].start_time_ns and agents[-1].end_time_ns <= decision.end_time_ns
    (tool,) = [s for s in spans if s.span_type == SpanType.TOOL]
    assert tool.name == "chat" and by_id[tool.parent_id].name == "tools"


def test_a_stopped_ping_pong_shows_its_stopped_activation_as_an_error_span(sink, uri, make_dataset, sales_db):
    from routerlab._runs.runner import RouterRun, RunConfig, build_scorers
    from routerlab.agents.lm import scripted_lm
    from routerlab.benchmarks.example import Example

    def reply(request):
        tools = {t.name for t in request.tools}
        if "transfer_to_sql" in tools:
            return {"name": "transfer_to_sql", "args": {}}
        return {"name": "transfer_to_triage", "args": {"reason": "not mine"}}

    config = RunConfig(lm="scripted")
    run = RouterRun("handoff", {}, scripted_lm(reply), config, build_scorers(config))
    example = Example(
        id="pp", question="How many areas?", db_id="sales", db_path=str(sales_db), intent="sql", gold_sql="SELECT 1"
    )
    result = run.run_example(example)
    assert result.outcome == "error" and result.error_class == "no_decision"
    run_id = sink.start_run("handoff", "scripted", make_dataset(name="pingpong-ds"), {"split": "dev"})
    trace_id = sink.log_example(run_id, result)
    sink.finish_run(run_id, [result])  # flushes the traces exported in the background
    trace = MlflowClient(uri).get_trace(trace_id)
    agents = sorted((s for s in trace.data.spans if s.span_type == SpanType.AGENT), key=lambda s: s.start_time_ns)
    assert [s.name for s in agents] == ["triage", "sql", "triage", "sql", "triage"]
    assert agents[-1].status.status_code == SpanStatusCode.ERROR and agents[-1].attributes["routerlab.lm_calls"] == 0
    assert all(s.status.status_code == SpanStatusCode.OK for s in agents[:-1])
    root = next(s for s in trace.data.spans if s.parent_id is None)
    assert root.status.status_code == SpanStatusCode.ERROR
