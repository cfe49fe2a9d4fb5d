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

Long because the detectors share one schema reading (noun heads, value index, history lookups);
splitting them apart would split that shared reading across modules.
"""

from __future__ import annotations

import datetime as _dt
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

from routerlab.agents.db import database
from routerlab.agents.errors import RouterlabError
from routerlab.agents.lexicon import split_identifier, stem, word_stems

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.db.database import TableInfo
    from routerlab.agents.turn_history import Turn

__all__ = [
    "AMBIGUITY_KINDS",
    "DETECTORS",
    "Ambiguity",
    "AmbiguityKind",
    "clarifying_question",
    "clear_caches",
    "find_ambiguities",
    "schema_words",
    "text_values",
]

AmbiguityKind = Literal[
    "relative_period",
    "unnamed_period",
    "several_values",
    "unspecified_value",
    "unnamed_entity",
    "vague_quantity",
    "open_reference",
    "everything_about",
    "which_table",
    "which_column",
    "missing_measure",
    "id_without_table",
]
#: the kinds in their order (the rules router's and the checks' order), read off the Literal: one list
AMBIGUITY_KINDS: tuple[str, ...] = get_args(AmbiguityKind)


@dataclass(frozen=True)
class Ambiguity:
    """One thing a request leaves open that the database cannot settle.

    Attributes:
        kind: One of :data:`AMBIGUITY_KINDS`.
        term: The request's words that leave it open.
        question: The clarifying question to ask the user about it.
    """

    kind: AmbiguityKind
    term: str
    question: str


# -- what the database holds (bounded reads, cached per file) ------------------------------------
_TEMPORAL_TYPE = re.compile(r"\b(DATE|TIMESTAMP|DATETIME)\b", re.I)
_TEXT_TYPE = re.compile(r"char|text|string|varchar|clob", re.I)
_MAX_COLUMNS = 60
_MAX_VALUES = 2000
_cache_lock = threading.Lock()
_latest: dict[str, _dt.date | None] = {}
_values: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {}
_words: dict[str, frozenset[str]] = {}


def clear_caches() -> None:
    """Forget what the bounded reads cached per database file; the next check reads the file again.

    The caches live for the process, so a check's database calls depend on what ran before it.
    A run that must make the same calls as another (a fault-injected run and its replay with the
    same seed draw the same faults only on the same calls) starts from empty caches.
    """
    with _cache_lock:
        _latest.clear()
        _values.clear()
        _words.clear()


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _as_date(value: object) -> _dt.date | None:
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None


def latest_date(db: Database) -> _dt.date | None:
    """The latest date stored in any DATE/TIMESTAMP column of ``db`` (None: no dated rows).

    One ``MAX`` per typed date column, computed once per database file.
    """
    with _cache_lock:
        if db.path in _latest:
            return _latest[db.path]
    found: _dt.date | None = None
    for table in db.tables():
        for column in table.columns:
            if not _TEMPORAL_TYPE.search(column.type or ""):
                continue
            try:
                sql = f"SELECT MAX({_q(column.name)}) FROM {_q(table.name)}"
                rows = db.execute(sql, timeout_s=database.PROBE_TIMEOUT_S, max_rows=1).rows
            except RouterlabError:
                continue  # an odd column says nothing either way
            day = _as_date(rows[0][0]) if rows else None
            if day is not None and (found is None or day > found):
                found = day
    with _cache_lock:
        _latest[db.path] = found
    return found


def _text_values(db: Database) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """``(table, column, distinct values)`` of the text columns of ``db``, bounded, cached per file."""
    with _cache_lock:
        if db.path in _values:
            return _values[db.path]
    out: list[tuple[str, str, tuple[str, ...]]] = []
    for table in db.tables():
        for column in table.columns:
            if len(out) >= _MAX_COLUMNS:
                break
            if column.type and not _TEXT_TYPE.search(column.type):
                continue
            sql = f"SELECT DISTINCT CAST({_q(column.name)} AS VARCHAR) FROM {_q(table.name)} LIMIT {_MAX_VALUES + 1}"
            try:
                rows = db.execute(sql, timeout_s=database.PROBE_TIMEOUT_S, max_rows=_MAX_VALUES + 1).rows
            except RouterlabError:
                continue
            if len(rows) > _MAX_VALUES:
                continue  # free text (descriptions, notes): its words are not names to pick from
            out.append((table.name, column.name, tuple(str(r[0]) for r in rows if r and r[0] is not None)))
    result = tuple(out)
    with _cache_lock:
        _values[db.path] = result
    return result


def _schema_words(db: Database) -> frozenset[str]:
    """Stems of table and column names only (no values): the nouns a request can point at (cached per file)."""
    with _cache_lock:
        if db.path in _words:
            return _words[db.path]
    words: set[str] = set()
    for table in db.tables():
        words |= word_stems(table.name)
        for column in table.columns:
            words |= word_stems(column.name)
    with _cache_lock:
        _words[db.path] = frozenset(words)
    return _words[db.path]


def _names_schema(words: str, db: Database) -> bool:
    """Whether the last word of ``words`` (the head noun) names a table or column of ``db``."""
    head = re.findall(r"[a-z0-9]+", words.lower())
    return bool(head) and stem(head[-1]) in _schema_words(db)


#: the bounded, cached reads other checks share (``support/turns.py``)
text_values = _text_values
schema_words = _schema_words


# -- detectors -----------------------------------------------------------------------------------
#: a year or a calendar date pins the period, whatever else the request says
_ABSOLUTE = re.compile(
    r"\b(19|20)\d\d\b|\b\d{1,2}(st|nd|rd|th)?\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
    r"|\b(jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b",
    re.I,
)
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


def _relative_period(text: str, db: Database, today: _dt.date | None, _history: Sequence[Turn] = ()) -> list[Ambiguity]:
    if _ABSOLUTE.search(text):
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


_UNNAMED_PERIOD = re.compile(
    r"\b(at|over|during|on|in|for|from|around)\s+(the|that)\s+(weekend|holidays?|summer|winter|spring|autumn|fall"
    r"|season|festival|break|vacation|peak|rush)\b",
    re.I,
)


def _unnamed_period(text: str, db: Database, _today: _dt.date | None, _history: Sequence[Turn] = ()) -> list[Ambiguity]:
    if _ABSOLUTE.search(text):
        return []
    m = next((m for m in _UNNAMED_PERIOD.finditer(text) if m.group(3)[0].islower()), None)
    if m is None or latest_date(db) is None:
        return []  # none, or a named one ("the Spring Festival"), or nothing dated to choose from
    term = f"the {m.group(3).lower()}"
    return [Ambiguity("unnamed_period", term, f"Which dates do you mean by '{term}'?")]


#: a run of capitalised words (a name), not at the start of a sentence, outside quotes
_NAME = re.compile(r"(?<![.?!]\s)(?<!^)(?<![\w'\"])([A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)(?=(?:'s)?(?:[^\w'\"]|$))")
#: quoted text is a literal the user spelled out (often a substring to search for), not a name to pick
_QUOTED = re.compile(r"\"[^\"]*\"|(?<!\w)'[^']*'(?!\w)")


def _several_values(text: str, db: Database, _today: _dt.date | None, _history: Sequence[Turn] = ()) -> list[Ambiguity]:
    names = [m.group(1) for m in _NAME.finditer(_QUOTED.sub(lambda q: " " * len(q.group(0)), text))]
    if not names:
        return []
    schema = _schema_words(db)
    values = _text_values(db)
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


_REFERRING = re.compile(
    r"\b(?:a certain|a particular|one specific|a specific|some specific|some particular|a given)\s+"
    r"(?P<a>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2}?)(?=\s*(?:[.,;:?!]|$|\s+(?:or|and|with|of|in|who|that|which|from)\b))"
    r"|\b(?:the|that)\s+(?P<b>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2}?)\s+(?:i|we|you)\s+"
    r"(?:mentioned|meant|said|talked about|discussed|asked about|chose|picked|gave you|told you)\b"
    r"|(?:^|\b(?:in|from|of|at|for|with|to|by|about|on|under|during)\s+)(?:that|this)\s+"
    r"(?P<c>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)(?=\s*(?:[.,;:?!]|$))",
    re.I,
)


def _unspecified_value(
    text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()
) -> list[Ambiguity]:
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
        if not m.group("a") and _mentioned(what, history):
            continue  # "that year" after a turn about years: the conversation names it
        found.append(Ambiguity("unspecified_value", m.group(0).strip(), f"Which {what} do you mean?"))
    return found


_ENDS_ON_ENTITY = re.compile(
    r"\b(?:at|in|for|from|on)\s+the\s+(?P<n>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s*[.?!]?\s*$", re.I
)


def _forms(word: str) -> set[str]:
    """Stems of ``word`` and of its singular forms: the stemmer keeps "branches" as "branche"."""
    w = word.lower()
    out = {stem(w)}
    if w.endswith("es") and len(w) > 4:
        out.add(stem(w[:-2]))
    if w.endswith("s") and len(w) > 3:
        out.add(stem(w[:-1]))
    return out


def _table_words(name: str) -> list[set[str]]:
    """The forms of each word of a table's name (``serviceAreas``, ``service_areas``: service, area)."""
    return [_forms(w) for w in re.findall(r"[a-z0-9]+", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower())]


