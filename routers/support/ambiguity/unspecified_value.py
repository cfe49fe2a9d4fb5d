"""``unspecified_value``: a value referred to without being named ("a certain country", "that year")."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.agents.lexicon import stem
from routerlab.routers.support.ambiguity._kinds import Ambiguity
from routerlab.routers.support.ambiguity._reads import schema_words
from routerlab.routers.support.ambiguity._words import mentioned

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.turn_history import Turn

__all__ = ["detect"]


_REFERRING = re.compile(
    r"\b(?:a certain|a particular|one specific|a specific|some specific|some particular|a given)\s+"
    r"(?P<a>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2}?)(?=\s*(?:[.,;:?!]|$|\s+(?:or|and|with|of|in|who|that|which|from)\b))"
    r"|\b(?:the|that)\s+(?P<b>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2}?)\s+(?:i|we|you)\s+"
    r"(?:mentioned|meant|said|talked about|discussed|asked about|chose|picked|gave you|told you)\b"
    r"|(?:^|\b(?:in|from|of|at|for|with|to|by|about|on|under|during)\s+)(?:that|this)\s+"
    r"(?P<c>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)(?=\s*(?:[.,;:?!]|$))",
    re.I,
)


def _names_schema(words: str, db: Database) -> bool:
    """Whether the last word of ``words`` (the head noun) names a table or column of ``db``."""
    head = re.findall(r"[a-z0-9]+", words.lower())
    return bool(head) and stem(head[-1]) in schema_words(db)


def detect(text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """The ``unspecified_value`` findings of ``text`` on ``db`` (see the module; empty: none)."""
    found: list[Ambiguity] = []
    for m in _REFERRING.finditer(text):
        what = (m.group("a") or m.group("b") or m.group("c") or "").strip()
        if not what or not _names_schema(what, db):
            continue
        before = text[: m.start()].lower()
        if m.group("a") and re.search(r"\b(rather than|instead of)\s*$", before):
            continue  # "rather than a particular branch": a kind of thing, not a value the user has in mind
        if m.group("c") and stem(what.lower().split()[-1]) in {stem(w) for w in re.findall(r"[a-z0-9]+", before)}:
            continue  # "at what hour ... in that hour": it refers back to the request itself
        if not m.group("a") and mentioned(what, history):
            continue  # "that year" after a turn about years: the conversation names it
        found.append(Ambiguity("unspecified_value", m.group(0).strip(), f"Which {what} do you mean?"))
    return found
