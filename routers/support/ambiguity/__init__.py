"""Is this data request ambiguous on *this* database? A schema- and data-derived ambiguity signal.

A request is ambiguous when its answer depends on something the user has not said and the
database cannot settle. Every kind below reads the turn's database, not a list of one domain's
phrases, so it carries over to databases it has never seen:

* **relative_period**: a period relative to today ("last month", "this year's", "yesterday") with
  no year or date named, on a database with dated rows. A stored database has no "now" of its
  own, so by default the period is always asked for, naming the data's last date; the answer
  never depends on the day the benchmark runs. Given a reference date (``today=``, e.g. a live
  database's), it is asked for only when the dated rows end before that period begins;
* **unnamed_period**: a period named by a common noun alone ("at the weekend", "over the holiday")
  with no year or date, on a database with date or time columns;
* **several_values**: a name that is part of several stored values of one column and equal to
  none ("Qinling" when ``name`` holds "Qinling North" and "Qinling South"): which one?
* **unspecified_value**: a value referred to without being named ("a certain country", "that year",
  "the maker we talked about"), whose noun names a column or table of the schema, and which the
  request has not introduced earlier ("at what hour ... in that hour" refers back, not out);
* **unnamed_entity**: the request ends on a singular entity of the schema with no name ("list the
  staff at the service area"), and that table has more than one row;
* **vague_quantity**: a count or threshold left vague where the query needs a number ("the a few
  oldest", "top several", "with a lot of ...");
* **open_reference**: a pronoun or an elliptical follow-up ("how many does it have?", "what about
  their ages?", "and the fewest?") whose referent neither the request nor the conversation
  supplies: a first turn that refers back to nothing (AmbiQT/AMBROSIA's reference ambiguity);
* **everything_about**: "everything" or "all the details" about one entity (a stored value, or
  "the <table>" in the singular) with no attribute named (AMBROSIA's vagueness): which of its
  columns? The question names them;
* **which_table**: an attribute that several tables hold ("the names", "the average age") in a
  request that names no table, no value and no other attribute to tell them apart (AmbiQT's
  column/table ambiguity): the question names the candidates;
* **which_column**: the request's noun is the head of two or more columns of one table ("the
  date" over ``date_arrived``, ``date_departed``; "the commander" over ``bulgarian_commander``,
  ``latin_commander``) and names nothing that tells them apart (AmbiQT's column ambiguity,
  PRACTIQ's ambiguous SELECT/WHERE column): "which date: Dogs.date_arrived or ...?";
* **missing_measure**: a superlative or comparison whose measure is missing ("the best stadium",
  "the most popular singer") on a table whose rows rank two or more ways (its numeric columns,
  the number of rows referring to it): AMBROSIA's vagueness; the question lists the measures;
* **id_without_table**: an id with no table ("the record with id 7") that several tables hold as
  a key (English Query's unique-ID clarification, AmbiQT's table ambiguity).

**The conversation decides referring kinds.** ``find_ambiguities(..., history=...)`` takes the
earlier turns (``agents/turn_history.Turn``). A reference the conversation supplies is no
ambiguity: a pronoun or a follow-up after a data turn, "that year" or "the station" when an
earlier turn named it. What the conversation cannot settle (which attributes, which of several
columns, a vague count, a period the data do not reach) is asked for whatever came before.

Each finding carries the clarifying question to ask, built from the schema's own words, so a
router that asks says what it needs ("Which one do you mean: Qinling North or Qinling South?").
Detectors are a table (:data:`DETECTORS`), so each kind can be ablated (the ``rules`` router's
``without=``) and new ones added without touching the others. Database reads are bounded and
cached per database file: one ``MAX`` per date column, distinct text values up to a cap.

One module per kind (its ``detect``), composed here in the kinds' order; what several kinds read
(the database, the request's words, the conversation) in ``_reads`` and ``_words``.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routerlab.routers.support.ambiguity import (
    everything_about,
    id_without_table,
    missing_measure,
    open_reference,
    relative_period,
    several_values,
    unnamed_entity,
    unnamed_period,
    unspecified_value,
    vague_quantity,
    which_column,
    which_table,
)
from routerlab.routers.support.ambiguity._kinds import AMBIGUITY_KINDS, Ambiguity, AmbiguityKind, Detector
from routerlab.routers.support.ambiguity._reads import clear_caches, latest_date, schema_words, text_values

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.turn_history import Turn

__all__ = [
    "AMBIGUITY_KINDS",
    "DETECTORS",
    "Ambiguity",
    "AmbiguityKind",
    "clarifying_question",
    "clear_caches",
    "find_ambiguities",
    "latest_date",
    "schema_words",
    "text_values",
]


#: one detector per kind; the ``rules`` router turns each into a rule of the same name
DETECTORS: dict[str, Detector] = {
    "relative_period": relative_period.detect,
    "unnamed_period": unnamed_period.detect,
    "several_values": several_values.detect,
    "unspecified_value": unspecified_value.detect,
    "unnamed_entity": unnamed_entity.detect,
    "vague_quantity": vague_quantity.detect,
    "open_reference": open_reference.detect,
    "everything_about": everything_about.detect,
    "which_table": which_table.detect,
    "which_column": which_column.detect,
    "missing_measure": missing_measure.detect,
    "id_without_table": id_without_table.detect,
}

#: a request quoting a query (explain / fix) is about that query, never an ambiguous data question
_QUOTES_SQL = re.compile(r"\bselect\b.+\bfrom\b", re.I | re.S)


def find_ambiguities(
    text: str,
    db: Database | None,
    *,
    kinds: tuple[str, ...] = AMBIGUITY_KINDS,
    today: _dt.date | None = None,
    history: Sequence[Turn] = (),
) -> tuple[Ambiguity, ...]:
    """What ``text`` leaves open that ``db`` cannot settle, kind by kind (empty: nothing found).

    Args:
        text: The request.
        db: The turn's database (None: no finding, the signal is schema-derived).
        kinds: The detectors to run (:data:`AMBIGUITY_KINDS` by default), for ablations.
        today: The date relative periods are read against. None (the default): no reference
            date, so any relative period over dated rows is asked for; never the machine's clock,
            so a benchmark's figures do not depend on the day it runs.
        history: The conversation's earlier turns, oldest first: a referent they supply is no
            ambiguity (a follow-up's pronoun, "that year" named before).
    """
    if db is None or not text.strip() or _QUOTES_SQL.search(text):
        return ()
    found: list[Ambiguity] = []
    for kind in kinds:
        found += DETECTORS[kind](text, db, today, history)
    return tuple(found)


def clarifying_question(found: tuple[Ambiguity, ...]) -> str | None:
    """One question asking about every finding (None when there is none)."""
    questions = list(dict.fromkeys(a.question for a in found))
    return " ".join(questions) if questions else None
