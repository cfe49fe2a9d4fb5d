"""The ``id_without_table`` kind of ambiguity.

An id with no table ("the record with id 7") that several tables hold as a key.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.agents.db import database
from routerlab.agents.errors import RouterlabError
from routerlab.routers.support.ambiguity._kinds import Ambiguity
from routerlab.routers.support.ambiguity._reads import quote
from routerlab.routers.support.ambiguity._words import history_tables, identifier_words, named_tables, request_words

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.db.database import TableInfo
    from routerlab.agents.turn_history import Turn

__all__ = ["detect"]


_BARE_ID = re.compile(r"(?:\b(?:id|identifier|number|no\.?)\s*(?:of\s+|=\s*|is\s+)?|#\s*)(?P<v>\d+)\b", re.I)


def _id_columns(table: TableInfo) -> list[str]:
    return [
        c.name
        for c in table.columns
        if c.primary_key or (identifier_words(c.name) and identifier_words(c.name)[-1] in ("id", "number"))
    ]


def detect(text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """An id with no table (English Query's unique-ID clarification; AmbiQT's table ambiguity).

    "Show the record with id 7" when several tables hold a row whose own key is 7.

    A table named in the request ("the dog with id 7"), or one an earlier data turn read, settles
    it; a number that only one table holds as a key is no choice either.
    """
    m = _BARE_ID.search(text)
    if m is None:
        return []
    words = request_words(text)
    if named_tables(words, db) or history_tables(history, db):
        return []
    value = int(m.group("v"))
    holders: list[str] = []
    for table in db.tables():
        own = [c.name for c in table.columns if c.primary_key] or _id_columns(table)[:1]
        for column in own:
            try:
                sql = f"SELECT 1 FROM {quote(table.name)} WHERE {quote(column)} = {value} LIMIT 1"
                rows = db.execute(sql, timeout_s=database.PROBE_TIMEOUT_S, max_rows=1).rows
            except RouterlabError:
                continue
            if rows:
                holders.append(f"{table.name}.{column}")
                break
    if len(holders) < 2:
        return []
    shown = holders[:5]
    listed = ", ".join(shown[:-1]) + f" or {shown[-1]}"
    return [Ambiguity("id_without_table", m.group(0), f"Which record is '{m.group(0).strip()}': {listed}?")]
