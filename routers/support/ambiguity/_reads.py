"""What the database holds, read for the ambiguity kinds: bounded reads, cached per database file."""

from __future__ import annotations

import datetime as _dt
import re
import threading
from typing import TYPE_CHECKING

from routerlab.agents.db import database
from routerlab.agents.errors import RouterlabError
from routerlab.agents.lexicon import word_stems

if TYPE_CHECKING:
    from routerlab.agents.db import Database

__all__ = ["clear_caches", "latest_date", "quote", "schema_words", "text_values"]


_TEMPORAL_TYPE = re.compile(r"\b(DATE|TIMESTAMP|DATETIME)\b", re.I)


_TEXT_TYPE = re.compile(r"char|text|string|varchar|clob", re.I)


_MAX_COLUMNS = 60


_MAX_VALUES = 2000


_cache_lock = threading.Lock()


_latest: dict[str, _dt.date | None] = {}


_values: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {}


_words: dict[str, frozenset[str]] = {}


def clear_caches() -> None:
    """Forget what the bounded reads cached per database file; the next check reads the file again.

    The caches live for the process, so a check's database calls depend on what ran before it.
    A run that must make the same calls as another (a fault-injected run and its replay with the
    same seed draw the same faults only on the same calls) starts from empty caches.
    """
    with _cache_lock:
        _latest.clear()
        _values.clear()
        _words.clear()


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _as_date(value: object) -> _dt.date | None:
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None


def latest_date(db: Database) -> _dt.date | None:
    """The latest date stored in any DATE/TIMESTAMP column of ``db`` (None: no dated rows).

    One ``MAX`` per typed date column, computed once per database file.
    """
    with _cache_lock:
        if db.path in _latest:
            return _latest[db.path]
    found: _dt.date | None = None
    for table in db.tables():
        for column in table.columns:
            if not _TEMPORAL_TYPE.search(column.type or ""):
                continue
            try:
                sql = f"SELECT MAX({quote(column.name)}) FROM {quote(table.name)}"
                rows = db.execute(sql, timeout_s=database.PROBE_TIMEOUT_S, max_rows=1).rows
            except RouterlabError:
                continue  # an odd column says nothing either way
            day = _as_date(rows[0][0]) if rows else None
            if day is not None and (found is None or day > found):
                found = day
    with _cache_lock:
        _latest[db.path] = found
    return found


def text_values(db: Database) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """``(table, column, distinct values)`` of the text columns of ``db``, bounded, cached per file."""
    with _cache_lock:
        if db.path in _values:
            return _values[db.path]
    out: list[tuple[str, str, tuple[str, ...]]] = []
    for table in db.tables():
        for column in table.columns:
            if len(out) >= _MAX_COLUMNS:
                break
            if column.type and not _TEXT_TYPE.search(column.type):
                continue
            column_sql = f"CAST({quote(column.name)} AS VARCHAR)"
            sql = f"SELECT DISTINCT {column_sql} FROM {quote(table.name)} LIMIT {_MAX_VALUES + 1}"
            try:
                rows = db.execute(sql, timeout_s=database.PROBE_TIMEOUT_S, max_rows=_MAX_VALUES + 1).rows
            except RouterlabError:
                continue
            if len(rows) > _MAX_VALUES:
                continue  # free text (descriptions, notes): its words are not names to pick from
            out.append((table.name, column.name, tuple(str(r[0]) for r in rows if r and r[0] is not None)))
    result = tuple(out)
    with _cache_lock:
        _values[db.path] = result
    return result


def schema_words(db: Database) -> frozenset[str]:
    """Stems of table and column names only (no values): the nouns a request can point at (cached per file)."""
    with _cache_lock:
        if db.path in _words:
            return _words[db.path]
    words: set[str] = set()
    for table in db.tables():
        words |= word_stems(table.name)
        for column in table.columns:
            words |= word_stems(column.name)
    with _cache_lock:
        _words[db.path] = frozenset(words)
    return _words[db.path]
