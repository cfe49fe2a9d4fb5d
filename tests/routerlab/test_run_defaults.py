"""``routerlab run``'s default example count: a sample of the built-in benchmark, a user's dataset whole."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

import routerlab.cli as cli
from routerlab.app.defaults import DEFAULT_LIMIT
from routerlab.app.run import run_defaults
from routerlab.eval.store import ResultsStore


def _spider(root: Path, n: int) -> Path:
    db = root / "database" / "shop"
    db.mkdir(parents=True)
    con = sqlite3.connect(db / "shop.sqlite")
    con.execute("CREATE TABLE items (id INT, price INT)")
    con.executemany("INSERT INTO items VALUES (?, ?)", [(i, 10 * i) for i in range(5)])
    con.commit()
    con.close()
    records = [
        {
            "db_id": "shop",
            "question": f"How many items cost more than {i}?",
            "query": f"SELECT count(*) FROM items WHERE price > {i}",
        }
        for i in range(n)
    ]
    (root / "dev.json").write_text(json.dumps(records))
    return root


def test_builtin_default_is_the_main_jobs_sample(tmp_path):
    assert run_defaults(None, None) == {"limit": DEFAULT_LIMIT}
    assert run_defaults("builtin", None) == {"limit": DEFAULT_LIMIT}


def test_other_datasets_default_to_every_example(tmp_path):
    assert run_defaults("spider", None) == {}
    config = tmp_path / "run.yaml"
    config.write_text("dataset: spider\n")
    assert run_defaults(None, config) == {}
    # the option names the dataset over the file, as everywhere else
    assert run_defaults("builtin", config) == {"limit": DEFAULT_LIMIT}


def test_spider_run_without_limit_scores_every_question(tmp_path):
    root = _spider(tmp_path / "spider", 9)
    store = tmp_path / "r.duckdb"
    args = ["run", "--lm", "scripted:basic", "--router", "rules", "--dataset", "spider", "--dataset-path", str(root)]
    out = CliRunner().invoke(cli.app, [*args, "--store", str(store), "--no-mlflow"])
    assert out.exit_code == 0, out.output
    stored = ResultsStore(store)
    (run_id,) = stored.runs()["run_id"]
    assert len(stored.results(run_id)) == 9 > DEFAULT_LIMIT
