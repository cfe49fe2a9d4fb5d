"""Tiny real datasets in every on-disk format, written into tmp_path (SQLite files included)."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

CONCERT_SQL = """
CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, name TEXT, location TEXT, capacity INTEGER);
INSERT INTO stadium VALUES (1, 'Raith Rovers', 'Kirkcaldy', 10104), (2, 'Ayr United', 'Ayr', 11998),
  (3, 'Glebe Park', 'Brechin', 3960);
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Timbaland', 'United States', 32),
  (3, 'Justin Brown', 'France', 29), (4, 'Rose White', 'France', 41);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, year INTEGER,
  stadium_id INTEGER REFERENCES stadium(stadium_id));
INSERT INTO concert VALUES (1, 'Auditions', 2014, 1), (2, 'Super bootcamp', 2014, 2), (3, 'Home Visits', 2015, 2);
"""

PETS_SQL = """
CREATE TABLE student (stu_id INTEGER PRIMARY KEY, lname TEXT, age INTEGER);
INSERT INTO student VALUES (1001, 'Smith', 18), (1002, 'Kim', 19);
CREATE TABLE pets (pet_id INTEGER PRIMARY KEY, pet_type TEXT, pet_age INTEGER);
INSERT INTO pets VALUES (2001, 'cat', 3), (2002, 'dog', 2), (2003, 'dog', 1);
CREATE TABLE has_pet (stu_id INTEGER REFERENCES student(stu_id), pet_id INTEGER REFERENCES pets(pet_id));
INSERT INTO has_pet VALUES (1001, 2001), (1002, 2002), (1002, 2003);
"""

SCHOOLS_SQL = """
CREATE TABLE schools (cds TEXT PRIMARY KEY, school TEXT, county TEXT, charter INTEGER);
INSERT INTO schools VALUES ('01', 'Oak High', 'Alameda', 1), ('02', 'Pine Middle', 'Fresno', 0),
  ('03', 'Elm Elementary', 'Alameda', 0);
CREATE TABLE frpm (cds TEXT REFERENCES schools(cds), enrollment INTEGER, free_meals INTEGER);
INSERT INTO frpm VALUES ('01', 400, 100), ('02', 300, 150), ('03', 200, 20);
"""

GEO_SQL = """
CREATE TABLE state (state_name TEXT PRIMARY KEY, population INTEGER, area REAL, capital TEXT);
INSERT INTO state VALUES ('texas', 14229000, 266807.0, 'austin'), ('new mexico', 1303000, 121412.0, 'santa fe'),
  ('idaho', 943935, 83557.0, 'boise');
CREATE TABLE city (city_name TEXT, state_name TEXT REFERENCES state(state_name), population INTEGER);
INSERT INTO city VALUES ('houston', 'texas', 1595138), ('austin', 'texas', 345496), ('el paso', 'texas', 425259),
  ('coeur d''alene', 'idaho', 20054);
CREATE TABLE river (river_name TEXT, length INTEGER, traverse TEXT);
INSERT INTO river VALUES ('rio grande', 3033, 'texas'), ('snake', 1670, 'idaho');
"""

SHOP_SQL = """
CREATE TABLE products (product_id INTEGER PRIMARY KEY, name TEXT, price REAL);
INSERT INTO products VALUES (1, 'Lamp', 19.5), (2, 'Desk', 120.0), (3, 'Chair', 45.0);
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, product_id INTEGER REFERENCES products(product_id), qty INTEGER);
INSERT INTO orders VALUES (1, 1, 2), (2, 3, 1);
"""


def make_sqlite(path: Path, script: str) -> Path:
    """Create a real SQLite file from a SQL script.

    One transaction without fsync: these files are throwaway, and a sync per statement made each
    fixture take seconds on a busy disk.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    try:
        con.executescript(f"PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY; BEGIN; {script}; COMMIT;")
    finally:
        con.close()
    return path


