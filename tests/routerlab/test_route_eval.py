"""First-decision routing evaluation: accuracy, per-intent recall, confusion, crashes scored."""

from __future__ import annotations

import math
import re

import pytest

from routerlab import routers
from routerlab._routing_eval.decisions import first_decisions, intent_confusion, summary_table
from routerlab._runs.selection import schedule
from routerlab.benchmarks.builtin import load_builtin
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
    confusion = intent_confusion(ds)
    assert int(confusion.to_numpy().sum()) == len(ds)
    assert confusion.loc["sql"].sum() == len(sql)


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


def test_the_console_table_is_compact_and_leaves_out_absent_intents(dev):
    """route's console table: one short line per router, no NaN, intents absent from the set left out."""
    from routerlab._routing_eval.decisions import summary_text

    no_chat = [e for e in dev if e.intent not in ("chat", "explain")]
    by_router = {r: first_decisions(r, {}, no_chat, None) for r in ("rules", "oracle", "random")}
    table = summary_table(by_router)
    assert "recall_chat" not in table.columns and "recall_explain" not in table.columns
    assert "recall_sql" in table.columns and not table.filter(like="recall_").isna().any().any()
    text = summary_text(by_router)
    lines = text.splitlines()
    assert all(len(line) <= 120 for line in lines) and not re.search(r"\bnan\b", text, re.I)
    header = lines[0].split()
    assert header[:5] == ["router", "accuracy", "[95%", "CI]", "n"] and "chat" not in header and "sql" in header
    rules = table.set_index("router").loc["rules"]
    row = next(line for line in lines if line.startswith("rules "))
    assert f"{rules['accuracy']:.2f} [{rules['ci_low']:.2f}, {rules['ci_high']:.2f}]" in row
    assert "p50 ms" in lines[0] and "mean ms" in lines[0]
    # narrower still: per-intent recall goes first, and the caption says so
    narrow = summary_text(by_router, width=80)
    assert all(len(line) <= 80 for line in narrow.splitlines())
    assert "left out to fit 80 columns: clar, refuse, unans" in " ".join(narrow.split())
    assert "accuracy [95% CI]" in narrow.splitlines()[0] and "p50 ms" in narrow.splitlines()[0]
