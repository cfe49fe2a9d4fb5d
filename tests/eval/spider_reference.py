"""A reference for the official Spider test-suite evaluator's execution match, written from its
documented behaviour (Zhong et al. 2020, "Semantic Evaluation for Text-to-SQL with Distilled Test
Suites", and the evaluator's README), used only to measure how often routerlab's ``ex`` agrees.

What it does, step by step, as leaderboards run the evaluator (one database, no value plugging):
1. rewrite ``> =``, ``< =`` and ``! =`` as one operator;
2. without ``keep_distinct`` (the default), drop every token whose text is ``distinct`` from
   both queries (sqlparse tokens, as the evaluator tokenizes);
3. run both on the SQLite file with Python's ``sqlite3`` (text decoded ignoring bad bytes); a
   failing prediction is wrong;
4. order matters when the gold text contains ``order by``;
5. the results match when both are empty, or when some permutation of the columns makes them
   equal as bags of rows (as lists when order matters).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections import Counter
from typing import Any

import sqlparse


def drop_distinct(sql: str) -> str:
    """Every ``distinct`` token removed (step 2)."""
    tokens = sqlparse.parse(sql)[0].flatten()
    return "".join(t.value for t in tokens if t.value.lower() != "distinct")


def _execute(db_path: str, sql: str) -> list[tuple[Any, ...]] | None:
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode(errors="ignore")
    try:
        return con.execute(sql).fetchall()
    except Exception:  # any failure of the prediction makes it wrong
        return None
    finally:
        con.close()


def _same(pred: list[tuple[Any, ...]], gold: list[tuple[Any, ...]], order_matters: bool) -> bool:
    if not pred and not gold:
        return True
    if len(pred) != len(gold) or len(pred[0]) != len(gold[0]):
        return False
    width = len(gold[0])
    for perm in itertools.permutations(range(width)):
        moved = [tuple(row[i] for i in perm) for row in pred]
        if (moved == gold) if order_matters else (Counter(moved) == Counter(gold)):
            return True
    return False


def official_match(db_path: str, pred_sql: str, gold_sql: str, keep_distinct: bool = False) -> bool:
    """The evaluator's verdict for one pair (steps 1-5)."""
    fix = lambda s: s.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")  # noqa: E731
    pred_sql, gold_sql = fix(pred_sql), fix(gold_sql)
    if not keep_distinct:
        pred_sql, gold_sql = drop_distinct(pred_sql), drop_distinct(gold_sql)
    gold = _execute(db_path, gold_sql)
    assert gold is not None, f"gold fails: {gold_sql}"
    pred = _execute(db_path, pred_sql)
    return pred is not None and _same(pred, gold, "order by" in gold_sql.lower())
