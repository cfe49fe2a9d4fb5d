"""``which_column``: the request's noun is the head of two or more columns of one table."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.agents.lexicon import stem
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
)

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.turn_history import Turn

__all__ = ["detect"]


#: parts of a person's name: "the name" with first_name and last_name means both, not a choice
_NAME_PARTS = frozenset(["first", "last", "middle", "full", "given", "family", "sur", "nick"])


_PREPOSITIONS = frozenset(["on", "at", "in", "by", "to", "for", "from", "with", "per"])


def _head(name: str) -> str:
    """The head noun of a column name.

    ``date_of_birth`` -> date, ``date_arrived`` -> date, ``bulgarian_commander`` -> commander,
    ``Song_release_year`` -> year.
    """
    words = identifier_words(name)
    if "of" in words:
        return stem(words[0])
    # ``opened_on``, ``directed_by``: a participle and its preposition, no noun to ask about
    words = [w for w in words if w not in _PREPOSITIONS]
    timed = [w for w in words if w in TIME_WORDS]
    return stem(timed[-1] if timed else words[-1]) if words else ""


def detect(text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """AmbiQT's column ambiguity (PRACTIQ's ambiguous SELECT / WHERE column).

    The request's noun is the head of two or more columns of one table, and the request names none
    of the words that tell them apart.

    "When did the dogs get their date?" over ``Dogs(date_of_birth, date_arrived, date_adopted,
    date_departed)``: which date? "the commander" of ``battle(bulgarian_commander, latin_commander)``:
    which one? A noun that is itself a whole column ("the name" beside ``song_name``) is no choice,
    and neither are the parts of a person's name (``first_name``, ``last_name``: "the name" means
    both). The request, or a column an earlier turn used, settles it.
    """
    words = request_words(text)
    stems = {stem(w) for w in words}
    named = named_tables(words, db)
    tables = named or history_tables(history, db) or db.tables()
    for table in tables:
        table_forms = set().union(*table_words(table.name))
        whole = {stem(c.name.lower()) for c in table.columns}
        by_head: dict[str, list[str]] = {}
        for column in table.columns:
            parts = identifier_words(column.name)
            if len(parts) < 2 or column.primary_key:
                continue
            by_head.setdefault(_head(column.name), []).append(column.name)
        for head, columns in by_head.items():
            if head not in stems or head in GENERIC or head in table_forms or head in whole or len(columns) < 2:
                continue
            modifiers = [
                [w for w in identifier_words(c) if stem(w) != head and w != "of" and w not in _PREPOSITIONS]
                for c in columns
            ]
            if all(set(m) <= _NAME_PARTS for m in modifiers):
                continue  # first and last name: one name
            if any(any(related(w, m) for w in words for m in mods) for mods in modifiers):
                continue  # "arrival date": the request names which
            if any(history_says(history, c) for c in columns):
                continue  # the conversation already used one of them
            shown = [f"{table.name}.{c}" for c in columns[:5]]
            listed = ", ".join(shown[:-1]) + f" or {shown[-1]}"
            return [Ambiguity("which_column", head, f"Which {head} do you mean: {listed}?")]
    return []
