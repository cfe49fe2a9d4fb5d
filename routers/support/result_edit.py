"""Whether a change request edits the result shown or the data stored (issue 49).

Real users say update, change, modify, add, remove about the result they see far more often than
about the database: "could you update that table so it shows their ages too?" asks for another
column of the last answer. A request is read as an edit of the shown result only on evidence:

* the conversation has a result to edit (an earlier turn whose SQL ran);
* the thing it changes is not stored data: the object of its change verb (the words up to the
  next clause boundary) names no table of the turn's database, and the request states no new
  value for anything (``to 30``, ``= 'x'``, ``to "Bob"``).

Without that evidence the request keeps whatever its router decided (a refusal for a write; a
quoted write statement is refused by the ``write_sql`` rule, which ranks above this check).
Answering an edit with SQL can never change stored data either way: the SQL guard runs every
statement read-only and refuses writes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from routerlab.agents.tools.text import normalise_request
from routerlab.agents.turn_history import Turn, last_data_turn

__all__ = ["CHANGE_VERB", "edits_the_result", "new_value", "written_tables"]

#: the verbs of a change request (what the ``unsafe_verb`` rule reads as a write)
CHANGE_VERB = re.compile(
    r"\b(update|change|modify|set|overwrite|rename|alter|add|remove|delete|drop|insert|edit|replace)\b", re.I
)

#: where the object of a verb ends: a clause boundary (a conjunction, a purpose "so"/"to"/"in order
#: to", a relative pronoun, punctuation). Grammar, not vocabulary: it decides how far the object
#: reaches, never whether a request is an edit.
_CLAUSE_END = re.compile(r"[,.;:?!]|\b(so|to|that|which|who|with|and|but|because|please|in order)\b", re.I)

#: a new value stated for something: ``to 30``, ``to 'x'``, ``to "Bob"``, ``= 5``, ``as 2.5``
_NEW_VALUE = re.compile(r"(\b(to|as|into)\s+|=\s*)(-?\d+(\.\d+)?\b|'[^']*'|\"[^\"]*\")", re.I)

_WORD = re.compile(r"[a-z0-9]+")


def _stem(word: str) -> str:
    # plural and singular name the same table ("singers" / "singer", "classes" / "class")
    for suffix in ("es", "s"):
        if len(word) > 3 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def _words(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower().replace("_", " "))]


def _names(words: list[str], name: list[str]) -> bool:
    """Whether ``name`` (a table's words) occurs as a run of ``words``."""
    n = len(name)
    return n > 0 and any(words[i : i + n] == name for i in range(len(words) - n + 1))


def written_tables(text: str, db: Any) -> list[str]:
    """The tables of ``db`` named as the object of a change verb in ``text`` (the write targets).

    The object runs from each change verb to the next clause boundary: in "delete all rows from
    the revenue table" it is "all rows from the revenue table" (a target, ``revenue``); in
    "update that table so it shows their ages" it is "that table" (no table of the schema).
    """
    tables = [(t.name, _words(t.name)) for t in db.tables()]
    found: list[str] = []
    for verb in CHANGE_VERB.finditer(text):
        rest = text[verb.end() :]
        end = _CLAUSE_END.search(rest)
        words = _words(rest[: end.start()] if end else rest)
        found += [name for name, key in tables if _names(words, key) and name not in found]
    return found


def new_value(text: str) -> bool:
    """Whether the request states a new value (a number or quoted text after ``to``/``as``/``=``)."""
    return _NEW_VALUE.search(text) is not None


def edits_the_result(text: str, db: Any, history: Sequence[Turn]) -> bool:
    """True when a change request is, on the evidence, a request to change the result shown.

    Args:
        text: The request.
        db: The turn's database (None: no evidence, False).
        history: The conversation's earlier turns (no earlier result: False).
    """
    if db is None or last_data_turn(history) is None:
        return False
    text = normalise_request(text)
    if CHANGE_VERB.search(text) is None:
        return False
    return not written_tables(text, db) and not new_value(text)
