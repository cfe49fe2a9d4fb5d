"""Tool-scale benchmark: the distractor registry, overflow classification, table, JSON, MLflow, CLI."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import jsonschema
import pytest
from mlflow import MlflowClient
from typer.testing import CliRunner

from routerlab.agents.errors import ConfigError, ContractError, ToolError
from routerlab.agents.lm import scripted_lm
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.tools.distractors import distractor_capacity, distractor_tools, is_distractor, tool_registry
from routerlab.benchmarks.builtin import load_builtin
from routerlab.benchmarks.selection import schedule, stratified_subset
from routerlab.eval.toolscale_plots import load_toolscale, plot_toolscale
from routerlab.toolscale import (
    EXPERIMENT,
    TABLE_COLUMNS,
    classify_error,
    parse_sizes,
    run_toolscale,
)

_ARGS = {"refuse": {"reason": "read-only"}, "chat": {"message": "hi"}, "data_discovery": {"question": "q"}}
#: above this many bound tools the scripted model "overflows", as the embedded one does from 64
_CONTEXT_TOOLS = 40


def overflowing_router_lm():
    """Searches for the intent's tool, calls it when bound; refuses prompts with too many tools."""
    queries = {"refuse": "decline a request to change data", "chat": "answer a greeting or a thank you"}

    def reply(request):
        names = [t.name for t in request.tools]
        if len(names) > _CONTEXT_TOOLS:
            raise ValueError(f"Requested tokens ({90 * len(names)}) exceed context window of 4096")
        text = " ".join(str(p) for p in request.messages[0].parts).lower()  # the user's request
        intent = "refuse" if re.search(r"delete|grant", text) else "chat" if re.search(r"\bhi\b|hello", text) else "sql"
        if names == ["retrieve_tools"]:
            return {
                "name": "retrieve_tools",
                "args": {"query": queries.get(intent, "find the tables for a data question")},
            }
        wanted = {"refuse": "refuse", "chat": "chat"}.get(intent, "data_discovery")
        if wanted not in names:
            return "no tool"
        return {"name": wanted, "args": _ARGS[wanted]}

    return scripted_lm(reply)


@pytest.fixture(scope="module")
def examples():
    return schedule(stratified_subset(load_builtin().split("dev"), 6))


@pytest.mark.parametrize("size", [9, 64, 512])
def test_registry_is_sized_exactly_and_deterministic(size):
    a, b = tool_registry(size), tool_registry(size)
    assert len(a) == size and len({t.name for t in a}) == size
    assert [t.openai_schema() for t in a] == [t.openai_schema() for t in b]
    assert {t.name for t in DEFAULT_TOOLS} <= {t.name for t in a}
    assert sum(is_distractor(t) for t in a) == size - len(DEFAULT_TOOLS)
    if size == len(DEFAULT_TOOLS):
        assert a == DEFAULT_TOOLS


def test_distractors_are_real_tools_that_never_run():
    tools = distractor_tools(distractor_capacity())
    assert len({t.name for t in tools}) == len(tools) >= 512 - len(DEFAULT_TOOLS)
    for t in tools:
        jsonschema.Draft202012Validator.check_schema(t.parameters)
        assert t.description and all(p.get("description") for p in t.parameters["properties"].values())
        assert not t.injected and set(t.parameters["required"]) <= set(t.parameters["properties"])
    export = next(t for t in tools if t.name == "export_dashboard")
    assert export.parameters["properties"]["format"]["enum"] == ["csv", "json", "parquet", "xlsx"]
    with pytest.raises(ToolError) as info:
        export({"dashboard_id": "d1"})
    assert info.value.error_class == "unknown_tool"


def test_a_verb_on_one_object_takes_its_id_first_then_its_own_parameters():
    tools = {t.name: t for t in distractor_tools(distractor_capacity())}
    assert list(tools["share_dashboard"].parameters["properties"]) == ["dashboard_id", "recipient", "permission"]
    assert tools["share_dashboard"].parameters["required"] == ["dashboard_id", "recipient"]
    assert list(tools["pin_report"].parameters["properties"]) == ["report_id"]
    assert list(tools["sample_dataset"].parameters["properties"]) == ["dataset_id", "n"]
    assert tools["sample_dataset"].parameters["properties"]["n"]["default"] == 100
    assert list(tools["rename_notebook"].parameters["properties"]) == ["notebook_id", "new_name"]
    assert "notebook" in tools["rename_notebook"].parameters["properties"]["new_name"]["description"]
    assert "dashboard_id" not in tools["list_dashboards"].parameters["properties"]  # acts on none


def test_seeds_and_sizes():
    assert distractor_tools(56) == distractor_tools(504)[:56]  # a larger set extends a smaller one
    assert {t.name for t in tool_registry(64, seed=1)} != {t.name for t in tool_registry(64, seed=0)}
    with pytest.raises(ConfigError):
        tool_registry(len(DEFAULT_TOOLS) + distractor_capacity() + 1)
    with pytest.raises(ContractError):
        tool_registry(4)
    assert parse_sizes("8, 64,512") == (8, 64, 512)
    with pytest.raises(ConfigError):
        parse_sizes("8,lots")


