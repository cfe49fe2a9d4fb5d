"""Execution feedback for a generated query: what running it showed, in words a model can act on.

Execution-guided correction needs two things from a query that came back empty or failed: a
cheap, deterministic look at why, and a short text for one more ``generate_sql`` call. An empty
result very often comes from a literal the column does not hold (``contestant_number =
'Tabatha Gehling'``, ``'Dogs'`` for ``'dog'``); one indexed lookup per literal finds whether the
value exists, in which spelling, and in which other column it does occur. Nothing here calls a
model, and every lookup is a guarded read-only query with a short timeout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import traverse_scope

from routerlab.agents.errors import ToolError

if TYPE_CHECKING:
    from routerlab.agents.db import Database

__all__ = ["Probe", "column_notes", "feedback_text", "probe", "value_notes"]

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
    out: list[tuple[str, str, str]] = []
    for scope in scopes:
        sources = {a.lower(): s.name for a, s in scope.sources.items() if isinstance(s, exp.Table)}
        for node in scope.expression.find_all(exp.EQ, exp.In):
            col = node.this if isinstance(node.this, exp.Column) else node.expression
            if not isinstance(col, exp.Column):
                continue
            values = node.expressions if isinstance(node, exp.In) else [node.expression, node.this]
            strings = [v.this for v in values if isinstance(v, exp.Literal) and v.is_string]
            found = _resolve(col, sources, tables) if strings else None
            if found is not None:
                out.extend((*found, s) for s in strings)
    return list(dict.fromkeys(out))[:_MAX_LITERALS]


def _rows(db: Database, query: exp.Expr) -> list[list[object]]:
    try:
        return db.execute(query.sql(dialect=db.dialect), timeout_s=_LOOKUP_TIMEOUT_S, max_rows=3).rows
    except ToolError:
        return []


def _text(column: exp.Expr) -> exp.Expr:
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


def _resolve(col: exp.Column, sources: dict[str, str], tables: dict[str, list[str]]) -> tuple[str, str] | None:
    real = {t.lower(): t for t in tables}
    owners = [sources.get(col.table.lower())] if col.table else list(sources.values())
    for owner in owners:
        table = real.get((owner or "").lower())
        hit = [c for c in tables.get(table or "", []) if c.lower() == col.name.lower()]
        if table and hit:
            return table, hit[0]
    return None


def _joins(sql: str, dialect: str, tables: dict[str, list[str]]) -> list[tuple[str, str, str, str]]:
    """``(table, column, other table, other column)`` for each ``a.x = b.y`` join condition."""
    try:
        ast = sqlglot.parse_one(sql, read=dialect)
        scopes = list(traverse_scope(ast))
    except SqlglotError:
        return []
    out = []
    for scope in scopes:
        sources = {a.lower(): s.name for a, s in scope.sources.items() if isinstance(s, exp.Table)}
        for join in scope.expression.args.get("joins") or []:
            on = join.args.get("on")
            for eq in on.find_all(exp.EQ) if on is not None else []:
                if isinstance(eq.this, exp.Column) and isinstance(eq.expression, exp.Column):
                    a, b = _resolve(eq.this, sources, tables), _resolve(eq.expression, sources, tables)
                    if a and b and a[0] != b[0]:
                        out.append((*a, *b))
    return list(dict.fromkeys(out))


def _join_note(db: Database, join: tuple[str, str, str, str], keys: list[tuple[str, str, str]]) -> str | None:
    t1, c1, t2, c2 = join
    a, b = exp.to_table(t1, quoted=True), exp.to_table(t2, quoted=True)
    on = exp.EQ(this=exp.column(c1, table=t1, quoted=True), expression=exp.column(c2, table=t2, quoted=True))
    if _rows(db, exp.select("1").from_(a).join(b, on=on).limit(1)):
        return None
    linked = [text for source, target, text in keys if {source, target} & {t1, t2}]
    hint = f" Foreign keys: {'; '.join(linked)}." if linked else ""
    return f"No row of {t1} joins {t2} on {t1}.{c1} = {t2}.{c2}.{hint}"


def value_notes(db: Database, sql: str) -> list[str]:
    """One line per condition of the query that matches nothing, saying what would.

    A string literal a column lacks: the column's values containing it (another case or
    spelling), else the text column of any table that holds it. A join condition no pair of
    rows meets: the foreign keys of the two tables.
    """
    infos = db.tables()
    tables = {t.name: [c.name for c in t.columns] for t in infos}
    text_columns = [
        (t.name, c.name) for t in infos for c in t.columns if any(k in (c.type or "").upper() for k in _TEXT_TYPES)
    ][:_MAX_COLUMNS]
    keys = [
        (t.name, fk[1], f"{t.name}.{fk[0]} -> {fk[1]}" + (f".{fk[2]}" if fk[2] else ""))
        for t in infos
        for fk in t.foreign_keys
    ]
    notes = [_note(db, t, c, v, text_columns) for t, c, v in _literals(sql, db.dialect, tables)]
    notes += [_join_note(db, j, keys) for j in _joins(sql, db.dialect, tables)]
    return [n for n in notes if n]


def column_notes(db: Database, error: str) -> list[str]:
    """For a ``no such column`` error, the tables that do have a column of that name."""
    m = re.search(r"no such column: (?:[\w\"]+\.)?\"?(\w+)", error) or re.search(
        r'Referenced column "(\w+)" not found', error
    )
    if not m:
        return []
    name = m.group(1)
    owners = [t.name for t in db.tables() if any(c.name.lower() == name.lower() for c in t.columns)]
    return [f"{name} is a column of {', '.join(owners)}." if owners else f"No table has a column {name}."]


def feedback_text(found: Probe, notes: list[str]) -> str:
    """The feedback one retry of ``generate_sql`` gets: what running the first query showed, and the notes.

    The failed query itself is left out on purpose: shown its own query, the 1.5B model copied it
    back in 9 of 9 retries on the spider-dev-a subset; told only what was wrong, it wrote a new one.
    """
    head = f"A first answer failed: {found.error}" if found.error is not None else "A first answer returned no rows."
    return "\n".join([head, *notes])
