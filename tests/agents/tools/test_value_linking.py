"""Value-aware linking case by case: the values a question names, looked up in real Spider SQLite files."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools.value_linking import question_values, value_hits, value_index, value_notes_text

DATABASES = Path(os.environ.get("ROUTERLAB_SPIDER_DEV", "/work/shared/data/spider-dev-a")) / "database"


def spider_db(name: str) -> Path:
    path = DATABASES / name / f"{name}.sqlite"
    if not path.exists():
        pytest.skip(f"spider-dev-a is not at {DATABASES}")
    return path


@pytest.mark.parametrize(
    ("question", "values"),
    [
        # capitalised words inside the sentence; the question word at its start is not a value
        ("Which cars were made in Japan or in Europe?", ["Japan", "Europe"]),
        # a capitalised phrase stays one value
        ("List every car maker of General Motors.", ["General Motors"]),
        # quoted values first (any case), then numbers
        ("What is the horsepower of cars from 'volkswagen' made in 1975?", ["volkswagen", "1975"]),
        ('Show the stadiums named "East Fife" with capacity above 2000.5', ["East Fife", "2000.5"]),
        # function words at the ends of a capitalised run are dropped ("The", "What")
        ("What The Netherlands holds", ["Netherlands"]),
        # nothing that looks like a value
        ("show the names of all singers", []),
    ],
)
def test_question_values_case_by_case(question, values):
    assert question_values(question) == values


def test_at_most_six_values_are_taken():
    assert question_values("A1 B2 C3 D4 E5 F6 G7 Hh Ii") == ["A1 B2 C3 D4 E5 F6 G7 Hh Ii"]
    assert question_values("11 12 13 14 15 16 17 18") == ["11", "12", "13", "14", "15", "16"]


def test_a_one_digit_number_is_a_quantity_not_a_value():
    assert question_values("Show the 3 oldest singers born after 1990 with 2.5 or 10 songs") == ["1990", "2.5", "10"]
    # car_1 keeps its country codes as text ('1', '2', ...): "the 2 makers" must not point there
    db = open_database(spider_db("car_1"))
    assert value_hits(db, "Which are the 2 makers with the most models?") == []


def test_a_value_is_found_in_the_column_that_holds_it_as_the_database_spells_it():
    db = open_database(spider_db("car_1"))
    notes = [h.note() for h in value_hits(db, "Which cars were made in Japan or in Europe?")]
    # car_1 stores both in lower case: the note gives the spelling the query must use
    assert notes == ["'japan' is a value of countries.CountryName.", "'europe' is a value of continents.Continent."]
    # a phrase matched whole, in its stored case
    hits = value_hits(db, "List every car maker of General Motors.")
    assert [(h.table, h.column, h.stored, h.whole) for h in hits] == [
        ("car_makers", "FullName", "General Motors", True)
    ]
    # a value held by several columns names each (at most three)
    ford = value_hits(db, "How many models does Ford make?")
    assert [(h.table, h.column) for h in ford] == [
        ("car_makers", "Maker"),
        ("car_names", "Model"),
        ("model_list", "Model"),
    ]
    # a number only a numeric column holds gives no note: the text columns are searched
    assert value_hits(db, "Which cars were made in 1975?") == []


def test_a_value_contained_in_a_stored_one_is_found_as_a_whole_word_only():
    db = open_database(spider_db("concert_singer"))
    hits = value_hits(db, "Which stadiums does 'Rovers' play in?")
    assert [(h.table, h.column, h.stored, h.whole) for h in hits] == [("stadium", "Location", "Raith Rovers", False)]
    # "Rove" is not a word of any value, and a value under four characters is matched whole only
    assert value_hits(db, "Which stadiums does 'Rove' play in?") == []
    assert value_hits(db, "Which stadiums does 'Ayr' play in?") == []


def test_the_index_is_built_once_per_database_file_and_again_when_the_file_changes(tmp_path):
    copy = tmp_path / "singers.sqlite"
    shutil.copy(spider_db("concert_singer"), copy)
    db = open_database(copy)
    first = value_index(db)
    assert value_index(db) is first  # cached: no scan on the second question
    assert value_hits(db, "Who is from Mars?") == []
    con = sqlite3.connect(copy)
    con.execute("UPDATE singer SET Country = 'Mars' WHERE Singer_ID = 1")
    con.commit()
    con.close()
    os.utime(copy, ns=(1, 1))  # a new modification time, whatever the clock's resolution
    assert value_index(db) is not first
    assert [h.note() for h in value_hits(db, "Who is from Mars?")] == ["'Mars' is a value of singer.Country."]


def test_the_notes_are_one_hint_line():
    assert value_notes_text([]) == ""
    assert value_notes_text(["'a' is a value of t.c.", "'b' is a value of t.d."]) == (
        "Values the question names, as the database stores them: 'a' is a value of t.c. 'b' is a value of t.d."
    )


def _pipeline_prompt(db: Path, question: str, **tools) -> tuple[str, dict]:
    seen: list = []

    def reply(request):
        seen.append(request)
        return "SELECT count(*) FROM countries"

    config = PipelineConfig(tools=ToolSettings(sql_framing="chat", sql_output="extract", **tools))
    t = Pipeline(routers.router.build("oracle"), scripted_lm(reply), config=config).run(
        question, str(db), oracle_intent="sql"
    )
    assert len(seen) == 1
    return "\n".join(text_of(m) for m in seen[0].messages), t.tool_calls[0]["output"]


def test_generate_sql_reads_the_notes_after_the_question_and_the_schema_prefix_is_unchanged():
    db = spider_db("car_1")
    question = "Which countries are in Europe?"
    off_prompt, off_discovery = _pipeline_prompt(db, question)
    on_prompt, on_discovery = _pipeline_prompt(db, question, value_linking=True)
    assert "values" not in off_discovery
    assert on_discovery["values"] == ["'europe' is a value of continents.Continent."]
    assert on_prompt == (
        off_prompt + "\nEvidence: Values the question names, as the database stores them: "
        "'europe' is a value of continents.Continent."
    )
    # the schema text (the prompt prefix llama.cpp reuses) is the same with and without notes
    assert on_discovery["schema"] == off_discovery["schema"]


def test_overlap_linking_keeps_the_table_that_holds_a_named_value():
    db = spider_db("car_1")
    question = "Which models are sold in Europe?"
    _, off = _pipeline_prompt(db, question, linking="overlap", max_tables=1)
    _, on = _pipeline_prompt(db, question, linking="overlap", max_tables=1, value_linking=True)
    assert off["tables"] == ["car_names", "model_list"]
    assert on["tables"] == ["car_names", "continents", "model_list"]  # database order
    assert "CREATE TABLE continents" in on["schema"]
