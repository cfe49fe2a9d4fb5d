"""The follow-up structural check: does a follow-up's query keep what the turn did not change (issue 51)?

Reading every wrong follow-up of the CoSQL and SParC runs against its gold query, the largest
class is context ignored: "how many are there?" after a filtered list answered by counting the
whole table, a filter from the turn before dropped. This check compares the new query with the
previous turn's query structurally (sqlglot, no model call):

* a **filter** of the previous query (a conjunct of its WHERE or HAVING) is *dropped* when no
  condition of the new query (WHERE, HAVING or a JOIN's ON, at any depth) reads any of its
  columns. A condition on the same column with another value is the follow-up changing the
  filter ("and in 2023?"), not dropping it. A condition on no column (``HAVING count(*) > 1``)
  is kept only by the same condition.
* a **table** of the previous query is *dropped* when the new query does not read it, unless the
  new query reads none of the previous tables at all: then the follow-up changed the subject.

What the check finds is named in one more generation (:func:`Dropped.feedback`);
``ToolSettings.followup_check`` turns it on (off by default until measured).
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

__all__ = ["Dropped", "dropped_parts"]


@dataclass(frozen=True)
class Dropped:
    """What a follow-up's query lost of the previous query.

    Attributes:
        tables: Tables of the previous query the new one does not read (lower case).
        filters: Conditions of the previous query no condition of the new one touches (SQL text).
    """

    tables: tuple[str, ...] = ()
    filters: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.tables or self.filters)

    def feedback(self) -> str:
        """The note one more generation reads: the dropped parts, named."""
        parts = []
        if self.tables:
            parts.append("its tables " + ", ".join(self.tables))
        if self.filters:
            parts.append("its conditions " + "; ".join(self.filters))
        return (
            "This is a follow-up: keep what the previous query selected unless the request changes it. "
            f"A first answer dropped {' and '.join(parts)} from the previous query."
        )

    def to_dict(self) -> dict[str, list[str]]:
        """JSON-able record (kept in the generate_sql call's output)."""
        return {"tables": list(self.tables), "filters": list(self.filters)}


def _parse(sql: str, dialect: str) -> exp.Expr | None:
    try:
        return sqlglot.parse_one(sql, read=dialect)
    except (sqlglot.errors.SqlglotError, ValueError, RecursionError):
        return None


def _tables(tree: exp.Expr) -> set[str]:
    return {t.name.lower() for t in tree.find_all(exp.Table) if t.name}


def _conjuncts(condition: exp.Expr) -> list[exp.Expr]:
    return list(condition.flatten()) if isinstance(condition, exp.And) else [condition]


def _outer_filters(tree: exp.Expr) -> list[exp.Expr]:
    """The conjuncts of the outermost query's WHERE and HAVING."""
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    if select is None:
        return []
    out: list[exp.Expr] = []
    for key in ("where", "having"):
        clause = select.args.get(key)
        if clause is not None:
            out += _conjuncts(clause.this)
    return out


def _columns(node: exp.Expr) -> set[str]:
    return {c.name.lower() for c in node.find_all(exp.Column) if c.name}


def _condition_columns(tree: exp.Expr) -> set[str]:
    """Every column any condition of ``tree`` reads (WHERE, HAVING, JOIN ... ON, at any depth)."""
    cols: set[str] = set()
    for clause in (*tree.find_all(exp.Where), *tree.find_all(exp.Having)):
        cols |= _columns(clause)
    for join in tree.find_all(exp.Join):
        on = join.args.get("on")
        if on is not None:
            cols |= _columns(on)
    return cols


def dropped_parts(previous_sql: str, new_sql: str, dialect: str = "sqlite") -> Dropped:
    """The tables and filters of ``previous_sql`` that ``new_sql`` silently dropped.

    Args:
        previous_sql: The query of the turn the follow-up builds on.
        new_sql: The follow-up's query.
        dialect: sqlglot dialect of both.

    Returns:
        Nothing dropped when either query does not parse (no evidence, no repair).
    """
    before, after = _parse(previous_sql, dialect), _parse(new_sql, dialect)
    if before is None or after is None:
        return Dropped()
    old_tables, new_tables = _tables(before), _tables(after)
    if not old_tables & new_tables:
        return Dropped()  # a new subject: the follow-up changed the tables, and their filters with them
    tables = tuple(sorted(old_tables - new_tables))
    touched = _condition_columns(after)
    # a condition on no column (``HAVING count(*) > 1``) is kept only by the same condition
    kept_texts = {c.sql(dialect=dialect) for clause in (*after.find_all(exp.Where), *after.find_all(exp.Having))
                  for c in _conjuncts(clause.this)}  # fmt: skip
    filters = tuple(
        f.sql(dialect=dialect)
        for f in _outer_filters(before)
        if (not _columns(f) & touched if _columns(f) else f.sql(dialect=dialect) not in kept_texts)
    )
    return Dropped(tables, filters)