def _singular_table(words: str, db: Database) -> TableInfo | None:
    """The table named exactly ``words`` in the singular (``service area``: ``service_areas``)."""
    low = words.lower().split()
    if stem(low[-1]) != low[-1]:
        return None  # plural: "the service areas" means all of them
    for table in db.tables():
        parts = _table_words(table.name)
        if len(parts) == len(low) and all(w in forms for w, forms in zip(low, parts, strict=True)):
            return table
    return None


def _unnamed_entity(text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()) -> list[Ambiguity]:
    m = _ENDS_ON_ENTITY.search(text)
    if m is None:
        return []
    words = m.group("n")
    # the whole phrase must be the table's name: a modifier ("the youngest singer", "the math
    # course") already picks the row
    table = _singular_table(words, db)
    if table is None or table.row_count == 1:
        return []  # not an entity of the schema, or the only one: nothing to choose
    if _mentioned(words, history):
        return []  # "the station" after a turn about stations: that one
    return [Ambiguity("unnamed_entity", f"the {words}", f"Which {words} do you mean?")]


_VAGUE_QUANTITY = re.compile(
    r"\b(?:top|the|first|last|bottom)\s+(?:a few|several|some|a handful of|a couple of)\b"
    r"|\b(?:a few|several|a handful of|a couple of)\s+(?:of the\s+)?(?:\w+est|most|least|top|highest|lowest)\b"
    # not "recently": the rules' vague_reference (0.62) reads it and leaves hybrid's LM to decide
    r"|\b(?:has|have|had|with|get|got|gets|sold|made)\s+"
    r"(?:a lot of|lots of|plenty of|a large number of|loads of)\s+\w+",
    re.I,
)


