"""Deterministic identifier repair, checked by running the repaired SQL on a real SQLite file."""

from __future__ import annotations

import re

import pytest
import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from routerlab.agents.db import open_database
from routerlab.agents.tools.repair import catalog_of, closest_name, foreign_keys_of, query_identifiers, repair_sql
from routerlab.eval.scorers.execution import results_match


@pytest.fixture(scope="module")
def db(spiderlike_db):
    return open_database(spiderlike_db)


def rows(db, sql):
    return sorted(map(tuple, db.execute(sql).rows))


@pytest.mark.parametrize(
    ("broken", "meant", "change"),
    [
        # an invented snake_case spelling of a CamelCase column
        (
            "SELECT count(*) FROM Pets WHERE pet_type = 'dog'",
            "SELECT count(*) FROM Pets WHERE PetType = 'dog'",
            "column pet_type -> PetType",
        ),
        # a column put on the wrong side of a join
        (
            "SELECT T1.Make FROM model_list AS T1 JOIN car_names AS T2 ON T1.Model = T2.Model WHERE T1.Maker = 1",
            "SELECT T2.Make FROM model_list AS T1 JOIN car_names AS T2 ON T1.Model = T2.Model WHERE T1.Maker = 1",
            "column T1.Make -> T2.Make",
        ),
        # a plural table name
        (
            "SELECT Fname FROM students WHERE Age > 18",
            "SELECT Fname FROM Student WHERE Age > 18",
            "table students -> Student",
        ),
        # a table whose real name needs quoting
        ("SELECT sum(qty) FROM order_items", 'SELECT sum(qty) FROM "Order Items"', "table order_items -> Order Items"),
        # a prefixed column name the schema spells without the prefix
        ("SELECT student_age FROM Student WHERE LName = 'Kim'", "SELECT Age FROM Student WHERE LName = 'Kim'", None),
    ],
)
def test_repaired_query_runs_and_returns_what_was_meant(db, broken, meant, change):
    with pytest.raises(Exception, match="no such"):
        db.execute(broken)
    fixed = repair_sql(broken, catalog_of(db.tables()), "sqlite")
    assert fixed.unresolved == ()
    assert fixed.changes and (change is None or change in fixed.changes)
    assert rows(db, fixed.sql) == rows(db, meant)


@pytest.mark.parametrize(
    "valid",
    [
        "SELECT PetType, count(*) AS n FROM Pets GROUP BY PetType ORDER BY n DESC",
        "SELECT * FROM Pets WHERE PetID NOT IN (SELECT PetID FROM Has_Pet WHERE Has_Pet.StuID = 1001)",
        "SELECT T1.Fname FROM Student AS T1 WHERE EXISTS (SELECT 1 FROM Has_Pet AS T2 WHERE T2.StuID = T1.StuID)",
        "WITH heavy AS (SELECT PetID AS pid FROM Pets WHERE weight > 10) SELECT count(pid) FROM heavy",
        "SELECT sub.t FROM (SELECT PetType AS t FROM Pets) AS sub",
        "select fname from student where age = 19",  # unquoted names ignore case: left as written
        'SELECT LName FROM Student WHERE Fname = "Tracy"',  # SQLite reads "Tracy" as a string
        'SELECT "order", qty FROM "Order Items"',
    ],
)
def test_valid_queries_are_left_exactly_as_written(db, valid):
    out = repair_sql(valid, catalog_of(db.tables()), "sqlite")
    assert out.sql == valid and out.changes == () and out.unresolved == ()
    db.execute(valid)


def test_what_cannot_be_resolved_is_reported_and_left_alone(db):
    sql = "SELECT T1.PetType FROM Pets AS T1 WHERE T1.zzz_unknown = 3"
    out = repair_sql(sql, catalog_of(db.tables()), "sqlite")
    assert out.sql == sql and out.changes == ()
    assert out.unresolved == ("column T1.zzz_unknown",)


def test_a_parse_error_is_reported_not_raised(db):
    out = repair_sql("SELEC PetType FROM", catalog_of(db.tables()), "sqlite")
    assert out.sql == "SELEC PetType FROM"
    assert out.unresolved[0].startswith("parse error")


def test_closest_name_refuses_a_tie_and_a_distant_name():
    assert closest_name("name", ["LName", "Fname"]) is None
    assert closest_name("colour", ["PetType", "weight"]) is None
    assert closest_name("pettype", ["PetID", "PetType"]) == "PetType"
    assert closest_name("Pet Type", ["PetID", "PetType"]) == "PetType"


def test_query_identifiers_resolve_aliases_to_real_names(db):
    tables, columns = query_identifiers(
        "SELECT T1.fname FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid "
        "WHERE T2.petid IN (SELECT petid FROM pets WHERE pettype = 'dog')",
        catalog_of(db.tables()),
        "sqlite",
    )
    assert tables == {"Student", "Has_Pet", "Pets"}
    assert columns == {
        ("Student", "Fname"),
        ("Student", "StuID"),
        ("Has_Pet", "StuID"),
        ("Has_Pet", "PetID"),
        ("Pets", "PetID"),
        ("Pets", "PetType"),
    }


def keys(db):
    return foreign_keys_of(db.tables())


