"""The schema answerability check and the abstain path, on real SQLite files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from routerlab import routers
from routerlab.agents.answerability import check_question, schema_lacks, temporal_level
from routerlab.agents.db import open_database
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.lm.scripts import asks_for_sql, sql_answer

CONCERT_SQL = """
CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, name TEXT, location TEXT, capacity INTEGER);
INSERT INTO stadium VALUES (1, 'Raith Rovers', 'Kirkcaldy', 10104), (2, 'Ayr United', 'Ayr', 11998),
  (3, 'Glebe Park', 'Brechin', 3960), (4, 'Somerset Park', 'Ayr', 9000), (5, 'Bayview', 'Methil', 2000),
  (6, 'Dens Park', 'Dundee', 11500), (7, 'Balmoor', 'Peterhead', 4000);
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Timbaland', 'United States', 32),
  (3, 'Justin Brown', 'France', 29), (4, 'Rose White', 'France', 41);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, year INTEGER,
  stadium_id INTEGER REFERENCES stadium(stadium_id));
INSERT INTO concert VALUES (1, 'Auditions', 2014, 1), (2, 'Super bootcamp', 2014, 2), (3, 'Home Visits', 2015, 2);
"""

PETS_SQL = """
CREATE TABLE pets (pet_id INTEGER PRIMARY KEY, pet_type TEXT, weight REAL);
INSERT INTO pets VALUES (1, 'cat', 3.5), (2, 'dog', 12.0);
"""


def _sqlite(path: Path, script: str) -> Path:
    con = sqlite3.connect(path)
    con.executescript(script)
    con.close()
    return path


@pytest.fixture(scope="module")
def concert(tmp_path_factory) -> Path:
    return _sqlite(tmp_path_factory.mktemp("answerability") / "concert.sqlite", CONCERT_SQL)


@pytest.fixture(scope="module")
def pets(tmp_path_factory) -> Path:
    return _sqlite(tmp_path_factory.mktemp("answerability") / "pets.sqlite", PETS_SQL)


ANSWERABLE = [
    "What is the average age of singers from France?",
    "How many singers do we have?",
    "What are the names of the stadiums in Kirkcaldy?",
    "How many concerts were held in 2014?",
    "Show the name and capacity of each stadium.",
    "What is the maximum capacity of the stadiums in Methil?",
    "List all concerts of the year 2015.",
]


@pytest.mark.parametrize("question", ANSWERABLE)
def test_answerable_questions_have_no_gap(concert: Path, question: str):
    verdict = check_question(question, open_database(concert))
    assert verdict.answerable, verdict.gaps


@pytest.mark.parametrize(
    ("question", "kind", "term"),
    [
        ("What is the average salary of singers from France?", "measure", "salary"),
        ("What is the total ticket revenue of each concert?", "measure", "ticket revenue"),
        ("What is the email address of the singer named Joe Sharp?", "attribute", "email address"),
        ("List all sponsors of the concerts.", "entity", "sponsors"),
        ("How many concerts were held in March 2014?", "period", "March 2014"),
    ],
)
def test_a_missing_measure_attribute_entity_or_period_is_named(concert: Path, question, kind, term):
    verdict = check_question(question, open_database(concert))
    assert [(g.kind, g.term) for g in verdict.gaps] == [(kind, term)]
    text = verdict.explain()
    assert term in text and "stadium" in text  # what is missing, and what the database holds


def test_periods_need_a_temporal_column_of_the_right_grain(concert: Path, pets: Path):
    assert temporal_level(open_database(concert)) == 1  # a year column only
    assert temporal_level(open_database(pets)) == 0
    assert check_question("How many concerts were there in 2014?", open_database(concert)).answerable
    gaps = check_question("What was the average weight of cats in 2019?", open_database(pets)).gaps
    assert [g.kind for g in gaps] == ["period"]


def test_a_stored_value_outside_the_example_values_is_not_a_gap(concert: Path):
    db = open_database(concert)
    examples = {str(v).lower() for t in db.tables() for c in t.columns for v in c.examples}
    assert "peterhead" not in examples  # the check must look it up in the data
    assert not schema_lacks(db, "Peterhead")
    assert schema_lacks(db, "salary") and schema_lacks(db, "pilots")
    assert not schema_lacks(db, "singers") and not schema_lacks(db, "capacity")


def _program_lm():
    """Answers the SQL sub-agent's DSPy program; a call to any other program is a test failure."""

    def reply(request):
        assert asks_for_sql(request), "only SQL generation may call the LM in these turns"
        return sql_answer(request, "SELECT count(*) FROM singer")

    return scripted_lm(reply)


