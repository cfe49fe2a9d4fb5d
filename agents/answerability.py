"""Can this database answer the question? A schema check every router and the abstain tool share.

The check grounds the question's concepts in the schema. Every noun phrase of the question
(:func:`noun_phrases`: nouns found with a general English dictionary, names, quoted values,
numbers and generic words such as ``number`` left out) must have its head noun matched by a table
name, a column name (``BirthYear`` and ``birth_year`` both give ``birth``, ``year``), a synonym of
one (:mod:`routerlab.agents.lexicon`), a stored value (a bounded read-only scan of text columns),
or the initials of a column (``miles per gallon``: ``mpg``). A phrase that matches nothing is a
*gap*, and so is a time restriction finer than any temporal column:

* **period**: the question restricts or groups by time ("in March 2019", "last quarter",
  "per month") and no column is temporal (by type, or by a name such as ``date``, ``year``);
* **measure**: an aggregated phrase ("the average salary"), or a "how old / how tall / how much
  does it cost" question, that no column measures;
* **attribute**: a property asked for ("the email address of ...", "their shoe size");
* **entity**: any other noun phrase ("how many pilots", "owners and sponsors").

Matching is forgiving on purpose (prefixes, compounds, one-letter typos, suffixes): a router that
abstains on an answerable question loses coverage, so the check prefers missing a gap to
inventing one. Nothing here knows a dataset; the word lists are general English.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from routerlab.agents.db import database
from routerlab.agents.errors import RouterlabError
from routerlab.agents.lexicon import (
    FUNCTION_WORDS,
    GENERIC_NOUNS,
    HOW_MEASURES,
    can_be,
    lemmas,
    stem,
    synonyms,
    word_stems,
    wordset,
)
from routerlab.agents.lexicon import split_identifier as _split_identifier

if TYPE_CHECKING:
    from routerlab.agents.db import Database

__all__ = [
    "GAP_KINDS",
    "Answerability",
    "Gap",
    "Phrase",
    "check_question",
    "noun_phrases",
    "schema_lacks",
    "schema_vocabulary",
    "stem",
    "temporal_level",
    "word_stems",
]

GapKind = Literal["period", "measure", "entity", "attribute"]
GAP_KINDS: tuple[str, ...] = ("period", "measure", "entity", "attribute")


# -- periods -------------------------------------------------------------------------------------
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
    r"|\b(?:over|in|during)\s+the\s+(?:last|past|previous|next)\s+(?:\d+|\w+)\s+(?:days|weeks|months|years)\b"
    r"|\b(?:in|during|over)\s+the\s+(?:summer|winter|spring|autumn|fall|weekends?|holidays?)\b"
    r"|\b(?:on|at|over)\s+(?:the\s+)?(?:weekends?|weekdays?)\b"
)
_TEMPORAL_TYPES = re.compile(r"date|time|interval", re.I)
# column-name words that make a column temporal, by the finest period it can resolve
_FINE_WORDS = wordset("date time month day week quarter hour timestamp created updated dob datetime")
_YEAR_WORDS = wordset("year years season period founded opened started ended born birth when start end")
_SUB_YEAR = re.compile(
    rf"\b(?:{_MONTHS}|week|weekend|month|quarter|day|hour|yesterday|today|tonight|daily|weekly|monthly"
    r"|quarterly|Q[1-4]|summer|winter|spring|autumn|fall|weekends?|weekdays?|days|holidays?)\b",
    re.I,
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


# -- the schema's words (``stem`` and ``word_stems`` live in the lexicon, re-exported here) --------
def schema_vocabulary(db: Database) -> frozenset[str]:
    """Stems of every table name, column name and example value of ``db``, and of the database's own name.

    A name of several words also gives its words joined ("car_makers": ``carmaker``), so one word
    in the question matches two in the schema; the database's name says what it is about
    ("dog_kennels": ``dog``, ``kennel``), so a question naming its subject names no gap.
    """
    vocab: set[str] = set(_name_stems(str(getattr(db, "db_id", "") or "")))
    for table in db.tables():
        vocab |= _name_stems(table.name)
        for column in table.columns:
            vocab |= _name_stems(column.name)
            for value in column.examples:
                if isinstance(value, str):
                    vocab |= word_stems(value)
    return frozenset(vocab)


def _name_stems(name: str) -> set[str]:
    """Stems of an identifier's words, and of each run of adjacent words joined ("TV_Channel": ``tvchannel``)."""
    words = [w for w in _split_identifier(name) if not w.isdigit()]
    out = word_stems(name)
    for i in range(len(words)):
        for j in range(i + 2, len(words) + 1):
            out.add(stem("".join(words[i:j])))
    return out


