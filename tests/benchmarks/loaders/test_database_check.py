"""Loaders' databases are checked before the run: a bad one stops it (exit 2) or is left out, never scored.

Real Spider-layout folders with real SQLite files; the CLI runs in-process with the scripted LM.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from routerlab import cli
from routerlab.benchmarks.dbcheck import check_databases, needed_tables
from routerlab.benchmarks.example import Example
from routerlab.cli import app


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    # messages are read as one line: no wrapping inside a path
    monkeypatch.setattr(cli._err, "width", 1000)
    monkeypatch.setattr(cli._out, "width", 1000)


def _run(spider: Path, tmp: Path, *extra: str):
    store = tmp / "r.duckdb"
    args = ["run", "--dataset", "spider", "--dataset-path", str(spider), "--lm", "scripted:basic"]
    args += ["--router", "rules", "--limit", "0", "--no-mlflow", "--store", str(store), *extra]
    return CliRunner().invoke(app, args, terminal_width=400), store


def test_a_zero_byte_database_stops_the_run_naming_file_examples_and_fix(spider_dir: Path, tmp_path: Path):
    bad = spider_dir / "database" / "pets_1" / "pets_1.sqlite"
    bad.write_bytes(b"")
    out, store = _run(spider_dir, tmp_path)
    text = " ".join(out.output.split())
    assert out.exit_code == 2, out.output
    assert "1 database(s) cannot serve their examples" in text and str(bad) in text
    assert "used by 1 example(s)" in text and "--skip-bad-databases" in text
    assert not store.exists()  # refused before anything is written


def test_skip_bad_databases_leaves_their_examples_out_as_not_run(spider_dir: Path, tmp_path: Path):
    (spider_dir / "database" / "pets_1" / "pets_1.sqlite").write_bytes(b"")
    out, store = _run(spider_dir, tmp_path, "--skip-bad-databases")
    text = " ".join(out.output.split())
    assert out.exit_code == 0, out.output
    assert "left out (not run, in no rate):" in text and "pets_1.sqlite" in text
    con = duckdb.connect(str(store), read_only=True)
    rows = con.execute("SELECT example_id, outcome, error_class FROM examples ORDER BY example_id").fetchall()
    con.close()
    left = [r for r in rows if r[2] == "bad_database"]
    assert len(rows) == 4 and len(left) == 1 and left[0][1] == "not_run"
    assert all(r[1] != "crash" for r in rows)  # before the check: stored as a crash, scored 0


def test_a_database_missing_a_table_its_examples_read_is_bad(spider_dir: Path, tmp_path: Path):
    db = spider_dir / "database" / "concert_singer" / "concert_singer.sqlite"
    con = sqlite3.connect(db)
    con.execute("DROP TABLE stadium")
    con.commit()
    con.close()
    out, _ = _run(spider_dir, tmp_path)
    text = " ".join(out.output.split())
    assert out.exit_code == 2 and "lacks table(s) stadium" in text and str(db) in text


def test_needed_tables_ignore_ctes_and_unparsable_sql():
    sql = "WITH t AS (SELECT * FROM singer) SELECT * FROM t JOIN concert ON 1 = 1"
    assert needed_tables(sql, "sqlite") == {"singer", "concert"}
    assert needed_tables("SELEC broken (((", "sqlite") == set() and needed_tables(None, "sqlite") == set()


def test_every_loaders_examples_are_checked_the_same_way(tmp_path: Path, sales_db: Path):
    truncated = tmp_path / "truncated.duckdb"
    truncated.write_bytes(sales_db.read_bytes()[:1000])
    examples = [
        Example(id="ok", question="q", intent="sql", db_id="s", db_path=str(sales_db), gold_sql="SELECT * FROM areas"),
        Example(
            id="gone",
            question="q",
            intent="sql",
            db_id="g",
            db_path=str(tmp_path / "missing.sqlite"),
            gold_sql="SELECT 1",
        ),
        Example(id="cut", question="q", intent="sql", db_id="c", db_path=str(truncated), gold_sql="SELECT 1"),
    ]
    bad = check_databases(examples)
    assert [b.examples for b in bad] == [("gone",), ("cut",)]
    assert all(b.reason.startswith("does not open") for b in bad)


@pytest.mark.parametrize("crashing", [1])
def test_a_run_with_a_crashed_example_says_so_and_exits_3(spider_dir: Path, tmp_path: Path, monkeypatch, crashing):
    from routerlab.agents.graph import Pipeline

    real = Pipeline.run
    seen: list[str] = []

    def run(self, question, database, **kwargs):
        seen.append(question)
        if len(seen) == crashing:  # the first example's harness call raises, the others run
            raise RuntimeError("disk I/O error")
        return real(self, question, database, **kwargs)

    monkeypatch.setattr(Pipeline, "run", run)
    out, _ = _run(spider_dir, tmp_path)
    text = " ".join(out.output.split())
    assert out.exit_code == 3, out.output
    assert "1 of 4 examples crashed (first: RuntimeError: disk I/O error)" in text
