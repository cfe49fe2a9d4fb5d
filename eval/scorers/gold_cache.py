"""Gold query results kept on disk, so scoring a dataset again does not re-run its gold SQL.

A gold result depends only on the database's content, the SQL and the row caps, so it is shared
by every run and every router on the same dataset. The key names the database file by its
resolved path, size and modification time (in nanoseconds): a rebuilt or edited file is a new
key, and hashing a multi-gigabyte BIRD database per lookup is avoided. Only successful results
are kept; a gold query that fails is retried by the next run.

The file is SQLite in WAL mode with a busy timeout, so parallel runs (threads or processes) can
share it. Writing is best effort: a cache that cannot be written costs speed, never a score.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routerlab.agents.db import QueryResult
from routerlab.agents.paths import cache_root
from routerlab.agents.sqlite_file import SharedSqliteFile

__all__ = ["CachedGold", "GoldCache", "default_gold_cache_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS gold (
    db_path TEXT NOT NULL,
    db_size INTEGER NOT NULL,
    db_mtime_ns INTEGER NOT NULL,
    sql TEXT NOT NULL,
    max_rows INTEGER NOT NULL,
    columns TEXT NOT NULL,
    rows TEXT NOT NULL,
    truncated INTEGER NOT NULL,
    ordered INTEGER NOT NULL,
    PRIMARY KEY (db_path, db_size, db_mtime_ns, sql, max_rows)
)
"""


@dataclass(frozen=True)
class CachedGold:
    """A gold result and whether its outermost query orders the rows."""

    result: QueryResult
    ordered: bool


def default_gold_cache_path() -> Path:
    """``<cache root>/gold/results.sqlite`` (see :func:`routerlab.agents.paths.cache_root`)."""
    return cache_root() / "gold" / "results.sqlite"


def _file_key(db_path: str) -> tuple[str, int, int] | None:
    try:
        st = Path(db_path).stat()
    except OSError:
        return None
    return str(Path(db_path).resolve()), st.st_size, st.st_mtime_ns


class GoldCache:
    """Gold results on disk, keyed by database file identity, SQL and row cap.

    Args:
        path: The SQLite file (created with its directory on first write).
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_gold_cache_path()
        self._file = SharedSqliteFile(self.path, _SCHEMA)

    def get(self, db_path: str, sql: str, max_rows: int) -> CachedGold | None:
        """The stored result, or None (also when the cache cannot be read)."""
        key = _file_key(db_path)
        if key is None:
            return None
        try:
            row = self._file.read_one(
                "SELECT columns, rows, truncated, ordered FROM gold WHERE db_path = ? AND db_size = ? "
                "AND db_mtime_ns = ? AND sql = ? AND max_rows = ?",
                (*key, sql, max_rows),
            )
        except (sqlite3.Error, OSError):
            return None
        if row is None:
            return None
        columns, rows = json.loads(row[0]), json.loads(row[1])
        result = QueryResult(columns=columns, rows=rows, row_count=len(rows), truncated=bool(row[2]))
        return CachedGold(result, bool(row[3]))

    def put(self, db_path: str, sql: str, max_rows: int, gold: CachedGold) -> bool:
        """Store a result; returns False when it could not be written (the caller carries on)."""
        key = _file_key(db_path)
        if key is None:
            return False
        try:
            self._file.write(
                "INSERT OR REPLACE INTO gold VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    *key,
                    sql,
                    max_rows,
                    json.dumps(gold.result.columns),
                    _dumps_rows(gold.result.rows),
                    int(gold.result.truncated),
                    int(gold.ordered),
                ),
            )
        except (sqlite3.Error, OSError):
            return False
        return True

    def __len__(self) -> int:
        try:
            row = self._file.read_one("SELECT count(*) FROM gold")
            return int(row[0]) if row else 0
        except (sqlite3.Error, OSError):
            return 0


def _dumps_rows(rows: list[list[Any]]) -> str:
    # Database.execute already made every value JSON-native (numbers, text, bools, None), so a
    # round trip keeps int vs float and therefore the EX comparison
    return json.dumps(rows)
