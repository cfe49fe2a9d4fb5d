"""The read-only guard against hostile statements, legitimate queries and generated input."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routerlab.agents.db import check_sql
from routerlab.agents.errors import GuardViolation

FUZZ = int(os.environ.get("ROUTERLAB_FUZZ_EXAMPLES", "300"))

HOSTILE: list[tuple[str, str]] = [
    ("SELECT 1; DROP TABLE t", "single_statement"),
    ("SELECT 1 /* ; */; DELETE FROM t", "single_statement"),
    ("SELECT 1;\n-- comment\nDELETE FROM t", "single_statement"),
    ("select * from t; update t set a = 1", "single_statement"),
    ("SELECT 'a;b'; INSERT INTO t VALUES (1)", "single_statement"),
    ("INSERT INTO t VALUES (1)", "only_select"),
    ("INSERT INTO t SELECT * FROM t", "only_select"),
    ("UPDATE t SET a = 1", "only_select"),
    ("DELETE FROM t", "only_select"),
    ("delete from t where 1=1", "only_select"),
    ("DeLeTe FrOm t", "only_select"),
    ("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", "only_select"),
    ("CREATE TABLE x AS SELECT 1", "only_select"),
    ("CREATE VIEW v AS SELECT 1", "only_select"),
    ("CREATE OR REPLACE TABLE t AS SELECT 1", "only_select"),
    ("DROP TABLE t", "only_select"),
    ("DROP VIEW v", "only_select"),
    ("ALTER TABLE t ADD COLUMN b INT", "only_select"),
    ("ALTER TABLE t RENAME TO u", "only_select"),
    ("TRUNCATE t", "only_select"),
    ("TRUNCATE TABLE t", "only_select"),
    ("PRAGMA database_list", "only_select"),
    ("PRAGMA enable_profiling", "only_select"),
    ("ATTACH 'other.db' AS o", "only_select"),
    ("ATTACH DATABASE 'x.db' AS x", "only_select"),
    ("DETACH o", "only_select"),
    ("COPY t TO 'out.csv'", "only_select"),
    ("COPY (SELECT * FROM t) TO '/tmp/x.parquet' (FORMAT parquet)", "only_select"),
    ("COPY t FROM 'in.csv'", "only_select"),
    ("EXPORT DATABASE '/tmp/dump'", "parse_error"),
    ("IMPORT DATABASE '/tmp/dump'", "parse_error"),
    ("INSTALL httpfs", "only_select"),
    ("LOAD httpfs", "only_select"),
    ("SET memory_limit = '1GB'", "only_select"),
    ("SET enable_external_access = true", "only_select"),
    ("RESET memory_limit", "only_select"),
    ("CALL pragma_version()", "only_select"),
    ("VACUUM", "only_select"),
    ("CHECKPOINT", "only_select"),
    ("USE other", "only_select"),
    ("BEGIN TRANSACTION", "only_select"),
    ("COMMIT", "only_select"),
    ("GRANT SELECT ON t TO bob", "only_select"),
    ("DESCRIBE t", "only_select"),
    ("SHOW TABLES", "only_select"),
    ("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", "dml_in_subquery"),
    ("WITH x AS (INSERT INTO t VALUES (1) RETURNING *) SELECT * FROM x", "dml_in_subquery"),
    ("WITH x AS (UPDATE t SET a = 1 RETURNING *) SELECT * FROM x", "dml_in_subquery"),
    ("SELECT * FROM read_csv('/etc/passwd')", "forbidden_function"),
    ("SELECT * FROM read_csv_auto('data.csv')", "forbidden_function"),
    ("SELECT * FROM read_parquet('s3://bucket/x.parquet')", "forbidden_function"),
    ("SELECT * FROM parquet_scan('x.parquet')", "forbidden_function"),
    ("SELECT * FROM read_json_auto('x.json')", "forbidden_function"),
    ("SELECT * FROM read_text('/etc/hosts')", "forbidden_function"),
    ("SELECT * FROM read_blob('/etc/hosts')", "forbidden_function"),
    ("SELECT * FROM glob('/home/*')", "forbidden_function"),
    ("SELECT * FROM sqlite_scan('other.db', 't')", "forbidden_function"),
    ("SELECT * FROM postgres_scan('host=x', 'public', 't')", "forbidden_function"),
    ("SELECT getenv('HOME')", "forbidden_function"),
    ("SELECT current_setting('memory_limit')", "forbidden_function"),
    ("SELECT load_extension('evil.so')", "forbidden_function"),
    ("SELECT readfile('/etc/passwd')", "forbidden_function"),
    ("SELECT writefile('/tmp/x', 'data')", "forbidden_function"),
    ("SELECT a FROM t WHERE a IN (SELECT * FROM read_csv('x.csv'))", "forbidden_function"),
    ("SELECT * FROM 'data.csv'", "file_path_table"),
    ("SELECT * FROM '/etc/passwd'", "file_path_table"),
    ('SELECT * FROM "x.parquet"', "file_path_table"),
    ("SELECT * FROM t JOIN '~/secrets.json' s ON true", "file_path_table"),
    ("", "empty"),
    ("   \n\t ", "empty"),
    (";", "empty"),
    ("SELECT " + "1 + " * 6000 + "1", "too_long"),
    ("SELECT " + "(" * 400 + "1" + ")" * 400, "too_deep"),
    ("SELEC 1 FROM", "parse_error"),
]

LEGIT = [
    "SELECT 1",
    "select count(*) from t",
    "SELECT a, b FROM t WHERE a > 1 ORDER BY b LIMIT 5",
    "SELECT t.a, u.b FROM t JOIN u ON t.id = u.id",
    "SELECT a FROM t LEFT JOIN u USING (id) WHERE u.id IS NULL",
    "WITH x AS (SELECT a FROM t) SELECT * FROM x",
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT * FROM c",
    "SELECT a, sum(b) OVER (PARTITION BY a ORDER BY c) FROM t",
    "SELECT a FROM t UNION SELECT a FROM u",
    "SELECT a FROM t INTERSECT SELECT a FROM u",
    "SELECT a FROM t EXCEPT SELECT a FROM u",
    "SELECT CASE WHEN a > 1 THEN 'x' ELSE 'y' END FROM t",
    "SELECT * FROM t WHERE name LIKE '%;%'",
    "SELECT 'DELETE FROM t' AS harmless_text",
    'SELECT "weird name" FROM t',
    "SELECT a FROM t WHERE b IN (SELECT b FROM u WHERE c = 'drop table')",
    "SELECT a, count(*) FROM t GROUP BY a HAVING count(*) > 2",
    "SELECT strftime(day, '%Y-%m') AS m, sum(x) FROM t GROUP BY m ORDER BY m",
    "SELECT a FROM t;",
    "(SELECT a FROM t)",
    "SELECT coalesce(a, 0) / nullif(b, 0) FROM t",
    "-- leading comment\nSELECT 1",
]


@pytest.mark.parametrize(("sql", "rule"), HOSTILE)
def test_hostile_statements_are_refused_with_their_rule(sql, rule):
    with pytest.raises(GuardViolation) as info:
        check_sql(sql)
    assert info.value.rule == rule, str(info.value)


def test_curated_list_is_large_enough():
    assert len(HOSTILE) >= 60 and len(LEGIT) >= 20


@pytest.mark.parametrize("sql", LEGIT)
def test_legitimate_queries_pass(sql):
    assert check_sql(sql).rstrip(";") == check_sql(sql)


@pytest.mark.parametrize("sql", ["SELECT 1", "SELECT a FROM t WHERE b = 'x' ORDER BY a"])
def test_sqlite_dialect(sql):
    assert check_sql(sql, "sqlite") == sql


def test_message_names_the_rule():
    with pytest.raises(GuardViolation) as info:
        check_sql("DELETE FROM t")
    assert "only SELECT is allowed" in str(info.value)
    assert info.value.error_class == "guard_violation"


_KW = st.sampled_from(
    [
        "INSERT INTO t VALUES (1)",
        "UPDATE t SET a=1",
        "DELETE FROM t",
        "DROP TABLE t",
        "CREATE TABLE z (a INT)",
        "ALTER TABLE t ADD b INT",
        "ATTACH 'x.db'",
        "COPY t TO 'x.csv'",
        "PRAGMA x",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET a = 1",
        "TRUNCATE t",
    ]
)
_NOISE = st.sampled_from(["", " ", "\n", "\t", "/* c */", "-- c\n", "  /* ; */ "])


def _case(s: str, flips: list[bool]) -> str:
    return "".join(ch.upper() if f else ch.lower() for ch, f in zip(s, flips + [False] * len(s), strict=False))


@settings(max_examples=FUZZ, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(kw=_KW, pre=_NOISE, post=_NOISE, flips=st.lists(st.booleans(), max_size=40), stacked=st.booleans())
def test_generated_writes_are_always_refused(kw, pre, post, flips, stacked):
    sql = pre + _case(kw, flips) + post
    if stacked:
        sql = "SELECT 1;" + sql
    with pytest.raises(GuardViolation):
        check_sql(sql)


@settings(max_examples=FUZZ, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.text(max_size=200))
def test_random_text_is_refused_or_read_only(text):
    import sqlglot
    from sqlglot import exp

    try:
        out = check_sql(text)
    except GuardViolation:
        return
    root = sqlglot.parse_one(out, read="duckdb")
    assert isinstance(root, exp.Select | exp.SetOperation | exp.Subquery)
