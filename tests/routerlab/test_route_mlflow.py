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
from routerlab.eval.store import ResultsStore
from routerlab.eval.tracking import DECISIONS_CSV, KIND_ROUTE_PARENT, KIND_ROUTE_RUN
from tests.conftest import SPIDER_DEV_A

#: summary_table column -> child metric (the rest of the mapping is route_eval._METRIC_OF_COLUMN)
PRINTED = {
    "n": "n_examples",
    "accuracy": "routing_accuracy",
    "ci_low": "routing_accuracy_low",
    "ci_high": "routing_accuracy_high",
    "diverted": "diverted",
    "macro_recall": "macro_recall",
    "acc_first": "acc_first",
    "acc_followup": "acc_followup",
    "n_first": "n_first",
    "n_followup": "n_followup",
    "lm_calls": "lm_calls_per_decision",
    "p50_ms": "decision_p50_ms",
}
#: the compact console table's headers (route_eval.summary_text) -> summary_table column
HEADER_COLUMN = {
    "n": "n",
    "macro": "macro_recall",
    "divert": "diverted",
    "turn 1": "acc_first",
    "turns 2+": "acc_followup",
    "p50 ms": "p50_ms",
    "mean ms": "mean_ms",
    "LM": "lm_calls",
    "errors": "errors",
    "expl": "recall_explain",
    "clar": "recall_clarify",
    "unans": "recall_unanswerable",
    **{intent: f"recall_{intent}" for intent in ("sql", "fix", "chat", "refuse")},
}
#: decimals the console shows per column (2 unless named): a figure is checked at its printed precision
DECIMALS = {"n": 0, "errors": 0, "p50_ms": 1, "mean_ms": 1}
COSQL = SPIDER_DEV_A.parent / "cosql-dev-a"


def _printed_rows(output: str, labels: list[str]) -> dict[str, dict[str, float]]:
    """The compact table as printed: {router label: {summary_table column: value}}.

    Cells are separated by at least two spaces and a header holds single spaces only
    (``accuracy [95% CI]``, ``p50 ms``); every header must be known, so a column added to the
    console table without a check here fails this test.
    """
    lines = output.splitlines()
    header = next(line for line in lines if re.match(r"^router\s+accuracy \[95% CI\]", line))
    heads = re.split(r"\s{2,}", header.strip())
    assert set(heads[2:]) <= set(HEADER_COLUMN), heads
    rows = {}
    for label in labels:
        line = next(line for line in lines[lines.index(header) + 1 :] if line.startswith(label + " "))
        cells = re.split(r"\s{2,}", line.strip())
        assert cells[0] == label and len(cells) == len(heads), (heads, cells)
        m = re.fullmatch(r"(\S+) \[(\S+), (\S+)\]", cells[1])
        assert m, cells[1]
        row = {"accuracy": float(m[1]), "ci_low": float(m[2]), "ci_high": float(m[3])}
        # "-" is a figure the table has no value for (never a NaN printed)
        row |= {
            HEADER_COLUMN[h]: float("nan") if v == "-" else float(v) for h, v in zip(heads[2:], cells[2:], strict=True)
        }
        rows[label] = row
    return rows


def _printed_diversion(output: str, label: str) -> tuple[float, float, float, int, int]:
    """``share [low, high] (k/n)`` of the diversion line printed for ``label``."""
    m = re.search(rf"^  {re.escape(label)}: (\S+) \[(\S+), (\S+)\] \((\d+)/(\d+)\)", output, re.M)
    assert m, output
    return float(m[1]), float(m[2]), float(m[3]), int(m[4]), int(m[5])


def _runs(uri: str) -> list[mlflow.entities.Run]:
    client = mlflow.MlflowClient(uri)
    return client.search_runs([e.experiment_id for e in client.search_experiments()])


def _close(logged: float, printed: float, column: str = "") -> bool:
    """A logged figure is the printed one: equal at the decimals the table shows (2 unless :data:`DECIMALS` says)."""
    return abs(logged - printed) <= 0.5 * 10 ** -DECIMALS.get(column, 2) + 1e-9


