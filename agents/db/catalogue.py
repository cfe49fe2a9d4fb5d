"""The engines' function catalogues, classified once: which functions a guarded statement may call.

The guard is an allow-list. Each engine's own catalogue is read once per process (DuckDB's
``duckdb_functions()`` of the installed version, SQLite's ``pragma_function_list`` and
``pragma_module_list``) and every entry is classified:

- scalar, aggregate, window functions and scalar macros without side effects are **allowed**;
- table functions, table macros and pragmas are **refused**, and so is anything whose name says it
  touches files, settings, logging, secrets, extensions, other databases or SQL text, and any
  function with side effects, unless :data:`VETTED` (a short list, each entry with its reason)
  says otherwise;
- a macro whose body calls a refused function is refused with it;
- a name the catalogue does not hold is refused (:meth:`FunctionCatalogue.refusal`).

A new engine release cannot open a hole in silence: what it adds is classified by these rules, so a
new table function is refused and a new scalar function is allowed only when nothing in its name
or flags says it reaches outside the query.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import duckdb

__all__ = ["SQL_FROM_STRING_FUNCTIONS", "VETTED", "FunctionCatalogue", "function_catalogue"]

#: functions that execute, plan, parse or serialise SQL given as a string (DuckDB's json extension
#: and ``query``/``query_table``, SQLite's ``eval`` extension): the text they take is a statement
#: the guard would never see. Refused whatever the catalogue says of them.
SQL_FROM_STRING_FUNCTIONS: frozenset[str] = frozenset(
    {
        "json_execute_serialized_sql",
        "json_serialize_sql",
        "json_deserialize_sql",
        "json_serialize_plan",
        "query",
        "query_table",
        "sql_auto_complete",
        "eval",
    }
)

#: names allowed although a rule below would refuse them, each with the reason (position: "expression"
#: for a call in an expression, "table" for a call in FROM or a table reference)
VETTED: Mapping[tuple[str, str], str] = {
    ("log", "expression"): "the logarithm, not logging",
    ("log2", "expression"): "the base-2 logarithm",
    ("log10", "expression"): "the base-10 logarithm",
    ("random", "expression"): "a random number; changes no state another statement sees",
    ("uuid", "expression"): "a random UUID",
    ("gen_random_uuid", "expression"): "a random UUID",
    ("uuidv4", "expression"): "a random UUID",
    ("uuidv7", "expression"): "a time-ordered UUID",
    ("unnest", "expression"): "expands a list value into rows",
    ("range", "table"): "a series of numbers computed in memory",
    ("generate_series", "table"): "a series of numbers computed in memory",
    ("unnest", "table"): "expands a list value into rows",
    ("json_each", "table"): "the elements of a JSON value given in the query",
    ("json_tree", "table"): "the nodes of a JSON value given in the query",
}

#: views that are catalogue tables of the engine itself, allowed as table references: the schema
#: of the query's own database, nothing of the server
VETTED_VIEWS: Mapping[str, str] = {
    "information_schema": "the database's own tables and columns (a schema, all its views)",
    "sqlite_master": "the database's own table definitions",
    "sqlite_schema": "the database's own table definitions",
}

# What a name says a function touches. Whole-word matches on the name's ``_``-separated parts, or
# substrings where no ordinary function shares them.
_TOUCHES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"file|path|dir|glob|read_|write_|scan|parquet|csv|ndjson|xlsx|iceberg|delta_|st_read"), "files"),
    (
        re.compile(
            r"setting|variable|config|option|pragma|optimizer|profil|verif|progress_bar|checkpoint|object_cache"
            r"|memory|temporary|threads|getenv|environ"
        ),
        "settings",
    ),
    (re.compile(r"(^|_)log(s|ging)?(_|$)"), "logging"),
    (re.compile(r"secret"), "secrets"),
    (re.compile(r"extension|load_"), "extensions"),
    (
        re.compile(r"database|catalog|attach|schema|external_resource|dbstat|dbpage|postgres|mysql|sqlite_scan"),
        "other databases",
    ),
    (re.compile(r"sql|query|plan|statement|prepare|exec|eval"), "SQL text"),
    (re.compile(r"sleep|connection|transaction|sqlite_stmt|fts\d|rtree"), "the engine's session"),
)

_CALLED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")

#: SQLite's flag of functions that only top-level SQL may call (``load_extension``, ``fts3_tokenizer``)
_SQLITE_DIRECTONLY = 0x80000


@dataclass(frozen=True)
class FunctionCatalogue:
    """One engine's functions, classified: what a statement may call, and why the rest is refused.

    Attributes:
        engine: The engine and its version (``duckdb 2.0.0``, ``sqlite 3.40.1``).
        expression: Name -> ``None`` (allowed) or the reason it is refused, for calls in expressions.
        table: The same for calls in FROM (table functions) and for table references that name a
            catalogue view or table function of the engine.
    """

    engine: str
    expression: Mapping[str, str | None]
    table: Mapping[str, str | None]

    def refusal(self, name: str, *, table: bool = False) -> str | None:
        """Why a call of ``name`` is refused, or ``None`` when it is allowed.

        Args:
            name: The function name as the engine reads it (case-insensitive).
            table: Whether it is called in FROM (a table function).
        """
        key = name.lower()
        known = self.table if table else self.expression
        if key in known:
            return known[key]
        other = self.expression if table else self.table
        if key in other:
            if table:
                return "a scalar function, not a table function"
            return other[key] or "a table function used in an expression"
        if (why := _touches(key)) is not None:
            return f"not a function of {self.engine}, and its name says it {why}"
        return f"not a function of {self.engine}"

    def unknown_and_harmless(self, name: str) -> bool:
        """A name the catalogue does not hold and whose name says nothing of reaching outside.

        Such a call is a misspelt function (``YEAR`` in SQLite) the engine would reject; the guard
        lets the statement be generated and repaired, and refuses to run it
        (:func:`routerlab.agents.db.guard.check_sql_to_run`).
        """
        return not self.knows(name) and _touches(name.lower()) is None

    def knows(self, name: str) -> bool:
        """Whether the engine's catalogue holds a function ``name`` (in any position)."""
        key = name.lower()
        return key in self.expression or key in self.table

    def view_refusal(self, name: str, schema: str = "") -> str | None:
        """Why a table reference to ``schema.name`` is refused, or ``None``.

        Only names that are the engine's own catalogue views or table functions are refused (a
        database's tables are not in the catalogue); ``information_schema`` and the SQLite master
        table are vetted.
        """
        key, space = name.lower(), schema.lower()
        if space in VETTED_VIEWS or key in VETTED_VIEWS:
            return None
        if space == "pg_catalog":
            return "a catalogue view of the engine (pg_catalog shows settings and other databases)"
        if key in self.table and self.table[key] is None:
            return None
        if key in self.table or key.startswith(("duckdb_", "pragma_")):
            return self.table.get(key) or "a catalogue view of the engine"
        return None

    def allowed(self, *, table: bool = False) -> frozenset[str]:
        """Every allowed name of one position."""
        known = self.table if table else self.expression
        return frozenset(n for n, why in known.items() if why is None)


