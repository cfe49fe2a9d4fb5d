"""The ``relative_period`` kind of ambiguity.

A period relative to today ("last month") with no year or date, on dated rows the period is not
known to reach.
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


_RELATIVE = re.compile(
    r"\b(?P<which>last|this|past|previous|current)\s+(?P<unit>day|week|weekend|month|quarter|year)"
    r"(?!\s+(before|of|in|after)\b)('s)?\b"
    # not "today": "how are you today?" is small talk far more often than a question about the data
    r"|\b(?P<day>yesterday|year[- ]to[- ]date)\b",
    re.I,
)


def _period_start(which: str, unit: str, today: _dt.date) -> _dt.date:
    """The first day of the period "this <unit>" (``which`` = this/current) or "last <unit>" before ``today``."""
    unit = "week" if unit == "weekend" else unit
    if unit == "day":
        start = today
    elif unit == "week":
        start = today - _dt.timedelta(days=today.weekday())
    elif unit == "month":
        start = today.replace(day=1)
    elif unit == "quarter":
        start = today.replace(month=3 * ((today.month - 1) // 3) + 1, day=1)
    else:
        start = today.replace(month=1, day=1)
    if which in ("this", "current"):
        return start
    before = start - _dt.timedelta(days=1)  # a day of the previous period
    return _period_start("this", unit, before)


def detect(text: str, db: Database, today: _dt.date | None, _history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """The ``relative_period`` findings of ``text`` on ``db`` (see the module; empty: none)."""
    if ABSOLUTE.search(text):
        return []
    m = _RELATIVE.search(text)
    if m is None:
        return []
    latest = latest_date(db)
    if latest is None:
        return []  # nothing dated: the schema check's period gap, not a question to ask
    if m.group("day"):
        day = m.group("day").lower()
        which, unit = ("last", "day") if day == "yesterday" else ("this", "year")
    else:
        which, unit = m.group("which").lower(), m.group("unit").lower()
    if today is not None and latest >= _period_start(which, unit, today):
        return []  # the data reach into that period: it means what the user means
    term = m.group(0)
    return [
        Ambiguity(
            "relative_period",
            term,
            f"The data end on {latest.isoformat()}: which period do you mean by '{term}'?",
        )
    ]
