"""The schema-derived ambiguity check: each kind fires where the database leaves a request open, and only there."""

import datetime as dt
import sqlite3

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routerlab.agents.db import open_database
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import initial_state
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.routers import router
from routerlab.routers.rules import DEFAULT_RULES, RulesRouter
from routerlab.routers.support.ambiguity import AMBIGUITY_KINDS, clarifying_question, find_ambiguities

#: the data end on 2024-12-31; this "today" is well after, so "last month" has no data
LATER = dt.date(2026, 11, 25)


@pytest.fixture(scope="module")
def stations_path(tmp_path_factory):
    """A real DuckDB file: stations whose names share a word, dated visits, staff, one company row."""
    path = tmp_path_factory.mktemp("amb") / "stations.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE station (station_id INTEGER, name VARCHAR, region VARCHAR);"
        "INSERT INTO station VALUES (1, 'Qinling North', 'Shaanxi'), (2, 'Qinling South', 'Shaanxi'),"
        " (3, 'Baoji West', 'Shaanxi');"
        "CREATE TABLE visits (station_id INTEGER, day DATE, cars INTEGER);"
        "INSERT INTO visits VALUES (1, DATE '2024-01-05', 10), (2, DATE '2024-12-31', 7);"
        "CREATE TABLE staff (full_name VARCHAR, role VARCHAR, station_id INTEGER);"
        "INSERT INTO staff VALUES ('Li Wei', 'Cashier', 1), ('Wang Fang', 'Manager', 2);"
        "CREATE TABLE company (name VARCHAR, founded INTEGER);"
        "INSERT INTO company VALUES ('Roadside Ltd', 1998);"
    )
    con.close()
    return path


@pytest.fixture(scope="module")
def stations(stations_path):
    return open_database(str(stations_path))


@pytest.fixture(scope="module")
def undated(spiderlike_db):
    """Spider-like SQLite: students and pets, no date column."""
    return open_database(str(spiderlike_db))


def kinds(text, db, today=LATER):
    return [a.kind for a in find_ambiguities(text, db, today=today)]


def test_without_a_reference_date_a_relative_period_is_always_asked_and_the_clock_is_never_read(stations, monkeypatch):
    """The default reads no clock: the same request routes the same way on any day the benchmark runs."""
    import types

    import routerlab.routers.support.ambiguity.relative_period as module

    class _Clockless(dt.date):
        @classmethod
        def today(cls):
            raise AssertionError("the ambiguity check read the machine's clock")

    clockless = types.SimpleNamespace(date=_Clockless, datetime=dt.datetime, timedelta=dt.timedelta)
    monkeypatch.setattr(module, "_dt", clockless)
    (found,) = find_ambiguities("How many cars came last month?", stations)
    assert found.kind == "relative_period" and "2024-12-31" in found.question
    # with a reference date inside the data's reach the same request is not asked
    assert kinds("How many cars came last month?", stations, today=dt.date(2025, 1, 20)) == []


def test_every_intent_router_asks_the_checks_question(stations, stations_path):
    """Routers differ in whether they ask, not in what: the oracle asks what rules would ask."""
    text = "How is Qinling doing at the weekend?"
    oracle = router.build("oracle")
    oracle.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=None, open_db=open_database))
    state = {**initial_state(text, str(stations_path)), "oracle_intent": "clarify"}
    d = oracle.decide(state)
    assert d.tool_calls[0]["name"] == "ask_human"
    assert d.tool_calls[0]["args"]["question"] == clarifying_question(find_ambiguities(text, stations))
    assert "Qinling North" in d.tool_calls[0]["args"]["question"]


# -- relative_period -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    ["What was the revenue last month?", "Compare this year's cars with last year's.", "How many cars came yesterday?"],
)
def test_a_relative_period_past_the_data_is_asked(stations, text):
    (found,) = find_ambiguities(text, stations, today=LATER)
    assert found.kind == "relative_period"
    assert "2024-12-31" in found.question and found.question.endswith("?")


def test_a_relative_period_the_data_reach_is_not_asked(stations, undated):
    # on 2025-01-20 "last month" is December 2024, and the data reach it
    assert kinds("How many cars came last month?", stations, today=dt.date(2025, 1, 20)) == []
    # a year named pins the period; a period relative to a row ("its last month before") too
    assert kinds("How many cars came last month of 2024?", stations) == []
    assert kinds("What were the cars in the month before it closed?", stations) == []
    # nothing dated: the schema check's period gap, not a question
    assert kinds("How many students enrolled last year?", undated) == []


