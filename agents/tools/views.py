"""Schema views: how the SQL sub-agents are shown a database's tables (``ToolSettings.schema_view``).

A view renders the chosen tables of a database as prompt text. The text-to-SQL literature
compares such renderings on Spider (Rajkumar et al. 2022: CREATE TABLE statements alone, then
with three rows per table; Chang and Fosler-Lussier 2023: with distinct column values), and the
plain-call comparison (docs/results/2026-11-26-plain-call.md) measures them on the embedded
model. Every view is deterministic for the same tables, so a whole-schema prompt is the same
prefix for every question on a database (llama.cpp reuses it from its KV cache).

Register a new one with ``@schema_view("name")`` on a function of :class:`SchemaView`'s shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from routerlab.agents.db import sql_ident
from routerlab.agents.registry import Registry

if TYPE_CHECKING:
    from routerlab.agents.db import Database

__all__ = ["SchemaView", "render_schema", "schema_view"]

#: rows each table shows in the ``create_rows`` view, as Rajkumar et al. (2022) did
_ROWS = 3
#: a cell longer than this is cut in a rendered example row
_CELL_CHARS = 40


@runtime_checkable
class SchemaView(Protocol):
    """Renders ``tables`` of ``db`` (None: all of them) as prompt text."""

    def __call__(self, db: Database, tables: list[str] | None, *, foreign_keys: bool, example_values: int) -> str:
        """The schema text.

        Args:
            db: The database.
            tables: The tables to show, by name (None: every table), in the database's order.
            foreign_keys: Show the foreign keys.
            example_values: Distinct values per column, for views that show them.
        """
        ...


schema_view: Registry[str] = Registry("schema view")
"""Registry of schema views by name."""


@schema_view("create_values")
def create_values(db: Database, tables: list[str] | None, *, foreign_keys: bool, example_values: int) -> str:
    """CREATE TABLE statements with the row count and ``example_values`` distinct values per column.

    The values are the most frequent first, as a comment after each column; this is what the
    SQL sub-agents were shown before the views existed (``Database.schema_text``).
    """
    return db.schema_text(tables, example_values=example_values, foreign_keys=foreign_keys)


@schema_view("create")
def create(db: Database, tables: list[str] | None, *, foreign_keys: bool, example_values: int) -> str:
    """CREATE TABLE statements (types, primary keys, row count), no values."""
    return db.schema_text(tables, example_values=0, foreign_keys=foreign_keys)


@schema_view("create_rows")
def create_rows(db: Database, tables: list[str] | None, *, foreign_keys: bool, example_values: int) -> str:
    """CREATE TABLE statements, each followed by its first three rows (Rajkumar et al. 2022).

    The rows are written as that paper's prompt writes them: a comment holding
    ``SELECT * FROM t LIMIT 3;``, the column names, then one tab-separated line per row.
    """
    parts = []
    for t in _chosen(db, tables):
        head = db.schema_text([t.name], example_values=0, foreign_keys=foreign_keys)
        q = sql_ident(t.name)
        result = db.execute(f"SELECT * FROM {q} LIMIT {_ROWS}", max_rows=_ROWS)
        lines = ["\t".join(result.columns)] + ["\t".join(_cell(v) for v in row) for row in result.rows]
        body = "\n".join(lines)
        parts.append(f"{head}\n/*\n{len(result.rows)} example rows:\nSELECT * FROM {q} LIMIT {_ROWS};\n{body}\n*/")
    return "\n\n".join(parts)


@schema_view("compact")
def compact(db: Database, tables: list[str] | None, *, foreign_keys: bool, example_values: int) -> str:
    """One line per table, ``table(col, col, ...)``, then one ``-- a.x = b.y`` line per foreign key."""
    chosen = _chosen(db, tables)
    lines = [f"{sql_ident(t.name)}({', '.join(sql_ident(c.name) for c in t.columns)})" for t in chosen]
    if foreign_keys:
        by_lower = {t.name.lower(): t for t in db.tables()}
        for t in chosen:
            for col, ref_t, ref_c in dict.fromkeys(t.foreign_keys):  # SQLite lists some twice
                target = by_lower.get(ref_t.lower())
                if target is None:
                    continue
                ref_c = ref_c or next((c.name for c in target.columns if c.primary_key), "")
                if ref_c:
                    left = f"{sql_ident(t.name)}.{sql_ident(col)}"
                    lines.append(f"-- {left} = {sql_ident(target.name)}.{sql_ident(ref_c)}")
    return "\n".join(lines)


def render_schema(
    view: str, db: Database, tables: list[str] | None, *, foreign_keys: bool = True, example_values: int = 3
) -> str:
    """Render ``tables`` of ``db`` with the view registered as ``view``.

    Raises:
        UnknownComponentError: No view has that name (the message lists them).
    """
    return schema_view.get(view)(db, tables, foreign_keys=foreign_keys, example_values=example_values)


def _chosen(db: Database, tables: list[str] | None) -> list:
    wanted = None if tables is None else set(tables)
    return [t for t in db.tables() if wanted is None or t.name in wanted]


def _cell(value: object) -> str:
    text = "NULL" if value is None else str(value).replace("\t", " ").replace("\n", " ")
    return text if len(text) <= _CELL_CHARS else text[:_CELL_CHARS] + "…"