def _value_stems(db: Database) -> frozenset[str]:
    return frozenset(
        stem
        for table in db.tables()
        for column in table.columns
        for value in column.examples
        if isinstance(value, str)
        for stem in word_stems(value)
    )


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


# -- matching a word against the schema ----------------------------------------------------------
_DERIVATIONAL = (
    "ations", "ation", "itions", "ition", "ments", "ment", "ness", "ances", "ance", "ences", "ence", "ures", "ure",
    "ings", "ing", "ions", "ion", "ers", "er", "ors", "or", "ed", "al", "es", "e", "s",
)  # fmt: skip


def _root(word: str) -> str:
    """``word`` without one derivational or inflectional suffix, keeping at least four letters."""
    for suffix in _DERIVATIONAL:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by one substitution, insertion or deletion."""
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) <= 1
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def _initials(words: list[str], vocab: frozenset[str]) -> bool:
    return len(words) > 1 and "".join(w[0] for w in words) in vocab


def _matches(words: list[str], vocab: frozenset[str]) -> bool:
    """Any word matches a schema stem, or the phrase's initials do (``miles per gallon``: ``mpg``).

    A word matches a stem it equals, starts with or is the start of (``carsw`` for ``car``: a typo
    must not turn an answerable question into a gap), shares its first five letters with
    (attend/attendance), is one half of (``town`` in ``Hometown``), shares a root with
    (closure/closed) or is one letter away from (``cartoos``).
    """
    if _initials(words, vocab):
        return True
    for w in words:
        s = stem(w)
        if s in vocab or _does(s, vocab):
            return True
        for v in vocab:
            if (len(v) >= 3 and s.startswith(v)) or (len(s) >= 5 and len(v) >= 5 and v[:5] == s[:5]):
                return True
            if (len(s) >= 4 and (v.endswith(s) or v.startswith(s))) or (len(v) >= 4 and s.endswith(v)):
                return True
            if len(v) >= 4 and len(_root(s)) >= 4 and _root(s) == _root(v):
                return True
            if len(s) >= 5 and s[0] == v[0] and abs(len(s) - len(v)) <= 1 and _one_edit(s, v):
                return True
    return False


def _does(word: str, vocab: frozenset[str]) -> bool:
    """``word`` names who does what a schema word's verb says ("writer", "author" for ``Written_by``)."""
    if len(word) < 5 or not word.endswith(("er", "or")):
        return False
    bases = {word[:-1], word[:-2]}  # writer: write, worker: work, director: direct
    return bool(bases & _verbs(vocab))


@lru_cache(maxsize=64)
def _verbs(vocab: frozenset[str]) -> frozenset[str]:
    """The verb lemmas of a vocabulary's words ("written": ``write``)."""
    return frozenset(lemma for v in vocab for lemma in lemmas(v).get("VERB", ()))


def _grounded(words: list[str], vocab: frozenset[str]) -> bool:
    """Any word, one of its lemmas or a synonym matches the schema (see :func:`_matches`)."""
    if _matches(words, vocab):
        return True
    expanded: list[str] = []
    for w in words:
        forms = {w, *(lemma for lem in lemmas(w).values() for lemma in lem)}
        for form in forms:
            expanded += [s for s in synonyms(form) if s != w]
    return bool(expanded) and any(_matches([w], vocab) for w in expanded)


def _compound(words: Sequence[str], vocab: frozenset[str]) -> bool:
    """Adjacent words of a phrase that, written as one, are a schema stem ("tv show": ``tvshow``)."""
    return any(stem("".join(words[i:j])) in vocab for i in range(len(words)) for j in range(i + 2, len(words) + 1))


