"""``several_values``: a name that is part of several stored values of one column and equal to none."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.agents.lexicon import stem
from routerlab.routers.support.ambiguity._kinds import Ambiguity
from routerlab.routers.support.ambiguity._reads import schema_words, text_values
from routerlab.routers.support.ambiguity._words import NAME

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.turn_history import Turn

__all__ = ["detect"]


#: quoted text is a literal the user spelled out (often a substring to search for), not a name to pick
_QUOTED = re.compile(r"\"[^\"]*\"|(?<!\w)'[^']*'(?!\w)")


def detect(text: str, db: Database, _today: _dt.date | None, _history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """The ``several_values`` findings of ``text`` on ``db`` (see the module; empty: none)."""
    names = [m.group(1) for m in NAME.finditer(_QUOTED.sub(lambda q: " " * len(q.group(0)), text))]
    if not names:
        return []
    schema = schema_words(db)
    values = text_values(db)
    found: list[Ambiguity] = []
    for name in names:
        low = name.lower()
        if all(stem(w) in schema for w in re.findall(r"[a-z0-9]+", low)):
            continue  # "TV Channel", "Service Area": the schema's own nouns, not a value
        if any(low in {v.lower() for v in vals} for _, _, vals in values):
            continue  # a whole value somewhere: the name is exact
        word = re.compile(rf"(?<!\w){re.escape(low)}(?!\w)")
        for _table, _column, vals in values:
            matches = sorted({v for v in vals if word.search(v.lower())})
            if 2 <= len(matches) <= 8:
                shown = " or ".join(matches) if len(matches) <= 4 else ", ".join(matches[:4]) + ", ..."
                found.append(Ambiguity("several_values", name, f"Which one do you mean: {shown}?"))
                break
    return found