def _touches(name: str) -> str | None:
    """What the name says the function touches (``None``: nothing outside the query)."""
    if name in SQL_FROM_STRING_FUNCTIONS:
        return "runs, plans or serialises SQL given as text"
    for pattern, what in _TOUCHES:
        if pattern.search(name):
            return f"touches {what}"
    return None


def _verdict(name: str, position: str, *, kind: str, side_effects: bool) -> str | None:
    """The classification of one catalogue entry (``None``: allowed)."""
    if (name, position) in VETTED:
        return None
    if (why := _touches(name)) is not None:
        return why
    if position == "table":
        return f"a {kind} (only {', '.join(sorted(n for n, p in VETTED if p == 'table'))} are allowed in FROM)"
    if side_effects:
        return "has side effects"
    return None


def _merge(entries: Iterable[tuple[str, str | None]]) -> dict[str, str | None]:
    """One verdict per name: a name is allowed when no entry of it is refused."""
    out: dict[str, str | None] = {}
    for name, why in entries:
        if name not in out or (out[name] is None and why is not None):
            out[name] = why
    return out


def _refuse_macros_calling_refused(
    expression: dict[str, str | None], table: dict[str, str | None], bodies: Mapping[str, list[str]]
) -> None:
    """A macro is refused when its body calls a refused function (to a fixed point: macros call macros)."""
    changed = True
    while changed:
        changed = False
        for name, body in bodies.items():
            if expression.get(name) is not None:
                continue
            for text in body:
                for called in (m.lower() for m in _CALLED.findall(text)):
                    why = expression.get(called, table.get(called))
                    if (called in expression or called in table) and why is not None and called != name:
                        expression[name] = f"calls {called}(), which {why}"
                        changed = True
                        break
                if expression.get(name) is not None:
                    break