@pytest.fixture(scope="session")
def _db_templates(tmp_path_factory) -> dict[str, Path]:
    """Every fixture database built once per session; fixtures copy them (a copy is cheaper)."""
    root = tmp_path_factory.mktemp("db_templates")
    scripts = {"concert": CONCERT_SQL, "pets": PETS_SQL, "schools": SCHOOLS_SQL, "geo": GEO_SQL, "shop": SHOP_SQL}
    return {name: make_sqlite(root / f"{name}.sqlite", script) for name, script in scripts.items()}


def _copy(template: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, dest)
    return dest


def write_json(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1), encoding="utf-8")
    return path


SPIDER_DEV = [
    {"db_id": "concert_singer", "question": "How many singers do we have?", "query": "SELECT count(*) FROM singer"},
    {
        "db_id": "concert_singer",
        "question": "What are the names of the singers from France?",
        "query": "SELECT name FROM singer WHERE country = 'France'",
    },
    {
        "db_id": "concert_singer",
        "question": "Show the stadium name and the number of concerts in each stadium.",
        "query": "SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 "
        "ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id",
    },
    {
        "db_id": "pets_1",
        "question": "How many pets are older than 1?",
        "query": "SELECT count(*) FROM pets WHERE pet_age > 1",
    },
]

SPIDER_TRAIN = [
    {"db_id": "pets_1", "question": "Find the last name of every student.", "query": "SELECT lname FROM student"},
    {
        "db_id": "pets_1",
        "question": "How many dogs are owned by students?",
        "query": "SELECT count(*) FROM has_pet AS T1 JOIN pets AS T2 ON T1.pet_id = T2.pet_id "
        "WHERE T2.pet_type = 'dog'",
    },
    {"db_id": "concert_singer", "question": "List all stadium names.", "query": "SELECT name FROM stadium"},
]


@pytest.fixture
def spider_dir(tmp_path: Path, _db_templates: dict[str, Path]) -> Path:
    """A Spider-layout directory: dev (4), train (3), tables.json and two SQLite databases."""
    root = tmp_path / "spider"
    _copy(_db_templates["concert"], root / "database" / "concert_singer" / "concert_singer.sqlite")
    _copy(_db_templates["pets"], root / "database" / "pets_1" / "pets_1.sqlite")
    write_json(root / "dev.json", SPIDER_DEV)
    write_json(root / "train_spider.json", SPIDER_TRAIN)
    write_json(root / "tables.json", [{"db_id": "concert_singer"}, {"db_id": "pets_1"}])
    return root


#: two conversations in SParC/CoSQL's SQL-state-tracking layout over ``spider_dir``'s databases;
#: the second opens with a CoSQL clarification exchange (read as one by ``cosql`` only)
CONVERSATIONS = [
    {
        "database_id": "concert_singer",
        "interaction": [
            {"utterance": "How many singers do we have?", "query": "SELECT count ( * )  FROM singer"},
            {
                "utterance": "Which of them are from France?",
                "query": "SELECT name FROM singer WHERE country  =  'France'",
            },
            {
                "utterance": "And older than 30?",
                "query": "SELECT name FROM singer WHERE country = 'France' AND age > = 30",
            },
        ],
        "final": {"utterance": "French singers over 30", "query": "SELECT name FROM singer WHERE country = 'France'"},
    },
    {
        "database_id": "pets_1",
        "interaction": [
            {
                "utterance": "Show the pets | the pet ids or every column? | just the types",
                "query": "SELECT pet_type FROM pets",
            },
            {"utterance": "How many are dogs?", "query": "SELECT count(*) FROM pets WHERE pet_type = 'dog'"},
        ],
        "final": {"utterance": "How many dogs are there?", "query": "SELECT count(*) FROM pets WHERE pet_type = 'dog'"},
    },
]