def _initialisms(question: str, vocab: frozenset[str]) -> set[str]:
    """Words of the question covered by a run whose initials are a schema stem ("miles per gallon": mpg)."""
    words = [w for w in _WORD.findall(question.lower()) if not w.isdigit()]
    covered: set[str] = set()
    for n in (3, 4):  # two letters match too many short stems to mean anything
        for i in range(len(words) - n + 1):
            run = words[i : i + n]
            if run[0] in FUNCTION_WORDS or run[-1] in FUNCTION_WORDS:
                continue
            if "".join(w[0] for w in run) in vocab:
                covered |= set(run)
    return covered


def _stored_value(db: Database, words: list[str], max_columns: int = 60) -> bool:
    """True when some text column holds a value containing the phrase (a bounded read-only scan)."""
    needles = list(dict.fromkeys(n for n in (" ".join(words), " ".join(stem(w) for w in words)) if n))
    if not needles:
        return False
    where = " OR ".join("lower(CAST({c} AS VARCHAR)) LIKE '%" + n.replace("'", "''") + "%'" for n in needles)
    checked = 0
    for table in db.tables():
        for column in table.columns:
            if not re.search(r"char|text|string|varchar|clob", column.type or "", re.I) and column.type:
                continue
            if checked >= max_columns:
                return False
            checked += 1
            t, c = '"' + table.name.replace('"', '""') + '"', '"' + column.name.replace('"', '""') + '"'
            sql = f"SELECT 1 FROM {t} WHERE {where.format(c=c)} LIMIT 1"
            try:
                if db.execute(sql, timeout_s=database.PROBE_TIMEOUT_S, max_rows=1).rows:
                    return True
            except RouterlabError:
                continue  # an odd column (blob, view) says nothing either way
    return False


def schema_lacks(db: Database, term: str) -> bool:
    """True when no table name, column name, synonym, example value or stored text value matches ``term``.

    The same matching :func:`check_question` uses, so a term this accepts is one the check reports
    when it reads it as a noun.
    """
    words = [w for w in _WORD.findall(term.lower()) if not _generic(w)]
    if not words:
        return False
    vocab = schema_vocabulary(db)
    return not (_grounded(words, vocab) or _stored_value(db, words))


# -- the question's noun phrases -----------------------------------------------------------------
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'-]*|\d+(?:[.,]\d+)*|[^\sA-Za-z\d]")
# quoted values, and asides in brackets ("branches (business units)", a "[tag]")
_QUOTED = re.compile(r"\"[^\"]*\"|(?<!\w)'[^']*'(?!\w)|`[^`]*`|\([^()]*\)|\[[^\[\]]*\]")
_SENTENCE_END = frozenset(".?!;:")
_BE = wordset("is are was were be been being")
_AUX = wordset("do does did can could will would shall should may might must")
#: a noun/verb word right after one of these is read as a verb ("who own", "they work")
_VERB_BEFORE = wordset(
    "to do does did who that can could will would shall should may might must i you we they he she it them",
    "currently still also always never often usually already",
)
_DETERMINERS = wordset("the a an all each every their his her its our my your any some no these those this that")
#: a noun/verb word right before one of these is read as a verb ("play the", "use it")
_OBJECT_AFTER = _DETERMINERS - {"this", "that"} | wordset("it them him us me")
_DEGREE = wordset("most least more less very too so quite rather how")
#: word pairs that are adverbs, whatever their second word can be alone
_IDIOMS = frozenset({("as", "well"), ("of", "course"), ("at", "all"), ("in", "general")})
#: quantifiers that float between a subject and its verb ("they each make"), and those subjects
_FLOATING = wordset("each all both")
_SUBJECTS = wordset("they we you i he she it")
#: words that follow an adjective used as a predicate ("unknown whether", "available to")
_PREDICATE_AFTER = wordset("whether than enough to because")
_POSSESSIVE = wordset("their his her its our my your whose")
_PREPOSITIONS = wordset("in on at by for with from to of about over under into")
_STATISTICS = wordset("average mean total sum maximum minimum max min median highest lowest count")
_AGGREGATES = _STATISTICS | wordset("largest smallest biggest greatest overall")
_COUNTING = wordset("many number count list show each every")