def _vague_quantity(
    text: str, _db: Database, _today: _dt.date | None, _history: Sequence[Turn] = ()
) -> list[Ambiguity]:
    m = _VAGUE_QUANTITY.search(text)
    if m is None:
        return []
    term = m.group(0)
    return [Ambiguity("vague_quantity", term, f"How many exactly do you mean by '{term}'?")]


# -- the conversation -------------------------------------------------------------------------------
def _has_data_turn(history: Sequence[Turn]) -> bool:
    """An earlier turn asked for data (its SQL ran, or it was a data question): what a follow-up builds on."""
    return any(t.get("sql") or t.get("intent") in ("sql", "clarify") for t in history)


def _mentioned(words: str, history: Sequence[Turn]) -> bool:
    """Whether an earlier data turn named the head noun of ``words`` (its question, columns or tables)."""
    head = re.findall(r"[a-z0-9]+", words.lower())
    if not head or not _has_data_turn(history):
        return False
    said: set[str] = set()
    for t in history:
        parts = [str(t.get("question") or ""), *(t.get("columns") or []), *(t.get("tables") or [])]
        said |= word_stems(" ".join(parts))
    return stem(head[-1]) in said


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
#: a pronoun after a noun that can be its antecedent inside the request ("singers and their ages")
_NOUN = re.compile(r"[a-z][a-z0-9_-]+", re.I)
#: pronouns that never need a referent from the conversation ("is there", "it is possible")
_DUMMY_IT = re.compile(r"\b(?:is|was) it (?:true|possible)\b|\bit (?:is|was) (?:possible|true)\b", re.I)


