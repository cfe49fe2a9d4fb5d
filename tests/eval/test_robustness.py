"""Data questions sent away from SQL: the definition case by case, and the figure in route, compare and MLflow."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from mlflow import MlflowClient
from typer.testing import CliRunner

from routerlab._routing_eval.decisions import first_decisions, summary_table
from routerlab.benchmarks.builtin import load_builtin
from routerlab.benchmarks.selection import schedule
from routerlab.cli import app
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.analysis.console import render_console
from routerlab.eval.robustness import AWAY_FROM_SQL, diversion, diversion_of_results
from routerlab.eval.store import ResultsStore


@pytest.mark.parametrize("where", AWAY_FROM_SQL)
def test_a_data_question_sent_to_each_non_sql_intent_is_diverted(where):
    d = diversion([("sql", where, False)])
    assert (d.share, d.n, d.diverted) == (1.0, 1, 1)
    assert d.to[where] == 1 and sum(d.to.values()) == 1


@pytest.mark.parametrize("where", ["sql", "explain", "fix", None])
def test_sql_paths_and_no_decision_count_as_data_questions_not_diverted(where):
    # explain / fix are wrong routes that still work on SQL; None (a crash) is a failure of its own
    d = diversion([("sql", where, where == "sql")])
    assert (d.share, d.n, d.diverted) == (0.0, 1, 0)


@pytest.mark.parametrize("gold", ["chat", "clarify", "refuse", "unanswerable", "explain", "fix"])
def test_only_data_questions_are_counted(gold):
    d = diversion([(gold, "chat", False), ("sql", "sql", True)])
    assert d.n == 1 and d.diverted == 0


def test_an_accepted_alternate_is_not_a_diversion():
    # an example whose alternates accept a clarification is not diverted by asking
    assert diversion([("sql", "clarify", True)]).diverted == 0
    assert diversion([("sql", "clarify", False)]).diverted == 1


def test_share_ci_and_destinations():
    triples = [("sql", "sql", True)] * 6 + [("sql", "chat", False)] * 3 + [("sql", "refuse", False)]
    d = diversion(triples)
    assert d.share == pytest.approx(0.4) and d.n == 10 and d.diverted == 4
    assert d.ci_low <= 0.4 <= d.ci_high and d.ci_low < d.ci_high
    assert d.to == {"chat": 3, "refuse": 1, "clarify": 0, "unanswerable": 0}
    # each destination's share of the data questions
    assert d.to["chat"] / d.n == pytest.approx(0.3) and d.to["clarify"] / d.n == 0
    assert d.fmt().endswith("(4/10)")


def test_no_data_question_gives_no_figure_not_a_zero():
    d = diversion([("chat", "chat", True)])
    assert d.n == 0 and math.isnan(d.share)
    assert d.fmt() == "n/a"


def test_route_summary_reports_the_rules_routers_diversions_on_real_dev():
    dev = schedule(load_builtin().split("dev"))
    ds = first_decisions("rules", {}, dev, None)
    data = [d for d in ds if d.gold == "sql"]
    away = [d for d in data if d.predicted in AWAY_FROM_SQL and not d.correct]
    table = summary_table({"rules": ds})
    assert table.iloc[0]["diverted"] == pytest.approx(len(away) / len(data))
    assert list(table.columns[:6]) == ["router", "n", "accuracy", "ci_low", "ci_high", "diverted"]


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> tuple[Path, str, str]:
    """A real `routerlab run` of the rules router over dev with the scripted LM, into DuckDB and MLflow."""
    work = tmp_path_factory.mktemp("diverted")
    store, uri = work / "results.duckdb", f"sqlite:///{work / 'mlflow.db'}"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--router",
            "rules",
            "--lm",
            "scripted:basic",
            "--split",
            "dev",
            "--limit",
            "28",
            "--store",
            str(store),
            "--tracking-uri",
            uri,
        ],
    )
    assert result.exit_code == 0, result.output
    session_id = re.search(r"session id: (\S+)", result.output).group(1)  # type: ignore[union-attr]
    return store, uri, session_id


def test_compare_and_mlflow_report_the_share_the_stored_decisions_give(session):
    store_path, uri, session_id = session
    store = ResultsStore(store_path)
    run_id = f"{session_id}.rules"
    results = store.results(run_id)
    data = [r for r in results if r.intent == "sql"]
    away = [r for r in data if r.predicted_intent in AWAY_FROM_SQL and r.value("route") != 1.0]
    assert data, "the dev subset holds data questions"
    expected = len(away) / len(data)
    assert diversion_of_results(results).share == pytest.approx(expected)

    c = build_comparison(store, [run_id])
    diverted = c.part("end_to_end").router("rules").rates["diverted"]
    assert diverted.value == pytest.approx(expected) and diverted.n == len(data) and diverted.count == len(away)
    assert f"({len(away)}/{len(data)})" in render_console(c, width=120)

    client = MlflowClient(tracking_uri=uri)
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    logged = [r.data.metrics for r in runs if "diverted" in r.data.metrics]
    assert len(logged) == 1
    assert logged[0]["diverted"] == pytest.approx(expected) and logged[0]["diverted_n"] == len(data)