@pytest.mark.parametrize(
    ("broken", "change"),
    [
        # the model put PetID on Student; moved to Has_Pet it would join Has_Pet to itself
        (
            "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.PetID = T2.StuID",
            "join T2.PetID = T2.StuID -> T1.StuID = T2.StuID",
        ),
        # both columns exist, but the two tables are linked by their key, not by these
        (
            "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.Age = T2.PetID",
            "join T1.Age = T2.PetID -> T1.StuID = T2.StuID",
        ),
    ],
)
def test_suspect_join_is_rewritten_to_the_foreign_key(db, broken, change):
    fixed = repair_sql(broken, catalog_of(db.tables()), "sqlite", keys(db))
    assert change in fixed.changes and fixed.unresolved == ()
    meant = "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID"
    assert rows(db, fixed.sql) == rows(db, meant) == [("Linda",), ("Tracy",), ("Tracy",)]


@pytest.mark.parametrize(
    "join",
    [
        "SELECT T1.Fname FROM Student AS T1 JOIN Pets AS T2 ON T1.Age = T2.pet_age",  # no key between them
        "SELECT T1.Make FROM car_names AS T1 JOIN model_list AS T2 ON T1.Model = T2.Model",  # already the key
        "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID",
    ],
)
def test_sound_joins_are_left_alone(db, join):
    out = repair_sql(join, catalog_of(db.tables()), "sqlite", keys(db))
    assert out.sql == join and out.changes == ()


def test_joins_are_untouched_without_foreign_keys(db):
    sql = "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.Age = T2.PetID"
    assert repair_sql(sql, catalog_of(db.tables()), "sqlite").sql == sql


def test_a_column_on_a_table_missing_from_the_query_brings_that_table_in_by_its_key(db):
    broken = "SELECT PetType FROM Has_Pet WHERE StuID = 1002"
    fixed = repair_sql(broken, catalog_of(db.tables()), "sqlite", keys(db))
    assert fixed.unresolved == ()
    assert fixed.changes == ("join Pets ON Has_Pet.PetID = Pets.PetID for column PetType",)
    meant = "SELECT T2.PetType FROM Has_Pet AS T1 JOIN Pets AS T2 ON T1.PetID = T2.PetID WHERE T1.StuID = 1002"
    assert rows(db, fixed.sql) == rows(db, meant) == [("dog",), ("dog",)]
    # without the keys the column stays unresolved, for fix_sql
    assert repair_sql(broken, catalog_of(db.tables()), "sqlite").unresolved == ("column PetType",)


# -- on the real Spider databases of ../shared/data/spider-dev-a ---------------------------------


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _schema(e):
    real = open_database(e.db_path)
    tables = real.tables()
    return real, catalog_of(tables), foreign_keys_of(tables)


def _same_result(real, sql: str, gold: str) -> bool:
    return results_match(real.execute(sql, max_rows=10_000).rows, real.execute(gold, max_rows=10_000).rows)[0]


def test_repair_leaves_every_real_gold_query_as_written(spider_dev_a):
    for e in spider_dev_a:
        real, catalog, keys = _schema(e)
        fixed = repair_sql(e.gold_sql, catalog, real.dialect, keys)
        assert (fixed.sql, fixed.changes, fixed.unresolved) == (e.gold_sql, (), ()), e.id


def test_repair_maps_snake_cased_columns_back_on_real_gold_queries(spider_dev_a):
    mangled = 0
    for e in spider_dev_a:
        real, catalog, keys = _schema(e)
        ast = sqlglot.parse_one(e.gold_sql, read=real.dialect)
        cols = [c for c in ast.find_all(exp.Column) if c.name not in ("", "*") and _snake(c.name) != c.name.lower()]
        if not cols:
            continue
        for c in cols:  # ``PetType`` written ``pet_type``: the mistake the issue found most
            c.set("this", exp.to_identifier(_snake(c.name)))
        fixed = repair_sql(ast.sql(dialect=real.dialect), catalog, real.dialect, keys)
        assert fixed.unresolved == () and _same_result(real, fixed.sql, e.gold_sql), (e.id, fixed)
        mangled += 1
    assert mangled >= 40


def test_repair_moves_columns_back_across_real_joins(spider_dev_a):
    moved = 0
    for e in spider_dev_a:
        real, catalog, keys = _schema(e)
        lower = {t.lower(): {c.lower() for c in cols} for t, cols in catalog.items()}
        ast = sqlglot.parse_one(e.gold_sql, read=real.dialect)
        flipped = False
        for scope in traverse_scope(ast):
            tables = {a.lower(): s.name.lower() for a, s in scope.sources.items() if isinstance(s, exp.Table)}
            if len(tables) != 2 or flipped:
                continue
            for c in scope.columns:
                alias = c.table.lower()
                if alias not in tables:
                    continue
                (other,) = set(tables) - {alias}
                if c.name.lower() in lower.get(tables[alias], ()) and c.name.lower() not in lower.get(
                    tables[other], ()
                ):
                    c.set("table", exp.to_identifier(other))  # the column put on the wrong side of the join
                    flipped = True
                    break
        if not flipped:
            continue
        fixed = repair_sql(ast.sql(dialect=real.dialect), catalog, real.dialect, keys)
        assert _same_result(real, fixed.sql, e.gold_sql), (e.id, fixed)
        moved += 1
    assert moved >= 100
