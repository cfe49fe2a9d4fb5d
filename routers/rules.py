"""The ``rules`` router: intent patterns, SQL detection with sqlglot, no LM call.

The rule table is data: each rule names an intent, a confidence and either a regular expression
over the request or a detector over the SQL found in it. The highest-confidence match wins.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot

from routerlab.agents.answerability import check_question
from routerlab.agents.errors import ConfigError
from routerlab.agents.state import Intent, PipelineState
from routerlab.agents.tools.text import extract_error, extract_sql, normalise_request
from routerlab.agents.trace import Usage
from routerlab.agents.turn_history import history_of
from routerlab.routers.base import router
from routerlab.routers.support.ambiguity import AMBIGUITY_KINDS, find_ambiguities
from routerlab.routers.support.attempt import STORED_DATA_WRITES
from routerlab.routers.support.intent import Classification, IntentRouter
from routerlab.routers.support.result_edit import edits_the_result
from routerlab.routers.support.schema_gap import DATA_REQUEST, QUOTES_SQL, schema_gaps
from routerlab.routers.support.turns import TURN_CHECKS, split_social

__all__ = ["DEFAULT_RULES", "Rule", "RulesRouter", "normalise_request", "schema_gaps"]


@dataclass(frozen=True)
class Rule:
    """One row of the rule table.

    Attributes:
        name: Stable name (reported as ``rule:<name>``).
        intent: Intent the rule implies.
        confidence: In [0, 1].
        pattern: Case-insensitive regular expression over the request, or None.
        detector: Name of a detector in :data:`DETECTORS` or :data:`SCHEMA_DETECTORS`, or None. Both set:
            both must match.
    """

    name: str
    intent: Intent
    confidence: float
    pattern: str | None = None
    detector: str | None = None


#: how far past a write keyword a quoted statement is read, and how many keywords are tried: each
#: parse used to read the whole rest of the text, quadratic in its length (a 128k-character
#: question took 137 s). A longer or later write is still refused by the SQL guard.
_WRITE_WINDOW = 4000
_WRITE_TRIES = 64
_WRITE_KEYWORD = re.compile(r"\b(INSERT|UPDATE|DELETE|DROP|CREATE|ALTER|TRUNCATE|MERGE|GRANT)\b", re.I)


def _has_write_sql(text: str) -> bool:
    for m in itertools.islice(_WRITE_KEYWORD.finditer(text), _WRITE_TRIES):
        try:
            for stmt in sqlglot.parse(text[m.start() : m.start() + _WRITE_WINDOW], read="duckdb"):
                if stmt is not None and (isinstance(stmt, STORED_DATA_WRITES) or stmt.find(*STORED_DATA_WRITES)):
                    return True
        except (sqlglot.errors.SqlglotError, ValueError, RecursionError):
            continue
    return False


#: statements and table functions that reach outside the database: files, settings, extensions,
#: procedures. The SQL guard refuses them too; here they are refused before any SQL is written.
_OUTSIDE_SQL = re.compile(
    r"\bATTACH\s+(DATABASE\s+)?(IF\s+NOT\s+EXISTS\s+)?['\"]"
    r"|\bDETACH\s+(DATABASE\s+)?\w+\s*(;|$)"
    r"|\bCOPY\s+[\w.\"()]+\s+(TO|FROM)\s+['\"]"
    r"|\bPRAGMA\s+\w+"
    r"|\b(INSTALL|LOAD)\s+['\"]?\w+['\"]?\s*(;|$)"
    r"|\bSET\s+(GLOBAL\s+|SESSION\s+|LOCAL\s+)?\w+\s*(=|\bTO\b)\s*['\"\w]"
    r"|\bRESET\s+\w+\s*(;|$)"
    r"|\bCALL\s+\w+\s*\("
    r"|\b(EXPORT|IMPORT)\s+DATABASE\b"
    r"|\b(read_csv|read_csv_auto|read_parquet|read_json|read_json_auto|read_ndjson|read_text|read_blob|"
    r"parquet_scan|csv_scan|glob|sqlite_scan|sqlite_attach|postgres_scan|load_extension|readfile|writefile)\s*\(",
    re.I | re.M,
)


def _has_outside_sql(text: str) -> bool:
    return _OUTSIDE_SQL.search(text) is not None


def _text_check(kind: str) -> Callable[[str], bool]:
    """The turn check ``kind`` (routers/support/turns.py) as a detector over the request alone."""
    check = TURN_CHECKS[kind]
    return lambda text: bool(check(text, None))


DETECTORS: dict[str, Callable[[str], bool]] = {
    "sql_present": lambda text: extract_sql(text) is not None,
    "sql_with_error": lambda text: extract_sql(text) is not None and extract_error(text) is not None,
    "write_sql": _has_write_sql,
    "outside_sql": _has_outside_sql,
    # turns that are not for the database (routers/support/turns.py); these read no schema
    **{f"turn:{kind}": _text_check(kind) for kind in TURN_CHECKS if kind != "general_knowledge"},
}

#: detectors that read the whole request; every other rule reads it without the greetings and
#: thanks around it, so a polite data question is decided as the data question it is
_WHOLE_REQUEST = frozenset({"turn:social"})


#: detectors that also read the turn's database schema (opened read-only); False without one
_TEMPORAL_TYPE = re.compile(r"\b(DATE|TIMESTAMP|DATETIME|TIME)\b", re.I)


def _records_time(db: Any) -> bool:
    """Whether any column of ``db`` is typed as a date or time: its facts happen in time."""
    return any(_TEMPORAL_TYPE.search(c.type or "") for t in db.tables() for c in t.columns)


#: ``(request, database, earlier turns) -> bool``; the turns matter to the ambiguity kinds that a
#: conversation can settle (routers/support/ambiguity.py)
SCHEMA_DETECTORS: dict[str, Callable[[str, Any, Sequence[Any]], bool]] = {
    # a request quoting SQL is about that SQL (explain, fix), not a question for the schema
    "schema_gap": lambda text, db, _history: (
        extract_sql(text) is None and not QUOTES_SQL.search(text) and not check_question(text, db).answerable
    ),
    "records_time": lambda text, db, _history: _records_time(db),
    "turn:general_knowledge": lambda text, db, _history: bool(TURN_CHECKS["general_knowledge"](text, db)),
    # a change request about the result shown, not the data stored (routers/support/result_edit.py)
    "result_edit": edits_the_result,
}


def _ambiguity_detectors(today: _dt.date | None) -> dict[str, Callable[[str, Any, Sequence[Any]], bool]]:
    """``ambiguity:<kind>`` detectors: the schema-derived ambiguity check of one kind (``support/ambiguity.py``)."""

    def detector(kind: str) -> Callable[[str, Any, Sequence[Any]], bool]:
        return lambda text, db, history: bool(find_ambiguities(text, db, kinds=(kind,), today=today, history=history))

    return {f"ambiguity:{kind}": detector(kind) for kind in AMBIGUITY_KINDS}


SCHEMA_DETECTORS.update(_ambiguity_detectors(None))

#: a request quoting a query (explain / fix) is never an ambiguous data question
#: (the first SELECT is found atomically: "some SELECT is followed by FROM" holds exactly when the
#: first one is, and trying every SELECT was quadratic in the request's length)
_NO_QUOTED_SQL = r"(?!(?>.*?\bselect\b).*\bfrom\b)"

#: words that pin a period: a year, a month, a relative or whole period, a per-period rate
_PERIOD = (
    r"\b(19|20)\d\d\b|\b(jan(uary)?|feb(ruary)?|march|april|may|june|july|aug(ust)?|sept?(ember)?|"
    r"oct(ober)?|nov(ember)?|dec(ember)?)\b|\b(last|this|previous|past|next) (\d+ )?(days?|weeks?|months?|"
    r"years?|quarters?)\b|\b(today|yesterday|ever|all[- ]time|in total|overall|so far|daily|weekly|monthly|"
    r"yearly|annual|on average|since|between|before|after|during|from|until|dates?|earliest|latest)\b"
    r"|\b(per|each|every|a) (day|week|month|year|quarter)\b|\bq[1-4]\b"
)

#: how much of something that happens over time (visits, sales, earnings)
_AMOUNT_OF_EVENTS = (
    r"(?=.*\b(how many|how much|what'?s|what (is|was)|total)\b)"
    r"(?=.*\b(came through|come through|passed through|visited|visits|sold|sales|made|make|earn(ed|s)?|"
    r"took in|revenue|traffic|customers|visitors|footfall|orders|transactions)\b)"
)

#: a ranking or judgement whose measure is left open ("most popular", "doing well", "top three")
_OPEN_MEASURE = (
    r"(?!(\W*\b\w+\b){13})"  # a request of 13 words or more spells out what it wants
    r"(?!.*\b(by|in terms of|measured by|based on)\b)"
    r".*(\b(most|least) (popular|successful|busy|important|profitable)\b"
    r"|\b(best|worst)\b(?![- ](sell|paid|rated))|\bhow (busy|popular|good|bad|well)\b"
    r"|\bdoing (well|badly|ok|okay|fine)\b"
    r"|\bhow (is|are|was|were)\b.{0,40}\bdoing\b|\bwhat'?s\b.{0,40}\blike\b"
    r"|^\s*(give me|show me|list|what are) (the )?top (\d+|three|five|ten)\W*$)"
)


_DATA_WORDS = (
    r"\b(how many|how much|total|average|avg|sum|count|list|show|which|what (?:is|was|were|are) the|"
    r"top \d+|highest|lowest|most|least|per|each|revenue|traffic|number of|compare|trend)\b"
)


DEFAULT_RULES: tuple[Rule, ...] = (
    Rule(
        "prompt_injection",
        "refuse",
        0.97,
        r"\b(ignore|disregard|forget) (all |any |the )?(previous|prior|above|earlier) (instructions|rules|prompts?)"
        r"|\byou are now\b|\bsystem prompt\b|\bdeveloper mode\b"
        r"|^\s*(system|admin|root)\s*:|\b(maintenance|admin|administrator|god|debug) mode\b|\bjailbreak"
        r"|\bpretend (you are|to be)\b|\bwithout (any )?(rules|restrictions|limits)\b"
        r"|\b(bypass|override|disable)\b.{0,30}\b(rules|guard|guardrails|restrictions|filters?|safety)\b",
    ),
    Rule(
        "secrets",
        "refuse",
        0.9,
        r"\b(passwords?|passwd|api[- ]?keys?|secret keys?|access tokens?|credentials?|connection strings?|"
        r"private keys?|ssh keys?|environment variables?|env vars?)\b",
    ),
    Rule("write_sql", "refuse", 0.96, detector="write_sql"),
    Rule("outside_sql", "refuse", 0.96, detector="outside_sql"),
    Rule(
        "outside_request",
        "refuse",
        0.92,
        r"\b(read|open|cat|dump|load|import|export|write|save|attach|mount)\b.{0,40}"
        r"(\bfile\b|/etc/|~/|\.\./|\b\w+\.(csv|txt|json|parquet|db|duckdb|sqlite|env|pem|key)\b)"
        r"|\b(install|load)\b.{0,20}\b(extensions?|plugins?|modules?|libraries|library|code)\b"
        r"|\b(change|modify|set|turn (on|off)|enable|disable)\b.{0,30}\b(settings?|configuration|config|pragma)\b"
        r"|\b(run|execute|eval)\b.{0,20}\b(shell|system|python|bash|os) (commands?|code)\b",
    ),
    # a change request is an edit of the result shown when the conversation has a result, its
    # object names no table of the schema and it states no new value (evidence, not words,
    # decides). Tied with unsafe_verb and secrets (0.9) and listed between them: the first of
    # equal rules wins, so it beats unsafe_verb and never a request for secrets
    Rule("result_edit", "sql", 0.9, detector="result_edit"),
    Rule(
        "unsafe_verb",
        "refuse",
        0.9,
        r"\b(delete|drop|truncate|wipe|erase|purge|destroy)\b|\binsert (a |new )?(row|record)s?\b"
        r"|\b(update|change|modify|set|overwrite|rename|alter)\b.{0,40}\b(to|value|column|table|record|row)s?\b"
        r"|\b(grant|revoke)\b|\bremove (all|every|the)\b"
        r"|\binsert\b(?!ed)|\b(add|create|register)\s+(a\s+)?new\b"
        r"|\bmark\b.{0,40}\bas (resolved|closed|done|paid|deleted|inactive)\b"
        r"|\b(add|create|insert|make up|fabricate|invent)\b.{0,30}\b(fake|dummy|bogus|made-up|fictional)\b"
        # the same in a few other languages: delete / erase / forget your rules
        r"|\b(borra|borrar|elimina|eliminar|olvida tus reglas|l(ö|oe)sche|l(ö|oe)schen|entferne|vergiss deine regeln"
        r"|supprime|supprimer|efface|effacer|oublie tes r(è|e)gles|cancella|dimentica le regole)\b"
        r"|(删除|清空|忘记(你的)?规则)"
        r"|^\W*(please |can you |could you |would you )?(bump|increase|raise|decrease|lower|reduce|adjust|inflate)\b"
        r"|\bso (that )?(it|they|the \w+) (looks?|seems?|appears?) (better|worse|good|bad|higher|lower)\b",
    ),
    Rule("sql_with_error", "fix", 0.93, detector="sql_with_error"),
    Rule(
        "fix_words",
        "fix",
        0.88,
        r"\b(fix|repair|correct|debug|broken|doesn'?t work|fails?|failing|error)\b",
        detector="sql_present",
    ),
    Rule(
        "explain_words",
        "explain",
        0.9,
        r"\b(explain|what does|what is this|meaning of|describe|walk me through|understand|tell me what)\b",
        detector="sql_present",
    ),
    # a quoted query with no fix, error or refusal cue: the request is about that query
    Rule("sql_only", "explain", 0.81, detector="sql_present"),
    # nothing but greetings, thanks or goodbyes; a data question wrapped in them is decided without them
    Rule("greeting", "chat", 0.9, detector="turn:social"),
    # below the refusals (0.9-0.97): "send me the passwords" is refused, not chatted about
    Rule("action_request", "chat", 0.89, detector="turn:action"),
    # above the checks of a data request (schema_gap 0.84, clarifications up to 0.85)
    Rule("small_talk", "chat", 0.86, detector="turn:small_talk"),
    Rule("general_knowledge", "chat", 0.86, detector="turn:general_knowledge"),
    Rule(
        "about_assistant",
        "chat",
        0.85,
        r"\b(who are you|what can you do|how are you|what are you|help me understand what you|your name)\b",
    ),
    Rule(
        "sql_concept",
        "chat",
        0.75,
        r"\bwhat(?:'s| is| are)? (?:a |an |the )?(difference between|left join|inner join|join|primary key|"
        r"foreign key|index|group by|window function|cte|subquery|null|having clause|union)\b",
    ),
    Rule(
        "vague_reference",
        "clarify",
        0.62,
        r"\b(that|this|the same|our|my) (area|service area|station|branch|one|period|place)\b"
        r"|\b(recently|lately|the other day|a while ago|some time ago)\b"
        r"|\b(good|bad|better|best|worse|worst) (one|area|branch|place)s?\b(?!.*\b(by|in terms of)\b)",
    ),
    # above data_question (0.8): these are data questions, ambiguous ones
    Rule(
        "unnamed_value",
        "clarify",
        0.83,
        "^" + _NO_QUOTED_SQL + r".*\b(a particular|one specific|a specific|a certain|some specific|some particular)"
        r"( \w+){0,3}\??\s*$|^.*\b(the \w+ (i|we) (mentioned|meant|said|talked about)|that (state|city|country|"
        r"year|date|person|customer|one|place|team|product))\b",
    ),
    Rule("open_measure", "clarify", 0.82, "^" + _NO_QUOTED_SQL + _OPEN_MEASURE),
    # schema-derived ambiguity (routers/support/ambiguity.py): what this database cannot settle by itself
    Rule("relative_period", "clarify", 0.83, detector="ambiguity:relative_period"),
    # these two above schema_gap (0.84): the dates or the value the request leaves unnamed are asked
    # for first ("customers at the weekend", "the word a certain song name in its title"); asking
    # runs nothing, and the reply may settle what the check took for a gap
    Rule("unnamed_period", "clarify", 0.85, detector="ambiguity:unnamed_period"),
    Rule("several_values", "clarify", 0.83, detector="ambiguity:several_values"),
    Rule("unspecified_value", "clarify", 0.85, detector="ambiguity:unspecified_value"),
    Rule("unnamed_entity", "clarify", 0.83, detector="ambiguity:unnamed_entity"),
    Rule("vague_quantity", "clarify", 0.82, detector="ambiguity:vague_quantity"),
    # a pronoun or follow-up with nothing to refer to, attributes or a table left open (the
    # conversation settles the first: with an earlier data turn it is a follow-up data question)
    Rule("open_reference", "clarify", 0.83, detector="ambiguity:open_reference"),
    # above schema_gap (0.84): "everything about Max" is asked about before any gap is looked for
    Rule("everything_about", "clarify", 0.85, detector="ambiguity:everything_about"),
    Rule("which_table", "clarify", 0.83, detector="ambiguity:which_table"),
    # choices the schema leaves open (AmbiQT column ambiguity, a measure left unsaid, an id with no
    # table); above data_question (0.8) and below schema_gap (0.84): a request naming what the
    # database lacks is declined, not asked about
    Rule("which_column", "clarify", 0.83, detector="ambiguity:which_column"),
    Rule("missing_measure", "clarify", 0.83, detector="ambiguity:missing_measure"),
    Rule("id_without_table", "clarify", 0.83, detector="ambiguity:id_without_table"),
    Rule(
        "missing_period",
        "clarify",
        0.81,
        rf"^{_NO_QUOTED_SQL}(?!.*({_PERIOD})){_AMOUNT_OF_EVENTS}",
        detector="records_time",
    ),
    Rule("schema_gap", "unanswerable", 0.84, DATA_REQUEST, detector="schema_gap"),
    # read in the prose only: a quoted query's own words ("count", "sum", "per") are not a data request
    Rule("data_question", "sql", 0.8, "^" + _NO_QUOTED_SQL + r".*?" + _DATA_WORDS),
    Rule("default", "sql", 0.5),
)


@router("rules")
class RulesRouter(IntentRouter):
    """Classify by the first matching rule of highest confidence; no LM call.

    Args:
        rules: The rule table (default :data:`DEFAULT_RULES`), as rules or as their dicts.
        fix_budget: fix_sql calls a failed execution may trigger.
        without: Names of rules left out of the table, for an ablation that stays rebuildable
            from its recorded arguments (``--router-arg 'rules.without=["schema_gap"]'``).
        today: The date (ISO ``YYYY-MM-DD``) the ``relative_period`` rule reads "last month"
            against (a live database's date); None: no reference date, so any relative period
            over dated rows is asked about. Never the machine's clock: a run's decisions do not
            depend on the day it runs.

    A clarification asks what the ambiguity check found open (as every intent router does), over
    the ambiguity kinds whose rules are in this table.
    """

    def __init__(
        self,
        rules: Sequence[Rule | dict[str, Any]] | None = None,
        fix_budget: int = 1,
        without: Sequence[str] | str = (),
        today: str | None = None,
    ) -> None:
        super().__init__(fix_budget=fix_budget)
        self.today = today
        try:
            day = _dt.date.fromisoformat(today) if today is not None else None
        except (TypeError, ValueError):
            raise ConfigError(
                "bad value for rules router argument 'today'",
                expected="a date as YYYY-MM-DD, or nothing: no reference date, relative periods always asked about",
                found=repr(today),
                fix="pass e.g. --router-arg rules.today=2025-01-15",
                details={"kind": "router", "name": "rules", "argument": "today"},
            ) from None
        self._schema_detectors = {**SCHEMA_DETECTORS, **_ambiguity_detectors(day)}
        self.reference_date = day
        if isinstance(without, str):
            without = (without,)  # --router-arg rules.without=schema_gap: one name
        # recorded runs store the table as dicts; accept them back so a run rebuilds exactly
        table = tuple(r if isinstance(r, Rule) else Rule(**r) for r in (rules or DEFAULT_RULES))
        names = [r.name for r in table]
        unknown = sorted(set(without) - set(names))
        if unknown or "default" in without:
            raise ConfigError(
                "bad value for rules router argument 'without'",
                expected=f"names of rules of the table other than 'default': {', '.join(names)}",
                found=repr(list(without)),
                fix="pass rule names, e.g. --router-arg rules.without=schema_gap (a JSON list for several)",
                details={"kind": "router", "name": "rules", "argument": "without"},
            )
        self.without = tuple(without)
        self.rules = tuple(r for r in table if r.name not in self.without)
        self._compiled = [(r, re.compile(r.pattern, re.I | re.S) if r.pattern else None) for r in self.rules]
        # the ambiguity kinds whose rules are in the table: an ablated kind is not asked about either
        self.clarify_kinds = tuple(
            k for k in AMBIGUITY_KINDS if any(r.detector == f"ambiguity:{k}" for r in self.rules)
        )

    def match(self, text: str, db: Any = None, history: Sequence[Any] = ()) -> tuple[Rule, list[str]]:
        """The winning rule for ``text`` and the names of all matching rules.

        The text is read through :func:`normalise_request`, so look-alike letters and invisible
        characters cannot hide a keyword. ``db`` is the turn's database, for schema detectors;
        ``history`` the conversation's earlier turns, which settle a follow-up's references.
        """
        whole = normalise_request(text)
        # the greetings and thanks around a request decide nothing ("Hi! How many ...?")
        text = split_social(whole).rest or whole
        hits: list[Rule] = []
        for rule, rx in self._compiled:
            if rx is not None and not rx.search(text):
                continue
            if rule.detector in self._schema_detectors:
                if db is None or not self._schema_detectors[rule.detector](text, db, history):
                    continue
            elif rule.detector is not None:
                read = whole if rule.detector in _WHOLE_REQUEST else text
                if not DETECTORS[rule.detector](read):
                    continue
            hits.append(rule)
        best = max(hits, key=lambda r: r.confidence)  # the default rule always matches
        return best, [r.name for r in hits]

    def classify(self, state: PipelineState) -> Classification:
        """Highest-confidence matching rule."""
        rule, _ = self.match(state.get("question", "") or "", self._database(state), history_of(state))
        return Classification(rule.intent, rule.confidence, f"rule:{rule.name}", Usage())