def _grounds(before: str, db: Database) -> bool:
    """Whether ``before`` holds a noun a later pronoun can refer to: a table or column word, or a stored value."""
    words = {stem(w.lower()) for w in _NOUN.findall(before)}
    if words & schema_words(db):
        return True
    return bool(_NAME.search(before))  # a name the request itself introduced ("Fido ... his owner")


def _open_reference(text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()) -> list[Ambiguity]:
    if _has_data_turn(history) or _DUMMY_IT.search(text):
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
    for table, _column, values in _text_values(db):
        if any(v.lower() == low for v in values):
            return table
    return None


def _everything_about(
    text: str, db: Database, _today: _dt.date | None, _history: Sequence[Turn] = ()
) -> list[Ambiguity]:
    m = _EVERYTHING.search(text)
    if m is None:
        return []
    what = (m.group("x") or m.group("y") or "").strip()
    table_name: str | None = None
    names = [n.group(1) for n in _NAME.finditer(" " + what)]  # a name: one entity, e.g. "Max" or "Qinling North"
    for name in names:
        table_name = _table_of_value(name, db)
        if table_name:
            break
    if table_name is None:
        ent = _ONE_ENTITY.match(what)
        table = _singular_table(ent.group("n"), db) if ent else None
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


#: words that never name an attribute
_NOT_ATTRIBUTE = frozenset(
    [
        "what",
        "which",
        "who",
        "whose",
        "how",
        "many",
        "much",
        "show",
        "list",
        "give",
        "find",
        "return",
        "name",
        "tell",
        "me",
        "the",
        "a",
        "an",
        "of",
        "all",
        "every",
        "each",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "there",
        "their",
        "and",
        "or",
        "in",
        "on",
        "at",
        "for",
        "by",
        "to",
        "from",
        "with",
    ]
)


def _which_table(text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()) -> list[Ambiguity]:
    if _has_data_turn(history) or _NAME.search(text) or re.search(r"\d", text):
        return []  # the conversation or a value in the request says which table
    words = [w.lower() for w in _NOUN.findall(text) if w.lower() not in _NOT_ATTRIBUTE]
    stems = {stem(w) for w in words}
    loose = set().union(*(_forms(w) for w in words)) if words else set()
    tables = db.tables()
    if any(loose & forms for t in tables for forms in _table_words(t.name)):
        return []  # a table named: the attribute is its own
    holders: dict[str, set[str]] = {}
    for t in tables:
        for c in t.columns:
            for w in stems & word_stems(c.name):
                holders.setdefault(w, set()).add(t.name)
    if len(holders) != 1:
        return []  # no attribute, or several attributes that together may single a table out
    ((attribute, owners),) = holders.items()
    if len(owners) < 2:
        return []
    shown = sorted(owners)[:4]
    return [Ambiguity("which_table", attribute, f"The {attribute} of which: {' or '.join(shown)}?")]


# -- choices the schema leaves open: a column, a measure, a table for an id -------------------------
#: words that name no attribute of their own (functions, keys, quantities)
_GENERIC = frozenset(["number", "id", "code", "count", "total", "average", "sum", "type", "no", "yn", "info", "list"])
#: parts of a person's name: "the name" with first_name and last_name means both, not a choice
_NAME_PARTS = frozenset(["first", "last", "middle", "full", "given", "family", "sur", "nick"])
_PREPOSITIONS = frozenset(["on", "at", "in", "by", "to", "for", "from", "with", "per"])
_TIME_WORDS = frozenset(["date", "time", "year", "day", "month", "created", "timestamp"])
_NUMERIC_TYPE = re.compile(r"int|real|num|float|double|dec|money", re.I)


