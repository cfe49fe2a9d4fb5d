"""Can this database answer the question? A schema check every router and the abstain tool share.

The check is lexical and conservative: it only reports a *gap* when the question names something
the schema has no place for, and it prefers missing a gap to inventing one (a router that
abstains on an answerable question loses coverage; the penalty score counts that too). Four
kinds of gap:

* **period**: the question restricts or groups by time ("in March 2019", "last quarter",
  "per month") and no column is temporal (by type, or by a name such as ``date``, ``year``);
* **measure**: an aggregate ("average", "total", "highest"...) of a phrase no column, table or
  stored value matches ("the average salary" on a table without pay);
* **entity**: a counted or listed kind of thing ("how many pilots", "each supplier") that no
  table, column or stored value matches;
* **attribute**: a property asked for ("what is the email address of ...") that no column matches.

Matching is on word stems of table names, column names (``BirthYear`` and ``birth_year`` both
give ``birth``, ``year``) and example values; a candidate term is finally looked up in the
database's text columns (read-only, bounded), so a value outside the example values is found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from routerlab.agents.errors import RouterlabError

if TYPE_CHECKING:
    from routerlab.agents.db import Database

__all__ = ["GAP_KINDS", "Answerability", "Gap", "check_question", "schema_lacks", "schema_vocabulary", "temporal_level"]

GapKind = Literal["period", "measure", "entity", "attribute"]
GAP_KINDS: tuple[str, ...] = ("period", "measure", "entity", "attribute")


def _wordset(*lines: str) -> frozenset[str]:
    return frozenset(w for line in lines for w in line.split())


_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
    "|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
# Capitalised month names only, and not first in the question: "may" is also a verb.
_PERIOD = re.compile(
    rf"(?<!^)(?<![.?!]\s)\b(?:{_MONTHS})\b(?:\s+\d{{1,2}}(?:st|nd|rd|th)?\b)?(?:,?\s+(?:19|20)\d\d)?"
    r"|\b(?:in|during|since|before|after|until|for)\s+(?:the\s+)?(?:year\s+)?(?:19|20)\d\d\b"
    r"|\b(?:last|this|next|previous|past|current)\s+(?:week|month|quarter|year|decade|season|weekend|summer"
    r"|winter|spring|autumn|fall)\b"
    r"|\b(?:yesterday|today|tonight|year-to-date|ytd)\b"
    r"|\bQ[1-4]\b"
    r"|\b(?:first|second|third|fourth|last)\s+quarter\b"
    r"|\b(?:per|each|every|by)\s+(?:day|week|month|quarter|year|hour)\b"
    r"|\b(?:daily|weekly|monthly|quarterly|yearly|annually|annual)\b"
    r"|\bover\s+the\s+(?:last|past)\s+\w+\s+(?:days|weeks|months|years)\b"
)
_TEMPORAL_TYPES = re.compile(r"date|time|interval", re.I)
# column-name words that make a column temporal, by the finest period it can resolve
_FINE_WORDS = _wordset("date time month day week quarter hour timestamp created updated dob datetime")
_YEAR_WORDS = _wordset("year years season period founded opened started ended born birth when start end")
_SUB_YEAR = re.compile(
    rf"\b(?:{_MONTHS}|week|weekend|month|quarter|day|hour|yesterday|today|tonight|daily|weekly|monthly"
    r"|quarterly|Q[1-4]|summer|winter|spring|autumn|fall)\b",
    re.I,
)
_AGGREGATE = re.compile(
    r"(?<!\bin\s)\b(?:average|mean|total|sum\s+of\s+(?:the\s+)?|median|maximum|minimum|max|min|highest|lowest|largest"
    r"|smallest|biggest|greatest|overall)\s+((?:[a-z][\w'-]*\s*){1,3})",
    re.I,
)
_COUNTED = re.compile(
    r"\b(?:how\s+many|number\s+of|count\s+of|each|every|list\s+(?:all\s+)?(?:the\s+)?"
    r"|show\s+(?:all\s+)?(?:the\s+)?)\b\s*((?:[a-z][\w'-]*\s*){1,3})",
    re.I,
)
_ATTRIBUTE = re.compile(
    r"\bwhat\s+(?:is|are|was|were)\s+the\s+((?:[a-z][\w'-]*\s*){1,3}?)\s*\bof\b",
    re.I,
)
# words that end a noun phrase: verbs, prepositions, conjunctions
_BOUNDARY = _wordset(
    "of for per in by among across at on to from with without and or but than that which who whose where "
    "are is was were be been have has had do does did there their its it they them this these those "
    "whose when what how as over under into onto about between before after during since until can could "
    "will would should may might must not no all each every his her him he she we you i me my our your "
    "its through together currently now still also ever only just"
)
# words that carry no schema meaning on their own; a phrase made only of these is not checked
_GENERIC = _wordset(
    "number numbers count amount amounts total different distinct unique many much times time people person "
    "record records row rows item items entry entries one ones kind kinds type types thing things value "
    "values result results name names id ids information info detail details data list lists all other pair "
    "pairs others first last top bottom most least more less some any the a an average averages day days week "
    "weeks month months quarter quarters year years hour hours"
)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Gap:
    """Something the question needs that the schema lacks.

    Attributes:
        kind: ``period``, ``measure``, ``entity`` or ``attribute``.
        term: The words of the question naming it.
        reason: One sentence saying what the database lacks.
    """

    kind: GapKind
    term: str
    reason: str


@dataclass(frozen=True)
class Answerability:
    """The verdict of :func:`check_question`.

    Attributes:
        gaps: What the question needs and the schema lacks (empty: answerable as far as the
            check can tell).
        tables: The database's tables, named when explaining a gap.
    """

    gaps: tuple[Gap, ...] = ()
    tables: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        """No gap found."""
        return not self.gaps

    def explain(self) -> str:
        """A user-facing sentence: what is missing, and what the database does hold."""
        if not self.gaps:
            return "Nothing this database lacks was found in the question."
        missing = "; ".join(g.reason for g in self.gaps)
        held = f" It holds: {', '.join(self.tables[:12])}." if self.tables else ""
        return f"This database cannot answer that: {missing}.{held}"


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and word[-3] in "sxz":
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _split_identifier(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(name))
    return _WORD.findall(spaced.lower().replace("_", " "))


def _stems(text: str) -> set[str]:
    return {_stem(w) for w in _split_identifier(text) if len(w) > 1}


def schema_vocabulary(db: Database) -> frozenset[str]:
    """Stems of every table name, column name and example value of ``db``."""
    vocab: set[str] = set()
    for table in db.tables():
        vocab |= _stems(table.name)
        for column in table.columns:
            vocab |= _stems(column.name)
            for value in column.examples:
                if isinstance(value, str):
                    vocab |= _stems(value)
    return frozenset(vocab)


def temporal_level(db: Database) -> int:
    """0: no temporal column; 1: years only (``Year``, ``Founded``); 2: dates or finer."""
    level = 0
    for table in db.tables():
        for column in table.columns:
            words = set(_split_identifier(column.name))
            if _TEMPORAL_TYPES.search(column.type or "") or words & _FINE_WORDS:
                return 2
            if words & _YEAR_WORDS:
                level = 1
    return level


def _phrase(raw: str) -> list[str]:
    """The content words of a captured noun phrase, up to its first boundary word."""
    words: list[str] = []
    for w in _WORD.findall(raw.lower()):
        if w in _BOUNDARY:
            break
        words.append(w)
    return [w for w in words if w not in _GENERIC and not w.isdigit()]


def _initials(words: list[str], vocab: frozenset[str]) -> bool:
    return len(words) > 1 and "".join(w[0] for w in words) in vocab


def _matches(words: list[str], vocab: frozenset[str]) -> bool:
    """Any word matches a schema stem, or the phrase's initials do (``miles per gallon``: ``mpg``).

    A word matches a stem it equals, starts with (``carsw`` for ``car``: a typo must not turn an
    answerable question into a gap), or shares its first five letters with (attend/attendance).
    """
    if _initials(words, vocab):
        return True
    for w in words:
        s = _stem(w)
        if s in vocab:
            return True
        for v in vocab:
            if (len(v) >= 3 and s.startswith(v)) or (len(s) >= 5 and len(v) >= 5 and v[:5] == s[:5]):
                return True
    return False


def _stored_value(db: Database, words: list[str], max_columns: int = 60) -> bool:
    """True when some text column holds a value containing the phrase (a bounded read-only scan)."""
    needle = " ".join(words).replace("'", "''")
    if not needle:
        return False
    checked = 0
    for table in db.tables():
        for column in table.columns:
            if not re.search(r"char|text|string|varchar|clob", column.type or "", re.I) and column.type:
                continue
            if checked >= max_columns:
                return False
            checked += 1
            t, c = '"' + table.name.replace('"', '""') + '"', '"' + column.name.replace('"', '""') + '"'
            sql = f"SELECT 1 FROM {t} WHERE lower(CAST({c} AS VARCHAR)) LIKE '%{needle}%' LIMIT 1"
            try:
                if db.execute(sql, timeout_s=2.0, max_rows=1).rows:
                    return True
            except RouterlabError:
                continue  # an odd column (blob, view) says nothing either way
    return False


def schema_lacks(db: Database, term: str) -> bool:
    """True when no table name, column name, example value or stored text value matches ``term``.

    The same matching :func:`check_question` uses, so a term this accepts is one the check reports.
    """
    words = [w for w in _WORD.findall(term.lower()) if w not in _GENERIC]
    if not words:
        return False
    vocab = schema_vocabulary(db)
    return not (_matches(words, vocab) or _stored_value(db, words))


def _term_gaps(
    question: str, db: Database, vocab: frozenset[str], pattern: re.Pattern[str], kind: GapKind, reason: str
) -> list[Gap]:
    gaps: list[Gap] = []
    for m in pattern.finditer(question):
        raw = _WORD.findall(m.group(1).lower())
        words = _phrase(m.group(1))
        # an aggregate caught by the attribute pattern is the measure pattern's business
        if not words or (raw and _AGGREGATE.match(raw[0] + " x")):
            continue
        if _initials(raw[:3], vocab) or _matches(words, vocab) or _stored_value(db, words):
            continue
        term = " ".join(words)
        if all(g.term != term for g in gaps):
            gaps.append(Gap(kind, term, reason.format(term=term)))
    return gaps


def check_question(question: str, db: Database) -> Answerability:
    """Look for a period, measure, entity or attribute in ``question`` that ``db`` cannot hold.

    Reads only the schema, example values and (for a candidate term) a bounded read-only scan of
    text columns; runs no generated SQL.

    Args:
        question: The user's request.
        db: The turn's database (opened read-only).

    Returns:
        The gaps found (none means "answerable as far as a schema check can tell").
    """
    tables = tuple(t.name for t in db.tables())
    vocab = schema_vocabulary(db)
    gaps: list[Gap] = []
    period = _PERIOD.search(question)
    if period:
        term = period.group(0).strip()
        # a month or a quarter needs a date; a year column only resolves years
        needed = 2 if _SUB_YEAR.search(term) else 1
        level = temporal_level(db)
        if level < needed:
            what = "a date or time column" if level == 0 else "a date column (only years are recorded)"
            gaps.append(Gap("period", term, f"no table has {what} to resolve '{term}'"))
    gaps += _term_gaps(question, db, vocab, _AGGREGATE, "measure", "no column measures '{term}'")
    gaps += _term_gaps(question, db, vocab, _ATTRIBUTE, "attribute", "no column holds the '{term}'")
    seen = {g.term for g in gaps}
    gaps += [
        g
        for g in _term_gaps(question, db, vocab, _COUNTED, "entity", "no table or column records '{term}'")
        if g.term not in seen
    ]
    return Answerability(gaps=tuple(gaps), tables=tables)