def _duckdb() -> FunctionCatalogue:
    con = duckdb.connect(":memory:")
    try:
        rows = con.execute(
            "SELECT lower(function_name), function_type, coalesce(has_side_effects, false), macro_definition "
            "FROM duckdb_functions()"
        ).fetchall()
        views = con.execute("SELECT lower(view_name) FROM duckdb_views() WHERE internal").fetchall()
    finally:
        con.close()
    expression_entries: list[tuple[str, str | None]] = []
    table_entries: list[tuple[str, str | None]] = []
    bodies: dict[str, list[str]] = {}
    for name, kind, side_effects, body in rows:
        if kind in ("scalar", "aggregate", "window", "macro"):
            expression_entries.append((name, _verdict(name, "expression", kind=kind, side_effects=side_effects)))
            if kind == "macro" and body:
                bodies.setdefault(name, []).append(body)
        elif kind in ("table", "table_macro"):
            table_entries.append(
                (name, _verdict(name, "table", kind=kind.replace("_", " ") + " function", side_effects=side_effects))
            )
        else:  # pragma: callable only by PRAGMA statements, which the guard refuses
            table_entries.append((name, f"a {kind}"))
    for (view,) in views:
        if view not in VETTED_VIEWS:
            table_entries.append((view, _touches(view) or "a catalogue view of the engine"))
    expression, table = _merge(expression_entries), _merge(table_entries)
    for (name, position), _ in VETTED.items():
        (table if position == "table" else expression).setdefault(name, None)
    _refuse_macros_calling_refused(expression, table, bodies)
    return FunctionCatalogue(f"duckdb {duckdb.__version__}", expression, table)


def _sqlite() -> FunctionCatalogue:
    con = sqlite3.connect(":memory:")
    try:
        functions = con.execute("SELECT lower(name), type, flags FROM pragma_function_list").fetchall()
        modules = con.execute("SELECT lower(name) FROM pragma_module_list").fetchall()
        pragmas = con.execute("SELECT lower(name) FROM pragma_pragma_list").fetchall()
    finally:
        con.close()
    kinds = {"s": "scalar", "a": "aggregate", "w": "window"}
    expression_entries = []
    for name, kind, flags in functions:
        why = _verdict(name, "expression", kind=kinds.get(kind, kind), side_effects=False)
        if why is None and flags & _SQLITE_DIRECTONLY:
            why = "may only run from top-level SQL (SQLITE_DIRECTONLY: it loads code or reaches outside)"
        expression_entries.append((name, why))
    table_entries = [
        (name, _verdict(name, "table", kind="table-valued function", side_effects=False)) for (name,) in modules
    ]
    # every pragma is also a table-valued function, pragma_<name> (pragma_database_list shows paths)
    table_entries += [(f"pragma_{name}", "a pragma") for (name,) in pragmas]
    expression, table = _merge(expression_entries), _merge(table_entries)
    return FunctionCatalogue(f"sqlite {sqlite3.sqlite_version}", expression, table)


_BUILDERS = {"duckdb": _duckdb, "sqlite": _sqlite}


@functools.cache
def function_catalogue(dialect: str) -> FunctionCatalogue:
    """The classified catalogue of the engine behind ``dialect`` (read once per process).

    Args:
        dialect: ``duckdb`` or ``sqlite``; any other dialect is checked against DuckDB's catalogue.
    """
    return _BUILDERS.get(dialect, _duckdb)()
