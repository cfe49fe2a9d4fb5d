"""The DuckDB results store: every example result of every run, queryable with SQL.

One writer at a time: each method opens the file, does its work and closes it, under a
process-wide lock, so notebooks can read between writes. Results are upserted by
``(run_id, example_id, attempt)``: re-adding one never duplicates it (that is how resume works).
"""

from __future__ import annotations

import datetime as _dt
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from eval.metrics import SCORE_NAMES
from eval.result import ExampleResult

__all__ = ["ResultsStore"]

_LOCK = threading.Lock()
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, router VARCHAR, lm VARCHAR, dataset VARCHAR, dataset_version VARCHAR,
    dataset_digest VARCHAR, split VARCHAR, config JSON, params JSON, started_at TIMESTAMP,
    finished_at TIMESTAMP, status VARCHAR, mlflow_run_id VARCHAR);
CREATE TABLE IF NOT EXISTS examples (
    run_id VARCHAR, example_id VARCHAR, attempt INTEGER, intent VARCHAR, predicted_intent VARCHAR,
    difficulty VARCHAR, split VARCHAR, outcome VARCHAR, error_class VARCHAR, error VARCHAR,
    latency_s DOUBLE, router_lm_calls INTEGER, router_prompt_tokens INTEGER, router_completion_tokens INTEGER,
    router_latency_s DOUBLE, subagent_lm_calls INTEGER, subagent_prompt_tokens INTEGER,
    subagent_completion_tokens INTEGER, subagent_latency_s DOUBLE,
    {", ".join(f"score_{s} DOUBLE" for s in SCORE_NAMES)},
    sql VARCHAR, scores JSON, result JSON, PRIMARY KEY (run_id, example_id, attempt));
"""


class ResultsStore:
    """A DuckDB file of runs and per-example results.

    Args:
        path: The store file (created with its tables on first use).
    """

    def __init__(self, path: str | Path = ".routerlab/results.duckdb") -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._con() as con:
            con.execute(_SCHEMA)

    @contextmanager
    def _con(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        with _LOCK:
            con = duckdb.connect(str(self.path), read_only=read_only and self.path.exists())
            try:
                yield con
            finally:
                con.close()

    def create_run(self, run_id: str, *, router: str, lm: str, dataset: Any, split: str,
                   config: dict[str, Any], params: dict[str, Any], mlflow_run_id: str | None = None) -> None:
        """Record a run (idempotent: an existing run keeps its start time)."""
        with self._con() as con:
            con.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, 'RUNNING', ?) ON CONFLICT (run_id) DO UPDATE "
                "SET status = 'RUNNING', mlflow_run_id = coalesce(excluded.mlflow_run_id, runs.mlflow_run_id)",
                [run_id, router, lm, dataset.name, dataset.version, dataset.digest(), split,
                 json.dumps(config, default=str), json.dumps(params, default=str), _dt.datetime.now(), mlflow_run_id],
            )

    def add_result(self, run_id: str, r: ExampleResult) -> None:
        """Upsert one example result."""
        row = [
            run_id, r.example_id, r.attempt, r.intent, r.predicted_intent, r.difficulty, r.split, r.outcome,
            r.error_class, r.error, r.latency_s, r.router_usage.lm_calls, r.router_usage.prompt_tokens,
            r.router_usage.completion_tokens, r.router_usage.latency_s, r.subagent_usage.lm_calls,
            r.subagent_usage.prompt_tokens, r.subagent_usage.completion_tokens, r.subagent_usage.latency_s,
            *[r.value(s) for s in SCORE_NAMES],
            r.trace.sql if r.trace else None,
            json.dumps({k: v.value for k, v in r.scores.items()}),
            json.dumps(r.to_dict(), default=str),
        ]
        marks = ", ".join("?" for _ in row)
        with self._con() as con:
            con.execute(f"INSERT OR REPLACE INTO examples VALUES ({marks})", row)

    def finish_run(self, run_id: str, status: str = "FINISHED") -> None:
        """Mark a run finished (or KILLED / FAILED)."""
        with self._con() as con:
            con.execute("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
                        [status, _dt.datetime.now(), run_id])

    def set_mlflow_run(self, run_id: str, mlflow_run_id: str) -> None:
        """Link a run to its MLflow run."""
        with self._con() as con:
            con.execute("UPDATE runs SET mlflow_run_id = ? WHERE run_id = ?", [mlflow_run_id, run_id])

    def completed_ids(self, run_id: str) -> set[str]:
        """Example ids with a stored result in ``run_id``."""
        with self._con(read_only=True) as con:
            return {r[0] for r in con.execute("SELECT DISTINCT example_id FROM examples WHERE run_id = ?",
                                              [run_id]).fetchall()}

    def results(self, run_id: str) -> list[ExampleResult]:
        """Every stored result of a run, rebuilt, in example-id order."""
        with self._con(read_only=True) as con:
            rows = con.execute("SELECT result FROM examples WHERE run_id = ? ORDER BY example_id, attempt",
                               [run_id]).fetchall()
        return [ExampleResult.from_dict(json.loads(r[0])) for r in rows]

    def runs(self) -> pd.DataFrame:
        """All runs, newest first."""
        return self.query("SELECT * FROM runs ORDER BY started_at DESC")

    def query(self, sql: str) -> pd.DataFrame:
        """Any read query over ``runs`` and ``examples`` (for notebooks)."""
        with self._con(read_only=True) as con:
            return con.execute(sql).df()
