"""The guard is an allow-list over the installed engines' catalogues (issue 62, item 1).

The probes of issue 62: ``enable_logging(..., storage_path='nowhere/')`` passed the deny-list and
DuckDB then aborted the process; ``duckdb_logs`` showed another user's SQL; ``read_duckdb``,
``read_single_*_file`` and ``parquet_full_metadata`` passed. Here every table function of the
installed DuckDB is refused, a hypothesis property checks the guard's verdict against the
catalogue row by row, and the real gold SQL (the built-in set, Spider dev-a) still passes.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routerlab.agents.db import check_sql, function_catalogue, open_database
from routerlab.agents.db.catalogue import VETTED
from routerlab.agents.db.guard import check_sql_to_run
from routerlab.agents.errors import GuardViolation, SQLExecutionError
from tests.conftest import SPIDER_DEV_A

#: every form of the probes of issue 62
HOSTILE_62 = [
    "SELECT * FROM enable_logging('QueryLog', storage='file', storage_path='nowhere/')",
    "FROM enable_logging('QueryLog', storage='file', storage_path='nowhere/')",
    "SELECT * FROM enable_logging('QueryLog')",
    "SELECT * FROM enable_logging()",
    "SELECT * FROM ENABLE_LOGGING('QueryLog')",
    "SELECT * FROM \"enable_logging\"('QueryLog')",
    "SELECT * FROM system.main.enable_logging('QueryLog')",
    "SELECT * FROM enable_logging(level := 'trace')",
    "SELECT enable_logging('QueryLog')",
    "SELECT 1 WHERE EXISTS (SELECT * FROM enable_logging('QueryLog'))",
    "WITH x AS (SELECT * FROM enable_logging('QueryLog')) SELECT * FROM x",
    "SELECT * FROM (SELECT * FROM enable_logging('QueryLog')) AS s",
    "SELECT a FROM t UNION ALL SELECT NULL FROM enable_logging('QueryLog')",
    "SELECT * FROM disable_logging()",
    "SELECT * FROM truncate_duckdb_logs()",
    "SELECT message FROM duckdb_logs",
    "SELECT message FROM duckdb_logs()",
    "SELECT * FROM main.duckdb_logs",
    "SELECT * FROM system.main.duckdb_logs",
    "SELECT * FROM duckdb_logs_parsed('QueryLog')",
    "SELECT a FROM t WHERE a IN (SELECT message FROM duckdb_logs)",
    "SELECT write_log('x')",
    "SELECT * FROM read_duckdb('other.duckdb')",
    "SELECT * FROM read_single_csv_file('/etc/passwd')",
    "SELECT * FROM read_single_json_file('x.json')",
    "SELECT * FROM read_single_parquet_file('x.parquet')",
    "SELECT * FROM parquet_full_metadata('x.parquet')",
    "SELECT * FROM duckdb_settings()",
    "SELECT * FROM pg_catalog.pg_settings",
    "SELECT current_setting('home_directory')",
    "SELECT getvariable('x')",
    "SELECT * FROM duckdb_secrets()",
    "SELECT * FROM which_secret('s3://x', 's3')",
    "SELECT * FROM duckdb_extensions()",
    "SELECT * FROM checkpoint()",
    "SELECT * FROM force_checkpoint()",
    "SELECT * FROM enable_profiling()",
    "SELECT nextval('s')",
    "SELECT setseed(0.5)",
    "SELECT sleep_ms(100000)",
    "SELECT pg_sleep(100)",
    "SELECT pg_get_viewdef(1)",
    "SELECT * FROM sqlite_scan('x.db', 't')",
]


@pytest.mark.parametrize("sql", HOSTILE_62)
@pytest.mark.parametrize("dialect", ["duckdb", "sqlite"])
def test_the_probes_of_issue_62_are_refused_in_every_form(sql: str, dialect: str) -> None:
    if dialect == "duckdb":
        with pytest.raises(GuardViolation) as caught:
            check_sql(sql, dialect)
        assert caught.value.rule == "forbidden_function", caught.value
        return
    # SQLite holds none of DuckDB's names: refused by name, or (a name that says nothing of
    # reaching outside, such as setseed) never run, reported as SQLite reports an unknown function
    with pytest.raises((GuardViolation, SQLExecutionError)) as caught:
        check_sql_to_run(sql, dialect)
    if isinstance(caught.value, GuardViolation):
        assert caught.value.rule in {"forbidden_function", "server_path", "parse_error"}, caught.value
    else:
        assert str(caught.value).startswith("no such"), caught.value


def _duckdb_rows() -> list[tuple[str, str, bool, int]]:
    con = duckdb.connect()
    try:
        return con.execute(
            "SELECT DISTINCT lower(function_name), function_type, coalesce(has_side_effects, false), "
            "len(parameters) FROM duckdb_functions() ORDER BY ALL"
        ).fetchall()
    finally:
        con.close()


_ROWS = _duckdb_rows()
_TABLE_FUNCTIONS = sorted({n for n, kind, *_ in _ROWS if kind in ("table", "table_macro")})
_VETTED_TABLE = {n for n, p in VETTED if p == "table"}
_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")


def test_every_table_function_of_the_installed_duckdb_is_refused() -> None:
    # read from the installed engine: a new release's table functions are refused without an edit
    assert len(_TABLE_FUNCTIONS) > 80
    scalars = function_catalogue("duckdb").allowed()
    refused = []
    for name in _TABLE_FUNCTIONS:
        if name in _VETTED_TABLE:
            assert check_sql(f"SELECT * FROM {name}(3)")
            continue
        forms = [
            f"SELECT * FROM {name}('x')",
            f"SELECT * FROM \"{name}\"('x', 1)",
            f"SELECT 1 FROM t, main.{name}('x', 1)",
        ]
        if name not in scalars:  # repeat, range: a scalar function of the same name is another function
            forms.append(f"SELECT {name}('x')")
        rules = set()
        for sql in forms:
            with pytest.raises(GuardViolation) as caught:
                check_sql(sql)
            rules.add(caught.value.rule)
        # sqlglot cannot parse a few of the forms (repeat without a count): refused before any name
        # check; every name is refused by the allow-list in at least one form
        assert "forbidden_function" in rules and rules <= {"forbidden_function", "parse_error"}, (name, rules)
        refused.append(name)
    assert {"enable_logging", "read_duckdb", "parquet_full_metadata", "duckdb_logs"} <= set(refused)


_TOUCHING = re.compile(r"file|setting|log(s|ging)?$|log_|secret|extension|database|variable|_sql|query")


def test_the_verdict_on_every_catalogue_function_follows_its_classification() -> None:
    # every row of the installed catalogue, not a sample: a sample let one release's odd row
    # (``version`` as a pragma) through locally and fail on another machine
    checked = sum(_check_row(row) for row in _ROWS if _IDENT.match(row[0]))  # operators are written as operators
    assert checked > 800


def _check_row(row: tuple[str, str, bool, int]) -> bool:
    """Check one catalogue row; ``False`` when sqlglot cannot read the call with these arguments."""
    name, kind, _, arity = row
    catalogue = function_catalogue("duckdb")
    position = "table" if kind in ("table", "table_macro") else "expression"
    args = ", ".join(["1"] * (arity or 0))
    sql = f"SELECT * FROM {name}({args})" if position == "table" else f"SELECT {name}({args})"
    vetted = (name, position) in VETTED
    try:
        check_sql(sql)
        passed = True
    except GuardViolation as exc:
        # a call sqlglot cannot read with these arguments is refused before any name is looked up
        if exc.rule == "parse_error":
            return False
        assert exc.rule == "forbidden_function", exc
        passed = False
    # the guard follows the classification, and nothing outside the allowed kinds passes
    assert passed == (catalogue.refusal(name, table=position == "table") is None)
    # one name can be several functions (``version`` is a scalar and a pragma): a call passes on the
    # strength of the allowed entry of that name, never of this row's kind
    allowed_entry = any(
        n == name and k in ("scalar", "aggregate", "window", "macro") and not effects for n, k, effects, _ in _ROWS
    )
    if passed and not vetted:
        assert allowed_entry, row
        assert not _TOUCHING.search(name), row
    if kind in ("table", "table_macro", "pragma") and not vetted and not (position == "expression" and allowed_entry):
        assert not passed, row
    return True


@settings(max_examples=200, deadline=None)
@given(name=st.from_regex(r"[a-z][a-z0-9_]{2,20}", fullmatch=True))
def test_a_name_the_catalogue_does_not_hold_never_reaches_the_engine(name: str) -> None:
    catalogue = function_catalogue("duckdb")
    if catalogue.knows(name):
        return
    if not catalogue.unknown_and_harmless(name):
        # an unknown name that says it reaches outside (``sql``, ``my_file``) is refused outright
        with pytest.raises(GuardViolation) as refused:
            check_sql(f"SELECT {name}(1)")
        assert refused.value.rule == "forbidden_function"
        return
    # generated SQL with a misspelt function is not a refusal (the pipeline repairs it as before)...
    assert check_sql(f"SELECT {name}(1)")
    # ...but it is never run: reported as the engine reports it, before the engine sees it
    with pytest.raises(SQLExecutionError) as caught:
        check_sql_to_run(f"SELECT {name}(1)")
    assert f"Scalar Function with name {name} does not exist!" in str(caught.value)
    with pytest.raises(SQLExecutionError) as caught:
        check_sql_to_run(f"SELECT * FROM {name}(1)")
    assert f"Table Function with name {name} does not exist!" in str(caught.value)


def test_an_unknown_function_is_worded_as_each_engine_words_it(tmp_path: Path) -> None:
    duck = tmp_path / "t.duckdb"
    con = duckdb.connect(str(duck))
    con.execute("CREATE TABLE t (a INTEGER)")
    con.close()
    with pytest.raises(SQLExecutionError) as caught:
        open_database(duck).execute("SELECT uper(a) FROM t")
    assert "Scalar Function with name uper does not exist!" in str(caught.value) and '"upper"' in str(caught.value)
    with pytest.raises(SQLExecutionError) as caught:
        check_sql_to_run("SELECT yeer(d) FROM t", "sqlite")
    assert str(caught.value) == "no such function: yeer"


def test_sqlite_catalogue_refuses_what_reaches_outside() -> None:
    catalogue = function_catalogue("sqlite")
    assert catalogue.engine.startswith("sqlite ")
    con = sqlite3.connect(":memory:")
    names = {r[0].lower() for r in con.execute("SELECT name FROM pragma_function_list")}
    con.close()
    assert "load_extension" in names and catalogue.refusal("load_extension") is not None
    for sql in (
        "SELECT load_extension('x.so')",
        "SELECT readfile('/etc/passwd')",
        "SELECT * FROM pragma_table_info('t')",
        "SELECT * FROM dbstat",
        "SELECT sqlite_compileoption_get(0)",
    ):
        with pytest.raises(GuardViolation) as caught:
            check_sql(sql, "sqlite")
        assert caught.value.rule in ("forbidden_function", "server_path"), (sql, caught.value)
    with pytest.raises(SQLExecutionError, match="no such table: generate_series"):  # not built into SQLite
        check_sql_to_run("SELECT * FROM generate_series(1, 3)", "sqlite")
    for sql in (
        "SELECT upper(name), substr(name, 1, 2), count(*) FROM t GROUP BY 1, 2",
        "SELECT key, value FROM json_each('[1,2]')",
        "SELECT strftime('%Y', d), iif(a > 1, 'x', 'y'), printf('%d', a) FROM t",
        "SELECT name FROM sqlite_master WHERE type = 'table'",
    ):
        assert check_sql(sql, "sqlite")


def _builtin_gold() -> list[str]:
    root = Path(__file__).resolve().parents[3] / "benchmarks" / "builtin"
    out = []
    for name in ("examples.jsonl", "conversations.jsonl"):
        for line in (root / name).read_text(encoding="utf-8").splitlines():
            if line.strip() and (sql := json.loads(line).get("gold_sql")):
                out.append(sql)
    return out


def test_the_built_in_gold_sql_still_passes() -> None:
    gold = _builtin_gold()
    assert len(gold) >= 200
    refused = []
    for sql in gold:
        try:
            check_sql(sql, "duckdb")
        except GuardViolation as exc:
            refused.append((sql, str(exc)))
    assert refused == []


def test_the_spider_gold_sql_still_passes() -> None:
    if not (SPIDER_DEV_A / "dev.json").is_file():
        pytest.skip(f"real Spider data not found at {SPIDER_DEV_A}")
    gold = [r["query"] for r in json.loads((SPIDER_DEV_A / "dev.json").read_text(encoding="utf-8"))]
    refused = []
    for sql in gold:
        try:
            check_sql(sql, "sqlite")
        except GuardViolation as exc:
            refused.append((sql, str(exc)))
    assert len(gold) == 382 and refused == []
