"""Execution feedback for a generated query: what running it showed, in words a model can act on.

Execution-guided correction needs two things from a query that came back empty or failed: a
cheap, deterministic look at why, and a short text for one more ``generate_sql`` call. An empty
result very often comes from a literal the column does not hold (``contestant_number =
'Tabatha Gehling'``, ``'Dogs'`` for ``'dog'``); one indexed lookup per literal finds whether the
value exists, in which spelling, and in which other column it does occur. Nothing here calls a
model, and every lookup is a guarded read-only query with a short timeout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import traverse_scope

from routerlab.agents.errors import ToolError

if TYPE_CHECKING:
    from routerlab.agents.db import Database

__all__ = ["Probe", "feedback_text", "probe", "value_notes"]

#: literals looked up per query, and columns searched per literal (bounds the lookups' cost)
_MAX_LITERALS = 4
_MAX_COLUMNS = 40
#: a lookup is an indexed or small scan; one that takes longer is skipped, not waited for
_LOOKUP_TIMEOUT_S = 1.0
_TEXT_TYPES = ("CHAR", "TEXT", "CLOB", "STRING", "VARCHAR")


@dataclass(frozen=True)
class Probe:
    """What running a query showed.

    Attributes:
        error: The database's exact error, or None when the query ran.
        empty: It ran and returned no rows, or one row of NULLs and zeros only (an aggregate
            over nothing, a count whose filter matched nothing: usually a wrong value or join).
    """

    error: str | None = None
    empty: bool = False

    @property
    def reason(self) -> str | None:
        """``error``, ``empty`` or None (the query returned something)."""
        if self.error is not None:
            return "error"
        return "empty" if self.empty else None


def probe(db: Database, sql: str, timeout_s: float) -> Probe:
    """Run ``sql`` for its first rows and say whether it failed or came back empty."""
    try:
        result = db.execute(sql, timeout_s=timeout_s, max_rows=2)
    except ToolError as exc:
        return Probe(error=str(exc))
    empty = not result.rows or (len(result.rows) == 1 and all(v is None or v == 0 for v in result.rows[0]))
    return Probe(empty=empty)


def _literals(sql: str, dialect: str, tables: dict[str, list[str]]) -> list[tuple[str, str, str]]:
    """``(table, column, value)`` for each ``column = 'text'`` (or ``IN ('text', ...)``) of the query."""
    try:
        ast = sqlglot.parse_one(sql, read=dialect)
        scopes = list(traverse_scope(ast))
    except SqlglotError:
        return []
    real = {t.lower(): t for t in tables}
    out: list[tuple[str, str, str]] = []
    for scope in scopes:
        sources = {a.lower(): s.name for a, s in scope.sources.items() if isinstance(s, exp.Table)}
        for node in scope.expression.find_all(exp.EQ, exp.In):
            col = node.this if isinstance(node.this, exp.Column) else node.expression
            if not isinstance(col, exp.Column):
                continue
            values = node.expressions if isinstance(node, exp.In) else [node.expression, node.this]
            strings = [v.this for v in values if isinstance(v, exp.Literal) and v.is_string]
            owners = [sources.get(col.table.lower())] if col.table else list(sources.values())
            for owner in owners:
                table = real.get((owner or "").lower())
                hit = [c for c in tables.get(table or "", []) if c.lower() == col.name.lower()]
                if table and hit:
                    out.extend((table, hit[0], s) for s in strings)
                    break
    return list(dict.fromkeys(out))[:_MAX_LITERALS]


def _rows(db: Database, query: exp.Expression) -> list[list[object]]:
    try:
        return db.execute(query.sql(dialect=db.dialect), timeout_s=_LOOKUP_TIMEOUT_S, max_rows=3).rows
    except ToolError:
        return []


def _text(column: exp.Expression) -> exp.Expression:
    return exp.func("lower", exp.cast(column, "TEXT"))


def _note(db: Database, table: str, column: str, value: str, text_columns: list[tuple[str, str]]) -> str | None:
    col = exp.column(column, quoted=True)
    src = exp.to_table(table, quoted=True)
    if _rows(db, exp.select("1").from_(src).where(exp.EQ(this=col, expression=exp.Literal.string(value))).limit(1)):
        return None
    where = f"'{value}' is not a value of {table}.{column}"
    like = exp.Like(this=_text(col), expression=exp.Literal.string(f"%{value.lower()}%"))
    close = _rows(db, exp.select(col).distinct().from_(src).where(like).limit(3))
    if close:
        return f"{where}; it holds {', '.join(repr(r[0]) for r in close)}."
    for other_table, other in text_columns:
        if (other_table, other) == (table, column):
            continue
        o = exp.column(other, quoted=True)
        found = exp.EQ(this=_text(o), expression=exp.Literal.string(value.lower()))
        hit = _rows(db, exp.select(o).from_(exp.to_table(other_table, quoted=True)).where(found).limit(1))
        if hit:
            return f"{where}; {hit[0][0]!r} is a value of {other_table}.{other}."
    return f"{where}, nor of any text column."


def value_notes(db: Database, sql: str) -> list[str]:
    """One line per string literal the query compares a column with and that column lacks.

    Each line says where the value is instead: the column's values containing it (another case
    or spelling), else the text column of any table that holds it.
    """
    infos = db.tables()
    tables = {t.name: [c.name for c in t.columns] for t in infos}
    text_columns = [
        (t.name, c.name) for t in infos for c in t.columns if any(k in (c.type or "").upper() for k in _TEXT_TYPES)
    ][:_MAX_COLUMNS]
    notes = (_note(db, t, c, v, text_columns) for t, c, v in _literals(sql, db.dialect, tables))
    return [n for n in notes if n]


def feedback_text(sql: str, found: Probe, notes: list[str]) -> str:
    """The feedback one retry of ``generate_sql`` gets: the query, what running it showed, the notes."""
    if found.error is not None:
        what = f"failed with the error: {found.error}"
        ask = "Write a corrected query that uses only tables and columns of the schema."
    else:
        what = "ran but returned no rows"
        ask = "Write a query that answers the question; check its values, joins and conditions."
    lines = [f"A previous attempt {what}", sql, *notes, ask]
    return "\n".join(lines)
