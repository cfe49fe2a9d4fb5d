"""Execution-guided correction: probing a query, value notes on a real SQLite file, one bounded retry."""

from __future__ import annotations

import re

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools.feedback import Probe, column_notes, feedback_text, probe, value_notes


@pytest.fixture(scope="module")
def db(spiderlike_db):
    return open_database(spiderlike_db)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT Fname FROM Student WHERE Age > 18", Probe()),
        ("SELECT Fname FROM Student WHERE Age > 99", Probe(empty=True)),
        # an aggregate over nothing: one row of NULL, or a count of 0
        ("SELECT max(Age) FROM Student WHERE Age > 99", Probe(empty=True)),
        ("SELECT count(*) FROM Pets WHERE PetType = 'dogs'", Probe(empty=True)),
        # a real zero among other rows is an answer, not an empty result
        ("SELECT PetID - 2001 FROM Pets ORDER BY PetID LIMIT 2", Probe()),
    ],
)
def test_probe_tells_empty_from_answered(db, sql, expected):
    assert probe(db, sql, timeout_s=5.0) == expected


def test_probe_returns_the_exact_error(db):
    found = probe(db, "SELECT pet_type FROM Pets", timeout_s=5.0)
    assert found.reason == "error" and "no such column: pet_type" in found.error


def test_value_notes_say_where_a_missing_literal_really_is(db):
    # another spelling in the same column
    assert value_notes(db, "SELECT count(*) FROM Pets WHERE PetType = 'Dog'") == [
        "'Dog' is not a value of Pets.PetType; it holds 'dog'."
    ]
    # the value of another table's column, through an alias and an IN list
    notes = value_notes(db, "SELECT T1.Age FROM Student AS T1 WHERE T1.Fname IN ('Kim', 'Linda')")
    assert notes == ["'Kim' is not a value of Student.Fname; 'Kim' is a value of Student.LName."]
    assert value_notes(db, "SELECT Age FROM Student WHERE LName = 'Nobody'") == [
        "'Nobody' is not a value of Student.LName, nor of any text column."
    ]
    # values that exist, numbers and unparsable text give no note
    assert value_notes(db, "SELECT Age FROM Student WHERE LName = 'Kim' AND Age = 19") == []
    assert value_notes(db, "SELEC nonsense") == []


def test_feedback_text_says_what_running_the_query_showed_without_the_query():
    text = feedback_text(Probe(empty=True), ["'x' is not a value of t.c."])
    assert text == "A first answer returned no rows.\n'x' is not a value of t.c."
    assert feedback_text(Probe(error="no such column: c"), []) == "A first answer failed: no such column: c"


def test_column_notes_name_the_tables_that_have_a_missing_column(db):
    assert column_notes(db, "no such column: T2.PetType") == ["PetType is a column of Pets."]
    assert column_notes(db, "no such column: Model") == ["Model is a column of car_names, model_list."]
    assert column_notes(db, "no such column: nonsense") == ["No table has a column nonsense."]
    assert column_notes(db, "near SELECT: syntax error") == []


def test_a_join_no_rows_meet_is_named_with_the_foreign_keys(db):
    notes = value_notes(db, "SELECT T1.Fname FROM Student AS T1 JOIN Pets AS T2 ON T1.StuID = T2.PetID")
    assert notes == [
        "No row of Student joins Pets on Student.StuID = Pets.PetID. Foreign keys: "
        "Has_Pet.StuID -> Student.StuID; Has_Pet.PetID -> Pets.PetID; Order Items.PetID -> Pets."
    ]
    assert value_notes(db, "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID") == []


def _lm(first: str, second: str, hints: list[str]):
    """generate_sql answers ``first``, then ``second`` once its hint carries feedback."""

    def reply(request):
        system = str(request.system or "")
        field = (re.search(r"Your output fields are:\n1\. `(\w+)`", system) or [None, ""])[1]
        text = "\n".join(text_of(m) for m in request.messages)
        if not field:  # the chat framing: the hint follows the question as "Evidence: ...", the query is bare
            hint = text.partition("\nEvidence: ")[2]
            hints.append(hint)
            return second if "A first answer" in hint else first
        if field == "sql":
            hint = re.search(r"\[\[ ## hint ## \]\]\n(.*?)\n\n\[\[ ## question", text, re.S)
            hints.append(hint.group(1) if hint else "")
            return {"fields": {"sql": second if "A first answer" in text else first}}
        return {"fields": {field: "SELECT 'fix_sql was called'"}}

    return scripted_lm(reply)


def _run(lm, db_path, **settings):
    config = PipelineConfig(tools=ToolSettings(**settings))
    return Pipeline(routers.router.build("oracle"), lm, config=config).run(
        "How many dogs?", str(db_path), oracle_intent="sql"
    )