def _column_words(name: str) -> list[str]:
    return split_identifier(name)


def _head(name: str) -> str:
    """The head noun of a column name.

    ``date_of_birth`` -> date, ``date_arrived`` -> date, ``bulgarian_commander`` -> commander,
    ``Song_release_year`` -> year.
    """
    words = _column_words(name)
    if "of" in words:
        return stem(words[0])
    # ``opened_on``, ``directed_by``: a participle and its preposition, no noun to ask about
    words = [w for w in words if w not in _PREPOSITIONS]
    timed = [w for w in words if w in _TIME_WORDS]
    return stem(timed[-1] if timed else words[-1]) if words else ""


def _related(word: str, other: str) -> bool:
    """Whether two words share a root (``arrival``/``arrived``, ``departure``/``departed``).

    A common prefix of five letters (four for a shorter word), a light stand-in for a lemmatiser.
    """
    if word == other:
        return True
    n = min(len(word), len(other), 5)
    return n >= 4 and word[:n] == other[:n]


def _request_words(text: str) -> list[str]:
    return [w.lower() for w in _NOUN.findall(text)]


def _named_tables(words: Sequence[str], db: Database) -> list[TableInfo]:
    """Tables the request names.

    Every word of the table's name present (any form), or its head word when that word names no
    attribute of its own (``players`` -> ``poker_player``, not ``names`` -> ``car_names``).
    """
    forms = set().union(*(_forms(w) for w in words)) if words else set()
    out = []
    for table in db.tables():
        parts = _table_words(table.name)
        if not parts:
            continue
        whole = all(p & forms for p in parts)
        head = parts[-1] & forms and not (parts[-1] & (_GENERIC | {"name", "data", "arrange", "detail"}))
        if whole or head:
            out.append(table)
    return out


def _history_tables(history: Sequence[Turn], db: Database) -> list[TableInfo]:
    """The tables the conversation's data turns read (their SQL's tables), oldest first."""
    names = {str(n).lower() for t in history for n in (t.get("tables") or [])}
    return [t for t in db.tables() if t.name.lower() in names]


def _history_says(history: Sequence[Turn], column: str) -> bool:
    """Whether an earlier data turn used ``column`` (its SQL or result columns) or named its words."""
    if not _has_data_turn(history):
        return False
    low = column.lower()
    for t in history:
        used = " ".join([str(t.get("sql") or ""), *(str(c) for c in (t.get("columns") or []))]).lower()
        if re.search(rf"(?<![\w]){re.escape(low)}(?![\w])", used):
            return True
        said = {w.lower() for w in _NOUN.findall(str(t.get("question") or ""))}
        words = [w for w in _column_words(column) if w not in _GENERIC]
        if words and all(any(_related(w, s) for s in said) for w in words):
            return True
    return False