@pytest.fixture
def conversations_dir(spider_dir: Path) -> Path:
    """``dev.json`` of :data:`CONVERSATIONS` in a folder of its own; the databases are ``spider_dir``'s."""
    root = spider_dir.parent / "conversations"
    write_json(root / "dev.json", CONVERSATIONS)
    return root


BIRD_DEV = [
    {
        "question_id": 0,
        "db_id": "schools",
        "question": "How many charter schools are in Alameda?",
        "evidence": "charter schools refers to charter = 1",
        "SQL": "SELECT COUNT(*) FROM schools WHERE county = 'Alameda' AND charter = 1",
        "difficulty": "simple",
    },
    {
        "question_id": 1,
        "db_id": "schools",
        "question": "What is the free meal rate of Pine Middle?",
        "evidence": "free meal rate = free_meals / enrollment",
        "SQL": "SELECT CAST(T2.free_meals AS REAL) / T2.enrollment FROM schools AS T1 "
        "JOIN frpm AS T2 ON T1.cds = T2.cds WHERE T1.school = 'Pine Middle'",
        "difficulty": "moderate",
    },
    {
        "question_id": 2,
        "db_id": "schools",
        "question": "Which county has the most students?",
        "evidence": "",
        "SQL": "SELECT T1.county FROM schools AS T1 JOIN frpm AS T2 ON T1.cds = T2.cds "
        "GROUP BY T1.county ORDER BY SUM(T2.enrollment) DESC LIMIT 1",
        "difficulty": "challenging",
    },
]

BIRD_TRAIN = [
    {
        "db_id": "shop",
        "question": "What is the price of the Desk?",
        "evidence": "Desk is a product name",
        "SQL": "SELECT price FROM products WHERE name = 'Desk'",
    },
    {"db_id": "shop", "question": "How many orders are there?", "evidence": "", "SQL": "SELECT COUNT(*) FROM orders"},
]


@pytest.fixture
def bird_dir(tmp_path: Path, _db_templates: dict[str, Path]) -> Path:
    """A BIRD-layout directory: dev (3) and train (2) with their databases."""
    root = tmp_path / "bird"
    _copy(_db_templates["schools"], root / "dev_databases" / "schools" / "schools.sqlite")
    _copy(_db_templates["shop"], root / "train_databases" / "shop" / "shop.sqlite")
    write_json(root / "dev.json", BIRD_DEV)
    write_json(root / "train.json", BIRD_TRAIN)
    return root


GEO_ENTRIES = [
    {
        "query-split": "train",
        "sentences": [
            {"text": "how big is state_name0", "variables": {"state_name0": "texas"}, "question-split": "dev"},
            {
                "text": "what is the area of state_name0",
                "variables": {"state_name0": "new mexico"},
                "question-split": "test",
            },
        ],
        "sql": [
            'SELECT STATEalias0.AREA FROM STATE AS STATEalias0 WHERE STATEalias0.STATE_NAME = "state_name0" ;',
            'SELECT AREA FROM STATE WHERE STATE_NAME = "state_name0" ;',
        ],
        "variables": [{"example": "texas", "location": "both", "name": "state_name0", "type": "state_name"}],
    },
    {
        "query-split": "dev",
        "sentences": [
            {
                "text": "which cities in state_name0 have more than population0 people",
                "variables": {"population0": "400000"},
                "question-split": "train",
            }
        ],
        "sql": [
            "SELECT CITYalias0.CITY_NAME FROM CITY AS CITYalias0 WHERE CITYalias0.STATE_NAME = "
            '"state_name0" AND CITYalias0.POPULATION > population0 ;'
        ],
        "variables": [
            {"example": "texas", "location": "both", "name": "state_name0", "type": "state_name"},
            {"example": "150000", "location": "both", "name": "population0", "type": "population"},
        ],
    },
    {
        "query-split": "3",
        "sentences": [
            {"text": "what is the longest river", "variables": {}, "question-split": "0"},
            {"text": "which river is the longest", "variables": {}, "question-split": "1"},
            {"text": "name the longest river", "variables": {}, "question-split": "7"},
        ],
        "sql": [
            "SELECT RIVERalias0.RIVER_NAME FROM RIVER AS RIVERalias0 WHERE RIVERalias0.LENGTH = "
            "( SELECT MAX( RIVERalias1.LENGTH ) FROM RIVER AS RIVERalias1 ) ;"
        ],
        "variables": [],
    },
    {
        "query-split": "test",
        "sentences": [
            {
                "text": "what state is city_name0 in",
                "variables": {"city_name0": "coeur d'alene"},
                "question-split": "train",
            }
        ],
        "sql": ['SELECT CITYalias0.STATE_NAME FROM CITY AS CITYalias0 WHERE CITYalias0.CITY_NAME = "city_name0" ;'],
        "variables": [{"example": "houston", "location": "both", "name": "city_name0", "type": "city_name"}],
    },
]


