"""The ``unnamed_entity`` kind of ambiguity.

The request ends on a singular entity of the schema with no name, of a table with several rows.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.routers.support.ambiguity._kinds import Ambiguity
from routerlab.routers.support.ambiguity._words import mentioned, singular_table

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.turn_history import Turn

__all__ = ["detect"]


_ENDS_ON_ENTITY = re.compile(
    r"\b(?:at|in|for|from|on)\s+the\s+(?P<n>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s*[.?!]?\s*$", re.I
)


def detect(text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """The ``unnamed_entity`` findings of ``text`` on ``db`` (see the module; empty: none)."""
    m = _ENDS_ON_ENTITY.search(text)
    if m is None:
        return []
    words = m.group("n")
    # the whole phrase must be the table's name: a modifier ("the youngest singer", "the math
    # course") already picks the row
    table = singular_table(words, db)
    if table is None or table.row_count == 1:
        return []  # not an entity of the schema, or the only one: nothing to choose
    if mentioned(words, history):
        return []  # "the station" after a turn about stations: that one
    return [Ambiguity("unnamed_entity", f"the {words}", f"Which {words} do you mean?")]
