"""Resource bounds: result rows and cells capped, LM output capped, a run's deadline honoured."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

import routerlab.cli as cli
from routerlab._runs.runner import DEADLINE_ERROR_CLASS, RunConfig
from routerlab._runs.session import SessionSpec, run_session
from routerlab.agents.faults import FaultSpec
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import resolve_lm, scripted_lm
from routerlab.agents.lm.adapter import lm_context
from routerlab.agents.lm.local import LlamaEngine
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.agents.tools import ToolSettings
from routerlab.eval.store import ResultsStore
from routerlab.routers import router

BIG = "SELECT i, repeat('x', 5000) AS s FROM range(500) AS t(i)"


def _fields_lm(sql: str = BIG):
    def reply(request):
        field = requested_field(request) or "answer"
        values = {"sql": sql, "fixed_sql": sql, "intent": "sql", "explanation": "e", "reply": "r"}
        if request.tools:
            return {"name": "chat", "args": {"message": "hi"}}
        return answer_field(request, values.get(field, "ok"))

    return scripted_lm(reply)


def test_rows_and_cells_are_capped_through_the_pipeline(sales_db):
    settings = ToolSettings(max_rows=7, message_rows=3)
    pipe = Pipeline(router.build("rules"), _fields_lm(), config=PipelineConfig(tools=settings))
    with lm_context(pipe.lm):
        trace = pipe.run("List every area and its revenue rows.", str(sales_db))
    assert trace.error is None, trace.error
    execute = next(c for c in trace.tool_calls if c["name"] == "execute_sql_and_analyze_result")
    out = execute["output"]
    assert out["row_count"] == 7 and out["truncated"] is True and len(trace.rows) == 7
    assert all(len(row[1]) <= 2001 for row in out["rows"])  # cells cut at 2000 characters plus "…"
    # the router sees only message_rows of them
    tool_msg = next(m for m in trace.messages if m.get("role") == "tool" and "row_count" in str(m.get("content")))
    assert len(json.loads(tool_msg["content"])["rows"]) == 3


def test_lm_requests_carry_their_completion_budget(sales_db):
    lm = _fields_lm("SELECT count(*) FROM areas")
    engine = lm.routerlab_engine
    budgets = {}
    for name, question in [
        ("rules", "How many areas are there?"),
        ("rules", "Explain this SQL: SELECT count(*) FROM areas"),
        ("rules", "hello there!"),
        ("llm", "How many areas are there?"),
        ("dspy", "How many areas are there?"),
    ]:
        start = len(engine.requests)
        pipe = Pipeline(router.build(name), lm)
        with lm_context(lm):
            pipe.run(question, str(sales_db))
        for req in engine.requests[start:]:
            what = "tools" if req.tools else requested_field(req)
            budgets.setdefault(what, set()).add(req.config.max_tokens)
    # sub-agents: 256 for SQL, 128 for explanations, 64 for chat; the llm router: 256
    assert budgets["sql"] == {256} and budgets["explanation"] == {128} and budgets["reply"] == {64}
    assert budgets["tools"] == {256} and all(None not in b for b in budgets.values())
    assert max(max(b) for b in budgets.values()) <= 256


class _FakeLlama:
    """Stands in for llama_cpp.Llama: records the generation arguments."""

    cache = None

    def __init__(self) -> None:
        self.kwargs: list[dict] = []

    def create_chat_completion(self, messages, **kwargs):
        self.kwargs.append(kwargs)
        return {
            "id": "x",
            "choices": [{"message": {"content": "SELECT 1"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def test_the_embedded_engine_gets_the_budget(monkeypatch):
    """No model is loaded: the engine's generation call is recorded instead."""
    import dspy

    from routerlab.agents.tools.programs import SQLPrograms

    fake = _FakeLlama()
    monkeypatch.setattr(LlamaEngine, "llama", lambda self: fake)
    engine = LlamaEngine("/nonexistent/model.gguf", max_tokens=300)
    lm = dspy.LM("local/fake", engine=engine, cache=False, max_tokens=300)
    with lm_context(lm):
        SQLPrograms().generate(db_schema="CREATE TABLE t (a INT)", dialect="duckdb", hint="", question="q")
        dspy.Predict("question -> answer")(question="q")
    assert [k["max_tokens"] for k in fake.kwargs] == [256, 300]
    # resolve_lm passes its budget to every provider LM too
    assert resolve_lm("openai/gpt-4o-mini", max_tokens=123, cache=False).kwargs["max_tokens"] == 123