@pytest.fixture
def geo_files(tmp_path: Path, _db_templates: dict[str, Path]) -> tuple[Path, Path]:
    """``(geography.json, geography.sqlite)`` in the text2sql-data format: 4 entries, 7 sentences."""
    root = tmp_path / "t2s"
    db = _copy(_db_templates["geo"], root / "geography.sqlite")
    return write_json(root / "geography.json", GEO_ENTRIES), db


TABLE_RECORDS: list[dict[str, Any]] = [
    {
        "id": "q1",
        "question": "How many products are there?",
        "gold_sql": "SELECT count(*) FROM products",
        "db_path": "dbs/shop.sqlite",
    },
    {
        "question": "What does this query do?\n\nSELECT name FROM products",
        "intent": "explain",
        "input_sql": "SELECT name FROM products",
        "split": "test",
    },
    {"id": "q3", "question": "Hi there!", "intent": "chat", "split": "train", "source": "handmade"},
    {
        "id": "q4",
        "question": "Show me the price of that product.",
        "intent": "clarify",
        "user_reply": "I mean the Lamp.",
        "gold_sql": "SELECT price FROM products WHERE name = 'Lamp'",
        "db_id": "store",
        "hint": "prices are in EUR",
        "db_path": "dbs/shop.sqlite",
    },
    {
        "id": "q5",
        "question": "Fix this: SELECT nme FROM products\n\nError: no such column: nme",
        "intent": "fix",
        "input_sql": "SELECT nme FROM products",
        "error_text": "no such column: nme",
        "gold_sql": "SELECT name FROM products",
        "alt_intents": "sql",
    },
]

CSV_COLUMNS = [
    "id",
    "question",
    "intent",
    "gold_sql",
    "db_path",
    "db_id",
    "split",
    "hint",
    "user_reply",
    "input_sql",
    "error_text",
    "alt_intents",
    "source",
]


@pytest.fixture
def shop_db(tmp_path: Path, _db_templates: dict[str, Path]) -> Path:
    """The shop database, next to the JSONL/CSV files under ``data/dbs/``."""
    return _copy(_db_templates["shop"], tmp_path / "data" / "dbs" / "shop.sqlite")


@pytest.fixture
def jsonl_file(tmp_path: Path, shop_db: Path) -> Path:
    """``data/questions.jsonl``: 5 records of mixed intents, some without db_path."""
    path = tmp_path / "data" / "questions.jsonl"
    records = [dict(r, alt_intents=[r["alt_intents"]]) if "alt_intents" in r else r for r in TABLE_RECORDS]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def csv_file(tmp_path: Path, shop_db: Path) -> Path:
    """``data/questions.csv``: the same 5 records as the JSONL file, empty cells for missing keys."""
    path = tmp_path / "data" / "questions.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for r in TABLE_RECORDS:
            writer.writerow({k: r.get(k, "") for k in CSV_COLUMNS})
    return path
