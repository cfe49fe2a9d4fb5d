"""Pulling SQL and error text out of a request: engines' own error vocabularies, case by case."""

import sqlite3

import duckdb
import pytest

from routerlab.agents.tools.text import extract_error, extract_sql, parses_as_sql


def _sqlite_error(sql: str) -> str:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE battle (id INTEGER, name TEXT)")
    try:
        con.execute(sql)
    except sqlite3.Error as exc:
        return str(exc)
    raise AssertionError(f"{sql!r} ran without an error")


def _duckdb_error(sql: str) -> str:
    con = duckdb.connect()
    con.execute("CREATE TABLE battle (id INTEGER, name VARCHAR)")
    try:
        con.execute(sql)
    except duckdb.Error as exc:
        return str(exc).splitlines()[0]
    raise AssertionError(f"{sql!r} ran without an error")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT namee FROM battle",  # no such column
        "SELECT name FROM battles",  # no such table
        "SELECT nme(name) FROM battle",  # no such function
        "SELECT name FROM battle AS a JOIN battle AS b ON a.id = b.id",  # ambiguous column name
        "SELECT name FROM battle WHERE WHERE",  # syntax error
    ],
)
def test_a_real_sqlite_message_quoted_without_a_marker_is_found(sql):
    """SQLite's messages carry no "Error" word; quoted bare ("It answers: no such column: x"), they are still errors."""
    message = _sqlite_error(sql)
    request = f"Why does the database reject this?\n{sql}\nIt answers: {message}"
    found = extract_error(request)
    assert found is not None and found.startswith(message.split(":")[0])
    # a query that parses is still found next to the message (a syntax error's query does not parse)
    assert (extract_sql(request) is not None) == parses_as_sql(sql, "sqlite")


def test_a_real_duckdb_message_is_found():
    message = _duckdb_error("SELECT namee FROM battle")
    assert extract_error(f"SELECT namee FROM battle gives {message}") is not None


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("I keep getting no such table: TV_hannel when I run it. What did I get wrong?", "no such table: TV_hannel"),
        ('Postgres says column "nme" does not exist for SELECT nme FROM t', 'column "nme" does not exist'),
        ("MySQL: Unknown column 'nme' in 'field list' from SELECT nme FROM t", "Unknown column 'nme' in 'field list'"),
        ("It fails with Table 'shop.ordrs' doesn't exist", "Table 'shop.ordrs' doesn't exist"),
    ],
)
def test_bare_engine_messages_are_bounded_to_the_message(request_text, expected):
    assert extract_error(request_text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "What does this query do? SELECT name FROM battle",
        "How many battles had no such commander listed?",
        "Which tables do not exist in the archive yet?",
    ],
)
def test_prose_without_an_engine_message_has_no_error(text):
    assert extract_error(text) is None
