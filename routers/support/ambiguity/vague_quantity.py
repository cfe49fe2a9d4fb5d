"""``vague_quantity``: a count or threshold left vague where the query needs a number ("top several")."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.routers.support.ambiguity._kinds import Ambiguity

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.turn_history import Turn

__all__ = ["detect"]


_VAGUE_QUANTITY = re.compile(
    r"\b(?:top|the|first|last|bottom)\s+(?:a few|several|some|a handful of|a couple of)\b"
    r"|\b(?:a few|several|a handful of|a couple of)\s+(?:of the\s+)?(?:\w+est|most|least|top|highest|lowest)\b"
    # not "recently": the rules' vague_reference (0.62) reads it and leaves hybrid's LM to decide
    r"|\b(?:has|have|had|with|get|got|gets|sold|made)\s+"
    r"(?:a lot of|lots of|plenty of|a large number of|loads of)\s+\w+",
    re.I,
)


def detect(text: str, _db: Database, _today: _dt.date | None, _history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """The ``vague_quantity`` findings of ``text`` on ``db`` (see the module; empty: none)."""
    m = _VAGUE_QUANTITY.search(text)
    if m is None:
        return []
    term = m.group(0)
    return [Ambiguity("vague_quantity", term, f"How many exactly do you mean by '{term}'?")]
