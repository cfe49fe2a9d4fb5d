"""Gold SQL that cannot run is counted (wrong, by default) and reported everywhere, never dropped.

The probe (issue 50, item 4): a JSONL set with 2 of 5 gold queries that fail (a ``DROP``, a
missing column) ended exit 0 with EX over 3 examples, and the console said nothing about the 2.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from routerlab import cli
from routerlab.agents.errors import ConfigError
from routerlab.benchmarks.example import Example
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.metrics import gold_failure_line, gold_failures
from routerlab.eval.rate import rate
from routerlab.eval.scorers import ExecutionAccuracy
from routerlab.eval.scoring import Trace
from routerlab.eval.store import ResultsStore

GOOD = [
    ("How many areas?", "SELECT count(*) FROM areas"),
    ("Which regions are there?", "SELECT DISTINCT region FROM areas"),
    ("How many revenue rows?", "SELECT count(*) FROM revenue"),
]
BAD = [
    ("Drop the areas table", "DROP TABLE areas"),
    ("What is the areas' colour?", "SELECT colour FROM areas"),
]


def _ex(db: Path, sql: str) -> Example:
    return Example("e", "q", "sales", str(db), "sql", gold_sql=sql)


def test_default_counts_an_unrunnable_gold_wrong_with_its_cause(sales_db: Path) -> None:
    s = ExecutionAccuracy(gold_cache=False)
    # even the "right" prediction cannot match a gold that does not run
    sc = s.score(_ex(sales_db, "SELECT colour FROM areas"), Trace("e", sql="SELECT colour FROM areas"))
    assert sc.value == 0.0 and "counted wrong" in sc.reason
    assert "colour" in sc.detail["gold_error"] and "invalid" not in sc.detail
    refused = s.score(_ex(sales_db, "DROP TABLE areas"), Trace("e", sql="SELECT 1"))
    assert refused.value == 0.0 and "guard_violation" in refused.detail["gold_error"]


def test_exclude_leaves_it_out_and_still_names_the_cause(sales_db: Path) -> None:
    s = ExecutionAccuracy(gold_cache=False, gold_failure="exclude")
    sc = s.score(_ex(sales_db, "SELECT colour FROM areas"), Trace("e", sql="SELECT 1"))
    assert sc.value is None and sc.detail["invalid"] and "colour" in sc.detail["gold_error"]


def test_an_unknown_choice_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        ExecutionAccuracy(gold_failure="ignore")
    assert "wrong" in str(caught.value) and "exclude" in str(caught.value)


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory, sales_db: Path) -> Path:
    work = tmp_path_factory.mktemp("gold")
    shutil.copy(sales_db, work / "sales.duckdb")
    records = [{"question": q, "gold_sql": sql, "db_path": "sales.duckdb"} for q, sql in [*GOOD, *BAD]]
    (work / "five.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return work


def test_the_probe_reports_two_of_five_in_console_compare_and_mlflow(five: Path) -> None:
    from mlflow import MlflowClient

    store, uri = five / "results.duckdb", f"sqlite:///{five}/mlflow.db"
    where = ["--store", str(store), "--tracking-uri", uri]
    runner = CliRunner()
    out = runner.invoke(
        cli.app,
        [
            *("run", "--lm", "scripted:basic", "--router", "oracle", "--dataset", "jsonl"),
            *("--dataset-path", str(five / "five.jsonl"), *where),
        ],
        env={"COLUMNS": "400"},
    )
    text = " ".join(out.output.split())
    assert out.exit_code == 0, text
    assert "2 example(s) have gold SQL that cannot run" in text and "counted wrong in EX" in text
    assert "first: gold guard_violation" in text
    (run_id,) = ResultsStore(store).runs()["run_id"].tolist()
    results = ResultsStore(store).results(run_id)
    # EX over all five (it was over 3): the two unrunnable golds are in it, as wrong
    ex = rate(results, "ex")
    assert ex.n == 5 and ex.n_invalid == 0
    failed = [r for r in results if r.scores["ex"].detail.get("gold_error")]
    assert len(failed) == 2 and all(r.value("ex") == 0.0 for r in failed)
    n, first = gold_failures(results)
    assert n == 2 and first is not None and "DROP" in first.upper()
    assert build_comparison(ResultsStore(store), run_id).part("end_to_end").routers[0].figures["gold_failed"] == 2.0
    assert gold_failure_line(run_id, results) is not None
    # compare says so too
    shown = runner.invoke(cli.app, ["compare", run_id.rsplit(".", 1)[0], "--store", str(store)], env={"COLUMNS": "400"})
    said = " ".join(shown.output.split())
    assert shown.exit_code == 0, said
    # the comparison's note, from the one model (eval/analysis): per router, the count
    assert "examples whose gold SQL cannot run (EX counts them wrong" in said and "oracle 2." in said
    # and MLflow: the count as a metric, the first cause as a tag
    client = MlflowClient(uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    child = next(r for r in runs if r.data.tags.get("routerlab.kind") == "router-run")
    assert child.data.metrics["gold_failed"] == 2.0 and child.data.metrics["ex_n"] == 5.0
    assert "DROP" in child.data.tags["routerlab.ex_gold_failed_first"].upper()
