"""A small SQLite file shared by threads and processes: the on-disk caches' storage."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

__all__ = ["SharedSqliteFile"]


class SharedSqliteFile:
    """One connection per thread to a SQLite file in WAL mode, created with ``schema`` on first use.

    sqlite3 connections must not cross threads; WAL mode and a busy timeout let parallel runs
    (threads or processes) read and write the same file.

    Args:
        path: The file (its directory is created on first use).
        schema: ``CREATE TABLE IF NOT EXISTS ...`` statement(s) run when a connection opens.
        timeout_s: How long a writer waits for another writer's lock.
    """

    def __init__(self, path: Path, schema: str, *, timeout_s: float = 5.0) -> None:
        self.path, self.schema, self.timeout_s = path, schema, timeout_s
        self._local = threading.local()

    def connection(self) -> sqlite3.Connection:
        """The calling thread's connection.

        Raises:
            sqlite3.Error, OSError: The file or its directory cannot be opened or created.
        """
        con = getattr(self._local, "con", None)
        if con is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=self.timeout_s)
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(self.schema)
            self._local.con = con
        return con
