r"""The error breakdown of SQL runs: correct, sql_error, wrong result, empty, no SQL, and retries.

``ex`` says whether a run's final SQL matched; this says how the others failed. Each example's
verdict comes from the stored ``ex`` score; a failing SQL is executed again on the example's
database to tell an error from an empty or a wrong result. ``retries`` counts the
generate_sql calls that made an execution-guided retry (``pipeline.tools.retry_empty`` /
``retry_error``), ``kept`` those whose retry replaced the first query.

Usage::

    .venv/bin/python scripts/sql_outcomes.py --store .routerlab/results.duckdb \\
        --run SESSION.single_call --run SESSION.oracle --dataset spider --dataset-path ../shared/data/spider-dev-a
"""

from __future__ import annotations

import argparse
import json

import duckdb

from routerlab.agents.db import open_database
from routerlab.agents.errors import ToolError
from routerlab.benchmarks.dataset import dataset

_COLUMNS = ("correct", "sql_error", "wrong_result", "empty", "no_sql", "retries", "kept")


def _failure(db_path: str, sql: str | None) -> str:
    if not sql:
        return "no_sql"
    try:
        rows = open_database(db_path).execute(sql, timeout_s=30.0, max_rows=10_000).rows
    except ToolError:
        return "sql_error"
    return "empty" if not rows else "wrong_result"


def _retries(result: dict) -> tuple[int, int]:
    calls = (result.get("trace") or {}).get("tool_calls") or []
    retry = [c["output"]["retry"] for c in calls if isinstance(c.get("output"), dict) and "retry" in c["output"]]
    return len(retry), sum(1 for r in retry if r.get("kept"))


def breakdown(store: str, run: str, db_paths: dict[str, str]) -> dict[str, int]:
    """Counts of :data:`_COLUMNS` for one run of the results store (``db_paths``: example id -> database)."""
    con = duckdb.connect(store, read_only=True)
    query = "SELECT example_id, sql, score_ex, result FROM examples WHERE run_id = ? ORDER BY example_id"
    rows = con.execute(query, [run]).fetchall()
    if not rows:
        raise SystemExit(f"no examples of run {run!r} in {store}")
    counts = dict.fromkeys(_COLUMNS, 0)
    for example_id, sql, ex, text in rows:
        result = json.loads(text)
        if ex is None:
            continue
        kind = "correct" if ex >= 1 else _failure(db_paths[example_id], sql)
        counts[kind] += 1
        tried, kept = _retries(result)
        counts["retries"] += tried
        counts["kept"] += kept
    counts["n"] = sum(counts[k] for k in _COLUMNS[:5])
    return counts


def main() -> None:
    """Print one line per run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--run", required=True, action="append", help="run id (SESSION.ROUTER), repeatable")
    parser.add_argument("--dataset", default="spider")
    parser.add_argument("--dataset-path", default=None)
    parser.add_argument("--split", default="dev")
    args = parser.parse_args()

    import routerlab.benchmarks.loaders  # noqa: F401  (registers the on-disk formats)

    kwargs = {"path": args.dataset_path} if args.dataset_path else {}
    db_paths = {e.id: e.db_path for e in dataset.build(args.dataset, **kwargs).split(args.split)}
    print(f"{'run':<40}{'n':>4}{'EX':>7}" + "".join(f"{c:>14}" for c in _COLUMNS))
    for run in args.run:
        c = breakdown(args.store, run, db_paths)
        ex = c["correct"] / c["n"] if c["n"] else float("nan")
        print(f"{run:<40}{c['n']:>4}{ex:>7.3f}" + "".join(f"{c[k]:>14}" for k in _COLUMNS))


if __name__ == "__main__":
    main()
