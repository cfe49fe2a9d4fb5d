"""Turns that are not data questions, and ambiguity decided with the conversation, on real Spider databases.

Every request here was written for these tests from the classes of turns the checks name (small
talk, actions the assistant cannot take, general knowledge about a stored value; AmbiQT's table
and column ambiguity, AMBROSIA's vagueness, a pronoun with no antecedent); none is taken from a
dataset the routers are measured on. The databases are spider-dev-a's real SQLite files.
"""

from __future__ import annotations

import pytest

from routerlab.agents.db import open_database
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import initial_state
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.turn_history import Turn
from routerlab.routers import router
from routerlab.routers.support.ambiguity import clarifying_question, find_ambiguities
from routerlab.routers.support.turns import general_knowledge, requested_action, small_talk, split_social
from tests.conftest import SPIDER_DEV_A

DATABASES = SPIDER_DEV_A / "database"


def _path(name: str) -> str:
    path = DATABASES / name / f"{name}.sqlite"
    if not path.is_file():
        pytest.skip(f"real Spider data not found at {SPIDER_DEV_A} (set ROUTERLAB_SPIDER_DEV)")
    return str(path)


@pytest.fixture(scope="module")
def concerts() -> str:
    return _path("concert_singer")


@pytest.fixture(scope="module")
def kennels() -> str:
    return _path("dog_kennels")


def bound(name: str = "rules", **args):
    r = router.build(name, **args)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=None, open_db=open_database))
    return r


def decide(name: str, text: str, db: str, history: list[Turn] | None = None, **args):
    return bound(name, **args).decide(initial_state(text, db, history=history))


# -- social words --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "rest"),
    [
        ("Hi! How many singers are there?", "How many singers are there?"),
        ("hello there, list the stadiums", "list the stadiums"),
        ("Thanks a lot. What is the average age of the dogs?", "What is the average age of the dogs?"),
        ("Great, thanks! Which stadium is the largest? Cheers", "Which stadium is the largest?"),
        ("Ok. Show me the owners, please.", "Show me the owners"),
        ("Good stadiums in Scotland?", "Good stadiums in Scotland?"),  # an adjective, not a compliment
        ("How many dogs are there", "How many dogs are there"),
    ],
)
def test_social_words_around_a_request_are_split_off(text, rest):
    assert split_social(text).rest == rest


@pytest.mark.parametrize(
    "text", ["Thank you so much!", "ok", "Great job, bye!", "hi there", "That's all for now, thanks"]
)
def test_a_request_of_social_words_only_is_small_talk(text):
    assert split_social(text).only_social


@pytest.mark.parametrize("name", ["rules", "hybrid"])
@pytest.mark.parametrize(
    "text",
    [
        "Hi! How many singers are there?",
        "Hello, could you list the names of all stadiums?",
        "Good morning :) what is the average capacity of the stadiums?",
        "hey, which dogs weigh more than 10?",
        "How many owners live in Indiana? Thanks!",
    ],
)
def test_a_polite_or_informal_data_question_goes_to_sql(concerts, kennels, name, text):
    db = kennels if "dog" in text or "owner" in text else concerts
    d = decide(name, text, db)
    assert d.intent == "sql", (text, d.method)


# -- off-topic turns -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "Can you send an email to the owner of this dog?",
        "Please text me the cost of the treatments.",
        "Make a shareable link to this table.",
        "Could you book a table for two near the stadium?",
        "Forward these results to my manager.",
        "Remind me to check the adoption dates tomorrow.",
        "Set up a meeting with the professionals.",
        "Create a calendar invite for the next concert.",
    ],
)
def test_an_action_the_assistant_cannot_take_goes_to_chat_never_sql(kennels, text):
    assert requested_action(text)
    for name in ("rules", "hybrid"):
        d = decide(name, text, kennels)
        assert d.intent == "chat", (name, text, d.method)


@pytest.mark.parametrize(
    "text",
    [
        "Show me the email addresses of the owners.",  # an attribute, not an action
        "Which owners have a cell number?",
        "List the dogs ordered by age.",
        "Which professionals live in the same city as an owner?",
    ],
)
def test_data_questions_naming_messages_or_orders_are_not_actions(kennels, text):
    assert requested_action(text) is None
    assert decide("rules", text, kennels).intent == "sql"


@pytest.mark.parametrize(
    "text",
    ["Who is Justin Brown?", "What does Timbaland stand for?", "Where is Rose White located on a map?"],
)
def test_general_knowledge_about_a_stored_value_goes_to_chat(concerts, text):
    db = open_database(concerts)
    assert general_knowledge(text, db)
    assert decide("rules", text, concerts).intent == "chat"


@pytest.mark.parametrize(
    "text",
    [
        "Who is the oldest singer?",  # names the schema: a data question
        "What is the country of Justin Brown?",  # a column of the value's row
        "Who is from the Netherlands?",  # no encyclopedic form
    ],
)
def test_questions_over_the_schema_are_not_general_knowledge(concerts, text):
    assert general_knowledge(text, open_database(concerts)) is None


