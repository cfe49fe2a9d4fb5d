"""``everything_about``: "everything" about one entity with no attribute named: which of its columns?."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.routers.support.ambiguity._kinds import Ambiguity
from routerlab.routers.support.ambiguity._reads import text_values
from routerlab.routers.support.ambiguity._words import NAME, singular_table

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.turn_history import Turn

__all__ = ["detect"]


_EVERYTHING = re.compile(
    r"\b(?:everything|anything|all (?:the )?(?:info(?:rmation)?|details|data|facts|records?|there is to know)"
    r"|(?:the |some |any |more )?(?:info(?:rmation)?|details|particulars)|all you (?:have|know)|what you (?:have|know))"
    r"\s+(?:about|on|for|of|regarding|concerning)\s+(?P<x>.+?)\s*[.?!]*$"
    r"|^\W*(?:tell me|what do you (?:know|have)|what can you tell me) about\s+(?P<y>.+?)\s*[.?!]*$",
    re.I,
)


#: "the branch", "this dog": one entity of a table named in the singular
_ONE_ENTITY = re.compile(r"(?:the|this|that|a|one|a single|a specific)\s+(?P<n>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)$", re.I)


def _table_of_value(value: str, db: Database) -> str | None:
    low = value.lower()
    for table, _column, values in text_values(db):
        if any(v.lower() == low for v in values):
            return table
    return None


def detect(text: str, db: Database, _today: _dt.date | None, _history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """The ``everything_about`` findings of ``text`` on ``db`` (see the module; empty: none)."""
    m = _EVERYTHING.search(text)
    if m is None:
        return []
    what = (m.group("x") or m.group("y") or "").strip()
    table_name: str | None = None
    names = [n.group(1) for n in NAME.finditer(" " + what)]  # a name: one entity, e.g. "Max" or "Qinling North"
    for name in names:
        table_name = _table_of_value(name, db)
        if table_name:
            break
    if table_name is None:
        ent = _ONE_ENTITY.match(what)
        table = singular_table(ent.group("n"), db) if ent else None
        table_name = table.name if table is not None else None
    if table_name is None:
        return []  # a whole table ("all information about dogs" reads every column) or nothing of the schema
    table = next(t for t in db.tables() if t.name == table_name)
    # keys and codes are how rows join, not details a user asks for
    shown = [c.name for c in table.columns if not re.search(r"(^|_)(id|code)$", c.name.lower())][:8]
    return [
        Ambiguity(
            "everything_about",
            what,
            f"Which details of {what} do you want ({', '.join(shown)}, ...)?",
        )
    ]
