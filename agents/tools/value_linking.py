"""Value-aware linking: the values a question names, found in the columns that hold them.

A question that names a value ("countries in Asia", "cars made by 'ford'") is answered right
only when the query filters the column that holds it, and a model shown only a few example values
per column guesses that column, often wrongly (issue 40: the independent plain call won where its
example values happened to show which column holds 'Asia'). BRIDGE (Lin et al., 2020) and the
schema-linking steps after it (RESDSQL, Li et al., 2023; CHESS, Talaei et al., 2024) match the
question's words against the database's cell values and show the matches to the model. This module
does that for the words most likely to be values: quoted strings, capitalised words and phrases
that are not function words, and numbers. Each is looked up in an index of the distinct values of
the database's text columns, built once per database file with bounded, LIMITed scans, and each
match becomes one note the SQL sub-agent reads ("'Asia' is a value of country.Continent.").

Nothing here calls a model; every scan is a guarded read-only query with a short timeout.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from routerlab.agents.db import sql_ident
from routerlab.agents.errors import ToolError
from routerlab.agents.lexicon import FUNCTION_WORDS

if TYPE_CHECKING:
    from routerlab.agents.db import Database

__all__ = ["ValueHit", "ValueIndex", "question_values", "value_hits", "value_index", "value_notes_text"]

#: distinct values read per text column (a LIMITed scan; a column with more is a name or a text
#: field whose remaining values the index simply does not hold)
_PER_COLUMN = 5000
#: values held per database in all (bounds the index's memory on a wide database)
_PER_DATABASE = 200_000
#: a stored value longer than this is prose (a description), not a value a question names
_VALUE_CHARS = 80
#: seconds one column's scan may take before it is skipped
_SCAN_TIMEOUT_S = 2.0
#: values taken from one question, columns named per value, and databases kept indexed
_MAX_VALUES = 6
_MAX_COLUMNS_PER_VALUE = 3
_MAX_DATABASES = 16
#: a value shorter than this is only matched whole (a substring match of "A" means nothing)
_MIN_CONTAINED = 4
_TEXT_TYPES = ("CHAR", "TEXT", "CLOB", "STRING", "VARCHAR")

_QUOTED = re.compile(r"'([^']{1,80})'|\"([^\"]{1,80})\"|“([^”]{1,80})”|‘([^’]{1,80})’")
_CAPITALISED = re.compile(r"[A-Z][\w.&'-]*(?:\s+[A-Z][\w.&'-]*)*")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


@dataclass(frozen=True)
class ValueHit:
    """A value the question names, found in a column.

    Attributes:
        value: The value as the question writes it.
        table: The table of the column that holds it.
        column: The column.
        stored: The value as the database stores it (its spelling and case).
        whole: The stored value equals the question's (ignoring case); False: it contains it.
    """

    value: str
    table: str
    column: str
    stored: str
    whole: bool = True

    def note(self) -> str:
        """The line the SQL sub-agent reads."""
        where = f"{sql_ident(self.table)}.{sql_ident(self.column)}"
        return f"{self.stored!r} is a value of {where}."


def question_values(question: str) -> list[str]:
    """The words of ``question`` most likely to be values, in order, at most six.

    Quoted strings first, then capitalised words and phrases (function words at their ends
    dropped: "What", "The"), then numbers of two digits or more. The first word of a sentence is capitalised anyway, so
    it counts only when it is not a function word.
    """
    out: list[str] = []
    quoted_spans: list[tuple[int, int]] = []
    for m in _QUOTED.finditer(question):
        out.append(next(g for g in m.groups() if g is not None).strip())
        quoted_spans.append(m.span())
    for m in _CAPITALISED.finditer(question):
        if any(a <= m.start() < b for a, b in quoted_spans):
            continue
        words = m.group(0).split()
        while words and words[0].lower().strip(".'") in FUNCTION_WORDS:
            words.pop(0)
        while words and words[-1].lower().strip(".'") in FUNCTION_WORDS:
            words.pop()
        if words:
            out.append(" ".join(words).rstrip(".'"))
    # a one-digit number is nearly always a quantity ("the 3 oldest", "more than 2"), not a
    # stored value, and one-digit codes are in many text columns: looking it up adds only noise
    out += [m.group(0) for m in _NUMBER.finditer(question) if len(m.group(0).replace(".", "")) > 1]
    return [v for v in dict.fromkeys(v for v in out if v)][:_MAX_VALUES]


class ValueIndex:
    """The distinct values of a database's text columns, by lower-cased text.

    Built with one ``SELECT DISTINCT col ... LIMIT n`` per text column (each guarded, with a
    timeout); a column whose scan fails or times out is left out rather than waited for.
    """

    def __init__(self, db: Database) -> None:
        self.by_text: dict[str, list[tuple[str, str, str]]] = {}
        held = 0
        for t in db.tables():
            for c in t.columns:
                if held >= _PER_DATABASE or not any(k in (c.type or "").upper() for k in _TEXT_TYPES):
                    continue
                col, tab = sql_ident(c.name), sql_ident(t.name)
                sql = f"SELECT DISTINCT {col} FROM {tab} WHERE {col} IS NOT NULL LIMIT {_PER_COLUMN}"
                try:
                    rows = db.execute(sql, timeout_s=_SCAN_TIMEOUT_S, max_rows=_PER_COLUMN, max_cell_chars=200).rows
                except ToolError:
                    continue
                for (value,) in rows:
                    text = str(value).strip()
                    if text and len(text) <= _VALUE_CHARS:
                        self.by_text.setdefault(text.lower(), []).append((t.name, c.name, text))
                        held += 1

    def lookup(self, value: str) -> list[ValueHit]:
        """The columns holding ``value``: whole matches (any case), else values containing it as words."""
        key = value.strip().lower()
        whole = self.by_text.get(key, [])
        if whole:
            return [ValueHit(value, t, c, s) for t, c, s in whole[:_MAX_COLUMNS_PER_VALUE]]
        if len(key) < _MIN_CONTAINED:
            return []
        pattern = re.compile(rf"(?<!\w){re.escape(key)}(?!\w)")
        hits: list[ValueHit] = []
        seen: set[tuple[str, str]] = set()
        for text, places in self.by_text.items():
            if pattern.search(text) is None:
                continue
            for t, c, s in places:
                if (t, c) not in seen:  # one example per column: the note names where, not every match
                    seen.add((t, c))
                    hits.append(ValueHit(value, t, c, s, whole=False))
            if len(hits) >= _MAX_COLUMNS_PER_VALUE:
                break
        return hits[:_MAX_COLUMNS_PER_VALUE]


_INDEXES: OrderedDict[tuple[str, int, int], ValueIndex] = OrderedDict()
_LOCK = threading.Lock()


def value_index(db: Database) -> ValueIndex:
    """The value index of ``db``, built on first use and kept per database file (LRU, 16 files).

    The key is the file's path, size and modification time, so a database rewritten in place is
    indexed again.
    """
    try:
        st = os.stat(db.path)
        key = (db.path, st.st_size, st.st_mtime_ns)
    except OSError:
        key = (db.path, 0, 0)
    with _LOCK:
        found = _INDEXES.get(key)
        if found is not None:
            _INDEXES.move_to_end(key)
            return found
    built = ValueIndex(db)  # outside the lock: another database's lookups need not wait
    with _LOCK:
        _INDEXES[key] = built
        while len(_INDEXES) > _MAX_DATABASES:
            _INDEXES.popitem(last=False)
    return built


def value_hits(db: Database, question: str) -> list[ValueHit]:
    """Every column holding a value ``question`` names (:func:`question_values`), in question order."""
    index = value_index(db)
    return [hit for value in question_values(question) for hit in index.lookup(value)]


def value_notes_text(notes: list[str]) -> str:
    """The hint line(s) generate_sql adds for the notes ("" for none)."""
    if not notes:
        return ""
    return "Values the question names, as the database stores them: " + " ".join(notes)
