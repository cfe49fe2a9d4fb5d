"""The guard refuses statements that reveal where the database lies on the server."""

from __future__ import annotations

import duckdb
import pytest

from routerlab.agents.db import check_sql
from routerlab.agents.errors import GuardViolation


@pytest.mark.parametrize("dialect", ["duckdb", "sqlite"])
@pytest.mark.parametrize(
    ("sql", "rule"),
    [
        ("SELECT * FROM pragma_database_list", "server_path"),
        ("SELECT file FROM pragma_database_list()", "forbidden_function"),
        ("SELECT * FROM (SELECT * FROM Pragma_Database_List) t", "server_path"),
        ("SELECT path FROM duckdb_databases()", "forbidden_function"),
        ("SELECT * FROM main.duckdb_databases", "server_path"),
        ("SELECT * FROM duckdb_temporary_files()", "forbidden_function"),
    ],
)
def test_path_revealing_catalogue_views_are_refused(sql, rule, dialect):
    with pytest.raises(GuardViolation) as caught:
        check_sql(sql, dialect)
    assert caught.value.rule == rule


def test_what_they_would_reveal_and_what_still_passes(tmp_path):
    path = tmp_path / "secret-location.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE areas (id INTEGER)")
    # the reason for the rule: the real view shows the server's absolute path
    assert str(path) in str(con.execute("SELECT path FROM duckdb_databases()").fetchall())
    # schema introspection through the information schema still passes; pragma table functions
    # are refused with every other table function (issue 62: the guard is an allow-list)
    ok = check_sql("SELECT column_name FROM information_schema.columns WHERE table_name = 'areas'", "duckdb")
    assert con.execute(ok).fetchall() == [("id",)]
    with pytest.raises(GuardViolation) as caught:
        check_sql("SELECT name FROM pragma_table_info('areas')", "duckdb")
    assert caught.value.rule == "forbidden_function"
    con.close()