def test_an_empty_result_gets_one_retry_with_feedback(spiderlike_db):
    hints: list[str] = []
    lm = _lm(
        "SELECT count(*) FROM Pets WHERE PetType = 'Dog'", "SELECT count(*) FROM Pets WHERE PetType = 'dog'", hints
    )
    t = _run(lm, spiderlike_db, retry_empty=True)
    assert t.rows == [[2]]
    assert t.tool_names == ["data_discovery", "generate_sql", "execute_sql_and_analyze_result"]
    retry = t.tool_calls[1]["output"]["retry"]
    assert retry["reason"] == "empty" and retry["kept"] is True
    assert len(hints) == 2 and hints[0] == ""
    assert hints[1] == "A first answer returned no rows.\n'Dog' is not a value of Pets.PetType; it holds 'dog'."
    assert t.subagent_usage.lm_calls == 2


def test_retry_is_bounded_to_one_call_and_switchable(spiderlike_db):
    hints: list[str] = []
    wrong = "SELECT count(*) FROM Pets WHERE PetType = 'Dog'"
    t = _run(_lm(wrong, "unused", hints), spiderlike_db, retry_empty=False)
    assert t.rows == [[0]] and len(hints) == 1 and "retry" not in t.tool_calls[1]["output"]
    # a retry that is empty again is dropped: the first query stays, and no third call is made
    hints.clear()
    t = _run(_lm(wrong, "SELECT count(*) FROM Pets WHERE PetType = 'Dogs'", hints), spiderlike_db)
    assert len(hints) == 2 and t.sql == wrong and t.tool_calls[1]["output"]["retry"]["kept"] is False
    # an empty result that no condition explains is not retried: the same prompt would bring it back
    hints.clear()
    t = _run(_lm("SELECT Fname FROM Student WHERE Age > 99", "unused", hints), spiderlike_db)
    assert len(hints) == 1 and "retry" not in t.tool_calls[1]["output"]


def test_an_error_repair_cannot_fix_gets_the_exact_error_before_fix_sql(spiderlike_db):
    hints: list[str] = []
    lm = _lm("SELECT nonsense_column FROM Pets", "SELECT count(*) FROM Pets", hints)
    t = _run(lm, spiderlike_db, retry_error=True)
    assert t.rows == [[3]] and "fix_sql" not in t.tool_names
    assert hints[1] == "A first answer failed: no such column: nonsense_column\nNo table has a column nonsense_column."
    # without the switch the failing query goes to fix_sql, as before
    hints.clear()
    t = _run(_lm("SELECT nonsense_column FROM Pets", "unused", hints), spiderlike_db, retry_empty=True)
    assert "fix_sql" in t.tool_names and len(hints) == 1


@pytest.mark.parametrize("baseline", ["single_call", "single_call_fields"])
def test_single_call_never_retries(spiderlike_db, baseline):
    hints: list[str] = []
    lm = _lm("SELECT count(*) FROM Pets WHERE PetType = 'Dog'", "unused", hints)
    config = PipelineConfig(tools=ToolSettings(retry_empty=True, retry_error=True))
    t = Pipeline(routers.router.build(baseline), lm, config=config).run(
        "How many dogs?", str(spiderlike_db), oracle_intent="sql"
    )
    assert t.rows == [[0]] and len(hints) == 1


def test_on_a_real_spider_database_the_feedback_names_the_column_that_holds_the_value(spider_dev_a):
    e = next(e for e in spider_dev_a if e.db_id == "voter_1")
    real = open_database(e.db_path)
    # a contestant with votes, read from the file (the right query must return a non-zero count)
    voted = "SELECT contestant_number FROM VOTES GROUP BY contestant_number ORDER BY count(*) DESC LIMIT 1"
    ((name,),) = real.execute(f"SELECT contestant_name FROM CONTESTANTS WHERE contestant_number = ({voted})").rows
    # the issue's mistake: a contestant's name compared with the votes' contestant number
    wrong = f"SELECT count(*) FROM VOTES WHERE contestant_number = '{name}'"
    right = (
        "SELECT count(*) FROM VOTES AS v JOIN CONTESTANTS AS c ON v.contestant_number = c.contestant_number"
        f" WHERE c.contestant_name = '{name}'"
    )
    assert probe(real, wrong, timeout_s=5.0).empty
    assert value_notes(real, wrong) == [
        f"'{name}' is not a value of VOTES.contestant_number; '{name}' is a value of CONTESTANTS.contestant_name."
    ]
    hints: list[str] = []
    t = _run(_lm(wrong, right, hints), e.db_path, retry_empty=True, retry_error=True)
    assert t.sql == right and t.rows == real.execute(right).rows
    assert "CONTESTANTS.contestant_name" in hints[1]
