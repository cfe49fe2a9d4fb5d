"""The ``missing_measure`` kind of ambiguity.

A superlative or comparison whose measure is missing, on a table whose rows rank two or more ways.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.routers.support.ambiguity._kinds import Ambiguity
from routerlab.routers.support.ambiguity._words import (
    GENERIC,
    TIME_WORDS,
    history_says,
    history_tables,
    identifier_words,
    named_tables,
    related,
    request_words,
    table_words,
    word_forms,
)

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.db.database import TableInfo
    from routerlab.agents.turn_history import Turn

__all__ = ["detect"]


_VAGUE_MEASURE = re.compile(
    r"\b(?P<w>best|worst|better|worse|top|bottom|greatest|biggest|largest|smallest|leading|strongest|weakest"
    r"|(?:most|least) (?:popular|successful|important|famous|valuable|impressive|significant))\b",
    re.I,
)


#: a measure named after the comparison ("the top three by capacity", "in terms of earnings")
_MEASURE_NAMED = re.compile(r"\b(by|in terms of|based on|according to|measured by|ranked by|sorted by)\b", re.I)


#: "the most dogs", "fewer concerts": a count of rows is the measure
_COUNT_MEASURE = re.compile(
    r"\b(?:most|fewest|least|more|fewer|highest number of|lowest number of)\s+(?P<n>[a-z]+)", re.I
)


#: what a size adjective measures when the table has such a column
_SIZE_WORDS = frozenset(["capacity", "size", "area", "tonnage", "weight", "population", "volume", "length", "height"])


_SIZE_ADJECTIVES = frozenset(["biggest", "largest", "smallest"])


_NUMERIC_TYPE = re.compile(r"int|real|num|float|double|dec|money", re.I)


def _is_number(value: object) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    try:
        float(str(value))
    except ValueError:
        return False
    return True


def _measures(table: TableInfo, db: Database) -> list[str]:
    """What rows of ``table`` can be ranked by.

    Its numeric columns that are not keys, flags or times, and the number of rows of each table
    that refers to it (``the number of singer_in_concert rows``).
    """
    keys = {fk[0].lower() for fk in table.foreign_keys}
    out: list[str] = []
    for column in table.columns:
        words = identifier_words(column.name)
        if column.primary_key or column.name.lower() in keys or not words:
            continue
        if words[-1] in ("id", "code", "number", "no", "yn") or words[0] in ("is", "has") or set(words) & TIME_WORDS:
            continue
        examples = [v for v in column.examples if v is not None]
        if examples and {str(v) for v in examples} <= {"0", "1"}:
            continue  # a flag stored as 0/1 ranks nothing
        numeric = bool(_NUMERIC_TYPE.search(column.type or "")) or (bool(examples) and all(map(_is_number, examples)))
        if numeric:
            out.append(f"{table.name}.{column.name}")
    for other in db.tables():
        if other.name != table.name and any(fk[1].lower() == table.name.lower() for fk in other.foreign_keys):
            out.append(f"the number of {other.name} rows")
    return out


def detect(text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """A comparison or superlative whose measure is missing (AMBROSIA's vagueness).

    PRACTIQ's ambiguous filter criteria: "the best singers", "the top ones", "the most popular
    stadium" with nothing saying by what, on a table whose rows can be ranked two or more ways.

    The measure is named when the request says "by ..." or "in terms of ...", counts rows ("the
    most concerts"), uses a word of one of the table's measures ("the best finish" beside
    ``Best_Finish``), or puts a size adjective on a table with a size column ("the largest stadium",
    ``Capacity``); an earlier turn that used one of the measures settles it too. The table is the
    one the request names, else the one the conversation is about; with neither, nothing is asked.
    """
    m = _VAGUE_MEASURE.search(text)
    if m is None or _MEASURE_NAMED.search(text):
        return []
    words = request_words(text)
    tables = named_tables(words, db) or history_tables(history, db)[-1:]
    if len(tables) != 1:
        return []  # no table, or several: which_table and the schema check speak to those
    table = tables[0]
    count = _COUNT_MEASURE.search(text)
    if count and any(word_forms(count.group("n")) & set().union(*table_words(t.name)) for t in db.tables()):
        return []  # "the most concerts": counted
    candidates = _measures(table, db)
    column_words: set[str] = set()
    for c in candidates:
        if "." in c:
            parts = identifier_words(c.split(".", 1)[1])
            # "Average" is a measure of its own; in ``average_age`` the word is the aggregate
            column_words |= set(parts) if len(parts) == 1 else set(parts) - GENERIC
    if any(related(w, c) for w in words for c in column_words):
        return []  # "the best finish", "the greatest earnings": a measure named
    vague = m.group("w").lower()
    if vague in _SIZE_ADJECTIVES and column_words & _SIZE_WORDS:
        return []  # "the largest stadium": its capacity
    if any(history_says(history, c.split(".", 1)[1]) for c in candidates if "." in c):
        return []  # the conversation has been about one of them
    if len(candidates) < 2:
        return []  # one way to rank them, or none: nothing to choose
    shown = candidates[:5]
    listed = ", ".join(shown[:-1]) + f" or {shown[-1]}"
    return [Ambiguity("missing_measure", m.group(0), f"'{m.group(0)}' by which measure: {listed}?")]
