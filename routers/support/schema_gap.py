"""The schema check's gaps in a data request.

What the ``rules`` router's ``schema_gap`` rule and the LM routers' schema finding
(:mod:`~routerlab.routers.support.schema_outline`) both read.
"""

from __future__ import annotations

import re
from typing import Any

from routerlab.agents.answerability import Gap, check_question
from routerlab.agents.tools.text import extract_sql, normalise_request

__all__ = ["DATA_REQUEST", "QUOTES_SQL", "schema_gaps"]

# anchored, with the first SELECT taken atomically: one pass, where an unanchored search tried
# every SELECT against the whole rest of the text
QUOTES_SQL = re.compile(r"\A(?>.*?\bselect\b).+\bfrom\b", re.I | re.S)


#: a request for data: a question word or a request verb (small talk rarely has one with a noun
#: the schema lacks; "tell me a joke" must not read as a question about jokes)
DATA_REQUEST = (
    # "what is a primary key?" asks for a definition, not for data
    r"^(?!\s*(what|who)('s|'re| is| are| was)\s+(a|an)\s).*?"
    r"(\b(what|which|who|whom|whose|when|where|how|list|show|find|give|return|count|name|display|compute|calculate)\b"
    r"|\b(number of|average|total)\b|\btell me (the|how|what|which|who|whose|when|where)\b)"
)


_DATA_REQUEST_RX = re.compile(DATA_REQUEST, re.I | re.S)


def schema_gaps(text: str, db: Any) -> tuple[Gap, ...]:
    """What the schema check finds missing in a data request, as the ``schema_gap`` rule reads it.

    Only a data request is checked (a question word or request verb, no quoted SQL, not "what is
    a ...?"): small talk or an explanation request names things no database holds, and that is
    no gap. Empty without a database.
    """
    text = normalise_request(text)
    if db is None or not _DATA_REQUEST_RX.search(text) or extract_sql(text) is not None or QUOTES_SQL.search(text):
        return ()
    return check_question(text, db).gaps
