r"""Output handling compared on the same raw replies: ``clean`` vs ``extract`` for a plain-call run.

Every plain ``generate_sql`` call stores the model's raw reply (``output.reply``), so the two
ways of reading a query out of it are compared without running the model again: each reply is
read both ways, both queries run on the example's database and are scored against the gold
query as the ``ex`` scorer does (Spider mode). Prints the 2x2 table of outcomes and how often
each ``extract`` rule fired (``routerlab.agents.tools.framing.sql_of_reply``).

Usage::

    .venv/bin/python scripts/output_handling.py --store .routerlab/results.duckdb --run SESSION.single_call \
        --config docs/configs/spider_dev_a_96.yaml
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import duckdb

from routerlab.agents.db import open_database
from routerlab.agents.errors import ToolError
from routerlab.agents.tools.framing import SQL_OUTPUT, sql_of_reply
from routerlab.eval.scorers.execution import gold_is_ordered, results_match


def _rows(db_path: str, sql: str) -> list | None:
    try:
        return open_database(db_path).execute(sql, timeout_s=30.0, max_rows=10_000).rows
    except ToolError:
        return None


def compare(store: str, run: str, examples: dict) -> tuple[Counter, Counter]:
    """``(outcomes, rules)``: outcome pairs ``(clean right, extract right)`` and extract's rule counts."""
    con = duckdb.connect(store, read_only=True)
    rows = con.execute("SELECT example_id, result FROM examples WHERE run_id = ? ORDER BY example_id", [run]).fetchall()
    if not rows:
        raise SystemExit(f"no examples of run {run!r} in {store}")
    outcomes: Counter = Counter()
    rules: Counter = Counter()
    for example_id, text in rows:
        calls = ((json.loads(text).get("trace") or {}).get("tool_calls")) or []
        out = next((c.get("output") for c in calls if c.get("name") == "generate_sql"), None)
        if not isinstance(out, dict) or "reply" not in out:
            outcomes["no reply recorded"] += 1
            continue
        e = examples[example_id]
        gold = _rows(e.db_path, e.gold_sql) or []
        ordered = gold_is_ordered(e.gold_sql, "sqlite")
        verdict = []
        for name in ("clean", "extract"):
            pred = _rows(e.db_path, SQL_OUTPUT[name](out["reply"], "sqlite"))
            verdict.append(pred is not None and results_match(pred, gold, ordered=ordered)[0])
        outcomes[tuple(verdict)] += 1
        rules.update(sql_of_reply(out["reply"], "sqlite").rules)
    return outcomes, rules


def main() -> None:
    """Print the outcome table and the rule counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--config", required=True, type=Path, help="the run config of the session (its dataset)")
    args = parser.parse_args()

    import routerlab.benchmarks.loaders  # noqa: F401  (registers the on-disk formats)
    from routerlab._runs.config import load_run_config
    from routerlab.benchmarks.dataset import dataset

    config = load_run_config(args.config)
    examples = {e.id: e for e in dataset.build(config.dataset, **config.dataset_args).split(config.split)}
    outcomes, rules = compare(args.store, args.run, examples)
    n = sum(v for k, v in outcomes.items() if isinstance(k, tuple))
    clean = sum(v for k, v in outcomes.items() if isinstance(k, tuple) and k[0])
    extract = sum(v for k, v in outcomes.items() if isinstance(k, tuple) and k[1])
    print(f"{args.run}: n={n}  EX clean {clean}/{n}  EX extract {extract}/{n}")
    for key, label in (((True, True), "both"), ((False, True), "extract only"), ((True, False), "clean only")):
        print(f"  {label:<14}{outcomes[key]:>4}")
    print(f"  {'neither':<14}{outcomes[(False, False)]:>4}")
    print("  extract rules fired: " + (", ".join(f"{k} {v}" for k, v in sorted(rules.items())) or "none"))


if __name__ == "__main__":
    main()