def test_rules_route_an_unanswerable_question_to_abstain_and_run_no_sql(concert: Path):
    trace = Pipeline(routers.router.build("rules"), _program_lm()).run(
        "What is the average salary of singers from France?", str(concert)
    )
    assert trace.tool_names == ["abstain"] and trace.intent == "unanswerable"
    assert not trace.executed and trace.sql is None and trace.error is None
    assert "salary" in (trace.answer or "") and "singer" in (trace.answer or "")
    abstained = trace.tool_calls[0]["output"]
    assert abstained["missing"] == [{"kind": "measure", "term": "salary", "reason": "no column measures 'salary'"}]


def test_rules_keep_answering_answerable_questions(concert: Path):
    trace = Pipeline(routers.router.build("rules"), _program_lm()).run(
        "What is the average age of singers from France?", str(concert)
    )
    assert trace.tool_names == ["data_discovery", "generate_sql", "execute_sql_and_analyze_result"]
    assert trace.executed and trace.rows == [[4]]


def test_an_lm_router_can_abstain_with_its_own_reason(concert: Path):
    """The llm router is offered the tool; a reason the schema check cannot see is reported as declared."""

    def reply(request):
        if request.tools:
            assert "abstain" in [t.name for t in request.tools]
            return {"name": "abstain", "args": {"question": "Who is the best singer?", "missing": "a rating"}}
        return {"fields": {"reply": "unused"}}

    trace = Pipeline(routers.router.build("llm"), scripted_lm(reply)).run("Who is the best singer?", str(concert))
    assert trace.tool_names == ["abstain"] and trace.intent == "unanswerable" and not trace.executed
    assert "a rating" in (trace.answer or "")
    assert trace.tool_calls[0]["output"]["missing"][0]["kind"] == "declared"


@pytest.mark.parametrize(
    ("question", "content"),
    [
        # imperative, relative-clause and plural-subject verbs are not concepts
        ("List the names of owners who own dogs.", [("owners",), ("dogs",)]),
        ("How many concerts play there?", [("concerts",)]),
        ("How many models does each maker produce?", [("models",), ("maker",)]),
        ("Which states have professionals living there?", [("states",), ("professionals",)]),
        # names, quoted values, numbers and generic words are left out; the head and noun modifiers stay
        ("What is the email address of the singer named 'Joe' in Paris?", [("email", "address"), ("singer",)]),
        ("How many people are taller than 1.9 metres?", []),
        ("Show the number of records of each blood type.", [("blood",)]),
        # comparatives, superlatives and predicate adjectives are not nouns
        ("Which cars are lighter than 3500, oldest first?", [("cars",)]),
    ],
)
def test_noun_phrases_keep_the_concepts_a_schema_must_hold(question: str, content):
    from routerlab.agents.answerability import noun_phrases

    assert [p.content for p in noun_phrases(question)] == content


def test_synonyms_and_compounds_ground_a_word(tmp_path: Path):
    db = open_database(
        _sqlite(
            tmp_path / "staff.sqlite",
            "CREATE TABLE staff (staff_id INTEGER, full_name TEXT, wage REAL, hometown TEXT, mpg REAL);"
            "INSERT INTO staff VALUES (1, 'Ann Lee', 10.5, 'Leeds', 30.0);",
        )
    )
    assert check_question("What is the average salary of the staff?", db).answerable  # salary ~ wage
    assert check_question("List the towns the staff come from.", db).answerable  # town in "hometown"
    assert check_question("Which staff get the most miles per gallon?", db).answerable  # initials: mpg
    gaps = check_question("What is the phone number and shoe size of Ann Lee?", db).gaps
    assert [g.term for g in gaps] == ["phone", "shoe size"]  # "number" is generic: the phone is what is missing


