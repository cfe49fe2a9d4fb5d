"""The ``open_reference`` kind of ambiguity.

A pronoun or an elliptical follow-up whose referent neither the request nor the conversation
supplies.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.agents.lexicon import stem
from routerlab.routers.support.ambiguity._kinds import Ambiguity
from routerlab.routers.support.ambiguity._reads import schema_words
from routerlab.routers.support.ambiguity._words import NAME, NOUN, has_data_turn

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.turn_history import Turn

__all__ = ["detect"]


#: a pronoun that needs a referent, or a follow-up that starts from the previous answer
_PRONOUN = re.compile(
    r"\b(?P<p>it|its|they|them|their|theirs|he|she|him|his|her|hers|those|these|the former|the latter"
    r"|that one|this one|the same ones?|the previous ones?|the above)\b",
    re.I,
)


_FOLLOW_UP = re.compile(
    r"^\W*(?:and|but|what about|how about|what if|also|only|just|same for|now for|then|ok(?:ay)? (?:and|now)|what of)\b"
    r"|^\W*(?:of|among|from|for|in|with|by) (?:them|those|these|it|that)\b",
    re.I,
)


#: pronouns that never need a referent from the conversation ("is there", "it is possible")
_DUMMY_IT = re.compile(r"\b(?:is|was) it (?:true|possible)\b|\bit (?:is|was) (?:possible|true)\b", re.I)


def _grounds(before: str, db: Database) -> bool:
    """Whether ``before`` holds a noun a later pronoun can refer to: a table or column word, or a stored value."""
    words = {stem(w.lower()) for w in NOUN.findall(before)}
    if words & schema_words(db):
        return True
    return bool(NAME.search(before))  # a name the request itself introduced ("Fido ... his owner")


def detect(text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """The ``open_reference`` findings of ``text`` on ``db`` (see the module; empty: none)."""
    if has_data_turn(history) or _DUMMY_IT.search(text):
        return []  # the conversation supplies the referent: a follow-up data question
    m = _FOLLOW_UP.search(text)
    if m is not None:
        term = m.group(0).strip()
        return [Ambiguity("open_reference", term, f"'{term}' follows up on what? Please ask the whole question.")]
    for m in _PRONOUN.finditer(text):
        if _grounds(text[: m.start()], db):
            continue
        term = m.group("p")
        return [Ambiguity("open_reference", term, f"Who or what do you mean by '{term}'?")]
    return []
