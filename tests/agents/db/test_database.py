"""Read-only databases: introspection, guarded execution, interrupting timeouts, caps, errors."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routerlab.agents.db import file_digest, open_database
from routerlab.agents.errors import DatabaseError, GuardViolation, QueryTimeout, SQLExecutionError


@pytest.fixture(scope="module")
def sqlite_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("sq") / "shop.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);"
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), total REAL);"
        "INSERT INTO customers VALUES (1, 'Ann', 'Xi''an'), (2, 'bob', NULL), (3, 'Bob', 'Chengdu');"
        "INSERT INTO orders VALUES (1, 1, 10.5), (2, 1, 3.0), (3, 3, 7.25);"
    )
    con.commit()
    con.close()
    return path


def test_dialect_detection(sales_db, sqlite_db):
    assert open_database(sales_db).dialect == "duckdb"
    assert open_database(sqlite_db).dialect == "sqlite"


def test_introspection_duckdb(sales_db):
    db = open_database(sales_db)
    tables = {t.name: t for t in db.tables()}
    assert set(tables) == {"areas", "revenue"}
    cols = {c.name: c for c in tables["areas"].columns}
    assert cols["id"].primary_key and not cols["name"].primary_key
    assert tables["revenue"].foreign_keys == (("area_id", "areas", "id"),)
    assert tables["areas"].row_count == 3


def test_introspection_sqlite(sqlite_db):
    db = open_database(sqlite_db)
    orders = next(t for t in db.tables() if t.name == "orders")
    assert orders.foreign_keys == (("customer_id", "customers", "id"),)
    assert db.example_values("customers", "name", 2) == ["Ann", "Bob"]


def test_schema_text_is_deterministic_and_has_examples(sales_db):
    a = open_database(sales_db).schema_text(example_values=3)
    b = open_database(sales_db).schema_text(example_values=3)
    assert a == b
    assert "CREATE TABLE areas" in a and "e.g. 'Baoji West'" in a
    assert "FOREIGN KEY (area_id) REFERENCES areas(id)" in a
    assert "e.g." not in open_database(sales_db).schema_text(example_values=0)


def test_execute_returns_jsonable_rows(sales_db):
    r = open_database(sales_db).execute("SELECT day, amount FROM revenue ORDER BY day, amount LIMIT 2")
    assert r.columns == ["day", "amount"]
    assert r.rows == [["2024-01-01", 80.0], ["2024-01-01", 100.0]]  # NULLS LAST
    assert not r.truncated


def test_row_cap_and_cell_truncation(sales_db):
    db = open_database(sales_db)
    r = db.execute("SELECT * FROM range(50)", max_rows=10)
    assert r.row_count == 10 and r.truncated
    r = db.execute("SELECT repeat('x', 5000) AS s", max_cell_chars=100)
    assert len(r.rows[0][0]) == 101


def test_engine_error_text_surfaces(sales_db, sqlite_db):
    with pytest.raises(SQLExecutionError) as info:
        open_database(sales_db).execute("SELECT nme FROM areas")
    assert "nme" in info.value.engine_message and "Binder Error" in info.value.engine_message
    with pytest.raises(SQLExecutionError) as info:
        open_database(sqlite_db).execute("SELECT nme FROM customers")
    assert "no such column" in str(info.value)


def test_guard_runs_before_the_engine(sales_db):
    with pytest.raises(GuardViolation):
        open_database(sales_db).execute("DELETE FROM areas")


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM areas",
        "INSERT INTO areas VALUES (9, 'x', 'y', true)",
        "CREATE TABLE z (a INT)",
        "DROP TABLE revenue",
    ],
)
def test_connection_is_read_only_even_without_the_guard(sales_db, sqlite_db, sql):
    before = file_digest(sales_db), file_digest(sqlite_db)
    for path in (sales_db, sqlite_db):
        con = open_database(path)._connect()
        try:
            with pytest.raises((duckdb.Error, sqlite3.Error)):
                con.execute(
                    sql.replace("areas", "customers").replace("revenue", "orders")
                    if str(path).endswith(".sqlite")
                    else sql
                )
        finally:
            con.close()
    assert (file_digest(sales_db), file_digest(sqlite_db)) == before


def test_duckdb_cannot_read_files(sales_db, tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    con = open_database(sales_db)._connect()
    try:
        with pytest.raises(duckdb.Error):
            con.execute(f"SELECT * FROM read_csv('{secret}')").fetchall()
    finally:
        con.close()


def test_runaway_duckdb_query_is_interrupted(sales_db):
    t0 = time.perf_counter()
    with pytest.raises(QueryTimeout):
        open_database(sales_db).execute("SELECT count(*) FROM range(100000000) a, range(100000000) b", timeout_s=0.5)
    # generous on a loaded 2-core machine: proves interruption (uninterrupted it runs for hours), no speed claim
    assert time.perf_counter() - t0 < 0.5 + 20.0


def test_runaway_sqlite_query_is_interrupted(sqlite_db):
    t0 = time.perf_counter()
    with pytest.raises(QueryTimeout):
        open_database(sqlite_db).execute(
            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000000000) "
            "SELECT count(*) FROM c",
            timeout_s=0.5,
        )
    assert time.perf_counter() - t0 < 0.5 + 20.0


def test_missing_and_non_database_files(tmp_path):
    with pytest.raises(DatabaseError) as info:
        open_database(tmp_path / "nope.duckdb")
    assert "not found" in str(info.value) and "fix:" in str(info.value)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"hello world, not a database")
    with pytest.raises(DatabaseError) as info:
        open_database(junk)
    assert "not a database file" in str(info.value)


@settings(
    max_examples=int(os.environ.get("ROUTERLAB_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    st.sampled_from(
        [
            "SELECT * FROM areas",
            "SELECT 1; DELETE FROM areas",
            "DELETE FROM areas",
            "WITH x AS (DELETE FROM areas RETURNING *) SELECT * FROM x",
            "SELECT nope",
            "COPY areas TO 'x.csv'",
            "SELECT * FROM revenue WHERE amount > 1",
        ]
    ),
    st.sampled_from(["", " ", ";", "\n-- x", " /* y */"]),
)
def test_whatever_passes_the_guard_never_changes_the_file(sales_db, tmp_path_factory, sql, suffix):
    copy = tmp_path_factory.mktemp("copy") / "copy.duckdb"
    shutil.copy(sales_db, copy)
    before = file_digest(copy)
    try:
        open_database(copy).execute(sql + suffix, timeout_s=2)
    except (GuardViolation, SQLExecutionError, QueryTimeout):
        pass
    assert file_digest(copy) == before


def test_a_timeout_interrupts_only_its_own_query(sales_db):
    import threading

    db = open_database(sales_db)
    quick: list[int] = []
    errors: list[BaseException] = []

    def runaway() -> None:
        with pytest.raises(QueryTimeout):
            db.execute("SELECT count(*) FROM range(100000000) a, range(100000000) b", timeout_s=0.5)

    def steady() -> None:
        try:
            # the statements overlap the runaway query and its interrupt: all must complete
            for _ in range(40):
                quick.append(db.execute("SELECT count(*) FROM areas").rows[0][0])
                time.sleep(0.02)
        except BaseException as exc:  # handed to the main thread's assertion
            errors.append(exc)

    threads = [threading.Thread(target=runaway), threading.Thread(target=steady)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and quick == [3] * 40


def test_database_copies_reconnect_in_their_own_process(sales_db):
    import pickle

    db = open_database(sales_db)
    db.execute("SELECT 1")
    copy = pickle.loads(pickle.dumps(db))
    assert copy.execute("SELECT count(*) FROM areas").rows == [[3]]
    assert [t.name for t in copy.tables()] == [t.name for t in db.tables()]


def test_a_file_that_is_not_a_database_is_named_never_shown(tmp_path):
    # issue 62: an absolute db_path to /etc/passwd printed its first bytes ("root:x:0")
    from routerlab.agents.errors import DatabaseError

    path = tmp_path / "passwd"
    path.write_text("root:x:0:0:root:/root:/bin/bash\n")
    with pytest.raises(DatabaseError) as caught:
        open_database(path)
    text = f"{caught.value} {caught.value.found} {caught.value.expected} {caught.value.fix}"
    assert str(path) in text and "a DuckDB or SQLite file" in text
    assert "root" not in text.replace(str(tmp_path), "")