PhraseRole = Literal["measure", "attribute", "entity"]


@dataclass(frozen=True)
class Phrase:
    """A run of noun words in a question, the unit the grounding check looks up.

    Attributes:
        words: Every word of the run, lower case.
        content: The words that must be grounded: the head noun and the modifiers that can only
            be nouns (generic words such as ``number`` left out).
        role: ``measure`` after an aggregate ("the average X"), ``entity`` when counted or listed
            ("how many X", "list all X"), ``attribute`` when it reads as a property ("the X of",
            "their X"), else ``entity``.
        head: The last word when it names a concept (None for a generic head such as ``type``).
    """

    words: tuple[str, ...]
    content: tuple[str, ...]
    role: PhraseRole
    head: str | None = None


#: contractions a word may carry ("what're", "they've"): the word is read without them
_CONTRACTION = re.compile(r"'(?:re|ve|ll|d|m)$")


def _clean(token: str) -> str:
    return _CONTRACTION.sub("", token.lower()).removesuffix("'s").removesuffix("'")


def _generic(word: str) -> bool:
    return word in GENERIC_NOUNS or stem(word) in GENERIC_NOUNS


def _function_typo(word: str) -> bool:
    """A word no dictionary knows, one letter away from a function or generic word ("theor": "their")."""
    return not lemmas(word) and any(
        len(f) >= 4 and abs(len(f) - len(word)) <= 1 and _one_edit(word, f) for f in FUNCTION_WORDS | GENERIC_NOUNS
    )


def _clause(tokens: list[str], i: int) -> set[str]:
    """Lower-case words of the sentence before token ``i``."""
    out: set[str] = set()
    for tok in reversed(tokens[:i]):
        if tok in _SENTENCE_END:
            break
        out.add(tok.lower())
    return out


def _is_noun(tokens: list[str], i: int) -> bool:
    """Whether word ``i`` reads as a noun: the dictionary allows it and its neighbours do not make it a verb."""
    word = _clean(tokens[i])
    if not can_be(word, "NOUN"):
        return False
    prev = tokens[i - 1].lower() if i > 0 else ""
    if _degree_form(word) or (not lemmas(word) and word.endswith("est") and prev in _DETERMINERS | _DEGREE):
        return False  # a comparative or superlative ("lighter than", "the oldest", misspelt "the yongest")
    if (prev, word) in _IDIOMS:
        return False  # "as well", "of course": adverbs, not things
    if not (can_be(word, "VERB") or can_be(word, "ADJ") or can_be(word, "ADV")):
        return True
    prev = tokens[i - 1].lower() if i > 0 else ""
    nxt = tokens[i + 1].lower() if i + 1 < len(tokens) else ""
    if prev in _DEGREE and can_be(word, "ADJ"):
        return False  # "the most common", "how old" (the measure is checked on its own)
    if not can_be(word, "VERB"):
        return True
    bare = word in lemmas(word).get("VERB", ())
    participle = word.endswith(("ing", "ed")) and not bare
    if participle and prev not in _DETERMINERS:
        return False  # "owners living in", unless a determiner makes it a noun ("the building")
    if i == 0 or prev in _SENTENCE_END or prev == "please":
        return False  # an imperative: "List ...", "Name ..."
    if prev in _BE and not word.endswith("s"):
        return False  # a passive: "were cast", "was built"
    if prev in _VERB_BEFORE or (prev in ("not", "n't") and i > 1 and tokens[i - 2].lower() in _AUX):
        return False
    if prev == "which" and i > 1 and tokens[i - 2] not in _SENTENCE_END:
        return False  # "makers which produce": a relative clause, not "Which producers"
    if nxt in _OBJECT_AFTER:
        return False
    if bare and prev in _FLOATING and i > 1 and tokens[i - 2].lower() in _SUBJECTS:
        return False  # a floating quantifier between subject and verb: "do they each produce"
    plural_subject = prev.endswith("s") and not prev.endswith(("ss", "'s")) and prev not in FUNCTION_WORDS
    if bare and plural_subject and can_be(prev, "NOUN"):
        return False  # after a plural subject: "how many concerts play there"
    return not (bare and prev not in _DETERMINERS and _AUX & _clause(tokens, i))  # "did each maker produce"