@pytest.mark.parametrize(
    ("which", "unit", "today", "start"),
    [
        ("this", "year", dt.date(2026, 11, 25), dt.date(2026, 1, 1)),
        ("last", "year", dt.date(2026, 11, 25), dt.date(2025, 1, 1)),
        ("last", "month", dt.date(2026, 1, 10), dt.date(2025, 12, 1)),
        ("this", "quarter", dt.date(2026, 11, 25), dt.date(2026, 10, 1)),
        ("last", "quarter", dt.date(2026, 2, 1), dt.date(2025, 10, 1)),
        ("last", "week", dt.date(2026, 11, 25), dt.date(2026, 11, 16)),  # 25 Nov 2026 is a Wednesday
        ("last", "day", dt.date(2026, 3, 1), dt.date(2026, 2, 28)),
    ],
)
def test_period_start_case_by_case(which, unit, today, start):
    from routerlab.routers.support.ambiguity.relative_period import _period_start

    assert _period_start(which, unit, today) == start


@settings(max_examples=200, deadline=None)
@given(
    st.dates(min_value=dt.date(1901, 1, 1), max_value=dt.date(2999, 12, 31)),
    st.sampled_from(["day", "week", "weekend", "month", "quarter", "year"]),
)
def test_last_period_ends_where_this_one_starts(today, unit):
    """ "last <unit>" starts before "this <unit>", which starts on or before today, within one unit."""
    from routerlab.routers.support.ambiguity.relative_period import _period_start

    this, last = _period_start("this", unit, today), _period_start("last", unit, today)
    assert last < this <= today
    assert (this - last).days <= 366 and (today - this).days < 366


# -- unnamed_period ------------------------------------------------------------------------------
def test_a_period_named_by_a_common_noun_is_asked(stations, undated):
    assert kinds("How many cars did we have at the weekend?", stations) == ["unnamed_period"]
    # and "it" with nothing before it to refer to: which place, on a first turn
    assert kinds("How busy was it over the holiday?", stations) == ["unnamed_period", "open_reference"]
    assert kinds("How many cars came at the weekend of 5 October 2024?", stations) == []  # dated
    assert kinds("How many cars came during the Spring Festival?", stations) == []  # a name, not a noun
    assert kinds("How many students enrolled over the holiday?", undated) == []  # nothing dated


# -- several_values ------------------------------------------------------------------------------
def test_a_name_that_is_part_of_several_values_is_asked(stations):
    (found,) = find_ambiguities("How is Qinling doing?", stations, today=LATER)
    assert found.kind == "several_values" and found.term == "Qinling"
    assert found.question == "Which one do you mean: Qinling North or Qinling South?"


@pytest.mark.parametrize(
    "text",
    [
        "How is Qinling North doing?",  # a whole value
        "Give me Qinling South's cars for each month of 2024.",  # possessive of a whole value
        "Which stations have 'Qinling' in their name?",  # a quoted substring to search for
        "How many cars came to Baoji in 2024?",  # part of one value only: no choice to make
        "Qinling stations: how many cars in 2024?",  # first word of a sentence is not read as a name
        "List every Station in the Shaanxi region in 2024.",  # the schema's own noun and a whole value
    ],
)
def test_a_name_that_picks_one_value_is_not_asked(stations, text):
    assert "several_values" not in kinds(text, stations)


# -- unspecified_value ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("Which staff work at a certain station?", "Which station do you mean?"),
        ("How many cars came to the station we talked about in 2024?", "Which station do you mean?"),
        ("List the staff with one specific role", "Which role do you mean?"),
        ("Which stations are in that region?", "Which region do you mean?"),
        ("What is the number of visits with cars more than one specific cars?", "Which cars do you mean?"),
    ],
)
def test_a_value_referred_to_but_not_named_is_asked(stations, text, question):
    found = find_ambiguities(text, stations, today=LATER)
    assert [a.kind for a in found] == ["unspecified_value"] and found[0].question == question


@pytest.mark.parametrize(
    "text",
    [
        "Which staff work at a certain bakery?",  # no such column or table: the schema check's business
        "How many staff work for the company rather than a particular station?",  # a kind, not a value
        "Which role has the most staff, and how many staff have that role?",  # refers back to the request
        "List the stations that region Shaanxi holds.",  # relative "that", not a demonstrative
    ],
)
def test_a_reference_the_request_settles_is_not_asked(stations, text):
    assert "unspecified_value" not in kinds(text, stations)


# -- unnamed_entity ------------------------------------------------------------------------------
def test_a_request_ending_on_an_unnamed_entity_is_asked(stations):
    found = find_ambiguities("List the staff at the station.", stations, today=LATER)
    assert [(a.kind, a.question) for a in found] == [("unnamed_entity", "Which station do you mean?")]
    assert kinds("List the staff at the stations.", stations) == []  # all of them
    assert kinds("List the staff at the busiest station.", stations) == []  # a modifier picks it
    assert kinds("List the name of the station.", stations) == []  # "of": an attribute of each row
    assert kinds("List the staff at the company.", stations) == []  # one row: nothing to choose


