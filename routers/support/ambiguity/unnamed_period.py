"""The ``unnamed_period`` kind of ambiguity.

A period named by a common noun alone ("at the weekend"), on a database with dated rows.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.routers.support.ambiguity._kinds import Ambiguity
from routerlab.routers.support.ambiguity._reads import latest_date
from routerlab.routers.support.ambiguity._words import ABSOLUTE

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.turn_history import Turn

__all__ = ["detect"]


_UNNAMED_PERIOD = re.compile(
    r"\b(at|over|during|on|in|for|from|around)\s+(the|that)\s+(weekend|holidays?|summer|winter|spring|autumn|fall"
    r"|season|festival|break|vacation|peak|rush)\b",
    re.I,
)


def detect(text: str, db: Database, _today: _dt.date | None, _history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """The ``unnamed_period`` findings of ``text`` on ``db`` (see the module; empty: none)."""
    if ABSOLUTE.search(text):
        return []
    m = next((m for m in _UNNAMED_PERIOD.finditer(text) if m.group(3)[0].islower()), None)
    if m is None or latest_date(db) is None:
        return []  # none, or a named one ("the Spring Festival"), or nothing dated to choose from
    term = f"the {m.group(3).lower()}"
    return [Ambiguity("unnamed_period", term, f"Which dates do you mean by '{term}'?")]
