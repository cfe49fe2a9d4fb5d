"""Choices the schema leaves open (a column, a measure, a table for an id), decided with the conversation.

Every request here was written for these tests from the literature's classes (AmbiQT's column and
table ambiguity, AMBROSIA's vagueness, English Query's unique-ID clarification) over spider-dev-a's
real SQLite files; none is taken from a dataset the routers are measured on. Each finding must name
the choice it asks about, and a data question with the choice made must stay a data question.
"""

from __future__ import annotations

import pytest

from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import initial_state
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.turn_history import Turn
from routerlab.routers import router
from routerlab.routers.support.ambiguity import AMBIGUITY_KINDS, DETECTORS, find_ambiguities
from routerlab.routers.support.schema_outline import ambiguity_finding
from tests.conftest import SPIDER_DEV_A

DATABASES = SPIDER_DEV_A / "database"
NEW = ("which_column", "missing_measure", "id_without_table")


def _db(name: str):
    path = DATABASES / name / f"{name}.sqlite"
    if not path.is_file():
        pytest.skip(f"real Spider data not found at {SPIDER_DEV_A} (set ROUTERLAB_SPIDER_DEV)")
    return open_database(path)


def _path(name: str) -> str:
    _db(name)
    return str(DATABASES / name / f"{name}.sqlite")


def _turn(question: str, sql: str, tables: list[str], columns: list[str]) -> Turn:
    """An earlier data turn as the assistant keeps it (its SQL ran)."""
    return Turn(question=question, answer="", intent="sql", sql=sql, columns=columns, row_count=3, tables=tables)


def _found(text: str, db: str, kind: str, history: list[Turn] | None = None):
    return find_ambiguities(text, _db(db), kinds=(kind,), history=history or ())


def bound(name: str, **args):
    r = router.build(name, **args)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=None, open_db=open_database))
    return r


def test_every_new_kind_is_a_detector_and_a_rule():
    rules = {r.detector for r in router.build("rules").rules}
    for kind in NEW:
        assert kind in AMBIGUITY_KINDS and kind in DETECTORS
        assert f"ambiguity:{kind}" in rules


# -- which_column: AmbiQT column ambiguity ---------------------------------------------------------
@pytest.mark.parametrize(
    ("db", "text", "named"),
    [
        # Dogs has date_of_birth, date_arrived, date_adopted and date_departed
        ("dog_kennels", "Show me the dates of all the dogs.", ["Dogs.date_arrived", "Dogs.date_departed"]),
        ("dog_kennels", "List every dog together with its date", ["Dogs.date_of_birth", "Dogs.date_adopted"]),
        # battle has bulgarian_commander and latin_commander
        ("battle_death", "Who was the commander in each battle?", ["bulgarian_commander", "latin_commander"]),
    ],
)
def test_a_noun_heading_several_columns_of_one_table_is_asked_naming_them(db, text, named):
    (found,) = _found(text, db, "which_column")
    assert found.kind == "which_column"
    for column in named:
        assert column in found.question


@pytest.mark.parametrize(
    ("db", "text"),
    [
        ("dog_kennels", "List each dog with its arrival date."),  # arrival -> date_arrived
        ("dog_kennels", "When did each dog depart, by date?"),  # depart -> date_departed
        ("dog_kennels", "What is the date of birth of every dog?"),
        ("dog_kennels", "What is the date of each treatment?"),  # Treatments has one date
        ("dog_kennels", "What are the names of the owners?"),  # first_name + last_name: one name
        ("battle_death", "Who was the Bulgarian commander in each battle?"),
        ("battle_death", "List the battles with their date."),  # battle.date is a whole column
        ("concert_singer", "What are the songs of singers from France?"),  # song_name vs release year
        ("tvshow", "What is the rating of each TV series?"),  # Rating is a whole column
    ],
)
def test_a_column_the_request_picks_is_no_choice(db, text):
    assert _found(text, db, "which_column") == ()


def test_an_earlier_turn_that_used_one_of_the_columns_settles_which():
    before = _turn(
        "When did each dog arrive?", "SELECT name, date_arrived FROM Dogs", ["Dogs"], ["name", "date_arrived"]
    )
    assert _found("And show their dates again, sorted", "dog_kennels", "which_column", [before]) == ()
    other = _turn("How many dogs are there?", "SELECT count(*) FROM Dogs", ["Dogs"], ["count(*)"])
    (found,) = _found("And show their dates", "dog_kennels", "which_column", [other])
    assert "Dogs.date_arrived" in found.question


