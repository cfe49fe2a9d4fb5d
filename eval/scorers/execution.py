"""Execution accuracy (EX): does the predicted SQL return what the gold SQL returns?

Semantics are written down in docs/metrics.md and tested case by case. Modes:

* ``spider`` (default, test-suite semantics): both empty -> match; equal row and column counts;
  columns may be permuted; rows compared as multisets, or as ordered lists when the gold query
  orders its outermost result; values exact (``1 == 1.0``; NULL equals NULL), no float tolerance.
* ``bird``: rows compared as sets (duplicates ignored), column order matters.
* ``tolerance``: spider semantics with numbers equal under ``math.isclose(rel_tol, abs_tol)``.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

import sqlglot

from agents.errors import ToolError
from agents.trace import Trace
from benchmarks.example import Example
from eval.result import Score, scorer

__all__ = ["EX_INTENTS", "MODES", "ExecutionAccuracy", "gold_is_ordered", "results_match"]

EX_INTENTS = ("sql", "fix", "clarify")
MODES = ("spider", "bird", "tolerance")
# at most 7! column orders are tried; a wider result whose columns cannot be told apart by their
# values (candidates below) is scored as a mismatch, never as a silent pass
_MAX_PERMUTATIONS = 5040


def gold_is_ordered(sql: str, dialect: str = "duckdb") -> bool:
    """True when the outermost query has an ORDER BY (then row order is part of the answer)."""
    try:
        root = sqlglot.parse_one(sql, read=dialect)
    except (sqlglot.errors.SqlglotError, ValueError):
        return False
    return root is not None and root.args.get("order") is not None


def _norm(v: Any) -> Any:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _eq(a: Any, b: Any, tol: tuple[float, float] | None) -> bool:
    a, b = _norm(a), _norm(b)
    if tol is not None and isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=tol[0], abs_tol=tol[1])
    return a == b


def _rows_equal(
    p: Sequence[Sequence[Any]], g: Sequence[Sequence[Any]], ordered: bool, tol: tuple[float, float] | None
) -> bool:
    if ordered:
        return all(all(_eq(x, y, tol) for x, y in zip(pr, gr, strict=True)) for pr, gr in zip(p, g, strict=True))
    if tol is None:
        return Counter(tuple(map(_norm, r)) for r in p) == Counter(tuple(map(_norm, r)) for r in g)
    # with a tolerance "close" is not transitive, so a greedy pairing can miss a valid one: find a
    # perfect matching between gold rows and close predicted rows (augmenting paths)
    close = [[j for j, pr in enumerate(p) if all(_eq(x, y, tol) for x, y in zip(pr, gr, strict=True))] for gr in g]
    owner: dict[int, int] = {}

    def _augment(i: int, seen: set[int]) -> bool:
        for j in close[i]:
            if j not in seen:
                seen.add(j)
                if j not in owner or _augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return all(_augment(i, set()) for i in range(len(g)))


def results_match(
    pred_rows: Sequence[Sequence[Any]],
    gold_rows: Sequence[Sequence[Any]],
    *,
    ordered: bool = False,
    mode: str = "spider",
    rel_tol: float = 1e-6,
    abs_tol: float = 1e-9,
) -> tuple[bool, str]:
    """Compare two results under ``mode``; returns ``(match, reason)``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not pred_rows and not gold_rows:
        return True, "both empty"
    if mode == "bird":
        p = {tuple(map(_norm, r)) for r in pred_rows}
        g = {tuple(map(_norm, r)) for r in gold_rows}
        return (p == g, "same set of rows" if p == g else "different set of rows")
    if len(pred_rows) != len(gold_rows):
        return False, f"row count {len(pred_rows)} != gold {len(gold_rows)}"
    n_p = len(pred_rows[0]) if pred_rows else 0
    n_g = len(gold_rows[0]) if gold_rows else 0
    if n_p != n_g:
        return False, f"column count {n_p} != gold {n_g}"
    tol = (rel_tol, abs_tol) if mode == "tolerance" else None
    cols_p = list(zip(*pred_rows, strict=True)) if pred_rows else []
    cols_g = list(zip(*gold_rows, strict=True)) if gold_rows else []
    # candidate columns of the prediction for each gold column: same multiset of values
    sig = lambda col: Counter(map(_norm, col))  # noqa: E731
    candidates = [[j for j in range(n_p) if tol is not None or sig(cols_p[j]) == sig(cols_g[i])] for i in range(n_g)]
    if any(not c for c in candidates):
        return False, "a gold column has no matching predicted column"
    tried = 0
    for perm in itertools.product(*candidates):
        if len(set(perm)) != n_g:
            continue
        tried += 1
        if tried > _MAX_PERMUTATIONS:
            break
        permuted = [[row[j] for j in perm] for row in pred_rows]
        if _rows_equal(permuted, gold_rows, ordered, tol):
            return True, "match" + (" (ordered)" if ordered else "") + (
                "" if list(perm) == list(range(n_g)) else " after column permutation"
            )
    return False, "different rows" + (" or order" if ordered else "")


