"""Hostile SQL through the HTTP API of a real loopback server (issue 62, items 1 and 2).

An LM (scripted) writes whatever statement a question carries: every probe of issue 62, every
table function of the installed DuckDB, and the two-user probe in which one user enabled query
logging and read another user's SQL. Each is refused, the server stays up, no response names a
path, and the two users' statements run on engines of their own.
"""

from __future__ import annotations

import re

import duckdb
import httpx
import pytest

from routerlab.agents.db import clear_database_cache, engine_scope, open_database
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.serve import API_PREFIX, ServeSettings, create_app, serve_in_background
from tests.agents.db.test_guard_allow_list import HOSTILE_62

pytestmark = pytest.mark.server

ASK = f"{API_PREFIX}/ask_agent"
_MARK = re.compile(r"\[sql:(\d+)\]")
#: a literal only the second user's query holds
SECRET = "bob-private-literal-7731"


def _table_functions() -> list[str]:
    con = duckdb.connect()
    try:
        rows = con.execute(
            "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type IN ('table', 'table_macro') "
            "AND function_name NOT IN ('range', 'generate_series', 'unnest', 'json_each', 'json_tree') ORDER BY 1"
        ).fetchall()
    finally:
        con.close()
    return [r[0] for r in rows]


STATEMENTS: list[str] = [
    *HOSTILE_62,
    *(f"SELECT * FROM {name}('x')" for name in _table_functions()),
    f"SELECT count(*) AS n FROM areas WHERE name <> '{SECRET}'",
]


def _lm():
    def reply(request):
        text = " ".join(str(p) for m in request.messages for p in m.parts)
        field = requested_field(request)
        found = _MARK.search(text)
        sql = STATEMENTS[int(found.group(1))] if found else "SELECT count(*) FROM areas"
        if field in ("sql", "fixed_sql"):
            return answer_field(request, sql)
        return answer_field(request, {"explanation": "It counts.", "reply": "Hello!"}.get(field, ""))

    return scripted_lm(reply)


@pytest.fixture(scope="module")
def server(sales_db):
    clear_database_cache()
    app = create_app(ServeSettings(lm=_lm(), database=sales_db, poll_s=0.05, router="rules"))
    with serve_in_background(app) as url:
        yield url, sales_db


def _ask(url: str, index: int, user: str | None = None) -> httpx.Response:
    body = {"question": f"How many areas are there? [sql:{index}]"}
    if user is not None:
        body["user_id"] = user
    return httpx.post(url + ASK, json=body, timeout=120)


def _no_path(text: str, database) -> None:
    for where in (str(database.parent), "/root", "/home/", "/tmp/", ".duckdb/"):
        assert where not in text, (where, text[:2000])


def test_every_hostile_statement_is_refused_and_the_server_lives(server) -> None:
    url, database = server
    refused = 0
    for index, sql in enumerate(STATEMENTS[:-1]):
        r = _ask(url, index)
        body = r.json()
        assert r.status_code == 500 and body["data"]["type"] == "error", (sql, r.text[:500])
        assert body["data"]["error_class"] == "guard_violation", (sql, body["data"])
        assert "forbidden_function" in body["data"]["details"] or "parse_error" in body["data"]["details"], sql
        _no_path(r.text, database)
        refused += 1
    assert refused == len(STATEMENTS) - 1 >= 100
    health = httpx.get(url + "/health", timeout=10)
    assert health.status_code == 200 and health.json()["data"]["status"] == "ok"
    # and a plain question is still answered
    ok = _ask(url, len(STATEMENTS) - 1)
    assert ok.status_code == 200 and ok.json()["data"]["type"] == "completed", ok.text[:500]


def test_one_user_reads_nothing_of_another_users_queries(server) -> None:
    url, database = server
    index = {sql: i for i, sql in enumerate(STATEMENTS)}
    # alice turns on query logging (the probe of issue 62), in each spelling...
    for sql in STATEMENTS[:13]:
        r = _ask(url, index[sql], user="alice")
        assert r.status_code == 500 and r.json()["data"]["error_class"] == "guard_violation"
    # ...bob asks a question whose SQL carries a literal of his...
    r = _ask(url, len(STATEMENTS) - 1, user="bob")
    assert r.status_code == 200, r.text[:500]
    # ...and alice reads the logs in every spelling: refused, and bob's literal is nowhere
    for sql in [s for s in HOSTILE_62 if "duckdb_logs" in s]:
        r = _ask(url, index[sql], user="alice")
        assert r.status_code == 500 and r.json()["data"]["error_class"] == "guard_violation"
        assert SECRET not in r.text
    # the two users' statements ran on engines of their own (the server's scope per user)
    scopes = open_database(database).engine_scopes()
    assert "scope:user:bob" in scopes
    # and on bob's engine itself, past the guard, no log of his query was ever kept
    with engine_scope("user:bob"):
        con = open_database(database)._connect()
    try:
        assert con.execute("SELECT count(*) FROM duckdb_logs").fetchall() == [(0,)]
    finally:
        con.close()
