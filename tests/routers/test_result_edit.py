"""A request to change what is shown is a follow-up, not a write; a request to change stored data is refused.

Real phrasing patterns (the first CoSQL one is dog_kennels' own turn), the real ``rules`` router,
the real pipeline and spider-dev-a's real SQLite files; the earlier turn is a real pipeline turn
(scripted LM).
"""

from __future__ import annotations

import re

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.agents.turn_history import turn_from_trace
from routerlab.routers.support.result_edit import edits_the_result, new_value, written_tables
from tests.conftest import SPIDER_DEV_A

CONCERT = SPIDER_DEV_A / "database" / "concert_singer" / "concert_singer.sqlite"
DOGS = SPIDER_DEV_A / "database" / "dog_kennels" / "dog_kennels.sqlite"

pytestmark = pytest.mark.skipif(
    not CONCERT.is_file() or not DOGS.is_file(), reason="real Spider data not found (set ROUTERLAB_SPIDER_DEV)"
)

FIRST = "List the names of the singers from France."
LIST_FRENCH = "SELECT name FROM singer WHERE country = 'France'"
WITH_AGES = "SELECT name, age FROM singer WHERE country = 'France'"

#: requests to change the result shown: answered with SQL after a data turn
EDITS = [
    "could you update that table so it shows their ages too?",
    "Can you change the list to include their ages?",
    "please modify it to show their ages as well",
    "Add their ages to that, please.",
    "could you remove the names and show their ages instead?",
    "Update the results so they are sorted by age.",
]
#: requests to change stored data: refused with or without a result on screen
WRITES = [
    "Delete all rows from the singer table",
    "update the singer table so that every age is 30",
    "change the age of Joe Sharp to 45",
    "remove the singers from France",
    "set the country of every singer to 'Spain'",
    "DELETE FROM singer WHERE country = 'France'",
]


def list_lm():
    def reply(request):
        if requested_field(request) != "sql":
            return answer_field(request, "ok")
        text = " ".join(str(p) for m in request.messages for p in m.parts)
        # the schema in the prompt names the Age column: the request's own word is "ages"
        return answer_field(request, WITH_AGES if re.search(r"\bages\b", text, re.I) else LIST_FRENCH)

    return scripted_lm(reply)


@pytest.fixture(scope="module")
def history():
    """The first turn as the real pipeline answered it."""
    first = Pipeline(routers.router.build("oracle"), list_lm()).run(FIRST, str(CONCERT), oracle_intent="sql")
    assert first.sql == LIST_FRENCH and first.rows
    return [turn_from_trace(FIRST, first)]


@pytest.mark.parametrize("text", EDITS)
def test_an_edit_of_the_shown_result_is_a_follow_up(text, history):
    db = open_database(str(CONCERT))
    assert edits_the_result(text, db, history)
    rule, _ = routers.router.build("rules").match(text, db, history)
    assert (rule.name, rule.intent) == ("result_edit", "sql")


@pytest.mark.parametrize("text", WRITES)
def test_a_change_of_stored_data_is_still_refused(text, history):
    db = open_database(str(CONCERT))
    assert not edits_the_result(text, db, history)
    rule, _ = routers.router.build("rules").match(text, db, history)
    assert rule.intent == "refuse", (text, rule.name)


@pytest.mark.parametrize("text", EDITS[:3])
def test_without_a_result_on_screen_there_is_no_evidence_of_an_edit(text):
    db = open_database(str(CONCERT))
    assert not edits_the_result(text, db, [])
    # the decision is what it was before: a change verb on a table is refused
    rule, _ = routers.router.build("rules").match(text, db, [])
    assert rule.name != "result_edit"


def test_the_evidence_case_by_case():
    db = open_database(str(CONCERT))
    assert written_tables("Delete all rows from the singer table", db) == ["singer"]
    # plural, singular and table names with underscores
    assert written_tables("remove the concerts of 2014", db) == ["concert"]
    assert "singer_in_concert" in written_tables("update the singer_in_concert rows", db)
    # the object ends at the clause boundary: "their ages" after "so it shows" is not a target
    assert written_tables("update that table so it shows the singer ages too", db) == []
    assert (
        new_value("change the age to 45") and new_value("set name = 'Bob'") and not new_value("change it to show ages")
    )


def test_real_cosql_phrasing_on_dog_kennels():
    """dog_kennels' own follow-up (CoSQL): 'update this list' names the Professionals table after the boundary."""
    db = open_database(str(DOGS))
    history = [{"question": "List the professional ids", "sql": "SELECT professional_id FROM Professionals"}]
    text = (
        "Great! Could you update this list to include both the first names and treatment type codes "
        "for each of these professionals IDs?"
    )
    assert edits_the_result(text, db, history)
    assert routers.router.build("rules").match(text, db, history)[0].intent == "sql"


def test_the_pipeline_answers_the_edit_with_sql(history):
    pipeline = Pipeline(routers.router.build("rules"), list_lm())
    t = pipeline.run(EDITS[0], str(CONCERT), history=history)
    assert t.intent == "sql" and "refuse" not in t.tool_names
    assert t.sql == WITH_AGES and len(t.rows) == 4 and len(t.rows[0]) == 2
    # the same words as a first request are still refused: there is no result to edit
    alone = pipeline.run(EDITS[0], str(CONCERT))
    assert alone.intent == "refuse" and not alone.executed
