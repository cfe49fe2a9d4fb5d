"""Read-only access to DuckDB and SQLite files: introspection, example values, guarded execution.

Engine instances: every DuckDB engine this module opens is an instance of its own (an in-memory
host with the file attached read-only), with external access, extension loading (autoload,
autoinstall, community extensions) and Python replacement scans off, and its configuration
locked (``lock_configuration``): no statement can change a setting, turn on logging or reach a
file. One :class:`Database` keeps one engine per *scope* (:func:`engine_scope`): the server runs
each user's requests in that user's scope and a run gives each of its workers one, so nothing one
statement does is visible to another user's statements (issue 62: with one shared instance, one
request turned on query logging and read every other user's SQL). Code that sets no scope shares
the process scope.

Within a scope every ``execute`` runs on its own cursor, which DuckDB makes a separate connection
to the scope's instance: threads never share one, and an interrupt stops only its own query.
Opening the file for every statement cost about 20 ms; a cursor costs under half a millisecond.
A SQLite file gets one read-only connection per thread and scope, kept for the thread's life.
Introspection is cached per ``Database`` instance under a lock.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import decimal
import hashlib
import re
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from routerlab.agents.db.guard import check_sql_to_run
from routerlab.agents.errors import DatabaseError, QueryTimeout, SQLExecutionError

__all__ = [
    "PROBE_TIMEOUT_S",
    "ColumnInfo",
    "Database",
    "QueryResult",
    "TableInfo",
    "clear_database_cache",
    "connect_duckdb_readonly",
    "current_engine_scope",
    "engine_scope",
    "file_digest",
    "open_database",
    "scrub_paths",
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
#: DuckDB settings of every engine from its start: no extension is installed or loaded on demand,
#: no Python variable is scanned as a table. External access is turned off (and the configuration
#: locked) once the file is attached: see :func:`connect_duckdb_readonly`.
_DUCKDB_CONFIG = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "python_enable_replacements": False,
}
#: statements that seal an engine once its file is attached, in this order (the lock last)
_SEAL = ("SET enable_external_access = false", "SET lock_configuration = true")
#: catalogue names DuckDB itself uses, which an attached file cannot take
_TAKEN_ALIASES = frozenset({"memory", "system", "temp", "main"})
#: engines one Database keeps (one per scope, least recently used dropped first)
_MAX_SCOPES = 32

_SCOPE: contextvars.ContextVar[str] = contextvars.ContextVar("routerlab_engine_scope", default="process")


@contextlib.contextmanager
def engine_scope(key: str) -> Iterator[str]:
    """Run the block's statements on engines of their own, apart from every other scope's.

    The server enters one scope per user and a run one per worker; threads the block starts
    through ``contextvars`` (LangGraph's node executor does) stay in it.

    Args:
        key: The scope's name (a user id, a worker's name).

    Yields:
        The key.
    """
    token = _SCOPE.set(f"scope:{key}")
    try:
        yield key
    finally:
        _SCOPE.reset(token)


def current_engine_scope() -> str:
    """The scope statements of the calling context run in (``process`` when none was entered)."""
    return _SCOPE.get()


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
        self._engines: OrderedDict[str, duckdb.DuckDBPyConnection] = OrderedDict()
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
        self._engines = OrderedDict()
        self._local = threading.local()

    # -- connections ---------------------------------------------------------------------------
    def _connect(self) -> Any:
        """A read-only connection for the calling thread's next statement (close it after use)."""
        scope = _SCOPE.get()
        if self.dialect == "duckdb":
            with self._anchor_lock:
                engine = self._engines.get(scope)
                if engine is None:
                    engine = self._engines[scope] = connect_duckdb_readonly(self.path)
                    # a dropped engine stays open until its last cursor closes (cursors hold it)
                    while len(self._engines) > _MAX_SCOPES:
                        self._engines.popitem(last=False)
                self._engines.move_to_end(scope)
                cursor = engine.cursor()
            # a cursor is a new connection: it starts in the host's own catalogue, not the file's
            cursor.execute(f"USE {_attached_alias(self.path)}")
            return cursor
        return _SharedSqlite(self._sqlite(scope))

    def _sqlite(self, scope: str) -> sqlite3.Connection:
        connections = self._local.__dict__.setdefault("sqlite", {})
        con = connections.get(scope)
        if con is None:
            con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            con.execute("PRAGMA query_only = ON")
            connections[scope] = con
        return con

    def engine_scopes(self) -> list[str]:
        """The scopes that have a DuckDB engine of this file open, least recently used first."""
        with self._anchor_lock:
            return list(self._engines)

    def close(self) -> None:
        """Close every DuckDB engine of the file (open cursors fail afterwards); the next statement reopens one."""
        with self._anchor_lock:
            engines, self._engines = list(self._engines.values()), OrderedDict()
        for engine in engines:
            engine.close()

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
            bare, fks = self._columns(name)
            q = _quote(name)
            count = int(self._raw(f"SELECT count(*) FROM {q}")[0][0])
            cols = tuple(
                ColumnInfo(c.name, c.type, c.primary_key, tuple(self.example_values(name, c.name))) for c in bare
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

    def example_values(self, table: str, column: str, k: int = 3) -> list[Any]:
        """Distinct non-null values of a column, most frequent first (ties by text)."""
        q, c = _quote(table), _quote(column)
        rows = self._raw(
            f"SELECT {c}, count(*) AS n FROM {q} WHERE {c} IS NOT NULL GROUP BY {c} "
            f"ORDER BY n DESC, CAST({c} AS VARCHAR) LIMIT {int(k)}"
        )
        return [_jsonable(r[0], 40) for r in rows]

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
                decl = f"  {sql_ident(c.name)} {c.type}".rstrip()
                items.append((decl + (" PRIMARY KEY" if c.primary_key else ""), note))
            for col, ref_t, ref_c in dict.fromkeys(t.foreign_keys if foreign_keys else ()):  # SQLite lists some twice
                target = by_lower.get(ref_t.lower())
                if target is not None:
                    ref_t = target.name
                    if not ref_c:
                        ref_c = next((c.name for c in target.columns if c.primary_key), "")
                ref = f"{sql_ident(ref_t)}({sql_ident(ref_c)})" if ref_c else sql_ident(ref_t)
                items.append((f"  FOREIGN KEY ({sql_ident(col)}) REFERENCES {ref}", ""))
            body = "\n".join(f"{d}{',' if i < len(items) - 1 else ''}{n}" for i, (d, n) in enumerate(items))
            parts.append(f"CREATE TABLE {sql_ident(t.name)} (  -- {t.row_count} rows\n{body}\n);")
        return "\n".join(parts)

    # -- execution -----------------------------------------------------------------------------
    def execute(
        self, sql: str, *, timeout_s: float = 10.0, max_rows: int = 1000, max_cell_chars: int = 2000
    ) -> QueryResult:
        """Guard, then run ``sql`` read-only with a timeout that interrupts the query.

        Raises:
            GuardViolation: The statement is not a single read-only query, or calls a function
                that reaches outside the query (see :mod:`routerlab.agents.db.catalogue`).
            QueryTimeout: It ran past ``timeout_s`` and was interrupted.
            SQLExecutionError: The engine rejected it (the engine's own message, paths removed),
                or it calls a function the engine's catalogue does not hold.
        """
        statement = check_sql_to_run(sql, self.dialect)
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
                raise SQLExecutionError(scrub_paths(str(exc).strip()), statement) from None
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


#: an absolute path (POSIX, home-relative or Windows) in an engine's message
_PATH = re.compile(r"""(?<![\w.])(?:~?/|[A-Za-z]:\\)[^\s"'`]*[^\s"'`.,;:)]""")


def scrub_paths(message: str) -> str:
    """``message`` with every absolute path replaced by ``<path>``.

    An engine's error names the files it could not reach (the server user's home DuckDB folder,
    issue 62); a client of the server must see what went wrong, never where the server's files lie.
    """
    return _PATH.sub("<path>", message)


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
    """A read-only DuckDB connection on an engine instance of its own, sealed.

    The file is attached read-only to a fresh in-memory host (``duckdb.connect(path)`` would
    share one instance per file across the process, its settings and logs included); then
    external access is turned off and the configuration locked, so no statement on this engine
    can change a setting, enable logging (whose file storage made DuckDB abort the process, issue
    62), attach, read or write a file, or load an extension. The connection's default catalogue
    is the file; a cursor of it must ``USE`` it (see :meth:`Database._connect`).

    Raises:
        duckdb.Error: The file cannot be attached (not a DuckDB file, unreadable).
    """
    con = duckdb.connect(":memory:", config=dict(_DUCKDB_CONFIG))
    alias = _attached_alias(path)
    try:
        con.execute(f"ATTACH ? AS {alias} (READ_ONLY)", [str(path)])
        con.execute(f"USE {alias}")
        for statement in _SEAL:
            con.execute(statement)
    except BaseException:
        con.close()
        raise
    return con


def _attached_alias(path: str | Path) -> str:
    """The catalogue name the file is attached under: its stem, as DuckDB's own ``connect`` names it."""
    stem = Path(path).stem or "db"
    if stem.lower() in _TAKEN_ALIASES:
        stem = f"{stem}_db"
    return _quote(stem)


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
            # what the engine says, never the file's bytes: /etc/passwd's would print "root:x:0"
            found=f"neither a SQLite header nor a DuckDB file ({type(exc).__name__})",
            fix="point to the .duckdb / .sqlite file itself",
        ) from None
    return Database(p, "duckdb")
