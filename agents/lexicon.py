"""A small general English lexicon for grounding a question's words in a database schema.

The one home of the word lists, the stemmer and the word-set helper: the schema check
(:mod:`routerlab.agents.answerability`), schema linking and the tool index
(:mod:`routerlab.agents.tools.text`) and the router checks all read them from here.

Nothing here knows any dataset: word classes come from lemminflect's English dictionary (which
words can be nouns, verbs, adjectives), and the hand-written lists are closed classes of English
(function words), words that name no schema concept in any domain (``number``, ``name``,
``information``), and a few groups of common synonyms and spelling variants a schema may use
instead of the question's word (``salary``/``wage``/``pay``).
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = [
    "FUNCTION_WORDS",
    "GENERIC_NOUNS",
    "HOW_MEASURES",
    "LINKING_STOP_WORDS",
    "SYNONYM_GROUPS",
    "can_be",
    "lemmas",
    "plural_s",
    "split_identifier",
    "stem",
    "synonyms",
    "word_stems",
    "wordset",
]


def wordset(*lines: str) -> frozenset[str]:
    """The whitespace-separated words of ``lines`` as a set (a word list written as prose lines)."""
    return frozenset(w for line in lines for w in line.split())


FUNCTION_WORDS: frozenset[str] = wordset(
    # determiners, pronouns, quantifiers
    "a an the this that these those some any all each every no none both either neither other another such",
    "what which who whom whose where when why how whatever whichever whoever",
    "i me my mine we us our ours you your yours he him his she her hers it its they them their theirs",
    "one ones many much more most less least few fewer several enough own same",
    # prepositions, conjunctions, particles
    "of for per in on at by to from with without within into onto over under above below between among",
    "across through during before after since until till about around against along than as like via",
    "and or but nor not so if then else also only just even still yet too very",
    "up down out off back away together",
    "because whether although though unless while whereas versus vs plus minus such thus hence therefore however",
    "itself themselves himself herself ourselves yourself yourselves myself",
    "please there here ever never always sometimes often",
    # auxiliaries and the request verbs of a question
    "is are was were be been being am do does did done have has had having can could will would shall should",
    "may might must cannot",
    "list show give find return tell display get provide report compute calculate count name sort order",
    "rank group",
    # cardinal and ordinal numbers in words
    "zero two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty hundred",
    "thousand million billion once twice half third",
)

GENERIC_NOUNS: frozenset[str] = wordset(
    # what any answer is made of
    "number count total sum amount average mean median maximum minimum max min percentage percent proportion",
    "ratio share name names id ids identifier information info detail details record records row rows entry",
    "entries item items list lists value values result results kind kinds type types sort sorts thing things",
    "way ways lot lots part parts pair pairs group groups set sets top bottom rest others other ones one",
    "first last second next previous",
    "difference differences order descending ascending alphabetical chronological calendar reverse",
    "yes no data database table column",
    "question answer people person persons someone anyone everyone everybody anybody",
    # text matching: the question quotes what to look for, the schema need not name it
    "word words letter letters character characters string strings substring substrings text phrase prefix",
    "suffix pattern spelling capitalization capitalisation lowercase uppercase",
    # a group's members are the group's rows ("staff members")
    "member members",
    # words about the schema's own parts ("these features", "which attributes"): the columns
    "feature features attribute attributes property properties field fields characteristic characteristics",
    # the shape of an answer, not a concept ("no duplicates")
    "duplicate duplicates repeat repeats",
    # the whole of what a database records ("... in the world"): a scope, not a concept it must name
    "world globe planet universe",
    # units: a number's unit, not a concept the schema must name
    "metre metres meter meters centimetre centimetres cm kilometre kilometres km mile miles inch inches foot feet",
    "kilogram kilograms kg gram grams pound pounds lbs dollar dollars euro euros usd degree degrees",
    # abstract nouns that name no concept on their own ("side by side", "in percentage terms")
    "figure figures level levels side sides spot term terms tie ties case cases situation situations aspect",
    "aspects fact facts instance instances matter option options choice choices version versions event events",
    "basis extent degree manner respect regard",
    # words about SQL itself: a question about them is about the language, not the data
    "query queries subquery subqueries join joins key keys index indexes function functions clause clauses",
    "cte ctes view views schema schemas sql statement statements syntax",
    # words about the notation itself ("1 stands for yes")
    "stand stands mean means denote denotes represent represents indicate indicates note",
    # periods are checked by the temporal rule, not as concepts
    "time times date dates day days week weeks weekend weekends month months quarter quarters year years",
    "hour hours minute minutes season seasons summer winter spring autumn fall today yesterday moment now",
    "period periods weekday weekdays holiday holidays",
    # computations over a measure, not measures of their own
    "growth change changes increase increases decrease decreases trend running cumulative rolling",
)

#: each group: words a schema may use for the same concept (spelling variants, common synonyms,
#: and a measure derivable from another column: an age from a birth date)
SYNONYM_GROUPS: tuple[frozenset[str], ...] = tuple(
    wordset(line)
    for line in (
        "salary wage pay earning income compensation payroll",
        "revenue sale sales turnover takings",
        "price cost fee charge amount money payment",
        "speed velocity",
        "length duration",
        "email mail e-mail",
        "phone telephone cell mobile",
        "address street location",
        "colour color",
        "favourite favorite",
        "age birth born dob birthday founded opened established built launched",
        "gender sex",
        "country nation nationality",
        "city town",
        "car vehicle automobile",
        "maker manufacturer producer make brand",
        "film movie",
        "song track music",
        "author writer creator",
        "fuel gasoline petrol diesel mileage mpg",
        "job occupation position role title profession",
        "company firm business corporation enterprise",
        "student pupil",
        "teacher instructor professor lecturer",
        "employee staff worker personnel",
        "customer client buyer",
        "shop store",
        "area region district zone",
        "size capacity",
        "height tall",
        "weight heavy",
        "length long",
        "population inhabitant",
        "win won winner victory",
        "death dead killed",
        "injury injured wounded",
    )
)


#: "how <adjective>" and "how much ... <verb>" ask for a measure: the noun a schema would name it by
HOW_MEASURES: dict[str, str] = {
    "old": "age",
    "young": "age",
    "tall": "height",
    "high": "height",
    "heavy": "weight",
    "weigh": "weight",
    "long": "length",
    "big": "size",
    "large": "size",
    "far": "distance",
    "fast": "speed",
    "expensive": "price",
    "cheap": "price",
    "cost": "cost",
    "earn": "income",
    "pay": "payment",
}


#: the question words lexical schema linking and the tool index drop: a narrow subset of
#: FUNCTION_WORDS on purpose, since ``name``, ``count``, ``order`` or ``rank`` are column names
#: that linking must still match
LINKING_STOP_WORDS: frozenset[str] = wordset(
    "a an and are by did do does for from how in is many much of on or per the to was what which who with"
)

_WORD = re.compile(r"[a-z0-9]+")


def plural_s(word: str) -> str:
    """``word`` without a plural ``-s`` ("areas" -> "area"; "class" and short words stay).

    The light stem that schema linking and the tool index match with; :func:`stem` adds the
    ``-ies`` and ``-es`` plurals on top of it.
    """
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def stem(word: str) -> str:
    """A light English singular of ``word`` ("companies" -> "company", "boxes" -> "box", "cars" -> "car")."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and word[-3] in "sxz":
        return word[:-2]
    return plural_s(word)


