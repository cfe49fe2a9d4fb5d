"""Merging the results of Ray workers into the main results store, and reading a sweep back.

Each Ray worker writes its cell's examples to a store file of its own (a DuckDB file takes one
writing process) and returns them; the driver, the only writer of the main store, merges them.
A merge is idempotent: results are upserted on the store's key ``(run_id, example_id,
attempt)``, so merging a cell twice (a retried task, a resumed sweep) never duplicates a row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from routerlab.benchmarks.dataset import Dataset
from routerlab.eval.store import ResultsStore
from routerlab.sweep.cell import CellOutcome

__all__ = ["merge_outcome", "outcome_from_store", "sweep_results"]


def merge_outcome(store: Any, outcome: CellOutcome, dataset: Dataset) -> int:
    """Upsert a cell's run and results into ``store`` and give the run the cell's final status.

    Args:
        store: The main :class:`~routerlab.eval.store.ResultsStore`.
        outcome: What the cell's worker returned (or what its store file holds).
        dataset: The cell's dataset (the run row records its name, version and digest).

    Returns:
        How many results were merged (0 when the cell failed before its run existed).
    """
    row = outcome.run
    if not row:
        return 0
    store.create_run(
        outcome.run_id,
        router=row["router"],
        lm=row["lm"],
        dataset=dataset,
        split=row["split"],
        config=row["config"],
        params=row["params"],
        mlflow_run_id=row.get("mlflow_run_id") or outcome.mlflow_run_id,
    )
    store.add_results(outcome.run_id, outcome.results)
    store.finish_run(outcome.run_id, outcome.status if outcome.status != "RUNNING" else "FAILED")
    return len(outcome.results)


def outcome_from_store(path: str | Path, key: str, run_id: str, *, status: str, error: str) -> CellOutcome | None:
    """What a worker's store file holds for a cell whose task ended without returning.

    Args:
        path: The worker's store file (None returned when it is not readable from here).
        key: The cell.
        run_id: Its run id.
        status: The status to give the run (``FAILED`` or ``KILLED``).
        error: Why the task ended.
    """
    if not Path(path).is_file():
        return None
    shard = ResultsStore(path)
    if shard.query("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).empty:
        return None
    row = shard.run(run_id)
    return CellOutcome(
        key=key,
        run_id=run_id,
        status=status,
        results=shard.results(run_id),
        run=row,
        error=error,
        mlflow_run_id=row.get("mlflow_run_id"),
    )


def sweep_results(store: Any, sweep_id: str) -> pd.DataFrame:
    """Every stored example of a sweep, one row per (cell, example, attempt).

    Columns: ``cell`` (``c003``), the run's ``router``, ``lm``, ``dataset``, ``split`` and
    ``status``, then the ``examples`` table's columns (outcome, scores...). Sorted by cell,
    example and attempt, so two sweeps of the same grid compare row by row.
    """
    frame = store.query(
        "SELECT r.router, r.lm, r.dataset, r.status, e.* FROM examples e JOIN runs r USING (run_id) "
        "WHERE starts_with(e.run_id, ?) ORDER BY e.run_id, e.example_id, e.attempt",
        [f"{sweep_id}."],
    )
    cells = frame["run_id"].str.slice(len(sweep_id) + 1).str.split(".", n=1).str[0]
    frame.insert(0, "cell", cells)
    return frame.sort_values(["cell", "example_id", "attempt"], kind="stable").reset_index(drop=True)
