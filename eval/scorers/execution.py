"""Execution accuracy (EX): does the predicted SQL return what the gold SQL returns?

Semantics are written down in docs/metrics.md and tested case by case. Modes:

* ``spider`` (default, the official test-suite evaluator as leaderboards run it): every
  ``DISTINCT`` keyword is removed from both queries before they run (the evaluator's default,
  without ``--keep_distinct``); then both empty -> match; equal row and column counts;
  columns may be permuted; rows compared as multisets, or as ordered lists when the gold query
  orders its outermost result; values exact (``1 == 1.0``; NULL equals NULL), no float tolerance.
* ``spider_keep_distinct``: the same comparison on the queries as written (the evaluator's
  ``--keep_distinct``; routerlab's ``spider`` mode before it followed the evaluator).
* ``bird``: rows compared as sets (duplicates ignored), column order matters.
* ``tolerance``: spider semantics with numbers equal under ``math.isclose(rel_tol, abs_tol)``.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
import weakref
from collections import Counter
from collections.abc import Sequence
from typing import Any

import sqlglot

from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError, ToolError
from routerlab.agents.trace import Trace
from routerlab.benchmarks.example import Example
from routerlab.eval.scorers.gold_cache import CachedGold, GoldCache
from routerlab.eval.scoring import Score, Scorer, scorer

__all__ = [
    "EX_INTENTS",
    "GOLD_FAILURE_MODES",
    "MODES",
    "ExecutionAccuracy",
    "gold_is_ordered",
    "remove_distinct",
    "results_match",
    "shared_verdict",
]

EX_INTENTS = ("sql", "fix", "clarify")
MODES = ("spider", "spider_keep_distinct", "bird", "tolerance")
#: how EX counts an example whose gold SQL cannot run: as wrong (the official evaluators) or not at all
GOLD_FAILURE_MODES = ("wrong", "exclude")

#: modes that execute both queries without their DISTINCT keywords
_DROPS_DISTINCT = frozenset({"spider"})

#: the comparator each scorer mode uses (``results_match`` semantics)
_COMPARATOR = {"spider": "spider", "spider_keep_distinct": "spider", "bird": "bird", "tolerance": "tolerance"}
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


def remove_distinct(sql: str, dialect: str = "sqlite") -> str:
    """``sql`` with every ``DISTINCT`` keyword cut out, as the official Spider evaluator does.

    The evaluator drops each token whose text is ``distinct`` (``SELECT DISTINCT``,
    ``COUNT(DISTINCT x)`` alike) from both queries unless run with ``--keep_distinct``; the
    keyword is found with sqlglot's tokenizer, so a quoted ``'distinct'`` is left alone. SQL that
    does not tokenize is returned unchanged (executing it reports the error).
    """
    from sqlglot.tokens import TokenType

    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except (sqlglot.errors.SqlglotError, ValueError):
        return sql
    cuts = [(t.start, t.end + 1) for t in tokens if t.token_type == TokenType.DISTINCT]
    for start, end in reversed(cuts):
        sql = sql[:start] + sql[end:]
    return sql


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
    mode = _COMPARATOR[mode]
    if not pred_rows and not gold_rows:
        return True, "both empty"
    # identical results in identical order match under every mode: Python's == already equates
    # what _norm does (True == 1 == 1.0), and this skips building multisets for the common case
    if len(pred_rows) == len(gold_rows) and all(
        len(p) == len(g) and list(p) == list(g) for p, g in zip(pred_rows, gold_rows, strict=True)
    ):
        if mode == "bird":
            return True, "same set of rows"
        return True, "match" + (" (ordered)" if ordered else "")
    return _compare(pred_rows, gold_rows, ordered, mode, (rel_tol, abs_tol))


def _compare(
    pred_rows: Sequence[Sequence[Any]],
    gold_rows: Sequence[Sequence[Any]],
    ordered: bool,
    mode: str,
    tolerance: tuple[float, float],
) -> tuple[bool, str]:
    """The full comparison (results_match without its shortcut for identical results)."""
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
    tol = tolerance if mode == "tolerance" else None
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
class ExecutionAccuracy(Scorer):
    """EX on examples with gold SQL (sql, fix, clarify); ``None`` elsewhere.

    Gold SQL that cannot run (an engine error, a refused statement, a timeout) is counted the
    official evaluators' way by default: the example is wrong (0), whatever was predicted
    (``gold_failure="wrong"``); ``gold_failure="exclude"`` leaves it out of the denominator
    instead (``None``). Either way its score carries ``gold_error`` (the first cause), and every
    report counts such examples (docs/metrics.md, "Gold SQL that cannot run").

    Args:
        mode: ``spider`` (default), ``bird`` or ``tolerance``.
        timeout_s: Timeout of each query (really interrupts it).
        max_rows: Row cap. A predicted result that hits it scores 0; a gold result that hits it
            makes the example invalid (``None``, excluded from the denominator).
        rel_tol / abs_tol: Closeness in ``tolerance`` mode.
        gold_cache: Keep gold results on disk across runs (:class:`~routerlab.eval.scorers.gold_cache.GoldCache`):
            True for the default path, a path for that file, False for none. Within one scorer
            they are always kept in memory.
        gold_failure: ``wrong`` (default: an example whose gold SQL fails scores 0) or
            ``exclude`` (it scores ``None`` and is left out of EX).
    """

    def __init__(
        self,
        mode: str = "spider",
        timeout_s: float = 10.0,
        max_rows: int = 100_000,
        rel_tol: float = 1e-6,
        abs_tol: float = 1e-9,
        gold_cache: bool | str = True,
        gold_failure: str = "wrong",
    ) -> None:

        if gold_failure not in GOLD_FAILURE_MODES:
            raise ConfigError(
                f"unknown EX gold_failure {gold_failure!r}",
                expected=f"one of {GOLD_FAILURE_MODES}",
                found=repr(gold_failure),
                fix="pass gold_failure='wrong' (the official evaluators' way) or 'exclude'",
            )
        self.gold_failure = gold_failure
        if mode not in MODES:
            raise ConfigError(
                f"unknown EX mode {mode!r}",
                expected=f"one of {MODES}",
                found=repr(mode),
                fix=f"pass mode= one of {', '.join(MODES)}",
            )
        self.mode, self.timeout_s, self.max_rows = mode, timeout_s, max_rows
        self.rel_tol, self.abs_tol = rel_tol, abs_tol
        self.gold_cache = gold_cache
        self._disk = None if gold_cache is False else GoldCache(None if gold_cache is True else gold_cache)
        self._gold: dict[tuple[str, str], CachedGold | ToolError] = {}
        self._lock = threading.Lock()

    def _run(self, db_path: str, sql: str) -> Any:
        return open_database(db_path).execute(sql, timeout_s=self.timeout_s, max_rows=self.max_rows)

    def gold(self, example: Example) -> CachedGold:
        """The gold result and its ordering, from memory, the disk cache, or the database.

        Raises:
            ToolError: The gold query failed (remembered for this scorer, not on disk).
        """
        key = (example.db_path, self._executed_sql(example.db_path, example.gold_sql or ""))
        with self._lock:
            cached = self._gold.get(key)
        if cached is None:
            cached = self._disk.get(*key, self.max_rows) if self._disk is not None else None
            if cached is None:
                cached = self._compute_gold(example)
            with self._lock:
                self._gold[key] = cached
        if isinstance(cached, ToolError):
            raise cached
        return cached

    def _executed_sql(self, db_path: str, sql: str) -> str:
        """The text that really runs: without DISTINCT in ``spider`` mode, as written otherwise."""
        if self.mode not in _DROPS_DISTINCT:
            return sql
        return remove_distinct(sql, open_database(db_path).dialect)

    def _compute_gold(self, example: Example) -> CachedGold | ToolError:
        sql = self._executed_sql(example.db_path, example.gold_sql or "")
        try:
            result = self._run(example.db_path, sql)
        except ToolError as exc:
            return exc
        ordered = gold_is_ordered(example.gold_sql or "", open_database(example.db_path).dialect)
        gold = CachedGold(result, ordered)
        if self._disk is not None:
            self._disk.put(example.db_path, sql, self.max_rows, gold)
        return gold

    @property
    def settings(self) -> tuple[Any, ...]:
        """What a verdict depends on besides the example and the trace."""
        return (self.mode, self.timeout_s, self.max_rows, self.rel_tol, self.abs_tol, self.gold_failure)

    def score(self, example: Example, trace: Trace) -> Score:
        """1 when the prediction's result matches the gold's under the mode.

        The verdict is remembered for this trace (see :func:`shared_verdict`): a second scorer
        with the same settings, or ``success``, reuses it instead of executing the SQL again.
        """
        key = (_example_key(example), self.settings)
        known = _VERDICTS.get(trace, key)
        if known is not None:
            return known
        verdict = self._score(example, trace)
        _VERDICTS.put(trace, key, verdict)
        return verdict

    def _score(self, example: Example, trace: Trace) -> Score:
        if example.intent not in EX_INTENTS or not example.gold_sql:
            return Score(self.name, None, "not applicable")
        try:
            gold = self.gold(example)
        except ToolError as exc:
            cause = f"gold {exc.error_class}: {exc}"
            if self.gold_failure == "wrong":
                return Score(self.name, 0.0, f"gold SQL failed, counted wrong: {cause}", {"gold_error": cause[:300]})
            return Score(self.name, None, f"invalid example: {cause}", {"invalid": True, "gold_error": cause[:300]})
        if gold.result.truncated:
            return Score(self.name, None, "invalid example: gold result exceeds the row cap", {"invalid": True})
        if not trace.sql:
            return Score(self.name, 0.0, "no SQL was produced")
        try:
            pred = self._run(example.db_path, self._executed_sql(example.db_path, trace.sql))
        except ToolError as exc:
            return Score(self.name, 0.0, f"predicted SQL failed: {exc.error_class}", {"error": str(exc)[:300]})
        if pred.truncated:
            return Score(self.name, 0.0, "predicted result exceeds the row cap")
        ordered = self.mode != "bird" and gold.ordered
        ok, reason = results_match(
            pred.rows, gold.result.rows, ordered=ordered, mode=self.mode, rel_tol=self.rel_tol, abs_tol=self.abs_tol
        )
        # a vacuous match (both results empty) is flagged: a reader must see how much of EX rests
        # on these; the flag is present on every compared verdict so a summary knows EX marks them
        empty = ok and not pred.rows and not gold.result.rows
        return Score(
            self.name, 1.0 if ok else 0.0, reason, {"ordered": ordered, "mode": self.mode, "empty_match": empty}
        )


def _example_key(example: Example) -> tuple[str, str, str]:
    """What an EX verdict depends on in the example."""
    return (example.id, example.db_path, example.gold_sql or "")


class _VerdictMemo:
    """EX verdicts of the traces being scored, keyed by the trace object and the scorer settings.

    A trace is scored by every scorer of a run in turn; remembering the verdict on the trace's
    identity (with a weak reference, so a finished trace drops out), per example and scorer
    settings, lets ``success`` and a second ``ex`` reuse it: one execution per trace, and
    ``success`` can never disagree with ``ex``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_trace: dict[int, tuple[weakref.ref, dict[tuple[Any, ...], Score]]] = {}

    def _entry(self, trace: Trace) -> dict[tuple[Any, ...], Score] | None:
        found = self._by_trace.get(id(trace))
        return found[1] if found is not None and found[0]() is trace else None

    def get(self, trace: Trace, key: tuple[Any, ...]) -> Score | None:
        """The verdict for ``key`` = (example key, settings), if known."""
        with self._lock:
            entry = self._entry(trace)
            return entry.get(key) if entry else None

    def first_for(self, trace: Trace, example_key: tuple[str, str, str]) -> Score | None:
        """The first verdict given ``trace`` for this example, whatever the scorer settings."""
        with self._lock:
            entry = self._entry(trace) or {}
            return next((v for (ek, _settings), v in entry.items() if ek == example_key), None)

    def put(self, trace: Trace, key: tuple[Any, ...], verdict: Score) -> None:
        """Remember ``verdict`` for ``key`` = (example key, settings) until ``trace`` is garbage."""
        tid = id(trace)
        with self._lock:
            entry = self._entry(trace)
            if entry is None:
                entry = {}
                ref = weakref.ref(trace, functools.partial(self._forget, tid))
                self._by_trace[tid] = (ref, entry)
            entry.setdefault(key, verdict)

    def _forget(self, key: int, ref: weakref.ref) -> None:
        with self._lock:
            found = self._by_trace.get(key)
            if found is not None and found[0] is ref:
                del self._by_trace[key]


_VERDICTS = _VerdictMemo()


def shared_verdict(example: Example, trace: Trace) -> Score | None:
    """The EX verdict an ``ex`` scorer already gave ``trace`` for ``example`` (the first one), or None."""
    return _VERDICTS.first_for(trace, _example_key(example))
