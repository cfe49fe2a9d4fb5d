"""`routerlab route` logs to MLflow like `run`: a parent per invocation, a child per router.

Real MLflow stores (SQLite files in tmp), the real CLI, the scripted LM (the `llm` router's
replies; rules decide without it). Every logged figure is checked against what the command
printed.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from typer.testing import CliRunner

from routerlab._routing_eval.decisions import FirstDecision
from routerlab._routing_eval.tracking import RouteTracking
from routerlab._runs.runner import RunConfig
from routerlab._runs.session import load_dataset
from routerlab.cli import app
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.analysis.console import render_console
from routerlab.eval.analysis.model import SessionComparison
from routerlab.eval.store import ROUTING, ResultsStore
from routerlab.eval.tracking import DECISIONS_CSV, KIND_ROUTE_PARENT, KIND_ROUTE_RUN
from tests.conftest import SPIDER_DEV_A

COSQL = SPIDER_DEV_A.parent / "cosql-dev-a"


def _model(store: Path, output: str) -> SessionComparison:
    """The comparison of the session the command stored (its id printed last)."""
    session = re.search(r"^session (\S+) \(store ", output, re.M)
    assert session, output
    return build_comparison(ResultsStore(store, read_only=True), session[1])


def _runs(uri: str) -> list[mlflow.entities.Run]:
    client = mlflow.MlflowClient(uri)
    return client.search_runs([e.experiment_id for e in client.search_experiments()])


def test_route_logs_a_parent_and_a_child_per_router_with_the_printed_figures(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out_csv, store = tmp_path / "d.csv", tmp_path / "results.duckdb"
    args = ["route", "--router", "rules,llm", "--lm", "scripted:basic", "--split", "dev", "--limit", "14"]
    args += ["--router-arg", 'rules.without=["which_column"]', "--tracking-uri", uri, "--out", str(out_csv)]
    result = CliRunner().invoke(app, [*args, "--store", str(store)], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    # what the command printed is the stored session's comparison, as the run's closing table
    model = _model(store, result.output)
    assert render_console(model, width=100, detail=False) in result.output
    part = model.part(ROUTING)

    runs = _runs(uri)
    parents = [r for r in runs if r.data.tags.get("routerlab.kind") == KIND_ROUTE_PARENT]
    children = {r.data.tags["routerlab.router"]: r for r in runs if r.data.tags.get("routerlab.kind") == KIND_ROUTE_RUN}
    assert len(parents) == 1 and set(children) == {"rules", "llm"} and len(runs) == 3
    parent = parents[0]
    assert parent.info.status == "FINISHED" and parent.data.params["routers"] == "rules,llm"
    assert f"parent run {parent.info.run_id}" in result.output
    client = mlflow.MlflowClient(uri)
    written = pd.read_csv(out_csv)
    for name, child in children.items():
        assert child.info.status == "FINISHED"
        assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
        params = child.data.params
        assert params["router.name"] == name and params["lm.spec"] == "scripted:basic"
        assert params["dataset.name"] == "builtin" and params["dataset.split"] == "dev"
        assert params["config.limit"] == "14" and params["config.history"] == "gold"
        m = child.data.metrics
        # the child's figures are the model's for the router, rounded as the runs table shows
        # them: rates with their intervals, recall per intent, cost, calibration
        shown = part.router(name)
        accuracy, diverted = shown.rates["routing_accuracy"], shown.rates["diverted"]
        assert [m["routing_accuracy"], m["routing_accuracy_low"], m["routing_accuracy_high"]] == [
            round(x, 3) for x in (accuracy.value, accuracy.low, accuracy.high)
        ]
        assert [m["diverted"], m["diverted_low"], m["diverted_high"], m["diverted_n"]] == [
            round(x, 3) for x in (diverted.value, diverted.low, diverted.high, diverted.n)
        ]
        assert m["n_examples"] == shown.n == 14
        assert [m["decision_p50_ms"], m["decision_p95_ms"]] == [round(shown.cost.p50, 3), round(shown.cost.p95, 3)]
        assert m["lm_calls_per_decision"] == round(shown.cost.lm_calls, 3)
        for intent, recall in shown.per_intent.items():
            assert m[f"recall.{intent}"] == round(recall.value, 3), intent
        assert m["calibration.ece"] == round(shown.figures["calibration.ece"], 3)
        # the session's parent carries the comparison's figures by part, so the runs table ranks
        # routers without a click: the child's own figures
        for key in ("routing_accuracy", "routing_accuracy_low", "routing_accuracy_high", "diverted"):
            assert parent.data.metrics[f"routing.{name}.{key}"] == m[key]
        # the child's decisions are the rows --out wrote for that router
        local = Path(client.download_artifacts(child.info.run_id, DECISIONS_CSV, str(tmp_path / name)))
        logged = pd.read_csv(local)
        # recall per intent is the logged decisions'
        recalls = logged.groupby("gold")["correct"].mean()
        assert {i: m[f"recall.{i}"] for i in recalls.index} == {i: round(v, 3) for i, v in recalls.items()}
        mine = written[written["router"] == name].reset_index(drop=True)
        assert logged[["example_id", "gold", "predicted", "correct"]].equals(
            mine[["example_id", "gold", "predicted", "correct"]]
        )
        away = logged["predicted"].isin(["chat", "refuse", "clarify", "unanswerable"]) & ~logged["correct"]
        assert diverted.count == int(((logged["gold"] == "sql") & away).sum())
    # constructor args with defaults applied, as `run` logs them; the one given on the command line
    assert children["rules"].data.params["router.args.without"] == '["which_column"]'
    assert "router.args.schema" in children["llm"].data.params
    # the scripted LM answers chat to everything: the llm router sends every data question away
    assert children["llm"].data.metrics["diverted"] == 1.0
    assert children["llm"].data.metrics["lm_calls_per_decision"] == 1.0
    assert children["rules"].data.metrics["lm_calls_per_decision"] == 0.0
    files = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"comparison.json", "comparison.md"} <= files
    md = Path(client.download_artifacts(parent.info.run_id, "comparison.md", str(tmp_path / "p"))).read_text()
    # the session's comparison, as routerlab compare --format markdown prints it: llm's routing accuracy
    assert "## Routing: first decisions on 14 requests" in md
    assert re.search(r"^\| llm \| \d\.\d\d ", md, re.M) and "**diverted**: share of data questions" in md


@pytest.mark.skipif(
    not (COSQL / "dev.json").is_file() or not (SPIDER_DEV_A / "database").is_dir(),
    reason="shared conversation data not found (set ROUTERLAB_SPIDER_DEV)",
)
def test_route_over_conversations_logs_routing_accuracy_per_turn(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = ["route", "--dataset", "cosql", "--dataset-path", str(COSQL), "--lm", "scripted:basic"]
    args += ["--router", "rules", "--limit", "8", "--history", "predicted", "--tracking-uri", uri]
    store = tmp_path / "results.duckdb"
    result = CliRunner().invoke(app, [*args, "--store", str(store)])
    assert result.exit_code == 0, result.output
    shown = _model(store, result.output).part(ROUTING).router("rules")
    (child,) = [r for r in _runs(uri) if r.data.tags.get("routerlab.kind") == KIND_ROUTE_RUN]
    m = child.data.metrics
    # the console's conversation table is the model's, and the child logs the same figures
    assert "Conversations (routing accuracy per turn position" in " ".join(result.output.split())
    turns = {k: v for k, v in shown.figures.items() if k.startswith(("turn.", "conversation."))}
    assert "turn.1.routing_accuracy" in turns and "turn.2.routing_accuracy" in turns
    assert {k: m[k] for k in turns} == {k: round(v, 3) for k, v in turns.items()}
    # each turn position's rate is its turns' first decisions, as stored
    stored = ResultsStore(store, read_only=True).results(shown.run_id)
    first = [r.value("first_decision") for r in stored if r.turn == 1]
    assert m["turn.1.routing_accuracy"] == round(sum(first) / len(first), 3)
    assert m["turn.1.routing_accuracy_n"] == len(first) > 0
    assert m["n_examples"] == len(stored) == shown.n
    assert child.data.params["config.history"] == "predicted" and child.data.params["dataset.name"] == "cosql"
    # an intent with no example logs no figure, never a zero (and has no per-intent rate)
    from routerlab.agents.state import INTENTS

    absent = [i for i in INTENTS if i not in shown.per_intent]
    assert absent and all(f"recall.{i}" not in m for i in absent)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("kind", ["not_sqlite", "unreachable_server", "missing_folder"])
def test_a_bad_tracking_store_exits_2_before_any_decision(tmp_path: Path, kind: str) -> None:
    bad = tmp_path / "notes.db"
    bad.write_text("not a database\n")
    uri, expected = {
        "not_sqlite": (f"sqlite:///{bad}", "not a SQLite database"),
        "unreachable_server": (f"http://127.0.0.1:{_free_port()}", "the server does not answer"),
        "missing_folder": (f"sqlite:///{tmp_path / 'nope' / 'm.db'}", "its folder does not exist"),
    }[kind]
    out_csv = tmp_path / "d.csv"
    args = ["route", "--router", "rules", "--lm", "scripted:basic", "--limit", "7", "--tracking-uri", uri]
    result = CliRunner().invoke(app, [*args, "--out", str(out_csv)])
    assert result.exit_code == 2, result.output
    # the console wraps long lines anywhere: compare without whitespace
    text = "".join(result.output.split())
    assert expected.replace(" ", "") in text and uri in text and "fix:" in text
    # nothing ran: no decision written, the bad file untouched, no folder created
    assert not out_csv.exists() and bad.read_text() == "not a database\n" and not (tmp_path / "nope").exists()


def test_no_mlflow_writes_no_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    result = CliRunner().invoke(
        app, ["route", "--router", "oracle", "--lm", "scripted:basic", "--limit", "7", "--no-mlflow"]
    )
    assert result.exit_code == 0, result.output
    assert "MLflow" not in result.output and not (tmp_path / "mlflow.db").exists()


def test_an_error_while_deciding_closes_the_open_runs_failed(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    from routerlab import routers

    dataset = load_dataset(RunConfig())
    settings = {"dataset": "builtin", "split": "dev", "limit": 0, "lm": "scripted:basic", "history": "gold"}
    done = [FirstDecision("e1", "sql", "sql", True, "rules", 0, 0, 0, 0.01, confidence=1.0)]
    tracking = RouteTracking(uri, "r-1", dataset, settings, ["rules", "oracle"])
    with pytest.raises(RuntimeError, match="engine gone"), tracking:
        tracking.start_router("rules", routers.router.build("rules"))
        tracking.finish_router("rules", "rules", done)
        tracking.start_router("oracle", routers.router.build("oracle"))
        raise RuntimeError("engine gone")
    by_kind = {}
    for r in _runs(uri):
        by_kind.setdefault(r.data.tags["routerlab.kind"], []).append(r)
    (parent,) = by_kind[KIND_ROUTE_PARENT]
    status = {r.data.tags["routerlab.router"]: r for r in by_kind[KIND_ROUTE_RUN]}
    # the finished router keeps its decisions (its figures come with the session's comparison,
    # which an interrupted session never builds); the one interrupted and the parent say why they stopped
    assert status["rules"].info.status == "FINISHED" and not status["rules"].data.metrics
    client = mlflow.MlflowClient(uri)
    local = Path(client.download_artifacts(status["rules"].info.run_id, DECISIONS_CSV, str(tmp_path)))
    assert list(pd.read_csv(local)["example_id"]) == ["e1"]
    assert status["oracle"].info.status == "FAILED" and parent.info.status == "FAILED"
    assert status["oracle"].data.tags["routerlab.error"] == "RuntimeError: engine gone"
    assert parent.data.tags["routerlab.status"] == "FAILED"


@pytest.mark.model
def test_route_with_the_embedded_model_logs_its_lm_cost_and_the_printed_figures(tmp_path: Path) -> None:
    """The llm and hybrid routers on an embedded model: one LM call per llm decision, figures as printed.

    The small embedded model (0.5B): nothing below depends on the model's size, and it costs about
    a third of the 1.5B's time in CI (26 s against 78 s, 2026-11-28).
    """
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = [
        "route",
        "--router",
        "llm,hybrid",
        "--lm",
        "local:0.5b",
        "--split",
        "dev",
        # every assertion below holds at any size: 6 requests keep the test's meaning at under
        # half of 14's CI time (two routers, one to two model calls per llm decision)
        "--limit",
        "6",
        "--tracking-uri",
        uri,
        "--store",
        str(tmp_path / "results.duckdb"),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    part = _model(tmp_path / "results.duckdb", result.output).part(ROUTING)
    children = {
        r.data.tags["routerlab.router"]: r for r in _runs(uri) if r.data.tags["routerlab.kind"] == KIND_ROUTE_RUN
    }
    for name in ("llm", "hybrid"):
        m = children[name].data.metrics
        assert children[name].data.params["lm.spec"] == "local:0.5b"
        shown = part.router(name)
        accuracy = shown.rates["routing_accuracy"]
        # logged rounded to 3 decimals, as MLflow's tables show them
        assert [m["routing_accuracy"], m["routing_accuracy_low"], m["routing_accuracy_high"]] == pytest.approx(
            [accuracy.value, accuracy.low, accuracy.high], abs=5e-4
        )
        assert [m["lm_calls_per_decision"], m["decision_p50_ms"]] == pytest.approx(
            [shown.cost.lm_calls, shown.cost.p50], abs=5e-4
        )
    # every llm decision asks the model once; hybrid asks it only where its rules are unsure
    assert children["llm"].data.metrics["lm_calls_per_decision"] >= 1.0
    assert (
        children["hybrid"].data.metrics["lm_calls_per_decision"]
        <= children["llm"].data.metrics["lm_calls_per_decision"]
    )
    assert children["llm"].data.metrics["decision_p50_ms"] > 0