# -- missing_measure: a superlative whose measure is missing ---------------------------------------
@pytest.mark.parametrize(
    ("db", "text", "named"),
    [
        ("concert_singer", "Which stadium is the best?", ["stadium.Capacity", "stadium.Average"]),
        ("concert_singer", "Who is the most popular singer?", ["singer.Age", "singer_in_concert"]),
        ("tvshow", "Which TV series is the best?", ["TV_series.Rating", "TV_series.Share"]),
        ("course_teach", "Show me the top teachers", ["teacher.Age", "course_arrange"]),
    ],
)
def test_a_superlative_with_no_measure_names_the_measures(db, text, named):
    (found,) = _found(text, db, "missing_measure")
    for measure in named:
        assert measure in found.question


@pytest.mark.parametrize(
    ("db", "text"),
    [
        ("concert_singer", "Which stadium is the largest?"),  # a size adjective: Capacity
        ("concert_singer", "Show the top three stadiums by capacity."),
        ("concert_singer", "Which singer has the most concerts?"),  # a count
        ("concert_singer", "Which stadium has the best average attendance?"),  # a measure's word
        ("poker_player", "Who is the best poker player?"),  # Best_Finish: the schema's own measure
        ("voter_1", "Which contestant is the most popular?"),  # one way to rank: their votes
        ("concert_singer", "Who is the oldest singer?"),  # not a vague measure
        ("dog_kennels", "Which is the best?"),  # no table, no conversation: nothing to list
    ],
)
def test_a_measure_the_request_or_schema_settles_is_no_choice(db, text):
    assert _found(text, db, "missing_measure") == ()


def test_the_conversation_gives_the_table_and_may_give_the_measure():
    stadiums = _turn("List the stadiums", "SELECT Name FROM stadium", ["stadium"], ["Name"])
    (found,) = _found("Which one is the best?", "concert_singer", "missing_measure", [stadiums])
    assert "stadium.Capacity" in found.question
    by_average = _turn(
        "Show each stadium's average attendance", "SELECT Name, Average FROM stadium", ["stadium"], ["Name", "Average"]
    )
    assert _found("Which one is the best?", "concert_singer", "missing_measure", [by_average]) == ()


# -- id_without_table: English Query's unique-ID clarification --------------------------------------
def test_an_id_several_tables_hold_is_asked_naming_the_tables():
    (found,) = _found("Show me everything for id 1", "dog_kennels", "id_without_table")
    assert "Dogs.dog_id" in found.question and "Owners.owner_id" in found.question


@pytest.mark.parametrize(
    ("text", "history"),
    [
        ("What is the name of the dog with id 1?", None),  # a table named
        ("Show me the record with id 987654", None),  # no table holds it
        (
            "And what about id 1?",
            [_turn("Show the dog with id 2", "SELECT * FROM Dogs WHERE dog_id = 2", ["Dogs"], ["name"])],
        ),
    ],
)
def test_an_id_a_table_or_the_conversation_settles_is_no_choice(text, history):
    assert _found(text, "dog_kennels", "id_without_table", history) == ()


# -- the routers --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rules", "semantic", "hybrid"])
def test_each_intent_router_asks_the_question_that_names_the_choice(name):
    decision = bound(name).decide(initial_state("Who was the commander in each battle?", _path("battle_death")))
    assert decision.intent == "clarify"
    (call,) = decision.tool_calls
    assert call["name"] == "ask_human"
    assert "battle.bulgarian_commander" in call["args"]["question"]


@pytest.mark.parametrize(
    ("name", "off"),
    [
        ("rules", {"without": ["which_column"]}),
        ("semantic", {"rules_without": ["which_column"], "ambiguity_first": False}),
        ("hybrid", {"rules_without": ["which_column"]}),
    ],
)
def test_each_check_switches_off_by_router_argument(name, off):
    decision = bound(name, **off).decide(initial_state("Who was the commander in each battle?", _path("battle_death")))
    assert decision.intent != "clarify"


def test_a_follow_up_the_conversation_settles_is_a_data_question_for_every_intent_router():
    stadiums = _turn("Show each stadium's average attendance", "SELECT Name, Average FROM stadium", ["stadium"], [])
    for name in ("rules", "semantic", "hybrid"):
        state = initial_state("Which one is the best?", _path("concert_singer"), history=[stadiums])
        decision = bound(name).decide(state)
        assert decision.intent == "sql", name


def test_a_misspelt_check_name_is_refused_with_the_valid_names():
    with pytest.raises(ConfigError) as err:
        router.build("hybrid", rules_without=["which_colum"])
    assert "which_column" in str(err.value.expected)


