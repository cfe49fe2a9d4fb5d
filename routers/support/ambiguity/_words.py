"""What several ambiguity kinds read in a request, its schema's names and the conversation."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.agents.lexicon import split_identifier, stem, word_stems

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.db.database import TableInfo
    from routerlab.agents.turn_history import Turn

__all__ = [
    "ABSOLUTE",
    "GENERIC",
    "NAME",
    "NOUN",
    "TIME_WORDS",
    "has_data_turn",
    "history_says",
    "history_tables",
    "identifier_words",
    "mentioned",
    "named_tables",
    "related",
    "request_words",
    "singular_table",
    "table_words",
    "word_forms",
]


#: a year or a calendar date pins the period, whatever else the request says
ABSOLUTE = re.compile(
    r"\b(19|20)\d\d\b|\b\d{1,2}(st|nd|rd|th)?\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
    r"|\b(jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b",
    re.I,
)


#: a run of capitalised words (a name), not at the start of a sentence, outside quotes
NAME = re.compile(r"(?<![.?!]\s)(?<!^)(?<![\w'\"])([A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)(?=(?:'s)?(?:[^\w'\"]|$))")


#: a pronoun after a noun that can be its antecedent inside the request ("singers and their ages")
NOUN = re.compile(r"[a-z][a-z0-9_-]+", re.I)


#: words that name no attribute of their own (functions, keys, quantities)
GENERIC = frozenset(["number", "id", "code", "count", "total", "average", "sum", "type", "no", "yn", "info", "list"])


TIME_WORDS = frozenset(["date", "time", "year", "day", "month", "created", "timestamp"])


def word_forms(word: str) -> set[str]:
    """Stems of ``word`` and of its singular forms: the stemmer keeps "branches" as "branche"."""
    w = word.lower()
    out = {stem(w)}
    if w.endswith("es") and len(w) > 4:
        out.add(stem(w[:-2]))
    if w.endswith("s") and len(w) > 3:
        out.add(stem(w[:-1]))
    return out


def table_words(name: str) -> list[set[str]]:
    """The forms of each word of a table's name (``serviceAreas``, ``service_areas``: service, area)."""
    return [word_forms(w) for w in re.findall(r"[a-z0-9]+", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower())]


def singular_table(words: str, db: Database) -> TableInfo | None:
    """The table named exactly ``words`` in the singular (``service area``: ``service_areas``)."""
    low = words.lower().split()
    if stem(low[-1]) != low[-1]:
        return None  # plural: "the service areas" means all of them
    for table in db.tables():
        parts = table_words(table.name)
        if len(parts) == len(low) and all(w in forms for w, forms in zip(low, parts, strict=True)):
            return table
    return None


def has_data_turn(history: Sequence[Turn]) -> bool:
    """An earlier turn asked for data (its SQL ran, or it was a data question): what a follow-up builds on."""
    return any(t.get("sql") or t.get("intent") in ("sql", "clarify") for t in history)


def mentioned(words: str, history: Sequence[Turn]) -> bool:
    """Whether an earlier data turn named the head noun of ``words`` (its question, columns or tables)."""
    head = re.findall(r"[a-z0-9]+", words.lower())
    if not head or not has_data_turn(history):
        return False
    said: set[str] = set()
    for t in history:
        parts = [str(t.get("question") or ""), *(t.get("columns") or []), *(t.get("tables") or [])]
        said |= word_stems(" ".join(parts))
    return stem(head[-1]) in said


def identifier_words(name: str) -> list[str]:
    return split_identifier(name)


def related(word: str, other: str) -> bool:
    """Whether two words share a root (``arrival``/``arrived``, ``departure``/``departed``).

    A common prefix of five letters (four for a shorter word), a light stand-in for a lemmatiser.
    """
    if word == other:
        return True
    n = min(len(word), len(other), 5)
    return n >= 4 and word[:n] == other[:n]


def request_words(text: str) -> list[str]:
    return [w.lower() for w in NOUN.findall(text)]


def named_tables(words: Sequence[str], db: Database) -> list[TableInfo]:
    """Tables the request names.

    Every word of the table's name present (any form), or its head word when that word names no
    attribute of its own (``players`` -> ``poker_player``, not ``names`` -> ``car_names``).
    """
    forms = set().union(*(word_forms(w) for w in words)) if words else set()
    out = []
    for table in db.tables():
        parts = table_words(table.name)
        if not parts:
            continue
        whole = all(p & forms for p in parts)
        head = parts[-1] & forms and not (parts[-1] & (GENERIC | {"name", "data", "arrange", "detail"}))
        if whole or head:
            out.append(table)
    return out


def history_tables(history: Sequence[Turn], db: Database) -> list[TableInfo]:
    """The tables the conversation's data turns read (their SQL's tables), oldest first."""
    names = {str(n).lower() for t in history for n in (t.get("tables") or [])}
    return [t for t in db.tables() if t.name.lower() in names]


def history_says(history: Sequence[Turn], column: str) -> bool:
    """Whether an earlier data turn used ``column`` (its SQL or result columns) or named its words."""
    if not has_data_turn(history):
        return False
    low = column.lower()
    for t in history:
        used = " ".join([str(t.get("sql") or ""), *(str(c) for c in (t.get("columns") or []))]).lower()
        if re.search(rf"(?<![\w]){re.escape(low)}(?![\w])", used):
            return True
        said = {w.lower() for w in NOUN.findall(str(t.get("question") or ""))}
        words = [w for w in identifier_words(column) if w not in GENERIC]
        if words and all(any(related(w, s) for s in said) for w in words):
            return True
    return False