def _role(tokens: list[str], start: int, end: int) -> PhraseRole:
    back = start - 1
    while back >= 0 and tokens[back].lower() in _DETERMINERS:
        back -= 1
    trigger = tokens[back].lower() if back >= 0 else ""
    nxt = tokens[end].lower() if end < len(tokens) else ""
    if trigger in _AGGREGATES or any(t.lower() in _AGGREGATES for t in tokens[start : end - 1]):
        return "measure"  # "the average salary", "the highest ticket price"
    if trigger in _COUNTING or (trigger == "of" and back > 0 and tokens[back - 1].lower() in ("number", "count")):
        return "entity"
    prev = tokens[start - 1].lower() if start > 0 else ""
    if nxt == "of" or prev in _POSSESSIVE or prev.endswith("'s"):
        return "attribute"
    return "entity"


def _degree_form(word: str) -> bool:
    """A comparative or superlative adjective ("lighter", "oldest", "best")."""
    return any(a != word for a in lemmas(word).get("ADJ", ())) and word.endswith(("er", "est", "st"))


def _lone_adjective(tokens: list[str], i: int) -> bool:
    """A word alone in its run that reads as an adjective: "is unknown", "in general", "the single best"."""
    word = _clean(tokens[i])
    if word.endswith("s") or not can_be(word, "ADJ"):
        return False
    prev = tokens[i - 1].lower() if i > 0 else ""
    nxt = _clean(tokens[i + 1]) if i + 1 < len(tokens) else ""
    if i == 0 or prev in _SENTENCE_END or prev in _BE or (prev in _PREPOSITIONS and prev != "of"):
        return True
    return _degree_form(nxt) or nxt in _PREDICATE_AFTER


def _english(tokens: list[str], share: float = 0.7) -> bool:
    """At least ``share`` of the lower-case words are English words the dictionary knows."""
    words = [t.lower() for t in tokens if t[:1].islower() and len(t) > 1]
    known = sum(1 for w in words if w in FUNCTION_WORDS or lemmas(_clean(w)))
    return not words or known >= share * len(words)


def noun_phrases(question: str) -> list[Phrase]:
    """The question's noun phrases whose concept a schema must hold, in order.

    Quoted text, asides in brackets, numbers and capitalised words inside a sentence (names:
    values, not concepts) are left out; so are function words, words that can only be verbs, adjectives or adverbs,
    and words read as verbs or adjectives where they stand. What remains is grouped into runs of
    adjacent nouns ("home address").
    """
    tokens = _TOKEN.findall(_QUOTED.sub(" , ", question))
    if not _english(tokens):
        return []  # the dictionary is English: in another language every word would look like a gap
    phrases: list[Phrase] = []
    run: list[int] = []

    def close(end: int) -> None:
        if not run or (len(run) == 1 and _lone_adjective(tokens, run[0])):
            run.clear()
            return
        words = tuple(_clean(tokens[j]) for j in run)
        # the head noun names the concept ("car colour" is a colour); a modifier that can be an
        # adjective only narrows it ("current managers"); a generic head ("blood type") leaves
        # its noun modifiers to name the concept
        modifiers = tuple(w for w in words[:-1] if not _generic(w) and not can_be(w, "ADJ"))
        head = None if _generic(words[-1]) else words[-1]
        content = (*modifiers, head) if head else modifiers
        if content:
            phrases.append(Phrase(words, content, _role(tokens, run[0], end), head))
        run.clear()

    for i, tok in enumerate(tokens):
        word = _clean(tok)
        nameish = tok[:1].isupper() and not (i == 0 or tokens[i - 1] in _SENTENCE_END)
        if (
            not word[:1].isalpha()
            or word in FUNCTION_WORDS
            or word.endswith("n't")
            or nameish
            or len(word) < 3
            or _function_typo(word)
            or not _is_noun(tokens, i)
        ):
            close(i)
            continue
        run.append(i)
        if tok.lower().endswith("'s"):
            close(i + 1)  # a possessive ends its phrase: "the singer's age"
    close(len(tokens))
    return phrases


