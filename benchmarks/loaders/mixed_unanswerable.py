"""The mixer's ``unanswerable`` requests: the question rewritten to need what the schema lacks.

A missing measure, attribute, entity or period, labelled in ``meta["missing"]``; no gold SQL.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from sqlglot import exp

from routerlab.agents.answerability import schema_lacks, temporal_level
from routerlab.agents.db import Database
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders import mixed_common as common

__all__ = ["derive_unanswerable"]

_MISSING_MEASURES: tuple[str, ...] = (
    "salary", "revenue", "profit", "weight", "rating", "price", "budget", "cost", "income", "temperature",
    "duration", "distance", "tax", "fee", "discount", "commission",
)  # fmt: skip
_MISSING_ATTRIBUTES: tuple[str, ...] = (
    "email address", "phone number", "home address", "nickname", "website", "favourite colour", "blood type",
    "middle name", "shoe size", "passport number", "marital status", "social media handle",
)  # fmt: skip
_MISSING_ENTITIES: tuple[tuple[str, str], ...] = (
    ("pilot", "pilots"), ("supplier", "suppliers"), ("invoice", "invoices"), ("volunteer", "volunteers"),
    ("sponsor", "sponsors"), ("warehouse", "warehouses"), ("subscriber", "subscribers"), ("lawsuit", "lawsuits"),
    ("patent", "patents"), ("vaccination", "vaccinations"), ("shareholder", "shareholders"), ("ticket", "tickets"),
)  # fmt: skip
#: (phrase, needs a date finer than a year); appended to the question
_MISSING_PERIODS: tuple[tuple[str, bool], ...] = (
    ("in March 2019", True), ("last quarter", True), ("per month", True), ("during the summer of 2017", True),
    ("in the first quarter of 2020", True), ("last week", True), ("on weekends", True),
    ("in the past 30 days", True), ("in 2019", False), ("since 2015", False), ("last year", False),
)  # fmt: skip


def _plural(word: str) -> str:
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def _word_pattern(words: str) -> re.Pattern[str]:
    """``words`` in the question, singular or plural, as whole words."""
    return re.compile(rf"(?<!\w)({re.escape(words)})(e?s)?(?!\w)", re.IGNORECASE)


def _swap(question: str, words: str, pool: tuple[str, ...], db: Database, rng: random.Random) -> tuple[str, str] | None:
    """Replace the first mention of ``words`` by a pool term the schema lacks (keeping the number)."""
    m = _word_pattern(words).search(question)
    if m is None:
        return None
    for term in rng.sample(pool, len(pool)):
        if schema_lacks(db, term):
            new = _plural(term) if m.group(2) else term
            return question[: m.start()] + new + question[m.end() :], term
    return None


def _missing_measure(q: str, tree: exp.Expr, db: Database, rng: random.Random) -> tuple[str, str] | None:
    aggs = [f for f in tree.find_all(exp.Avg, exp.Sum, exp.Max, exp.Min) if isinstance(f.this, exp.Column)]
    for f in rng.sample(aggs, len(aggs)):
        swapped = _swap(q, common.words(f.this.name), _MISSING_MEASURES, db, rng)
        if swapped:
            return swapped
    return None


def _missing_attribute(q: str, tree: exp.Expr, db: Database, rng: random.Random) -> tuple[str, str] | None:
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    cols = [c for c in (select.expressions if select else []) if isinstance(c, exp.Column) and c.name != "*"]
    for c in rng.sample(cols, len(cols)):
        swapped = _swap(q, common.words(c.name), _MISSING_ATTRIBUTES, db, rng)
        if swapped:
            return swapped
    return None


def _missing_entity(q: str, tree: exp.Expr, db: Database, rng: random.Random) -> tuple[str, str] | None:
    tables = common.table_names(tree)
    for table in rng.sample(tables, len(tables)):
        words = common.words(table)
        m = _word_pattern(words).search(q)
        if m is None:
            continue
        for singular, plural in rng.sample(_MISSING_ENTITIES, len(_MISSING_ENTITIES)):
            if schema_lacks(db, singular):
                new = plural if m.group(2) else singular
                return q[: m.start()] + new + q[m.end() :], singular
    return None


def _missing_period(q: str, _tree: exp.Expr, db: Database, rng: random.Random) -> tuple[str, str] | None:
    level = temporal_level(db)
    usable = [p for p, fine in _MISSING_PERIODS if (fine and level < 2) or (not fine and level == 0)]
    if not usable:
        return None
    phrase = rng.choice(usable)
    stripped = q.rstrip()
    end = stripped[-1] if stripped and stripped[-1] in "?.!" else ""
    body = stripped[:-1].rstrip() if end else stripped
    return f"{body} {phrase}{end or '?'}", phrase


_MISSING: dict[str, Callable[[str, exp.Expr, Database, random.Random], tuple[str, str] | None]] = {
    "measure": _missing_measure,
    "attribute": _missing_attribute,
    "entity": _missing_entity,
    "period": _missing_period,
}


def derive_unanswerable(e: Example, rng: random.Random, dbs: common.Databases) -> Example | None:
    """An ``unanswerable`` request from ``e``: its question needing what the schema lacks, or None."""
    db = dbs.get(e.db_path)
    tree = common.parse_query(e.gold_sql or "", db.dialect) if db else None
    if db is None or tree is None:
        return None
    kinds = sorted(_MISSING)
    rng.shuffle(kinds)
    for kind in kinds:
        made = _MISSING[kind](e.question, tree, db, rng)
        if made is None:
            continue
        question, term = made
        return common.derived(
            e,
            "unanswerable",
            question,
            difficulty=e.difficulty,
            meta={"missing": {"kind": kind, "term": term}, "original_question": e.question},
        )
    return None
