"""The mixer's unanswerable and underspecified variants, on a small real SQLite database."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from routerlab.agents.answerability import check_question, schema_lacks
from routerlab.agents.db import open_database
from routerlab.agents.plan import CHAINS
from routerlab.benchmarks.dataset import Dataset
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders.mixed import DEFAULT_RATIOS, mix_intents

DB_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Timbaland', 'United States', 32),
  (3, 'Justin Brown', 'France', 29), (4, 'Rose White', 'France', 41), (5, 'John Nizinik', 'France', 43);
CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, name TEXT, location TEXT, capacity INTEGER);
INSERT INTO stadium VALUES (1, 'Raith Rovers', 'Kirkcaldy', 10104), (2, 'Ayr United', 'Ayr', 11998),
  (3, 'Glebe Park', 'Brechin', 3960), (4, 'Dens Park', 'Dundee', 11500);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, year INTEGER,
  stadium_id INTEGER REFERENCES stadium(stadium_id));
INSERT INTO concert VALUES (1, 'Auditions', 2014, 1), (2, 'Super bootcamp', 2014, 2), (3, 'Home Visits', 2015, 2);
"""

QUESTIONS = (
    ("What is the average age of all singers?", "SELECT avg(age) FROM singer"),
    ("Show the name of every singer.", "SELECT name FROM singer"),
    ("How many singers are there?", "SELECT count(*) FROM singer"),
    ("What is the maximum capacity of the stadiums?", "SELECT max(capacity) FROM stadium"),
    ("List the 3 largest stadiums by capacity.", "SELECT name FROM stadium ORDER BY capacity DESC LIMIT 3"),
    ("Give the names of the two oldest singers.", "SELECT name FROM singer ORDER BY age DESC LIMIT 2"),
    ("How many concerts are there?", "SELECT count(*) FROM concert"),
    ("What is the location of each stadium?", "SELECT location FROM stadium"),
)


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mixu") / "concert.sqlite"
    con = sqlite3.connect(path)
    con.executescript(DB_SQL)
    con.close()
    return path


@pytest.fixture(scope="module")
def base(db_path: Path) -> Dataset:
    examples = [
        Example(
            id=f"q-{k:03d}",
            question=QUESTIONS[k % len(QUESTIONS)][0],
            db_id="concert",
            db_path=str(db_path),
            intent="sql",
            gold_sql=QUESTIONS[k % len(QUESTIONS)][1],
            expected_chain=CHAINS["sql"],
            dataset="toy",
        )
        for k in range(48)
    ]
    return Dataset(name="toy", version="v1", examples=examples, source="toy")


@pytest.fixture(scope="module")
def unanswerable(base: Dataset) -> list[Example]:
    return [e for e in mix_intents(base, seed=1, ratios={"unanswerable": 1}).examples if e.intent == "unanswerable"]


def test_unanswerable_variants_are_labelled_and_really_lack_their_term(base, unanswerable, db_path):
    originals = {e.id: e for e in base.examples}
    assert len(unanswerable) >= 40  # almost every question has a column, table or period to replace
    db = open_database(db_path)
    for e in unanswerable:
        missing = e.meta["missing"]
        original = originals[e.meta["mixed_from"]]
        assert e.gold_sql is None and e.expected_chain == ("abstain",) and e.user_reply is None
        assert e.question != original.question and e.meta["original_question"] == original.question
        assert missing["kind"] in ("measure", "attribute", "entity", "period")
        if missing["kind"] == "period":
            assert missing["term"] in e.question  # appended; the schema has years only
        else:
            assert missing["term"].split()[0] in e.question.lower() and schema_lacks(db, missing["term"])
    assert len({e.meta["missing"]["kind"] for e in unanswerable}) == 4


def test_unanswerable_variants_are_deterministic_per_seed(base):
    def questions(seed: int) -> list[str]:
        return [e.question for e in mix_intents(base, seed=seed, ratios={"unanswerable": 1}).examples]

    assert questions(1) == questions(1)
    assert questions(1) != questions(2)


def test_the_schema_check_finds_most_generated_gaps(unanswerable, db_path):
    """Not a tautology: the mixer swaps terms anywhere in a question, the check reads fixed patterns."""
    db = open_database(db_path)
    found = Counter(not check_question(e.question, db).answerable for e in unanswerable)
    assert found[True] >= len(unanswerable) // 2, found


def test_clarify_can_remove_the_limit_count(base):
    mixed = mix_intents(base, seed=0, ratios={"clarify": 1})
    limits = [e for e in mixed.examples if e.intent == "clarify" and e.meta["removed"] == "limit"]
    assert limits
    for e in limits:
        original = e.meta["original_question"]
        assert "a few" in e.question and e.meta["removed_literal"] in original
        assert e.meta["removed_literal"] in e.user_reply and e.gold_sql.endswith(f"LIMIT {_digits(e)}")


def _digits(e: Example) -> str:
    words = {"two": "2", "three": "3"}
    return words.get(e.meta["removed_literal"], e.meta["removed_literal"])


def test_default_ratios_include_unanswerable():
    assert DEFAULT_RATIOS["unanswerable"] > 0 and abs(sum(DEFAULT_RATIOS.values()) - 1) < 1e-9