# -- the check -----------------------------------------------------------------------------------
_REASONS: dict[PhraseRole, tuple[GapKind, str]] = {
    "measure": ("measure", "no column measures '{term}'"),
    "attribute": ("attribute", "no column holds the '{term}'"),
    "entity": ("entity", "no table or column records '{term}'"),
}
_HOW = re.compile(r"\bhow\s+(?:much\s+(?:\w+\s+){0,5}?(\w+)\s*[?.!]?\s*$|(\w+))", re.I)


def _period_gaps(question: str, db: Database) -> list[Gap]:
    """Every time restriction of the question the database's temporal columns cannot resolve."""
    level: int | None = None
    gaps: list[Gap] = []
    for m in _PERIOD.finditer(question):
        term = m.group(0).strip()
        # a month or a quarter needs a date; a year column only resolves years
        needed = 2 if _SUB_YEAR.search(term) else 1
        level = temporal_level(db) if level is None else level
        if level < needed and all(g.term != term for g in gaps):
            what = "a date or time column" if level == 0 else "a date column (only years are recorded)"
            gaps.append(Gap("period", term, f"no table has {what} to resolve '{term}'"))
    return gaps


def _how_gaps(question: str, vocab: frozenset[str]) -> list[Gap]:
    """A "how old", "how tall", "how much does it cost" question: the measure must be grounded."""
    gaps: list[Gap] = []
    for m in _HOW.finditer(question):
        word = (m.group(1) or m.group(2) or "").lower()
        forms = {word, *(lemma for lem in lemmas(word).values() for lemma in lem)}
        measure = next((HOW_MEASURES[f] for f in sorted(forms) if f in HOW_MEASURES), None)
        if measure is None or _grounded([measure], vocab) or _grounded([word], vocab):
            continue
        gaps.append(Gap("measure", measure, f"no column measures '{measure}' (asked as 'how {word}')"))
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
    values = _value_stems(db)
    phrases = noun_phrases(question)
    # a time restriction restricts something: without any noun ("what did I ask you yesterday?")
    # the request is not a question about the data
    gaps = (_period_gaps(question, db) if phrases else []) + _how_gaps(question, vocab)
    covered = _initialisms(question, vocab)
    # a column named like a statistic ("Average", "Lowest") measures what the question aggregates
    statistic_column = any(w in _STATISTICS and stem(w) in vocab for w in _WORD.findall(question.lower()))
    for phrase in phrases:
        if covered & set(phrase.words):
            continue
        if any(w in _STATISTICS and stem(w) in vocab for w in phrase.words):
            continue  # a column named like the statistic ("Average"): "the average attendance" reads it
        if phrase.role == "measure" and statistic_column:
            continue
        if _compound(phrase.content, vocab):
            continue  # "tv show" for a table "TVShow"
        if _initials(list(phrase.content), vocab):
            continue
        # every content word must be grounded: the head names the concept ("car colour" is a
        # colour) and a noun modifier narrows it to another concept ("email address")
        missing = [w for w in phrase.content if not _grounded([w], vocab)]
        if not missing or _stored_value(db, list(phrase.content)) or _stored_value(db, missing):
            continue
        modifiers = phrase.content[:-1] if phrase.head is not None else ()
        if any(stem(w) in values or _stored_value(db, [w]) for w in modifiers):
            continue  # a stored value picks the rows the head names: "fuel stations", "Shell stations"
        term = " ".join(phrase.content[phrase.content.index(missing[0]) :])  # "email address", not "email"
        kind, reason = _REASONS[phrase.role]
        if all(g.term != term for g in gaps):
            gaps.append(Gap(kind, term, reason.format(term=term)))
    return Answerability(gaps=tuple(gaps), tables=tables)