# -- vague_quantity ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "fires"),
    [
        ("List the a few oldest stations.", True),
        ("Show the top several stations by cars.", True),
        ("Which stations had a lot of cars in 2024?", True),
        ("Which staff joined recently?", False),  # the rules' vague_reference reads it, below hybrid's threshold
        ("Who is the most recently hired member of staff?", False),
        ("If several stations share the top spot, list all of them.", False),
        ("List the three oldest stations.", False),
    ],
)
def test_a_vague_count_or_recency_is_asked(stations, text, fires):
    assert ("vague_quantity" in kinds(text, stations)) is fires


# -- the whole check -----------------------------------------------------------------------------
def test_no_database_or_quoted_sql_gives_no_finding(stations):
    assert find_ambiguities("How is Qinling doing?", None) == ()
    assert find_ambiguities("Explain: SELECT * FROM visits WHERE day = 'last month'", stations) == ()
    assert find_ambiguities("   ", stations) == ()
    assert find_ambiguities("How is Qinling doing?", stations, kinds=("relative_period",)) == ()


def test_clarifying_question_joins_distinct_questions(stations):
    found = find_ambiguities("How is Qinling doing at the weekend?", stations, today=LATER)
    assert [a.kind for a in found] == ["unnamed_period", "several_values"]
    assert clarifying_question(found) == (
        "Which dates do you mean by 'the weekend'? Which one do you mean: Qinling North or Qinling South?"
    )
    assert clarifying_question(found + found) == clarifying_question(found)
    assert clarifying_question(()) is None


def test_a_sqlite_database_is_read_the_same_way(tmp_path):
    path = tmp_path / "shop.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE customer (name TEXT, city TEXT);"
        "INSERT INTO customer VALUES ('Ann Smith', 'Paris'), ('Bob Smith', 'Lyon'), ('Cy Jones', 'Paris');"
        "CREATE TABLE orders (customer TEXT, placed DATE, amount REAL);"
        "INSERT INTO orders VALUES ('Ann Smith', '2023-05-01', 10.0);"
    )
    con.close()
    db = open_database(str(path))
    assert kinds("What did Smith order last year?", db) == ["relative_period", "several_values"]
    assert kinds("What did Cy Jones order in 2023?", db) == []


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"abQS inglorthwekdyast'\"?.,", "Qinling", " that ", " the ", " last ", "month", " station"]),
        max_size=30,
    ).map("".join)
)
def test_any_text_gives_well_formed_findings(stations_path, text):
    """Any request is checked without raising; every finding names words of the request and asks."""
    db = open_database(str(stations_path))
    for a in find_ambiguities(text, db, today=LATER):
        assert a.kind in AMBIGUITY_KINDS
        assert a.question.endswith("?")
        assert a.term.lower().split()[-1].strip("'s") in text.lower()


# -- in the rules router -------------------------------------------------------------------------
def bound(name="rules", **args):
    r = router.build(name, **args)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=None, open_db=open_database))
    return r


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("How many cars came last month?", "relative_period"),
        ("How many cars did we have at the weekend?", "unnamed_period"),
        ("Which is busier, Qinling or Baoji West, in 2024?", "several_values"),
        ("Which staff are at a certain station?", "unspecified_value"),
        ("List the staff at the station.", "unnamed_entity"),
        ("List the a few oldest stations.", "vague_quantity"),
    ],
)
def test_each_kind_is_a_clarify_rule_that_asks_its_question(stations, stations_path, text, rule):
    rules = RulesRouter(today=LATER.isoformat())
    best, hits = rules.match(text, stations)
    assert best.intent == "clarify" and rule in hits
    d = bound(today=LATER.isoformat()).decide(initial_state(text, str(stations_path)))
    assert d.intent == "clarify" and d.tool_calls[0]["name"] == "ask_human"
    assert d.tool_calls[0]["args"]["question"] == clarifying_question(find_ambiguities(text, stations, today=LATER))


def test_the_kinds_are_one_list_the_literal_the_tuple_and_the_detectors_agree():
    from typing import get_args

    from routerlab.routers.support.ambiguity import DETECTORS, AmbiguityKind

    assert AMBIGUITY_KINDS == get_args(AmbiguityKind) == tuple(DETECTORS)
    assert AMBIGUITY_KINDS[:3] == ("relative_period", "unnamed_period", "several_values")  # the rules' order
    assert len(set(AMBIGUITY_KINDS)) == len(AMBIGUITY_KINDS) == 12


