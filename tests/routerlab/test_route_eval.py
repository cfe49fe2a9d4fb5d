"""First-decision routing evaluation: accuracy, per-intent recall, confusion, crashes scored."""

from __future__ import annotations

import math
import re

import pytest

from routerlab import routers
from routerlab._routing_eval.decisions import first_decisions, summary_table
from routerlab.benchmarks.builtin import load_builtin
from routerlab.benchmarks.selection import schedule
from routerlab.routers.baselines import OracleRouter


@pytest.fixture(scope="module")
def dev():
    return schedule(load_builtin().split("dev"))


def test_oracle_is_always_right_and_costs_nothing(dev):
    ds = first_decisions("oracle", {}, dev, None)
    assert len(ds) == len(dev) and all(d.correct for d in ds)
    row = summary_table({"oracle": ds}).iloc[0]
    assert row["accuracy"] == 1.0 and row["ci_low"] == row["ci_high"] == 1.0
    assert row["lm_calls"] == 0 and row["errors"] == 0


def test_rules_accuracy_is_the_share_of_accepted_intents(dev):
    ds = first_decisions("rules", {}, dev, None)
    by_id = {e.id: e for e in dev}
    expected = sum(d.predicted in by_id[d.example_id].accepted_intents for d in ds) / len(ds)
    row = summary_table({"rules": ds}).iloc[0]
    assert row["accuracy"] == pytest.approx(expected)
    assert row["ci_low"] <= row["accuracy"] <= row["ci_high"]
    sql = [d for d in ds if d.gold == "sql"]
    assert row["recall_sql"] == pytest.approx(sum(d.correct for d in sql) / len(sql))


def test_a_router_that_raises_is_a_scored_failure_not_a_crash(dev):
    class _Broken(OracleRouter):
        name = "broken"

        def decide(self, state):
            if "?" in state.get("question", ""):
                raise RuntimeError("boom")
            return super().decide(state)

    with routers.router.scoped("broken", _Broken):
        ds = first_decisions("broken", {}, dev[:20], None)
    failed = [d for d in ds if d.error]
    assert failed and all(d.error == "RuntimeError" and not d.correct and d.predicted is None for d in failed)
    assert len(ds) == 20
    row = summary_table({"broken": ds}).iloc[0]
    assert row["errors"] == len(failed)
    assert math.isclose(row["accuracy"], (20 - len(failed)) / 20)


def test_confidence_and_calibration_columns(dev):
    from routerlab.eval.confidence_calibration import expected_calibration_error

    ds = first_decisions("rules", {}, dev, None)
    assert all(0.0 <= d.confidence <= 1.0 for d in ds)
    row = summary_table({"rules": ds}).iloc[0]
    assert row["confidence"] == pytest.approx(sum(d.confidence for d in ds) / len(ds))
    assert row["ece"] == pytest.approx(expected_calibration_error([d.confidence for d in ds], [d.correct for d in ds]))
    assert row["scored_tokens"] == 0 and math.isnan(row["lm_p50_ms"])  # rules never call an LM
    oracle = summary_table({"oracle": first_decisions("oracle", {}, dev, None)}).iloc[0]
    assert oracle["ece"] == pytest.approx(0.0)


def test_route_reads_dataset_and_its_arguments_from_a_config_file(tmp_path):
    from typer.testing import CliRunner

    from routerlab.cli import app

    config = tmp_path / "route.yaml"
    config.write_text("dataset: builtin\ndataset_args: {split_seed: 1}\nsplit: train\nlimit: 7\n")
    out = tmp_path / "d.csv"
    result = CliRunner().invoke(
        app,
        [
            "route",
            "--router",
            "rules",
            "--lm",
            "scripted:basic",
            "--config",
            str(config),
            "--out",
            str(out),
            "--no-mlflow",
        ],
    )
    assert result.exit_code == 0, result.output
    import pandas as pd

    decisions = pd.read_csv(out)
    assert len(decisions) == 7 and decisions["gold"].nunique() == 7  # the file's limit, stratified by intent
    bad = tmp_path / "bad.yaml"
    bad.write_text("dataset: builtin\ndataset_args: {no_such_arg: 1}\n")
    result = CliRunner().invoke(app, ["route", "--router", "rules", "--lm", "scripted:basic", "--config", str(bad)])
    assert result.exit_code == 2 and "no_such_arg" in result.output


