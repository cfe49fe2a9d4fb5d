r"""What deterministic repair alone does to the SQL one run produced, without another LM call.

Reads the SQL each example of a run produced from the results store, applies the repair steps
of ``routerlab.agents.tools.repair`` one after another, runs every variant on the example's
database and scores it against the gold result the way the ``ex`` scorer does (Spider mode).
Run on the ``single_call`` run of a session, whose prompt is the pipeline's generate_sql
prompt, it isolates the gain of each repair step from that of fix_sql.

Usage::

    .venv/bin/python scripts/repair_ablation.py --store .routerlab/results.duckdb \\
        --run SESSION.single_call --dataset spider --dataset-path ../shared/data/spider-dev-a
"""

from __future__ import annotations

import argparse

import duckdb

from routerlab.agents.db import open_database
from routerlab.agents.errors import ToolError
from routerlab.agents.tools.repair import catalog_of, foreign_keys_of, repair_sql
from routerlab.benchmarks.dataset import dataset
from routerlab.eval.scorers.execution import gold_is_ordered, results_match


def _outcome(db, sql: str, gold_rows: list, ordered: bool) -> str:
    if not sql:
        return "no_sql"
    try:
        rows = db.execute(sql, timeout_s=10.0, max_rows=10_000).rows
    except ToolError:
        return "sql_error"
    if results_match(rows, gold_rows, ordered=ordered)[0]:
        return "correct"
    return "empty" if not rows else "wrong_result"


def main() -> None:
    """Print EX and the error breakdown of a run's SQL as produced, repaired, and join-repaired."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--run", required=True, help="run id (SESSION.ROUTER)")
    parser.add_argument("--dataset", default="spider")
    parser.add_argument("--dataset-path", required=True)
    parser.add_argument("--split", default="dev")
    args = parser.parse_args()

    import routerlab.benchmarks.loaders  # noqa: F401  (registers the on-disk formats)

    examples = {e.id: e for e in dataset.build(args.dataset, path=args.dataset_path).split(args.split)}
    con = duckdb.connect(args.store, read_only=True)
    rows = con.execute(
        "SELECT example_id, sql FROM examples WHERE run_id = ? ORDER BY example_id", [args.run]
    ).fetchall()
    if not rows:
        raise SystemExit(f"no examples of run {args.run!r} in {args.store}")
    variants = ("as produced", "identifiers", "identifiers + joins")
    counts: dict[str, dict[str, int]] = {v: {} for v in variants}
    for example_id, sql in rows:
        e = examples[example_id]
        db = open_database(e.db_path)
        gold = db.execute(e.gold_sql, timeout_s=30.0, max_rows=10_000).rows
        ordered = gold_is_ordered(e.gold_sql, db.dialect)
        tables = db.tables()
        produced = sql or ""
        versions = {
            "as produced": produced,
            "identifiers": repair_sql(produced, catalog_of(tables), db.dialect).sql if produced else "",
            "identifiers + joins": (
                repair_sql(produced, catalog_of(tables), db.dialect, foreign_keys_of(tables)).sql if produced else ""
            ),
        }
        for name, text in versions.items():
            out = _outcome(db, text, gold, ordered)
            counts[name][out] = counts[name].get(out, 0) + 1
    n = len(rows)
    print(f"{'variant':<22}{'EX':>6}{'correct':>9}{'sql_error':>11}{'wrong_result':>14}{'empty':>7}{'no_sql':>8}")
    for name in variants:
        c = counts[name]
        print(
            f"{name:<22}{c.get('correct', 0) / n:>6.3f}{c.get('correct', 0):>9}{c.get('sql_error', 0):>11}"
            f"{c.get('wrong_result', 0):>14}{c.get('empty', 0):>7}{c.get('no_sql', 0):>8}"
        )


if __name__ == "__main__":
    main()