def _deadline_spec(tmp, deadline_s: float | None, faults: FaultSpec | None) -> SessionSpec:
    pipe = PipelineConfig(tools=ToolSettings(sql_timeout_s=1.0))
    return SessionSpec(
        routers=[("rules", {})],
        # every query is a runaway one the 1 s timeout stops: the first SQL example outlasts the deadline
        config=RunConfig(
            limit=6,
            lm="scripted:basic",
            faults=faults,
            pipeline=pipe,
            deadline_s=deadline_s,
        ),
        tracking_uri=None,
        store_path=str(tmp / "results.duckdb"),
    )


def test_examples_not_started_before_the_deadline_are_recorded_then_resumed(tmp_path):
    spec = _deadline_spec(tmp_path, 0.6, FaultSpec(rate=1.0, seed=0, kinds=("slow_sql",)))
    result = run_session(spec, console=Console(quiet=True))
    store = ResultsStore(spec.store_path)
    (run_id,) = result.run_ids
    stored = store.results(run_id)
    skipped = [r for r in stored if r.error_class == DEADLINE_ERROR_CLASS]
    assert len(stored) == 6 and 1 <= len(skipped) <= 5 and result.skipped == len(skipped)
    assert all(r.outcome == "not_run" and r.value("success") is None for r in skipped)
    assert store.run(run_id)["status"] == "KILLED"
    ran = {r.example_id: r for r in stored if r.error_class != DEADLINE_ERROR_CLASS}
    stamps = store.query("SELECT example_id, recorded_at FROM examples WHERE run_id = ?", [run_id])
    before = dict(zip(stamps["example_id"], stamps["recorded_at"], strict=True))
    again = run_session(_deadline_spec(tmp_path, None, None), console=Console(quiet=True), resume=result.session_id)
    assert again.skipped == 0 and store.run(run_id)["status"] == "FINISHED"
    stamps = store.query("SELECT example_id, recorded_at FROM examples WHERE run_id = ?", [run_id])
    after = dict(zip(stamps["example_id"], stamps["recorded_at"], strict=True))
    assert sorted(after) == sorted(before)  # no example lost or added
    assert {e for e in after if after[e] != before[e]} == {r.example_id for r in skipped}  # only those re-ran
    final = {r.example_id: r for r in store.results(run_id)}
    assert all(r.error_class != DEADLINE_ERROR_CLASS for r in final.values())
    assert all(final[e].to_dict() == r.to_dict() for e, r in ran.items())  # the finished ones are untouched


def test_cli_deadline_exits_124_and_marks_the_run_killed(tmp_path, monkeypatch):
    from mlflow import MlflowClient

    monkeypatch.setattr(cli._err, "width", 1000)
    where = ["--store", str(tmp_path / "s.duckdb"), "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    args = ["run", "--lm", "scripted:basic", "--router", "rules", "--limit", "3", "--deadline-s", "0.000001"]
    out = CliRunner().invoke(cli.app, [*args, *where])
    assert out.exit_code == 124, out.output
    text = " ".join(out.output.split())
    assert "deadline reached: 3 example(s) not started" in text and "routerlab run --resume" in text
    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("routerlab/builtin").experiment_id])
    assert runs and {r.info.status for r in runs} == {"KILLED"}


@pytest.mark.parametrize("value", [0, -1.0, float("inf")])
def test_deadline_must_be_positive(value):
    from routerlab.agents.errors import ConfigError

    with pytest.raises(ConfigError):
        RunConfig(deadline_s=value)
