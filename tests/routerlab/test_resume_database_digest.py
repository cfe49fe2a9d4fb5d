"""Issue 50 item 9: a database whose contents changed before ``--resume`` is detected.

The dataset file's digest was checked on resume; the databases' were not, so a resumed run could
mix answers over two versions of the data. A real DuckDB file, a real JSONL set, the CLI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from routerlab import cli
from routerlab.eval.store import ResultsStore

QUESTIONS = [
    ("How many areas?", "SELECT count(*) FROM areas"),
    ("Which regions are there?", "SELECT DISTINCT region FROM areas"),
]


def test_a_changed_database_refuses_the_resume_and_the_restored_one_resumes(tmp_path: Path, sales_db: Path) -> None:
    db = tmp_path / "sales.duckdb"
    shutil.copy(sales_db, db)
    shutil.copy(sales_db, tmp_path / "original.duckdb")
    records = [{"question": q, "gold_sql": sql, "db_path": "sales.duckdb"} for q, sql in QUESTIONS]
    (tmp_path / "set.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    store = tmp_path / "results.duckdb"
    where = ["--store", str(store), "--no-mlflow"]
    runner = CliRunner()
    first = runner.invoke(
        cli.app,
        [
            *("run", "--lm", "scripted:basic", "--router", "oracle", "--dataset", "jsonl"),
            *("--dataset-path", str(tmp_path / "set.jsonl"), *where),
        ],
    )
    assert first.exit_code == 0, first.output[-2000:]
    (run_id,) = ResultsStore(store).runs()["run_id"]
    session = run_id.rsplit(".", 1)[0]
    assert list(ResultsStore(store).run(run_id)["params"]["databases"].values()) == [_sha(db)]
    same = runner.invoke(cli.app, ["run", "--resume", session, *where])
    assert same.exit_code == 0, same.output[-2000:]  # unchanged: no false alarm

    # another process changes a row (this one keeps its read-only connections cached)
    sql = "UPDATE areas SET name = name || ' (renamed)' WHERE id = 1"
    change = f"import duckdb; duckdb.connect({str(db)!r}).execute({sql!r})"
    subprocess.run([sys.executable, "-c", change], check=True, timeout=60)
    changed = runner.invoke(cli.app, ["run", "--resume", session, *where], env={"COLUMNS": "400"})
    text = " ".join(changed.output.split())
    assert changed.exit_code == 2, text[-2000:]
    assert "was recorded on other contents of database" in text and "sales.duckdb" in text
    assert "restore the database as it was, or start a new session" in text

    shutil.copy(tmp_path / "original.duckdb", db)  # the fix, as printed
    restored = runner.invoke(cli.app, ["run", "--resume", session, *where])
    assert restored.exit_code == 0, restored.output[-2000:]


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()
