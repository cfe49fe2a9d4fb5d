"""Read-only access to DuckDB and SQLite files: introspection, example values, guarded execution.

Connections: a DuckDB file is opened once per :class:`Database` (read-only, no external access)
and every ``execute`` runs on its own cursor of that connection, which DuckDB makes a separate
connection to the same database instance: threads never share one, and an interrupt stops only
its own query. Opening the file for every statement cost about 20 ms (the catalog is loaded
again whenever the last connection closed); a cursor costs under half a millisecond. A SQLite
file gets one read-only connection per thread, kept for the thread's life. Introspection is
cached per ``Database`` instance under a lock.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import hashlib
import sqlite3
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from routerlab.agents.db.guard import check_sql
from routerlab.agents.errors import DatabaseError, QueryTimeout, SQLExecutionError

__all__ = [
    "PROBE_TIMEOUT_S",
    "ColumnInfo",
    "Database",
    "QueryResult",
    "TableInfo",
    "clear_database_cache",
    "connect_duckdb_readonly",
    "file_digest",
    "open_database",
    "sql_ident",
]

_SQLITE_MAGIC = b"SQLite format 3\x00"

PROBE_TIMEOUT_S = 2.0
"""Seconds one bounded probe of the stored data may run before it is interrupted.

Probes are the fixed read-only queries the checks make (a stored-value scan of one column, a
column's latest date, which tables hold an id), never model-written SQL, whose timeout is
``ToolSettings.sql_timeout_s``. Callers read it at call time (``database.PROBE_TIMEOUT_S``), so
one value bounds every probe.
"""
#: DuckDB settings of every connection: no files, network, or extensions beyond the database
_DUCKDB_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}


@dataclass(frozen=True)
class ColumnInfo:
    """A column: name, declared type, primary-key flag and a few example values."""

    name: str
    type: str
    primary_key: bool = False
    examples: tuple[Any, ...] = ()


@dataclass(frozen=True)
class TableInfo:
    """A table: columns, foreign keys ``(column, ref_table, ref_column)`` and row count."""

    name: str
    columns: tuple[ColumnInfo, ...]
    foreign_keys: tuple[tuple[str, str, str], ...] = ()
    row_count: int = 0


@dataclass
class QueryResult:
    """Rows of one query (capped), with the column names and timing."""

    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    row_count: int = 0
    truncated: bool = False
    elapsed_s: float = 0.0


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _jsonable(v: Any, max_chars: int) -> Any:
    # most cells are plain numbers or short text: answer those before the isinstance ladder
    t = type(v)
    if v is None or t is int or t is float or t is bool:
        return v
    if t is str and len(v) <= max_chars:
        return v
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, _dt.datetime | _dt.date | _dt.time):
        return v.isoformat()
    if isinstance(v, _dt.timedelta):
        return v.total_seconds()
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v)[: max_chars // 2].hex()
    if isinstance(v, str) and len(v) > max_chars:
        return v[:max_chars] + "…"
    if isinstance(v, list | tuple):
        return [_jsonable(x, max_chars) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x, max_chars) for k, x in v.items()}
    if v is None or isinstance(v, bool | int | float | str):
        return v
    return str(v)[:max_chars]


class Database:
    """A read-only database file (DuckDB or SQLite).

    Args:
        path: The file.
        dialect: ``duckdb`` or ``sqlite`` (see :func:`open_database`, which detects it).
    """

    def __init__(self, path: str | Path, dialect: str) -> None:
        self.path = str(Path(path).resolve())
        self.dialect = dialect
        self.db_id = Path(path).stem
        self._tables: list[TableInfo] | None = None
        self._lock = threading.Lock()
        # separate from _lock: introspection holds _lock while it runs queries
        self._anchor_lock = threading.Lock()
        self._anchor: duckdb.DuckDBPyConnection | None = None
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"Database({self.path!r}, dialect={self.dialect!r})"

    def __getstate__(self) -> dict[str, Any]:
        # connections and locks stay in their process; a copy reconnects on first use
        return {"path": self.path, "dialect": self.dialect, "db_id": self.db_id, "_tables": self._tables}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._anchor_lock = threading.Lock()
        self._anchor = None
        self._local = threading.local()

    # -- connections ---------------------------------------------------------------------------
    def _connect(self) -> Any:
        """A read-only connection for the calling thread's next statement (close it after use)."""
        if self.dialect == "duckdb":
            with self._anchor_lock:
                if self._anchor is None:
                    self._anchor = connect_duckdb_readonly(self.path)
                return self._anchor.cursor()
        return _SharedSqlite(self._sqlite())

    def _sqlite(self) -> sqlite3.Connection:
        con = getattr(self._local, "sqlite", None)
        if con is None:
            con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            con.execute("PRAGMA query_only = ON")
            self._local.sqlite = con
        return con

    def close(self) -> None:
        """Close the DuckDB file (open cursors fail afterwards); the next statement reopens it."""
        with self._anchor_lock:
            anchor, self._anchor = self._anchor, None
        if anchor is not None:
            anchor.close()

    def _raw(self, sql: str) -> list[tuple[Any, ...]]:
        """Run trusted introspection SQL (fixed text, never model-written)."""
        con = self._connect()
        try:
            return [tuple(r) for r in con.execute(sql).fetchall()]
        finally:
            con.close()

    # -- introspection -------------------------------------------------------------------------
    def tables(self) -> list[TableInfo]:
        """Tables with columns, keys, example values and row counts (cached)."""
        with self._lock:
            if self._tables is None:
                self._tables = self._introspect()
            return list(self._tables)

    def _introspect(self) -> list[TableInfo]:
        out = []
        for name in self._table_names():
            cols, fks = self._columns(name)
            q = _quote(name)
            count = int(self._raw(f"SELECT count(*) FROM {q}")[0][0])
            cols = tuple(
                ColumnInfo(c.name, c.type, c.primary_key, tuple(self._examples(name, c.name, 3))) for c in cols
            )
            out.append(TableInfo(name, cols, tuple(fks), count))
        return out

    def _table_names(self) -> list[str]:
        if self.dialect == "duckdb":
            rows = self._raw(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                "AND table_type = 'BASE TABLE' ORDER BY table_name"
            )
        else:
            rows = self._raw(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        return [r[0] for r in rows]

    def _columns(self, table: str) -> tuple[list[ColumnInfo], list[tuple[str, str, str]]]:
        if self.dialect == "sqlite":
            q = _quote(table)
            cols = [ColumnInfo(r[1], r[2] or "", bool(r[5])) for r in self._raw(f"PRAGMA table_info({q})")]
            fks = [(r[3], r[2], r[4] or "") for r in self._raw(f"PRAGMA foreign_key_list({q})")]
            return cols, fks
        t = table.replace("'", "''")
        pk: set[str] = set()
        fks = []
        for cols_list, ctype, ref_table, ref_cols in self._raw(
            "SELECT constraint_column_names, constraint_type, referenced_table, referenced_column_names "
            f"FROM duckdb_constraints() WHERE table_name = '{t}'"
        ):
            if ctype == "PRIMARY KEY":
                pk |= set(cols_list)
            elif ctype == "FOREIGN KEY":
                fks += [(c, ref_table, r) for c, r in zip(cols_list, ref_cols or [], strict=False)]
        cols = [
            ColumnInfo(r[0], r[1], r[0] in pk)
            for r in self._raw(
                "SELECT column_name, data_type FROM information_schema.columns "
                f"WHERE table_name = '{t}' AND table_schema = 'main' ORDER BY ordinal_position"
            )
        ]
        return cols, fks

    def _examples(self, table: str, column: str, k: int) -> list[Any]:
        q, c = _quote(table), _quote(column)
        rows = self._raw(
            f"SELECT {c}, count(*) AS n FROM {q} WHERE {c} IS NOT NULL GROUP BY {c} "
            f"ORDER BY n DESC, CAST({c} AS VARCHAR) LIMIT {int(k)}"
        )
        return [_jsonable(r[0], 40) for r in rows]

    def example_values(self, table: str, column: str, k: int = 3) -> list[Any]:
        """Distinct non-null values of a column, most frequent first (ties by text)."""
        return self._examples(table, column, k)

    def schema_text(
        self, tables: list[str] | None = None, example_values: int = 3, *, foreign_keys: bool = True
    ) -> str:
        """Compact CREATE TABLE text with example values, deterministic for the same tables.

        Identifiers are written exactly as the database spells them, quoted when they need it
        (spaces, symbols, reserved words), so a model that copies them writes a valid query.
        A foreign key names its target table as that table is spelt and its target column
        even when the declaration left it implicit (the target's primary key). ``foreign_keys=False``
        leaves the FOREIGN KEY clauses out.
        """
        wanted = None if tables is None else set(tables)
        infos = self.tables()
        by_lower = {t.name.lower(): t for t in infos}
        parts = []
        for t in infos:
            if wanted is not None and t.name not in wanted:
                continue
            items: list[tuple[str, str]] = []
            for c in t.columns:
                note = ""
                if example_values and c.examples:
                    note = "  -- e.g. " + ", ".join(repr(v) for v in c.examples[:example_values])
                decl = f"  {_ident(c.name)} {c.type}".rstrip()
                items.append((decl + (" PRIMARY KEY" if c.primary_key else ""), note))
            for col, ref_t, ref_c in dict.fromkeys(t.foreign_keys if foreign_keys else ()):  # SQLite lists some twice
                target = by_lower.get(ref_t.lower())
                if target is not None:
                    ref_t = target.name
                    if not ref_c:
                        ref_c = next((c.name for c in target.columns if c.primary_key), "")
                ref = f"{_ident(ref_t)}({_ident(ref_c)})" if ref_c else _ident(ref_t)
                items.append((f"  FOREIGN KEY ({_ident(col)}) REFERENCES {ref}", ""))
            body = "\n".join(f"{d}{',' if i < len(items) - 1 else ''}{n}" for i, (d, n) in enumerate(items))
            parts.append(f"CREATE TABLE {_ident(t.name)} (  -- {t.row_count} rows\n{body}\n);")
        return "\n".join(parts)

    # -- execution -----------------------------------------------------------------------------
    def execute(
        self, sql: str, *, timeout_s: float = 10.0, max_rows: int = 1000, max_cell_chars: int = 2000
    ) -> QueryResult:
        """Guard, then run ``sql`` read-only with a timeout that interrupts the query.

        Raises:
            GuardViolation: The statement is not a single read-only query.
            QueryTimeout: It ran past ``timeout_s`` and was interrupted.
            SQLExecutionError: The engine rejected it (the engine's own message).
        """
        statement = check_sql(sql, self.dialect)
        con = self._connect()
        start = time.perf_counter()
        timed_out = threading.Event()
        timer: threading.Timer | None = None
        try:
            if self.dialect == "duckdb":

                def _interrupt() -> None:
                    timed_out.set()
                    con.interrupt()

                timer = threading.Timer(timeout_s, _interrupt)
                timer.daemon = True
                timer.start()
            else:
                deadline = start + timeout_s

                def _progress() -> int:
                    if time.perf_counter() > deadline:
                        timed_out.set()
                        return 1  # non-zero aborts the running statement
                    return 0

                con.set_progress_handler(_progress, 10_000)
            try:
                cur = con.execute(statement)
                columns = [d[0] for d in (cur.description or [])]
                fetched = cur.fetchmany(max_rows + 1)
            except (duckdb.Error, sqlite3.Error) as exc:
                if timed_out.is_set():
                    raise QueryTimeout(timeout_s, statement) from None
                raise SQLExecutionError(str(exc).strip(), statement) from None
            truncated = len(fetched) > max_rows
            rows = [[_jsonable(v, max_cell_chars) for v in r] for r in fetched[:max_rows]]
            return QueryResult(
                columns=columns,
                rows=rows,
                row_count=len(rows),
                truncated=truncated,
                elapsed_s=time.perf_counter() - start,
            )
        finally:
            if timer is not None:
                timer.cancel()
            con.close()


class _SharedSqlite:
    """A thread's kept SQLite connection, lent for one statement: ``close`` only returns it."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self._con = con

    def execute(self, sql: str) -> sqlite3.Cursor:
        return self._con.execute(sql)

    def set_progress_handler(self, handler: Any, n: int) -> None:
        self._con.set_progress_handler(handler, n)

    def close(self) -> None:
        # the handler of an earlier statement must not abort the next one on this connection
        self._con.set_progress_handler(None, 0)


def connect_duckdb_readonly(path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only DuckDB connection with external access and extension loading off.

    Every read-only open of a file in this process must use these same settings: DuckDB refuses
    a second connection to one file with a different configuration.
    """
    return duckdb.connect(str(path), read_only=True, config=dict(_DUCKDB_CONFIG))


#: words that cannot stand as bare identifiers in SQLite or DuckDB (the common ones in real schemas)
_RESERVED = frozenset(
    {
        *("ALL", "AND", "AS", "ASC", "BETWEEN", "BY", "CASE", "CAST", "CHECK", "COLLATE", "COLUMN"),
        *("CONSTRAINT", "CREATE", "CROSS", "DEFAULT", "DELETE", "DESC", "DISTINCT", "DROP", "ELSE", "END"),
        *("EXCEPT", "EXISTS", "FOREIGN", "FROM", "FULL", "GROUP", "HAVING", "IN", "INDEX", "INNER", "INSERT"),
        *("INTERSECT", "INTO", "IS", "JOIN", "KEY", "LEFT", "LIKE", "LIMIT", "NATURAL", "NOT", "NULL"),
        *("OFFSET", "ON", "OR", "ORDER", "OUTER", "PRIMARY", "REFERENCES", "RIGHT", "SELECT", "SET"),
        *("TABLE", "THEN", "TO", "UNION", "UNIQUE", "UPDATE", "USING", "VALUES", "WHEN", "WHERE", "WITH"),
    }
)


def sql_ident(name: str) -> str:
    """``name`` as a query must write it: bare when it is a plain word, else double-quoted."""
    return _ident(name)


def _ident(name: str) -> str:
    """``name`` as a query must write it: bare when it is a plain word, else double-quoted."""
    plain = bool(name) and name.isascii() and (name[0].isalpha() or name[0] == "_")
    if plain and all(ch.isalnum() or ch == "_" for ch in name) and name.upper() not in _RESERVED:
        return name
    return _quote(name)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_OPENED: OrderedDict[tuple[str, int, int], Database] = OrderedDict()
_OPENED_LOCK = threading.Lock()
_OPENED_MAX = 64


def clear_database_cache() -> None:
    """Close and forget every opened database (their introspection is redone on next use)."""
    with _OPENED_LOCK:
        opened = list(_OPENED.values())
        _OPENED.clear()
    for db in opened:
        db.close()


def open_database(path: str | Path) -> Database:
    """Open a DuckDB or SQLite file read-only, detecting the format from its first bytes.

    The same unchanged file gives the same :class:`Database` object, so its introspection
    (tables, keys, example values) runs once per process, not once per request: profiling
    ``routerlab perf`` showed it dominating the harness when every example re-opened the file.
    A file whose size or modification time changed is opened afresh.

    Raises:
        DatabaseError: Missing file, or neither SQLite nor DuckDB.
    """
    p = Path(path)
    if p.is_file():
        st = p.stat()
        key = (str(p.resolve()), st.st_mtime_ns, st.st_size)
        with _OPENED_LOCK:
            if key in _OPENED:
                _OPENED.move_to_end(key)
                return _OPENED[key]
        db = _open(p)
        with _OPENED_LOCK:
            _OPENED[key] = db
            while len(_OPENED) > _OPENED_MAX:
                _OPENED.popitem(last=False)
        return db
    return _open(p)


def _open(p: Path) -> Database:
    if not p.is_file():
        raise DatabaseError(
            f"database file not found: {p}",
            expected="an existing DuckDB or SQLite file",
            found="no such file" if not p.exists() else "a directory",
            fix="check the path (for Spider/BIRD: database/<db_id>/<db_id>.sqlite)",
        )
    with open(p, "rb") as f:
        head = f.read(16)
    if head == _SQLITE_MAGIC:
        return Database(p, "sqlite")
    try:
        connect_duckdb_readonly(p).close()
    except duckdb.Error as exc:
        raise DatabaseError(
            f"not a database file: {p}",
            expected="a DuckDB or SQLite file",
            found=f"{head[:8]!r}... ({str(exc).splitlines()[0][:120]})",
            fix="point to the .duckdb / .sqlite file itself",
        ) from None
    return Database(p, "duckdb")
