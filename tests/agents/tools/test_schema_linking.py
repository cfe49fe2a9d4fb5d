"""Schema linking and presentation on a real Spider-style SQLite file."""

from __future__ import annotations

import dataclasses

import pytest

from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools.repair import catalog_of, query_identifiers
from routerlab.agents.tools.schema_linking import link_tables, overlap_tables

ALL = ["Has_Pet", "Order Items", "Pets", "Student", "car_names", "model_list"]


@pytest.fixture(scope="module")
def db(spiderlike_db):
    return open_database(spiderlike_db)


def test_full_and_auto_linking_show_every_table(db):
    for mode in ("full", "auto"):
        assert sorted(link_tables(db, "How many dogs?", ToolSettings(linking=mode))) == ALL


def test_auto_links_by_overlap_once_the_schema_outgrows_its_budget(db):
    small = ToolSettings(linking="auto", schema_budget_chars=100, max_tables=1)
    linked = link_tables(db, "Which student has a pet?", small)
    assert linked == overlap_tables(db, "Which student has a pet?", 1)
    assert len(linked) < len(ALL)


def test_overlap_keeps_the_tables_a_linked_table_references(db):
    linked = overlap_tables(db, "Which pet does each owner have, via has_pet?", 1)
    # Has_Pet matches the question; Pets and Student come with it through its foreign keys
    assert {"Has_Pet", "Pets", "Student"} <= set(linked)


def test_overlap_can_lose_a_gold_table_that_full_linking_keeps(db):
    question = "What are the first names of students who own a dog?"
    gold = (
        "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID "
        "JOIN Pets AS T3 ON T3.PetID = T2.PetID WHERE T3.PetType = 'dog'"
    )
    tables, _ = query_identifiers(gold, catalog_of(db.tables()), "sqlite")
    settings = ToolSettings(max_tables=1)
    assert not tables <= set(link_tables(db, question, dataclasses.replace(settings, linking="overlap")))
    assert tables <= set(link_tables(db, question, dataclasses.replace(settings, linking="full")))


def test_unknown_linking_mode_is_refused_when_the_settings_are_built():
    with pytest.raises(ConfigError) as info:
        ToolSettings(linking="magic")
    assert "auto, full, overlap" in str(info.value)


def test_schema_text_keeps_exact_identifiers_and_resolves_foreign_keys(db):
    text = db.schema_text()
    # exact case, quoting where the name needs it, and a key whose target column was implicit
    assert "CREATE TABLE Pets (" in text and "  PetType VARCHAR(20)," in text
    assert 'CREATE TABLE "Order Items" (' in text and '  "order" INTEGER,' in text
    assert "FOREIGN KEY (PetID) REFERENCES Pets(PetID)" in text
    assert "FOREIGN KEY (Model) REFERENCES model_list(Model)" in text
    assert "-- e.g. 'dog', 'cat'" in text
    # the schema text is a valid script: every statement creates its table in a fresh database
    import sqlite3

    con = sqlite3.connect(":memory:")
    con.executescript(text)
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert sorted(names) == ALL


def test_schema_text_is_the_same_for_every_question(db):
    # the same prefix for every question on a database: what lets the model reuse its KV cache
    s = ToolSettings()
    a = db.schema_text(link_tables(db, "How many dogs?", s))
    b = db.schema_text(link_tables(db, "List the makes of every car model", s))
    assert a == b