@scorer("ex")
class ExecutionAccuracy:
    """EX on examples with gold SQL (sql, fix, clarify); ``None`` elsewhere or when the gold fails.

    Args:
        mode: ``spider`` (default), ``bird`` or ``tolerance``.
        timeout_s: Timeout of each query (really interrupts it).
        max_rows: Row cap. A predicted result that hits it scores 0; a gold result that hits it
            makes the example invalid (``None``, excluded from the denominator).
        rel_tol / abs_tol: Closeness in ``tolerance`` mode.
    """

    name = "ex"

    def __init__(
        self,
        mode: str = "spider",
        timeout_s: float = 10.0,
        max_rows: int = 100_000,
        rel_tol: float = 1e-6,
        abs_tol: float = 1e-9,
    ) -> None:
        if mode not in MODES:
            from agents.errors import ConfigError

            raise ConfigError(
                f"unknown EX mode {mode!r}",
                expected=f"one of {MODES}",
                found=repr(mode),
                fix="pass mode='spider', 'bird' or 'tolerance'",
            )
        self.mode, self.timeout_s, self.max_rows = mode, timeout_s, max_rows
        self.rel_tol, self.abs_tol = rel_tol, abs_tol
        self._gold: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def _run(self, db_path: str, sql: str) -> Any:
        from agents.db import open_database

        return open_database(db_path).execute(sql, timeout_s=self.timeout_s, max_rows=self.max_rows)

    def gold_result(self, example: Example) -> Any:
        """The gold result (cached per database file and SQL); a ToolError if the gold fails."""
        key = (example.db_path, example.gold_sql or "")
        with self._lock:
            if key in self._gold:
                cached = self._gold[key]
                if isinstance(cached, Exception):
                    raise cached
                return cached
        try:
            result: Any = self._run(example.db_path, example.gold_sql or "")
        except ToolError as exc:
            result = exc
        with self._lock:
            self._gold[key] = result
        if isinstance(result, Exception):
            raise result
        return result

    def score(self, example: Example, trace: Trace) -> Score:
        """1 when the prediction's result matches the gold's under the mode."""
        if example.intent not in EX_INTENTS or not example.gold_sql:
            return Score(self.name, None, "not applicable")
        try:
            gold = self.gold_result(example)
        except ToolError as exc:
            return Score(self.name, None, f"invalid example: gold {exc.error_class}: {exc}", {"invalid": True})
        if gold.truncated:
            return Score(self.name, None, "invalid example: gold result exceeds the row cap", {"invalid": True})
        if not trace.sql:
            return Score(self.name, 0.0, "no SQL was produced")
        try:
            pred = self._run(example.db_path, trace.sql)
        except ToolError as exc:
            return Score(self.name, 0.0, f"predicted SQL failed: {exc.error_class}", {"error": str(exc)[:300]})
        if pred.truncated:
            return Score(self.name, 0.0, "predicted result exceeds the row cap")
        from agents.db import open_database

        ordered = self.mode != "bird" and gold_is_ordered(example.gold_sql, open_database(example.db_path).dialect)
        ok, reason = results_match(
            pred.rows, gold.rows, ordered=ordered, mode=self.mode, rel_tol=self.rel_tol, abs_tol=self.abs_tol
        )
        return Score(self.name, 1.0 if ok else 0.0, reason, {"ordered": ordered, "mode": self.mode})
