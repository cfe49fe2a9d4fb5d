"""The ``which_table`` kind of ambiguity.

An attribute that several tables hold, in a request that names nothing to tell them apart.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.agents.lexicon import stem, word_stems
from routerlab.routers.support.ambiguity._kinds import Ambiguity
from routerlab.routers.support.ambiguity._words import NAME, NOUN, has_data_turn, table_words, word_forms

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.turn_history import Turn

__all__ = ["detect"]


#: words that never name an attribute
_NOT_ATTRIBUTE = frozenset(
    [
        "what",
        "which",
        "who",
        "whose",
        "how",
        "many",
        "much",
        "show",
        "list",
        "give",
        "find",
        "return",
        "name",
        "tell",
        "me",
        "the",
        "a",
        "an",
        "of",
        "all",
        "every",
        "each",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "there",
        "their",
        "and",
        "or",
        "in",
        "on",
        "at",
        "for",
        "by",
        "to",
        "from",
        "with",
    ]
)


def detect(text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """The ``which_table`` findings of ``text`` on ``db`` (see the module; empty: none)."""
    if has_data_turn(history) or NAME.search(text) or re.search(r"\d", text):
        return []  # the conversation or a value in the request says which table
    words = [w.lower() for w in NOUN.findall(text) if w.lower() not in _NOT_ATTRIBUTE]
    stems = {stem(w) for w in words}
    loose = set().union(*(word_forms(w) for w in words)) if words else set()
    tables = db.tables()
    if any(loose & forms for t in tables for forms in table_words(t.name)):
        return []  # a table named: the attribute is its own
    holders: dict[str, set[str]] = {}
    for t in tables:
        for c in t.columns:
            for w in stems & word_stems(c.name):
                holders.setdefault(w, set()).add(t.name)
    if len(holders) != 1:
        return []  # no attribute, or several attributes that together may single a table out
    ((attribute, owners),) = holders.items()
    if len(owners) < 2:
        return []
    shown = sorted(owners)[:4]
    return [Ambiguity("which_table", attribute, f"The {attribute} of which: {' or '.join(shown)}?")]
