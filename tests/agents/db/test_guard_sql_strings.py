"""No statement reaches a database inside a string: SQL-from-string functions are refused.

The probe (issue 50, item 1): ``SELECT json_execute_serialized_sql(json_serialize_sql('SELECT path
FROM duckdb_databases()'))`` passed the guard, which checked the outer SELECT, and DuckDB then ran
the string, returning the database's absolute path. The list of such functions is the guard's
constant; the engines' own catalogues are read here, at test time, so a new engine version with
another such function fails this test instead of slipping past the guard.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routerlab.agents.db import SQL_FROM_STRING_FUNCTIONS, check_sql, file_digest, function_catalogue, open_database
from routerlab.agents.db.database import clear_database_cache
from routerlab.agents.errors import GuardViolation
from tests.agents.db.test_guard import HOSTILE, LEGIT

PROBE = "SELECT json_execute_serialized_sql(json_serialize_sql('SELECT path FROM duckdb_databases()'))"
#: the form DuckDB 2 runs (the function is a table function there)
PROBE_FROM = "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT path FROM duckdb_databases()'))"

# names that suggest SQL text handling; every catalogue function matching it is either refused or
# listed here with the reason it cannot run a statement
_SQL_LIKE = re.compile(r"sql|query|plan|exec|eval|statement|prepare")
_REVIEWED_HARMLESS = {
    # DuckDB: catalogue views and helpers that take no statement text
    "duckdb_prepared_statements": "lists this connection's prepared statements; runs none",
    "current_query": "returns the text of the running query; runs nothing",
    "pg_get_viewdef": "returns a view's stored text; runs nothing",
    "sqlite_version": "version string",
    "sqlite_source_id": "version string",
    "sqlite_compileoption_get": "compile option text",
    "sqlite_compileoption_used": "compile option flag",
    "sqlite_offset": "byte offset of a column's value",
    "sql_quote": "quotes a value as a SQL literal; runs nothing",
    "current_query_id": "the running query's id",
    "sqlite_log": "writes a message to SQLite's error log callback (none is installed); runs nothing",
}


def _duckdb_catalogue() -> set[str]:
    con = duckdb.connect()
    try:
        # the json extension (where the serialise/execute functions live) is loaded on first use
        con.execute("SELECT json_valid('1')")
        return {r[0].lower() for r in con.execute("SELECT DISTINCT function_name FROM duckdb_functions()").fetchall()}
    finally:
        con.close()


def _sqlite_catalogue() -> set[str]:
    con = sqlite3.connect(":memory:")
    try:
        return {r[0].lower() for r in con.execute("SELECT name FROM pragma_function_list").fetchall()}
    finally:
        con.close()


@pytest.mark.parametrize(
    ("catalogue", "dialect"), [(_duckdb_catalogue, "duckdb"), (_sqlite_catalogue, "sqlite")], ids=["duckdb", "sqlite"]
)
def test_every_sql_handling_function_of_the_engines_is_refused_or_reviewed(catalogue, dialect) -> None:
    names = catalogue()
    classified = function_catalogue(dialect)
    suspects = {n for n in names if _SQL_LIKE.search(n)}
    allowed = {n for n in suspects if classified.refusal(n) is None or classified.refusal(n, table=True) is None}
    unknown = sorted(allowed - set(_REVIEWED_HARMLESS))
    assert not unknown, f"functions that may take SQL text, neither refused nor reviewed: {unknown}"


def test_the_duckdb_catalogue_has_the_functions_the_guard_names() -> None:
    # the constant is not from memory: the DuckDB ones exist in the installed engine
    names = _duckdb_catalogue()
    for name in ("json_execute_serialized_sql", "json_serialize_sql", "json_deserialize_sql", "query", "query_table"):
        assert name in names and name in SQL_FROM_STRING_FUNCTIONS


@pytest.mark.parametrize("probe", [PROBE, PROBE_FROM])
def test_the_probe_is_refused_and_shows_why(tmp_path: Path, probe: str) -> None:
    for dialect in ("duckdb", "sqlite"):
        with pytest.raises(GuardViolation) as caught:
            check_sql(probe, dialect)
        assert caught.value.rule == "forbidden_function"
    # the reason: without the guard the engine runs the hidden statement and reveals the path
    path = tmp_path / "where-i-live.duckdb"
    con = duckdb.connect(str(path))
    assert str(path) in str(con.execute(PROBE_FROM).fetchall())
    con.close()
    # and through the guarded, read-only connection it never runs
    clear_database_cache()
    before = file_digest(path)
    with pytest.raises(GuardViolation):
        open_database(path).execute(probe)
    assert file_digest(path) == before


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM query('SELECT path FROM duckdb_databases()')",
        "SELECT * FROM query_table('areas')",
        "SELECT json_serialize_sql('SELECT 1')",
        "SELECT json_deserialize_sql(json_serialize_sql('SELECT 1'))",
        "SELECT JSON_EXECUTE_SERIALIZED_SQL('{}')",
        "SELECT eval('DELETE FROM t')",
    ],
)
def test_sql_from_string_functions_are_refused_by_name(sql: str) -> None:
    with pytest.raises(GuardViolation) as caught:
        check_sql(sql)
    assert caught.value.rule == "forbidden_function"


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT my_future_runner('SELECT path FROM duckdb_databases()')",
        "SELECT coalesce(NULL, 'DELETE FROM areas')",
        "SELECT upper('  (select 1 union select 2)')",
        "SELECT concat('x', 'INSERT INTO areas VALUES (9)')",
    ],
)
def test_a_statement_given_to_any_function_is_refused(sql: str) -> None:
    with pytest.raises(GuardViolation) as caught:
        check_sql(sql)
    assert caught.value.rule == "statement_argument"
    assert "write the query itself" in str(caught.value)


@pytest.mark.parametrize(
    "sql",
    [
        *LEGIT,
        "SELECT strftime(day, '%Y-%m') FROM revenue",
        "SELECT replace(name, 'Select ', '') FROM areas",
        "SELECT concat('show', name) FROM areas",
        "SELECT contains(name, 'Show Boat') FROM areas",
        "SELECT replace(name, 'commit', '') FROM areas",
        "SELECT starts_with(name, 'Select a size') FROM areas",
        "SELECT lower('Update now')",
        "SELECT 'SELECT 1' AS text_not_an_argument",
    ],
)
def test_strings_that_are_not_statements_still_pass(sql: str) -> None:
    assert check_sql(sql)


# every refused statement of the corpus (except those too long to wrap under the size limit)
_REFUSED = [s for s, rule in HOSTILE if rule not in {"empty", "too_long", "too_deep"}]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _wrappings(inner: str) -> list[str]:
    q = _quote(inner)
    out = [f"SELECT {fn}({q})" for fn in sorted(SQL_FROM_STRING_FUNCTIONS)]
    out += [f"SELECT * FROM {fn}({q})" for fn in ("query", "query_table")]
    out.append(f"SELECT json_execute_serialized_sql(json_serialize_sql({q}))")
    out.append(f"SELECT a FROM t WHERE a IN (SELECT * FROM query({q}))")
    return out


@pytest.fixture(scope="module")
def engine_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("wrapped")
    duck = root / "t.duckdb"
    con = duckdb.connect(str(duck))
    con.execute("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2)")
    con.close()
    lite = root / "t.sqlite"
    scon = sqlite3.connect(lite)
    scon.executescript("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2);")
    scon.commit()
    scon.close()
    return [duck, lite]


_SLOW_OK = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@settings(max_examples=60, suppress_health_check=_SLOW_OK, deadline=None)
@given(inner=st.sampled_from(_REFUSED), which=st.integers(min_value=0, max_value=100), case=st.booleans())
def test_every_refused_statement_wrapped_in_every_such_function_never_runs(
    engine_files: list[Path], inner: str, which: int, case: bool
) -> None:
    wrappings = _wrappings(inner)
    sql = wrappings[which % len(wrappings)]
    if case:
        sql = sql.replace("json_", "JSON_").replace("query", "QuErY")
    clear_database_cache()
    for path in engine_files:
        before = file_digest(path)
        db = open_database(path)
        with pytest.raises(GuardViolation) as caught:
            db.execute(sql)
        assert caught.value.rule in {"forbidden_function", "statement_argument", "parse_error"}, (sql, caught.value)
        assert file_digest(path) == before


def test_all_wrappings_of_the_corpus_are_refused_in_both_dialects() -> None:
    # exhaustive companion of the property test: every statement × every wrapping × both dialects
    count = 0
    for inner in _REFUSED:
        for sql in _wrappings(inner):
            for dialect in ("duckdb", "sqlite"):
                with pytest.raises(GuardViolation):
                    check_sql(sql, dialect)
                count += 1
    assert count >= len(_REFUSED) * len(SQL_FROM_STRING_FUNCTIONS) * 2
