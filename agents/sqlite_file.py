"""A small SQLite file shared by threads and processes: the on-disk caches' storage."""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

__all__ = ["SharedSqliteFile"]

# Opening a new file races other openers on the WAL switch and the schema; SQLite reports some
# of those conflicts at once instead of calling the busy handler, so opening is retried
_OPEN_ATTEMPTS = 8


class SharedSqliteFile:
    """One connection per thread to a SQLite file in WAL mode, created with ``schema`` on first use.

    sqlite3 connections must not cross threads; WAL mode and a busy timeout let parallel runs
    (threads or processes) read and write the same file. Reads fetch everything and close their
    cursor, and writes take the write lock up front (``BEGIN IMMEDIATE``): a connection holding
    an old read snapshot cannot upgrade to a writer, and SQLite refuses that case without waiting.

    Args:
        path: The file (its directory is created on first use).
        schema: ``CREATE TABLE IF NOT EXISTS ...`` statement(s) run when a connection opens.
        timeout_s: How long a writer waits for another writer's lock.
    """

    def __init__(self, path: Path, schema: str, *, timeout_s: float = 5.0) -> None:
        self.path, self.schema, self.timeout_s = path, schema, timeout_s
        self._local = threading.local()

    def connection(self) -> sqlite3.Connection:
        """The calling thread's connection (autocommit; :meth:`write` opens transactions).

        Raises:
            sqlite3.Error, OSError: The file or its directory cannot be opened or created.
        """
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._open()
            self._local.con = con
        return con

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for attempt in range(_OPEN_ATTEMPTS):
            con = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None)
            try:
                con.execute("PRAGMA journal_mode=WAL").fetchall()
                con.executescript(self.schema)
                return con
            except sqlite3.OperationalError:
                con.close()
                if attempt == _OPEN_ATTEMPTS - 1:
                    raise
                time.sleep(0.01 * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def read_one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        """The first row of a query (or None), with the cursor closed before returning.

        Raises:
            sqlite3.Error, OSError: The file cannot be opened or read.
        """
        with closing(self.connection().execute(sql, params)) as cursor:
            rows = cursor.fetchall()
        return rows[0] if rows else None

    def write(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        """Run one statement in its own transaction, waiting up to ``timeout_s`` for the write lock.

        Raises:
            sqlite3.Error, OSError: The file cannot be opened or written.
        """
        con = self.connection()
        con.execute("BEGIN IMMEDIATE")
        try:
            con.execute(sql, params)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
