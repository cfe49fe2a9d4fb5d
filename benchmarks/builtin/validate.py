"""Checks that a gold query is executable and deterministic (used by the generator and the tests).

A result is deterministic when every run returns the same rows in the same order. Two things
break it silently: an ORDER BY that leaves ties (the tied rows may come back in any order, and a
LIMIT may cut between them) and a LIMIT without ORDER BY. :func:`ordering_problems` finds both by
re-running the query with its ORDER BY keys as extra output columns and looking for equal keys
on rows that differ; :func:`reversed_copy` builds a copy of the database with every table stored
in reverse order, on which a query relying on physical order returns something else.
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from routerlab.agents.db import connect_duckdb_readonly
from routerlab.benchmarks.builtin.database import TABLE_KEYS

__all__ = [
    "connect_readonly",
    "execute",
    "is_ordered",
    "normalize_rows",
    "ordering_problems",
    "query_error",
    "reversed_copy",
]

_PROBE = "__order_key_"


def connect_readonly(path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the DuckDB file ``path`` (the caller closes it)."""
    # the same settings as every other read-only open in the process (DuckDB refuses a mix)
    return connect_duckdb_readonly(path)


def execute(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run ``sql`` and return its column names and all its rows."""
    cursor = con.execute(sql)
    return [d[0] for d in cursor.description], cursor.fetchall()


def query_error(con: duckdb.DuckDBPyConnection, sql: str) -> str | None:
    """The error text DuckDB gives for ``sql``, or None if it runs."""
    try:
        con.execute(sql).fetchall()
    except duckdb.Error as exc:
        return str(exc)
    return None


def _norm(value: Any) -> Any:
    # summation order changes the last bits of floating-point aggregates, never their meaning
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, decimal.Decimal):
        return value.normalize()
    return value


def normalize_rows(rows: Sequence[Sequence[Any]], ordered: bool) -> list[tuple[Any, ...]]:
    """Rows made comparable across runs: rounded floats, and sorted unless order matters."""
    out = [tuple(_norm(v) for v in row) for row in rows]
    return out if ordered else sorted(out, key=repr)


def is_ordered(sql: str) -> bool:
    """Whether the top-level query has an ORDER BY (so its row order is part of the answer)."""
    return sqlglot.parse_one(sql, read="duckdb").args.get("order") is not None


def _int_literal(node: exp.Expr | None) -> int:
    if node is None:
        return 0
    value = node.expression if isinstance(node, exp.Limit | exp.Offset) else node
    if not (isinstance(value, exp.Literal) and not value.is_string):
        raise ValueError(f"LIMIT/OFFSET must be a literal number, got {value.sql()!r}")
    return int(value.this)


def _probe_query(root: exp.Query, columns: list[str]) -> exp.Select:
    """``root`` without LIMIT/OFFSET and with its ORDER BY keys appended as output columns."""
    order = root.args["order"]
    if isinstance(root, exp.Select) and not root.args.get("distinct"):
        probe = root.copy()
        projections = probe.expressions
        keys = []
        for ordered in order.expressions:
            key = ordered.this
            if isinstance(key, exp.Literal) and not key.is_string:
                key = projections[int(key.this) - 1]
            elif isinstance(key, exp.Column) and not key.table:
                key = next((p for p in projections if p.alias_or_name == key.name), key)
            keys.append(key.this if isinstance(key, exp.Alias) else key)
    else:
        # set operations and DISTINCT: order keys name output columns, so wrap and refer to them
        inner = root.copy()
        for arg in ("order", "limit", "offset"):
            inner.set(arg, None)
        probe = exp.select("*").from_(inner.subquery("__q"))
        keys = []
        for ordered in order.expressions:
            key = ordered.this
            if isinstance(key, exp.Literal) and not key.is_string:
                key = exp.column(columns[int(key.this) - 1], table="__q", quoted=True)
            keys.append(key)
        probe.set("order", order.copy())
    for i, key in enumerate(keys):
        probe.select(exp.alias_(key.copy(), f"{_PROBE}{i}"), copy=False)
    probe.set("limit", None)
    probe.set("offset", None)
    return probe


def ordering_problems(con: duckdb.DuckDBPyConnection, sql: str) -> list[str]:
    """Ways the row order or the LIMIT of ``sql`` is not determined by its ORDER BY.

    Args:
        con: Connection to the database to run on.
        sql: A gold query.

    Returns:
        Human-readable problems; empty when the result is fully determined.
    """
    root = sqlglot.parse_one(sql, read="duckdb")
    problems: list[str] = []
    for node in root.find_all(exp.Limit):
        if node.parent is not root:
            problems.append("LIMIT inside a subquery or CTE (its ties cannot be checked)")
    order, limit = root.args.get("order"), root.args.get("limit")
    if order is None or not isinstance(root, exp.Query):  # only a query orders its rows
        if limit is not None:
            problems.append("LIMIT without ORDER BY")
        return problems
    columns, _ = execute(con, f"SELECT * FROM ({sql}) AS __c LIMIT 0")
    probe = _probe_query(root, columns).sql(dialect="duckdb")
    _, rows = execute(con, probe)
    width = len(columns)
    end = len(rows)
    if limit is not None:
        # the rows returned plus the first one left out: a tie across that boundary changes the answer
        end = min(len(rows), _int_literal(root.args.get("offset")) + _int_literal(limit) + 1)
    for i in range(1, end):
        prev, cur = rows[i - 1], rows[i]
        if prev[width:] == cur[width:] and prev[:width] != cur[:width]:
            problems.append(f"rows {i - 1} and {i} tie on the ORDER BY keys {cur[width:]!r} but differ")
            break
    return problems


def reversed_copy(path: str | Path) -> duckdb.DuckDBPyConnection:
    """An in-memory copy of the database with every table stored in reverse key order.

    Args:
        path: The built database.

    Returns:
        An open connection (the caller closes it).
    """
    con = duckdb.connect()
    quoted = str(path).replace("'", "''")
    con.execute(f"ATTACH '{quoted}' AS src (READ_ONLY)")
    for table, key in TABLE_KEYS.items():
        desc = ", ".join(f"{k.strip()} DESC" for k in key.split(","))
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM src.{table} ORDER BY {desc}")
    con.execute("DETACH src")
    # a different thread count changes how parallel operators interleave rows
    con.execute("SET threads = 1")
    return con