def test_each_kind_can_be_ablated_and_the_ablation_rebuilds(stations, stations_path):
    from routerlab.agents.plan import CLARIFY_QUESTION
    from routerlab.agents.registry import component_spec

    assert {r.name for r in DEFAULT_RULES} >= set(AMBIGUITY_KINDS)
    text = "How is Qinling doing?"
    full = bound(today=LATER.isoformat())
    assert "several_values" in full.match(text, stations)[1]
    ablated = bound(today=LATER.isoformat(), without=["several_values", "open_measure"])
    rule, hits = ablated.match(text, stations)
    assert "several_values" not in hits and rule.intent == "sql"
    rebuilt = router.rebuild(component_spec(ablated))
    assert rebuilt.without == ("several_values", "open_measure") and rebuilt.today == LATER.isoformat()
    # an ablated kind is not asked about either: another rule's clarification asks the generic question
    asks = bound(today=LATER.isoformat(), without=["several_values"])
    d = asks.decide(initial_state(text, str(stations_path)))
    assert d.method == "rule:open_measure" and d.tool_calls[0]["args"]["question"] == CLARIFY_QUESTION


def test_answerable_requests_stay_sql(stations, stations_path):
    rules = RulesRouter(today=LATER.isoformat())
    for text in (
        "How many cars came to Qinling North in 2024?",
        "List the staff at each station.",
        "Which station had the most cars on 31 December 2024?",
        "What is the total number of cars per station?",
    ):
        assert rules.match(text, stations)[0].intent == "sql", (text, rules.match(text, stations))


def test_a_bad_today_is_a_config_error():
    from routerlab.agents.errors import ConfigError

    with pytest.raises(ConfigError, match="today"):
        RulesRouter(today="next tuesday")


def test_hybrid_asks_the_specific_question_too(stations_path):
    text = "How is Qinling doing?"
    d = bound("hybrid").decide(initial_state(text, str(stations_path)))
    assert d.intent == "clarify"
    assert d.tool_calls[0]["args"]["question"] == "Which one do you mean: Qinling North or Qinling South?"


# -- as evidence for the LM routers --------------------------------------------------------------
def _seen_user_messages(router_name, question, db_path, **kwargs):
    from routerlab.agents.graph import Pipeline
    from routerlab.agents.lm import scripted_lm
    from routerlab.agents.lm.messages import request_to_chat

    users, systems = [], []

    def reply(request):
        if request.tools:
            chat = request_to_chat(request)
            users.extend(m["content"] for m in chat if m["role"] == "user")
            systems.extend(m["content"] for m in chat if m["role"] == "system")
            return {"name": "ask_human", "args": {"question": "Which one?"}}
        return {"fields": {"reply": "unused"}}

    Pipeline(router.build(router_name, **kwargs), scripted_lm(reply)).run(question, str(db_path))
    return users, systems


@pytest.mark.parametrize("name", ["llm", "hybrid"])
def test_the_ambiguity_note_is_per_request_evidence_only_when_asked(stations_path, name):
    from routerlab.agents.registry import component_spec

    extra = {"threshold": 1.0} if name == "hybrid" else {}  # hybrid: ask the LM on every request
    users, systems = _seen_user_messages(name, "How is Qinling doing?", stations_path, ambiguity_check=True, **extra)
    assert users and users[0].endswith("Ambiguity check: Which one do you mean: Qinling North or Qinling South?")
    assert all("Ambiguity check" not in s for s in systems)  # never in the cached prefix
    plain, _ = _seen_user_messages(name, "How is Qinling doing?", stations_path, **extra)
    assert plain and all("Ambiguity check" not in u for u in plain)  # off by default
    settled, _ = _seen_user_messages(
        name, "How many cars came to Qinling North in 2024?", stations_path, ambiguity_check=True, **extra
    )
    assert settled and all("Ambiguity check" not in u for u in settled)
    assert component_spec(router.build(name, ambiguity_check=True))["args"]["ambiguity_check"] is True


def test_request_note_puts_each_finding_on_its_own_line(stations_path):
    from routerlab.routers.support.schema_outline import ambiguity_finding, request_note

    env = RouterEnv(tools=(), lm=None, open_db=open_database)
    state = initial_state("What is the average salary at Qinling?", str(stations_path))
    note = request_note(env, state, schema_check=True, ambiguity_check=True)
    schema_line, ambiguity_line = note.split("\n")
    assert schema_line.startswith("Schema check: ") and "salary" in schema_line
    assert ambiguity_line == ambiguity_finding(env, state) and ambiguity_line.startswith("Ambiguity check: Which one")
    assert request_note(env, state, schema_check=False, ambiguity_check=False) == ""
    assert ambiguity_finding(None, state) == ""