def split_identifier(name: str) -> list[str]:
    """Lower-case words of ``name``, split at underscores and camelCase (``BirthYear`` -> birth, year)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(name))
    return _WORD.findall(spaced.lower().replace("_", " "))


def word_stems(text: str) -> set[str]:
    """The stems of ``text``'s words, identifiers split at underscores and camelCase."""
    return {stem(w) for w in split_identifier(text) if len(w) > 1}


@lru_cache(maxsize=4096)
def lemmas(word: str) -> dict[str, tuple[str, ...]]:
    """Part of speech -> lemmas of ``word`` in lemminflect's dictionary ({} when it is not there)."""
    import lemminflect

    return dict(lemminflect.getAllLemmas(word.lower()))


def can_be(word: str, pos: str) -> bool:
    """True when ``word`` can be a ``pos`` (``NOUN``, ``VERB``, ``ADJ``, ``ADV``) in English.

    A word the dictionary does not know (a coined name, a typo, an abbreviation) can be a noun.
    """
    found = lemmas(word)
    return pos in found if found else pos == "NOUN"


def synonyms(word: str) -> frozenset[str]:
    """Words of every synonym group holding ``word`` (``word`` itself included)."""
    out = {word}
    for group in SYNONYM_GROUPS:
        if word in group:
            out |= group
    return frozenset(out)