def test_route_reads_dataset_arguments_from_a_run_config(tmp_path):
    """`routerlab route --config` takes the mixer's arguments the way `routerlab run` does."""
    import json
    import sqlite3

    from typer.testing import CliRunner

    from routerlab.cli import app

    db = tmp_path / "x.sqlite"
    sqlite3.connect(db).executescript("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);")
    data = tmp_path / "q.jsonl"
    rows = [
        {"question": f"How many rows are in t, take {i}?", "db_path": str(db), "gold_sql": "SELECT 1"}
        for i in range(20)
    ]
    data.write_text("\n".join(json.dumps(r) for r in rows))
    config = tmp_path / "mixed.yaml"
    config.write_text(
        f"dataset: mixed\ndataset_args: {{base: jsonl, path: {data}, seed: 3, ratios: {{sql: 1, chat: 1}}}}\n"
    )
    out = CliRunner().invoke(
        app, ["route", "--router", "oracle", "--config", str(config), "--lm", "scripted:basic", "--no-mlflow"]
    )
    assert out.exit_code == 0, out.output
    assert "chat" in out.output and "oracle" in out.output
    mistyped = config.with_name("bad.yaml")
    mistyped.write_text(f"dataset: mixed\ndataset_args: {{base: jsonl, path: {data}, sed: 3}}\n")
    bad = CliRunner().invoke(app, ["route", "--router", "oracle", "--config", str(mistyped)])
    assert bad.exit_code == 2 and "sed" in bad.output


def test_route_prints_the_sessions_comparison_and_leaves_out_absent_intents(tmp_path):
    """route's console is the run's closing table of the session's model; an intent absent from the set has no rate."""
    import routerlab
    from routerlab.eval.analysis.build import build_comparison
    from routerlab.eval.analysis.console import render_console
    from routerlab.eval.store import ROUTING, ResultsStore

    store = tmp_path / "results.duckdb"
    routed = ["rules", "oracle", "random"]
    outcome = routerlab.route(routed, lm="scripted:basic", limit=9, store=str(store), tracking_uri=None)
    model = build_comparison(ResultsStore(store, read_only=True), outcome.session_id)
    assert outcome.comparison == model
    text = outcome.report(width=80)
    assert text == render_console(model, width=80, detail=False)
    assert max(len(line) for line in text.splitlines()) <= 80 and not re.search(r"\bnan\b|n/a", text, re.I)
    gold = {e.intent for e in outcome.examples}
    part = model.part(ROUTING)
    # the decisions are kept by display label (the progress bars', --out's), the model by router name
    assert sorted(routers.label(r.router) for r in part.routers) == sorted(outcome.by_router)
    for r in part.routers:
        decided = outcome.by_router[routers.label(r.router)]
        # the model's rates are the decisions', and only the intents present have a recall
        assert r.rates["routing_accuracy"].value == pytest.approx(sum(d.correct for d in decided) / len(decided))
        assert set(r.per_intent) == gold
        confusion = outcome.confusions()[r.router]
        assert int(confusion.to_numpy().sum()) == len(decided) and set(confusion.index) == gold
        for intent in gold:
            assert confusion.loc[intent].sum() == sum(d.gold == intent for d in decided)
        # data questions sent away from SQL: the confusion's gold-sql row off its diagonal
        diverted = r.rates["diverted"]
        assert diverted.n == sum(d.gold == "sql" for d in decided)
        assert diverted.count == sum(d.gold == "sql" and d.predicted != "sql" and not d.correct for d in decided)
    assert part.router("oracle").rates["routing_accuracy"].value == 1.0
    assert list(outcome.rates()["routing_accuracy"]) == [r.rates["routing_accuracy"].value for r in part.routers]