@pytest.mark.parametrize("text", ["Tell me a joke about dogs", "Can you write me a poem?", "Are you there?"])
def test_small_talk_goes_to_chat(kennels, text):
    assert small_talk(text)
    assert decide("rules", text, kennels).intent == "chat"


# -- ambiguity: the conversation decides references -----------------------------------------------
def _data_turn(question: str, sql: str, columns: list[str], tables: list[str]) -> Turn:
    return Turn(
        question=question,
        answer="",
        intent="sql",
        sql=sql,
        columns=columns,
        row_count=3,
        summary=None,
        tables=tables,
        error_class=None,
    )


HISTORY = [
    _data_turn(
        "Which singers are from France?", "SELECT name FROM singer WHERE country = 'France'", ["Name"], ["singer"]
    )
]


@pytest.mark.parametrize(
    "text",
    ["How old are they?", "What about their song names?", "And the youngest?", "How many of them are male?"],
)
def test_a_follow_up_is_asked_about_alone_and_a_data_question_after_a_data_turn(concerts, text):
    db = open_database(concerts)
    assert [a.kind for a in find_ambiguities(text, db)] == ["open_reference"]
    assert find_ambiguities(text, db, history=HISTORY) == ()
    for name in ("rules", "hybrid"):
        alone = decide(name, text, concerts)
        assert alone.intent == "clarify" and alone.tool_calls[0]["name"] == "ask_human", (name, alone.method)
        # the question names the reference it could not resolve
        assert "'" in alone.tool_calls[0]["args"]["question"]
        assert decide(name, text, concerts, history=HISTORY).intent == "sql", name


@pytest.mark.parametrize(
    "text",
    ["List the singers and their ages.", "Which singer has the most concerts and what is his country?"],
)
def test_a_pronoun_whose_antecedent_is_in_the_request_is_no_ambiguity(concerts, text):
    assert "open_reference" not in [a.kind for a in find_ambiguities(text, open_database(concerts))]


def test_everything_about_one_entity_is_asked_with_its_attributes_even_in_a_conversation(kennels):
    db = open_database(kennels)
    text = "Tell me everything about Kacey."
    (found,) = [a for a in find_ambiguities(text, db) if a.kind == "everything_about"]
    assert "weight" in found.question and "date_of_birth" in found.question
    # the conversation does not say which details: still asked after a data turn
    history = [_data_turn("List the dogs.", "SELECT name FROM Dogs", ["name"], ["Dogs"])]
    for h in (None, history):
        d = decide("rules", text, kennels, history=h)
        assert d.intent == "clarify" and "weight" in d.tool_calls[0]["args"]["question"]
    # a whole table is no single entity: "all information about X" reads every column
    assert decide("rules", "Show all information about the dogs.", kennels).intent == "sql"


def test_an_attribute_several_tables_hold_is_asked_naming_them(kennels, concerts):
    db = open_database(concerts)
    text = "List all the names."
    (found,) = find_ambiguities(text, db)
    assert found.kind == "which_table" and "singer" in found.question and "stadium" in found.question
    d = decide("rules", text, concerts)
    assert d.intent == "clarify" and d.tool_calls[0]["args"]["question"] == clarifying_question((found,))
    # a table or another attribute tells them apart
    for text in ("List the names of the singers.", "What is the name of the stadium with the highest capacity?"):
        assert "which_table" not in [a.kind for a in find_ambiguities(text, db)]
        assert decide("rules", text, concerts).intent == "sql"


def test_that_entity_named_in_an_earlier_turn_is_settled_by_it(concerts):
    db = open_database(concerts)
    text = "How many concerts were held at that stadium?"
    assert [a.kind for a in find_ambiguities(text, db)] == ["unspecified_value"]
    history = [
        _data_turn(
            "Which stadium has the largest capacity?",
            "SELECT name FROM stadium ORDER BY capacity DESC LIMIT 1",
            ["Name"],
            ["stadium"],
        )
    ]
    assert find_ambiguities(text, db, history=history) == ()
    assert decide("rules", text, concerts, history=history).intent == "sql"


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("Can you send an email to the owner of this dog?", "chat"),
        ("Tell me a joke about dogs", "chat"),
        ("Thanks, that's all!", "chat"),
        ("Hi! How many dogs are there?", "sql"),
        ("Hello, what is the average age of the dogs? Thanks", "sql"),
    ],
)
def test_semantic_reads_the_turn_checks_first_and_embeds_the_request_without_pleasantries(kennels, text, intent):
    d = decide("semantic", text, kennels)
    assert d.intent == intent, (text, d.method)
    if intent == "chat":
        assert d.method.startswith("semantic:turn-check:")


def test_the_dspy_program_reads_a_polite_data_question_without_its_pleasantries(kennels):
    from routerlab.agents.lm.scripted import scripted_lm

    lm = scripted_lm([{"fields": {"intent": "sql"}}])
    r = router.build("dspy")
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    assert r.decide(initial_state("Hi there! How many dogs are there? Thanks!", kennels)).intent == "sql"
    (request,) = lm.routerlab_engine.requests
    said = repr(request.messages)
    assert "How many dogs are there?" in said and "Hi there" not in said and "Thanks" not in said