def test_the_sql_sub_agent_can_decline_and_the_plan_abstains(concert: Path):
    """With sql_may_decline, an UNANSWERABLE answer of the SQL program becomes the abstain outcome."""
    from routerlab.agents.graph import PipelineConfig
    from routerlab.agents.tools.context import ToolSettings
    from routerlab.agents.tools.decline import DECLINE_INSTRUCTION

    seen: list[str] = []

    def reply(request):
        assert asks_for_sql(request)
        seen.append("\n".join([str(request.system or ""), *(text_of(m) for m in request.messages)]))
        return sql_answer(request, "UNANSWERABLE: no column records who won")

    config = PipelineConfig(tools=ToolSettings(sql_may_decline=True))
    # the schema check finds nothing missing in this question: the sub-agent is the one that declines
    trace = Pipeline(routers.router.build("rules"), scripted_lm(reply), config=config).run(
        "How many singers from France are there?", str(concert)
    )
    assert DECLINE_INSTRUCTION.split(":")[0] in seen[0]
    assert trace.tool_names == ["data_discovery", "generate_sql", "abstain"]
    assert not trace.executed and trace.sql is None and trace.error is None
    assert trace.tool_calls[1]["output"] == {"sql": None, "unanswerable": True, "missing": "no column records who won"}
    assert "no column records who won" in (trace.answer or "")


def test_without_the_setting_the_sql_prompt_is_unchanged(concert: Path):
    from routerlab.agents.tools.decline import DECLINE_INSTRUCTION

    def reply(request):
        assert DECLINE_INSTRUCTION[:40] not in str(request.system or "")
        return {"fields": {"sql": "SELECT count(*) FROM singer WHERE country = 'France'"}}

    trace = Pipeline(routers.router.build("rules"), scripted_lm(reply)).run(
        "How many singers from France are there?", str(concert)
    )
    assert trace.tool_names[-1] == "execute_sql_and_analyze_result" and trace.rows == [[2]]


# -- identifiers as people say them (issue 59) -----------------------------------------------------
NAMES_SQL = """
CREATE TABLE "TVShow" (id INTEGER PRIMARY KEY, title TEXT, "Written_by" TEXT);
INSERT INTO "TVShow" VALUES (1, 'Night Train', 'Ann Lee'), (2, 'Blue Hour', 'Bo Chan');
CREATE TABLE car_makers (id INTEGER PRIMARY KEY, full_name TEXT);
INSERT INTO car_makers VALUES (1, 'Volvo'), (2, 'Saab');
CREATE TABLE rides (id INTEGER PRIMARY KEY, maker_id INTEGER, "Lowest" INTEGER, "Average" INTEGER);
INSERT INTO rides VALUES (1, 1, 10, 20), (2, 2, 5, 15);
"""


@pytest.fixture(scope="module")
def named(tmp_path_factory) -> Path:
    # the database's own name says what it is about: bicycle rentals
    return _sqlite(tmp_path_factory.mktemp("answerability") / "bicycle_rental.sqlite", NAMES_SQL)


@pytest.mark.parametrize(
    "question",
    [
        "How many tv shows are there?",  # two words for a table named in one
        "List every carmaker.",  # one word for a name of two
        "Who are the writers of these shows?",  # an agent noun for a column's verb (Written_by)
        "Who is the author of Night Train?",  # its synonym
        "How many bicycles are recorded?",  # the database's own name
        "Which ride has the lowest usage in average?",  # a statistic column measures what is aggregated
        "What're the titles of the shows?",  # a contraction
        "Show their titles and makers as well?",  # an idiom, not a thing
        "For each maker, how many rides do they each produce?",  # a verb after a floating quantifier
        "Which is the most famous show in the world?",  # a scope, not an entity the schema must name
        "List the makers with no duplicates.",  # the answer's shape
        "Which of these features does the yongest ride have?",  # schema-part word, misspelt superlative
    ],
)
def test_identifiers_are_matched_as_people_say_them(named: Path, question: str):
    verdict = check_question(question, open_database(named))
    assert verdict.answerable, verdict.gaps


@pytest.mark.parametrize(
    ("question", "term"),
    [("How many pilots drive for each maker?", "pilots"), ("List the sponsors of each show.", "sponsors")],
)
def test_an_entity_absent_from_names_and_values_is_still_a_gap(named: Path, question: str, term: str):
    verdict = check_question(question, open_database(named))
    assert [g.term for g in verdict.gaps] == [term]
