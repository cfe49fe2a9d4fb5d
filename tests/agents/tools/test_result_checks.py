"""Checks of results that run, case by case on a real Spider SQLite file, and the one regeneration they trigger."""

from __future__ import annotations

from pathlib import Path

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.errors import UnknownComponentError
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools.result_checks import check_result, result_check

ALL = ("empty", "count_for_list", "list_for_count", "duplicates")


@pytest.mark.parametrize(
    ("question", "sql", "failed"),
    [
        # empty: no rows, or only NULL, where the question presupposes some
        ("Which singers are from Mars?", "SELECT Name FROM singer WHERE Country = 'Mars'", ["empty"]),
        (
            "What is the age of the oldest singer from Mars?",
            "SELECT max(Age) FROM singer WHERE Country = 'Mars'",
            ["empty"],
        ),
        # ... but not for an existence question, and a count of zero is an answer
        ("Are there singers from Mars?", "SELECT Name FROM singer WHERE Country = 'Mars'", []),
        ("How many singers are from Mars?", "SELECT count(*) FROM singer WHERE Country = 'Mars'", []),
        # count_for_list: one count where a list was asked
        (
            "List the names of the singers from France.",
            "SELECT count(*) FROM singer WHERE Country = 'France'",
            ["count_for_list"],
        ),
        (
            "Which singers are from France?",
            "SELECT count(Name) AS n FROM singer WHERE Country = 'France'",
            ["count_for_list"],
        ),
        ("List the names of the singers from France.", "SELECT Name FROM singer WHERE Country = 'France'", []),
        # ... a count that is asked for is not a list's
        ("What is the number of singers from France?", "SELECT count(*) FROM singer WHERE Country = 'France'", []),
        # list_for_count: several rows where how many was asked
        ("How many singers are from France?", "SELECT Name FROM singer WHERE Country = 'France'", ["list_for_count"]),
        ("How many singers are from France?", "SELECT count(*) FROM singer WHERE Country = 'France'", []),
        # ... but a count per group has a row per group
        ("How many singers does each country have?", "SELECT Country, count(*) FROM singer GROUP BY Country", []),
        # duplicates: repeated rows where different ones were asked
        ("What are the different countries of the singers?", "SELECT Country FROM singer", ["duplicates"]),
        ("What are the different countries of the singers?", "SELECT DISTINCT Country FROM singer", []),
        # ... or a count of every row where how many different ones was asked
        ("How many different countries do singers come from?", "SELECT count(Country) FROM singer", ["duplicates"]),
        ("How many different countries do singers come from?", "SELECT count(DISTINCT Country) FROM singer", []),
        ("How many distinct countries are there?", "SELECT count(*) FROM (SELECT DISTINCT Country FROM singer)", []),
        # repeated rows are fine when nobody asked for distinct ones
        ("List the countries of all singers.", "SELECT Country FROM singer", []),
    ],
)
def test_checks_case_by_case(singers, question, sql, failed):
    db = open_database(singers)
    result = db.execute(sql)
    findings = check_result(ALL, question, sql, result, db.dialect)
    assert [f.check for f in findings] == failed
    assert all(f.text for f in findings)


def test_only_the_named_checks_run_and_an_unknown_name_fails_when_built(singers):
    db = open_database(singers)
    sql = "SELECT Name FROM singer WHERE Country = 'France'"
    result = db.execute(sql)
    assert check_result(("empty",), "How many singers are from France?", sql, result, db.dialect) == []
    assert sorted(result_check.names()) == sorted(ALL)
    with pytest.raises(UnknownComponentError, match="result check"):
        ToolSettings(result_checks=("count_for_lists",))
    # a config file's list (or one name) is kept as a tuple
    assert ToolSettings(result_checks=["empty"]).result_checks == ("empty",)
    assert ToolSettings(result_checks="empty").result_checks == ("empty",)


def checks_lm(first: str, second: str, seen: list):
    """The first generate_sql call gets ``first``, any later one ``second``."""

    def reply(request):
        seen.append("\n".join(text_of(m) for m in request.messages))
        return first if len(seen) == 1 else second

    return scripted_lm(reply)


def run_pipeline(db: Path, lm, question: str, **tools):
    config = PipelineConfig(tools=ToolSettings(sql_framing="chat", sql_output="extract", **tools))
    return Pipeline(routers.router.build("oracle"), lm, config=config).run(question, str(db), oracle_intent="sql")


def test_a_failed_check_gets_one_regeneration_with_the_finding_and_keeps_a_better_query(singers):
    seen: list[str] = []
    lm = checks_lm(
        "SELECT count(*) FROM singer WHERE Country = 'France'", "SELECT Name FROM singer WHERE Country = 'France'", seen
    )
    t = run_pipeline(singers, lm, "List the names of the singers from France.", result_checks=ALL)
    out = t.tool_calls[1]["output"]
    assert len(seen) == 2
    # the regeneration read the finding after the question; the failed query itself is left out
    assert "a single count, but the question asks for a list" in seen[1]
    assert "SELECT count(*)" not in seen[1]
    assert out["check"] == {
        "findings": ["count_for_list"],
        "feedback": out["check"]["feedback"],
        "sql": "SELECT Name FROM singer WHERE Country = 'France'",
        "after": [],
        "kept": True,
    }
    assert sorted(r[0] for r in t.rows) == ["John Nizinik", "Justin Brown", "Rose White", "Tribal King"]


def test_the_original_is_kept_when_the_regeneration_is_no_better(singers):
    seen: list[str] = []
    # the second query runs but still lists where a count was asked; then one that fails to run
    lm = checks_lm("SELECT Name FROM singer", "SELECT Country FROM singer", seen)
    t = run_pipeline(singers, lm, "How many singers are there?", result_checks=ALL)
    out = t.tool_calls[1]["output"]
    assert len(seen) == 2 and out["sql"] == "SELECT Name FROM singer"
    assert out["check"]["kept"] is False and out["check"]["after"] == ["list_for_count"]
    seen.clear()
    lm = checks_lm("SELECT Name FROM singer", "SELECT nonsense FROM singer", seen)
    out = run_pipeline(singers, lm, "How many singers are there?", result_checks=ALL).tool_calls[1]["output"]
    assert out["sql"] == "SELECT Name FROM singer" and out["check"]["after"] is None and not out["check"]["kept"]


def test_no_regeneration_when_the_checks_pass_or_are_off(singers):
    seen: list[str] = []
    lm = checks_lm("SELECT count(*) FROM singer", "SELECT 'never asked'", seen)
    t = run_pipeline(singers, lm, "How many singers are there?", result_checks=ALL)
    assert len(seen) == 1 and "check" not in t.tool_calls[1]["output"]
    seen.clear()
    lm = checks_lm("SELECT Name FROM singer", "SELECT 'never asked'", seen)
    t = run_pipeline(singers, lm, "How many singers are there?")
    assert len(seen) == 1 and "check" not in t.tool_calls[1]["output"]


def test_an_empty_result_the_retry_already_acted_on_is_not_regenerated_again(singers):
    seen: list[str] = []
    # 'france' is not a value of singer.Country (it holds 'France'): the execution-feedback retry
    # runs first; its query is empty too, so the empty check must not ask a third time
    lm = checks_lm(
        "SELECT Name FROM singer WHERE Country = 'france'", "SELECT Name FROM singer WHERE Country = 'Mars'", seen
    )
    t = run_pipeline(singers, lm, "Which singers are from france?", result_checks=ALL)
    out = t.tool_calls[1]["output"]
    assert len(seen) == 2 and out["retry"]["reason"] == "empty" and "check" not in out