# -- the LM routers' evidence reads the conversation -------------------------------------------------
def test_the_lm_evidence_line_is_decided_with_the_conversation():
    env = RouterEnv(tools=DEFAULT_TOOLS, lm=None, open_db=open_database)
    db = _path("concert_singer")
    alone = ambiguity_finding(env, initial_state("What are their ages?", db))
    assert alone.startswith("Ambiguity check:") and "their" in alone
    singers = _turn("List the French singers", "SELECT Name FROM singer WHERE Country = 'France'", ["singer"], [])
    assert ambiguity_finding(env, initial_state("What are their ages?", db, history=[singers])) == ""
    best = ambiguity_finding(env, initial_state("Which stadium is the best?", db))
    assert "stadium.Capacity" in best


# -- turns that are not for the database --------------------------------------------------------------
@pytest.mark.parametrize("name", ["rules", "semantic", "hybrid"])
@pytest.mark.parametrize(
    "text",
    [
        "Can you draw a bar chart of the singers' ages?",
        "Search the web for the history of that stadium",
        "Translate the answer into German please",
    ],
)
def test_actions_the_assistant_cannot_take_go_to_chat(name, text):
    assert bound(name).decide(initial_state(text, _path("concert_singer"))).intent == "chat"


@pytest.mark.parametrize("name", ["rules", "semantic", "hybrid"])
@pytest.mark.parametrize(
    "text",
    [
        "Hi! How many singers are from France?",
        "Could you please tell me the names of the stadiums with a capacity above 5000?",
        "hey there, show me the concerts of 2014 thanks",
    ],
)
def test_a_polite_or_informal_data_question_stays_a_data_question(name, text):
    assert bound(name).decide(initial_state(text, _path("concert_singer"))).intent == "sql"


# -- the LM routers, on the embedded model (run by the lead; never in a shared session) --------------
@pytest.mark.model
# Only a request the check finds open is asserted: where the conversation settles the choice the
# check adds no evidence and the decision is the 1.5B model's own (which over-asks on real
# follow-ups: docs/results/2026-11-26-cosql-lm-routers.md); the check's side of that case is
# pinned without the model in test_the_conversation_gives_the_table_and_may_give_the_measure.
@pytest.mark.parametrize(
    ("text", "history", "expected"),
    [("Who was the commander in each battle?", None, "clarify")],
)
def test_llm_with_the_ambiguity_evidence_asks_what_the_check_finds_open(text, history, expected):
    """The zero-shot ``llm`` reads the ambiguity check's finding (decided with the conversation)."""
    from routerlab.agents.lm import resolve_lm

    db = _path("battle_death") if "battle" in text else _path("concert_singer")
    r = router.build("llm", ambiguity_check=True)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=resolve_lm("local"), open_db=open_database))
    assert r.decide(initial_state(text, db, history=history)).intent == expected


# -- real conversations: structure only (cosql-dev-a is a report set: no accuracy is asserted) -----
def test_rules_route_every_real_cosql_turn_with_its_gold_history():
    """Every turn of cosql-dev-a is decided, each follow-up with exactly its earlier turns.

    The checks read the history: some follow-up is decided differently when the same turn is
    routed with no conversation. Nothing here says which decision is right.
    """
    import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
    from routerlab._routing_eval.decisions import first_decisions
    from routerlab.agents.lm import resolve_lm
    from routerlab.benchmarks.dataset import dataset

    cosql = SPIDER_DEV_A.parent / "cosql-dev-a"
    if not (cosql / "dev.json").is_file() or not DATABASES.is_dir():
        pytest.skip("shared conversation data not found (set ROUTERLAB_SPIDER_DEV)")
    examples = dataset.build("cosql", path=str(cosql)).examples
    lm = resolve_lm("scripted:basic")
    with_history = first_decisions("rules", {}, examples, lm)
    assert len(with_history) == len(examples) == 400
    assert all(d.error is None and d.predicted is not None for d in with_history)
    turns = {e.id: e.turn for e in examples}
    assert all(d.history_turns == turns[d.example_id] - 1 for d in with_history)
    assert sum(d.history_turns > 0 for d in with_history) == sum(e.turn > 1 for e in examples)
    alone = {d.example_id: d.predicted for d in first_decisions("rules", {}, [_alone(e) for e in examples], lm)}
    assert any(alone[d.example_id] != d.predicted for d in with_history if d.history_turns)


def _alone(example):
    """``example`` as a single request: no conversation, so no earlier turns."""
    import dataclasses

    return dataclasses.replace(example, conversation=None, turn=1, turns=1)