def _which_column(text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """AmbiQT's column ambiguity (PRACTIQ's ambiguous SELECT / WHERE column).

    The request's noun is the head of two or more columns of one table, and the request names none
    of the words that tell them apart.

    "When did the dogs get their date?" over ``Dogs(date_of_birth, date_arrived, date_adopted,
    date_departed)``: which date? "the commander" of ``battle(bulgarian_commander, latin_commander)``:
    which one? A noun that is itself a whole column ("the name" beside ``song_name``) is no choice,
    and neither are the parts of a person's name (``first_name``, ``last_name``: "the name" means
    both). The request, or a column an earlier turn used, settles it.
    """
    words = _request_words(text)
    stems = {stem(w) for w in words}
    named = _named_tables(words, db)
    tables = named or _history_tables(history, db) or db.tables()
    for table in tables:
        table_forms = set().union(*_table_words(table.name))
        whole = {stem(c.name.lower()) for c in table.columns}
        by_head: dict[str, list[str]] = {}
        for column in table.columns:
            parts = _column_words(column.name)
            if len(parts) < 2 or column.primary_key:
                continue
            by_head.setdefault(_head(column.name), []).append(column.name)
        for head, columns in by_head.items():
            if head not in stems or head in _GENERIC or head in table_forms or head in whole or len(columns) < 2:
                continue
            modifiers = [
                [w for w in _column_words(c) if stem(w) != head and w != "of" and w not in _PREPOSITIONS]
                for c in columns
            ]
            if all(set(m) <= _NAME_PARTS for m in modifiers):
                continue  # first and last name: one name
            if any(any(_related(w, m) for w in words for m in mods) for mods in modifiers):
                continue  # "arrival date": the request names which
            if any(_history_says(history, c) for c in columns):
                continue  # the conversation already used one of them
            shown = [f"{table.name}.{c}" for c in columns[:5]]
            listed = ", ".join(shown[:-1]) + f" or {shown[-1]}"
            return [Ambiguity("which_column", head, f"Which {head} do you mean: {listed}?")]
    return []


_VAGUE_MEASURE = re.compile(
    r"\b(?P<w>best|worst|better|worse|top|bottom|greatest|biggest|largest|smallest|leading|strongest|weakest"
    r"|(?:most|least) (?:popular|successful|important|famous|valuable|impressive|significant))\b",
    re.I,
)
#: a measure named after the comparison ("the top three by capacity", "in terms of earnings")
_MEASURE_NAMED = re.compile(r"\b(by|in terms of|based on|according to|measured by|ranked by|sorted by)\b", re.I)
#: "the most dogs", "fewer concerts": a count of rows is the measure
_COUNT_MEASURE = re.compile(
    r"\b(?:most|fewest|least|more|fewer|highest number of|lowest number of)\s+(?P<n>[a-z]+)", re.I
)
#: what a size adjective measures when the table has such a column
_SIZE_WORDS = frozenset(["capacity", "size", "area", "tonnage", "weight", "population", "volume", "length", "height"])
_SIZE_ADJECTIVES = frozenset(["biggest", "largest", "smallest"])


def _is_number(value: object) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    try:
        float(str(value))
    except ValueError:
        return False
    return True


def _measures(table: TableInfo, db: Database) -> list[str]:
    """What rows of ``table`` can be ranked by.

    Its numeric columns that are not keys, flags or times, and the number of rows of each table
    that refers to it (``the number of singer_in_concert rows``).
    """
    keys = {fk[0].lower() for fk in table.foreign_keys}
    out: list[str] = []
    for column in table.columns:
        words = _column_words(column.name)
        if column.primary_key or column.name.lower() in keys or not words:
            continue
        if words[-1] in ("id", "code", "number", "no", "yn") or words[0] in ("is", "has") or set(words) & _TIME_WORDS:
            continue
        examples = [v for v in column.examples if v is not None]
        if examples and {str(v) for v in examples} <= {"0", "1"}:
            continue  # a flag stored as 0/1 ranks nothing
        numeric = bool(_NUMERIC_TYPE.search(column.type or "")) or (bool(examples) and all(map(_is_number, examples)))
        if numeric:
            out.append(f"{table.name}.{column.name}")
    for other in db.tables():
        if other.name != table.name and any(fk[1].lower() == table.name.lower() for fk in other.foreign_keys):
            out.append(f"the number of {other.name} rows")
    return out


def _missing_measure(text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()) -> list[Ambiguity]:
    """A comparison or superlative whose measure is missing (AMBROSIA's vagueness).

    PRACTIQ's ambiguous filter criteria: "the best singers", "the top ones", "the most popular
    stadium" with nothing saying by what, on a table whose rows can be ranked two or more ways.

    The measure is named when the request says "by ..." or "in terms of ...", counts rows ("the
    most concerts"), uses a word of one of the table's measures ("the best finish" beside
    ``Best_Finish``), or puts a size adjective on a table with a size column ("the largest stadium",
    ``Capacity``); an earlier turn that used one of the measures settles it too. The table is the
    one the request names, else the one the conversation is about; with neither, nothing is asked.
    """
    m = _VAGUE_MEASURE.search(text)
    if m is None or _MEASURE_NAMED.search(text):
        return []
    words = _request_words(text)
    tables = _named_tables(words, db) or _history_tables(history, db)[-1:]
    if len(tables) != 1:
        return []  # no table, or several: which_table and the schema check speak to those
    table = tables[0]
    count = _COUNT_MEASURE.search(text)
    if count and any(_forms(count.group("n")) & set().union(*_table_words(t.name)) for t in db.tables()):
        return []  # "the most concerts": counted
    candidates = _measures(table, db)
    column_words: set[str] = set()
    for c in candidates:
        if "." in c:
            parts = _column_words(c.split(".", 1)[1])
            # "Average" is a measure of its own; in ``average_age`` the word is the aggregate
            column_words |= set(parts) if len(parts) == 1 else set(parts) - _GENERIC
    if any(_related(w, c) for w in words for c in column_words):
        return []  # "the best finish", "the greatest earnings": a measure named
    vague = m.group("w").lower()
    if vague in _SIZE_ADJECTIVES and column_words & _SIZE_WORDS:
        return []  # "the largest stadium": its capacity
    if any(_history_says(history, c.split(".", 1)[1]) for c in candidates if "." in c):
        return []  # the conversation has been about one of them
    if len(candidates) < 2:
        return []  # one way to rank them, or none: nothing to choose
    shown = candidates[:5]
    listed = ", ".join(shown[:-1]) + f" or {shown[-1]}"
    return [Ambiguity("missing_measure", m.group(0), f"'{m.group(0)}' by which measure: {listed}?")]


_BARE_ID = re.compile(r"(?:\b(?:id|identifier|number|no\.?)\s*(?:of\s+|=\s*|is\s+)?|#\s*)(?P<v>\d+)\b", re.I)


def _id_columns(table: TableInfo) -> list[str]:
    return [
        c.name
        for c in table.columns
        if c.primary_key or (_column_words(c.name) and _column_words(c.name)[-1] in ("id", "number"))
    ]


def _id_without_table(
    text: str, db: Database, _today: _dt.date | None, history: Sequence[Turn] = ()
) -> list[Ambiguity]:
    """An id with no table (English Query's unique-ID clarification; AmbiQT's table ambiguity).

    "Show the record with id 7" when several tables hold a row whose own key is 7.

    A table named in the request ("the dog with id 7"), or one an earlier data turn read, settles
    it; a number that only one table holds as a key is no choice either.
    """
    m = _BARE_ID.search(text)
    if m is None:
        return []
    words = _request_words(text)
    if _named_tables(words, db) or _history_tables(history, db):
        return []
    value = int(m.group("v"))
    holders: list[str] = []
    for table in db.tables():
        own = [c.name for c in table.columns if c.primary_key] or _id_columns(table)[:1]
        for column in own:
            try:
                sql = f"SELECT 1 FROM {_q(table.name)} WHERE {_q(column)} = {value} LIMIT 1"
                rows = db.execute(sql, timeout_s=database.PROBE_TIMEOUT_S, max_rows=1).rows
            except RouterlabError:
                continue
            if rows:
                holders.append(f"{table.name}.{column}")
                break
    if len(holders) < 2:
        return []
    shown = holders[:5]
    listed = ", ".join(shown[:-1]) + f" or {shown[-1]}"
    return [Ambiguity("id_without_table", m.group(0), f"Which record is '{m.group(0).strip()}': {listed}?")]


Detector = Callable[[str, "Database", _dt.date | None, Sequence["Turn"]], list[Ambiguity]]

#: one detector per kind; the ``rules`` router turns each into a rule of the same name
DETECTORS: dict[str, Detector] = {
    "relative_period": _relative_period,
    "unnamed_period": _unnamed_period,
    "several_values": _several_values,
    "unspecified_value": _unspecified_value,
    "unnamed_entity": _unnamed_entity,
    "vague_quantity": _vague_quantity,
    "open_reference": _open_reference,
    "everything_about": _everything_about,
    "which_table": _which_table,
    "which_column": _which_column,
    "missing_measure": _missing_measure,
    "id_without_table": _id_without_table,
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