def test_context_overflow_is_recognised_through_wrappers():
    import dspy

    lm = scripted_lm(
        lambda r: (_ for _ in ()).throw(ValueError("Requested tokens (31234) exceed context window of 4096"))
    )
    from routerlab.agents.lm.chat import chat

    with pytest.raises(Exception) as info:
        chat(lm, [{"role": "user", "content": "hi"}])
    assert type(info.value).__name__ != "ValueError"  # DSPy wraps the engine's error
    assert classify_error(info.value) == ("context_overflow", 31234)
    assert classify_error(dspy.ContextWindowExceededError(message="too long"))[0] == "context_overflow"
    assert classify_error(RuntimeError("boom")) == ("RuntimeError", None)


def test_scripted_run_at_9_and_64_tools(examples, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = tmp_path / "toolscale.json"
    result = run_toolscale(
        examples,
        overflowing_router_lm(),
        sizes=(9, 64),
        index="bm25",
        k=3,
        tracking_uri=uri,
        out=out,
        lm_spec="scripted",
    )
    table = result.table
    assert list(table.columns) == list(TABLE_COLUMNS)
    assert [(r.size, r.router) for r in table.itertuples()] == [
        (9, "llm"),
        (9, "retrieval"),
        (64, "llm"),
        (64, "retrieval"),
    ]
    rows = {(r["size"], r["router"]): r for r in table.to_dict(orient="records")}
    n = len(examples)
    assert all(r["n"] == n for r in rows.values())

    # every prompt of the all-tools router overflows at 64: scored, classified, never a crash
    llm64 = rows[(64, "llm")]
    assert llm64["context_overflow"] == llm64["errors"] == n and llm64["accuracy"] == 0.0
    assert llm64["overflow_prompt_tokens"] == 90 * 64 and math.isnan(llm64["prompt_tokens"])
    assert rows[(9, "llm")]["errors"] == 0 and rows[(9, "llm")]["lm_calls"] == 1.0
    assert math.isnan(rows[(9, "llm")]["recall_at_k"])
    for size in (9, 64):
        r = rows[(size, "retrieval")]
        assert r["errors"] == 0 and r["lm_calls"] == 2.0 and 0.0 <= r["recall_at_k"] <= 1.0
        assert r["accuracy"] > 0 and r["ci_low"] <= r["accuracy"] <= r["ci_high"]
    retrieval64 = [d for d in result.decisions if d.size == 64 and d.router == "retrieval"]
    assert all(len(d.retrieved) == 3 for d in retrieval64)
    # the script searches well for these intents: the gold tool is found, then called
    easy = [d for d in retrieval64 if d.gold in ("sql", "refuse", "chat")]
    assert easy and all(d.recall == 1.0 and d.correct for d in easy)

    doc = json.loads(out.read_text())
    assert doc["params"]["sizes"] == [9, 64] and doc["params"]["k"] == 3 and doc["params"]["lm"] == "scripted"
    assert len(doc["decisions"]) == 4 * n and doc["table"][0]["recall_at_k"] is None
    assert load_toolscale(out)[list(TABLE_COLUMNS)].shape == (4, len(TABLE_COLUMNS))

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    # relative to the store (resolved to its mlartifacts/ folder): a copied store keeps its artifacts
    assert experiment.artifact_location == "mlflow-artifacts:/routerlab_toolscale"
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name for r in runs) == ["llm@64", "llm@9", "retrieval@64", "retrieval@9"]
    assert set(result.mlflow_run_ids) == {r.info.run_name for r in runs}
    by_name = {r.info.run_name: r for r in runs}
    assert by_name["llm@64"].data.metrics["context_overflow"] == n
    assert (
        by_name["retrieval@64"].data.params["size"] == "64" and by_name["retrieval@64"].data.params["index"] == "bm25"
    )
    assert "recall_at_k" in by_name["retrieval@9"].data.metrics and "recall_at_k" not in by_name["llm@9"].data.metrics
    assert all(r.info.status == "FINISHED" for r in runs)
    decisions = client.download_artifacts(by_name["llm@64"].info.run_id, "decisions.json", str(tmp_path))
    assert [d["error_class"] for d in json.loads(Path(decisions).read_text())] == ["context_overflow"] * n

    fig = plot_toolscale(table)
    assert len(fig.axes) == 3 and all(ax.get_title() for ax in fig.axes)


def test_unknown_router_or_index_fails_before_any_call(examples):
    lm = overflowing_router_lm()
    with pytest.raises(ConfigError):
        run_toolscale(examples, lm, sizes=(9,), routers=("llm", "retrievel"))
    with pytest.raises(ConfigError):
        run_toolscale(examples, lm, sizes=(9,), index="faiss")
    assert lm.routerlab_engine.requests == []


def test_cli_command(monkeypatch, tmp_path):
    import routerlab.app.measure
    from routerlab.cli import app

    monkeypatch.setattr(routerlab.app.measure, "resolve_lm", lambda spec, **_: overflowing_router_lm())
    out, plot = tmp_path / "ts.json", tmp_path / "ts.png"
    args = ["toolscale", "--sizes", "9,64", "--limit", "2", "--index", "bm25", "--no-mlflow", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert "context_overflow" in result.output and out.exists() and plot.stat().st_size > 0
    assert CliRunner().invoke(app, ["toolscale", "--sizes", "0"]).exit_code == 2