def test_route_logs_a_parent_and_a_child_per_router_with_the_printed_figures(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out_csv = tmp_path / "d.csv"
    args = ["route", "--router", "rules,llm", "--lm", "scripted:basic", "--split", "dev", "--limit", "14"]
    args += ["--router-arg", 'rules.without=["which_column"]', "--tracking-uri", uri, "--out", str(out_csv)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    printed = _printed_rows(result.output, ["rules", "llm"])

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
        checked = set()
        for column, metric in PRINTED.items():
            if column in printed[name]:
                assert _close(m[metric], printed[name][column], column), (
                    name,
                    metric,
                    m[metric],
                    printed[name][column],
                )
                checked.add(column)
        for intent in ("sql", "chat", "clarify", "refuse", "explain", "fix", "unanswerable"):
            assert _close(m[f"recall.{intent}"], printed[name][f"recall_{intent}"])
            checked.add(f"recall_{intent}")
        share, low, high, k, n = _printed_diversion(result.output, name)
        assert _close(m["diverted"], share) and _close(m["diverted_ci_low"], low)
        assert _close(m["diverted_ci_high"], high) and m["diverted_n"] == n
        assert m["routing_accuracy_low"] <= m["routing_accuracy"] <= m["routing_accuracy_high"]
        # the session's parent carries the comparison's figures by part, so the runs table ranks
        # routers without a click: the child's own figures
        for key in ("routing_accuracy", "routing_accuracy_low", "routing_accuracy_high", "diverted"):
            assert parent.data.metrics[f"routing.{name}.{key}"] == pytest.approx(m[key])
        # the child's decisions are the rows --out wrote for that router
        local = Path(client.download_artifacts(child.info.run_id, DECISIONS_CSV, str(tmp_path / name)))
        logged = pd.read_csv(local)
        # the mean wall time the console prints is the logged decisions' mean
        assert _close(1000 * logged["seconds"].mean(), printed[name]["mean_ms"], "mean_ms")
        checked.add("mean_ms")
        if "errors" in printed[name]:
            assert m["errors"] == printed[name]["errors"]
            checked.add("errors")
        # every figure the console shows was compared with MLflow
        assert set(printed[name]) == checked, set(printed[name]) - checked
        mine = written[written["router"] == name].reset_index(drop=True)
        assert logged[["example_id", "gold", "predicted", "correct"]].equals(
            mine[["example_id", "gold", "predicted", "correct"]]
        )
        away = logged["predicted"].isin(["chat", "refuse", "clarify", "unanswerable"]) & ~logged["correct"]
        assert k == int(((logged["gold"] == "sql") & away).sum())
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
def test_route_over_conversations_logs_first_turn_and_follow_up_accuracy(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = ["route", "--dataset", "cosql", "--dataset-path", str(COSQL), "--lm", "scripted:basic"]
    args += ["--router", "rules", "--limit", "8", "--history", "predicted", "--tracking-uri", uri]
    store = tmp_path / "results.duckdb"
    result = CliRunner().invoke(app, [*args, "--store", str(store)])
    assert result.exit_code == 0, result.output
    printed = _printed_rows(result.output, ["rules"])["rules"]
    (child,) = [r for r in _runs(uri) if r.data.tags.get("routerlab.kind") == KIND_ROUTE_RUN]
    m = child.data.metrics
    assert {"acc_first", "acc_followup", "n_first", "n_followup"} <= set(m)
    for column in ("accuracy", "acc_first", "acc_followup", "macro_recall"):
        assert _close(m[PRINTED[column]], printed[column]), column
    # the turn counts are not on the console (the compact table shows the two accuracies): they
    # are checked against the session the command stored, read through the Python API
    session = re.search(r"^session (\S+) \(store ", result.output, re.M)
    assert session, result.output
    stored = ResultsStore(store, read_only=True).results(f"{session[1]}.routing.rules")
    assert m["n_first"] == sum(r.turn == 1 for r in stored) > 0
    assert m["n_followup"] == sum(r.turn > 1 for r in stored) > 0
    assert m["n_first"] + m["n_followup"] == m["n_examples"] == len(stored) == printed["n"]
    assert child.data.params["config.history"] == "predicted" and child.data.params["dataset.name"] == "cosql"
    # an intent with no example logs no figure, never a zero (and prints no column of NaN)
    from routerlab.agents.state import INTENTS

    absent = [i for i in INTENTS if f"recall_{i}" not in printed]
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
    # the finished router keeps its figures; the one interrupted and the parent say why they stopped
    assert status["rules"].info.status == "FINISHED" and status["rules"].data.metrics["routing_accuracy"] == 1.0
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
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    printed = _printed_rows(result.output, ["llm", "hybrid"])
    children = {
        r.data.tags["routerlab.router"]: r for r in _runs(uri) if r.data.tags["routerlab.kind"] == KIND_ROUTE_RUN
    }
    for name in ("llm", "hybrid"):
        m = children[name].data.metrics
        assert children[name].data.params["lm.spec"] == "local:0.5b"
        for column in ("accuracy", "ci_low", "ci_high", "macro_recall", "lm_calls", "p50_ms"):
            assert _close(m[PRINTED[column]], printed[name][column], column), (name, column)
    # every llm decision asks the model once; hybrid asks it only where its rules are unsure
    assert children["llm"].data.metrics["lm_calls_per_decision"] >= 1.0
    assert (
        children["hybrid"].data.metrics["lm_calls_per_decision"]
        <= children["llm"].data.metrics["lm_calls_per_decision"]
    )
    assert children["llm"].data.metrics["decision_p50_ms"] > 0
