"""One sealed DuckDB engine per scope (issue 62, item 2).

The probes: one request turned on query logging and read every other user's SQL from
``duckdb_logs`` (all users shared one DuckDB instance and its settings), and
``enable_logging(..., storage_path='nowhere/')`` made DuckDB abort the whole process. Here the
statements run *without* the guard, as a hole in it would let them: each scope's engine is its
own, and a sealed engine refuses every change of configuration, so the abort cannot happen.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import duckdb
import pytest

from routerlab.agents.db import (
    clear_database_cache,
    connect_duckdb_readonly,
    current_engine_scope,
    engine_scope,
    open_database,
    scrub_paths,
)
from routerlab.agents.errors import SQLExecutionError

#: the statement of the issue that aborted the server, and the other changes of configuration
CONFIG_CHANGES = [
    "SELECT * FROM enable_logging('QueryLog', storage='file', storage_path='nowhere/')",
    "CALL enable_logging('QueryLog')",
    "SELECT * FROM enable_profiling()",
    "SET enable_external_access = true",
    "SET lock_configuration = false",
    "SET memory_limit = '1GB'",
    "RESET lock_configuration",
]


def test_each_scope_runs_on_an_engine_of_its_own(sales_db: Path) -> None:
    clear_database_cache()
    db = open_database(sales_db)
    with engine_scope("alice"):
        assert current_engine_scope() == "scope:alice"
        raw = db._connect()  # the engine itself, past the guard (as a hole in the guard would reach it)
        raw.execute("CREATE TABLE memory.main.notes AS SELECT 'alice asked about revenue' AS s")
        raw.close()
        # what alice's statement left is there for alice...
        assert db.execute("SELECT s FROM memory.main.notes").rows == [["alice asked about revenue"]]
    with engine_scope("bob"):
        # ...and nowhere for bob, whose statements run on another engine instance
        with pytest.raises(SQLExecutionError, match="notes"):
            db.execute("SELECT s FROM memory.main.notes")
        assert db.execute("SELECT count(*) FROM areas").rows == [[3]]
    with pytest.raises(SQLExecutionError, match="notes"):  # nor in the process scope
        db.execute("SELECT s FROM memory.main.notes")
    assert {"scope:alice", "scope:bob", "process"} <= set(db.engine_scopes())


def test_a_thread_started_in_a_scope_stays_in_it_through_contextvars(sales_db: Path) -> None:
    import contextvars

    seen: list[str] = []
    with engine_scope("carol"):
        ctx = contextvars.copy_context()
    thread = threading.Thread(target=lambda: seen.append(ctx.run(current_engine_scope)))
    thread.start()
    thread.join()
    assert seen == ["scope:carol"]


@pytest.mark.parametrize("statement", CONFIG_CHANGES)
def test_a_sealed_engine_refuses_every_change_of_configuration(sales_db: Path, statement: str) -> None:
    con = connect_duckdb_readonly(sales_db)
    try:
        with pytest.raises(duckdb.Error, match=r"locked|disabled"):
            con.execute(statement)
        # and the engine still answers: nothing was left half-changed
        assert con.execute("SELECT count(*) FROM areas").fetchall() == [(3,)]
        assert con.execute("SELECT current_setting('lock_configuration')").fetchall() == [(True,)]
        assert con.execute("SELECT current_setting('enable_external_access')").fetchall() == [(False,)]
    finally:
        con.close()


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_duckdb('/etc/passwd')",
        "ATTACH '/tmp/other.duckdb' AS other",
        "INSTALL httpfs",
        "LOAD httpfs",
        "CREATE TABLE areas2 AS SELECT 1",
    ],
)
def test_a_sealed_engine_reaches_no_file_and_writes_nothing(sales_db: Path, statement: str) -> None:
    con = connect_duckdb_readonly(sales_db)
    try:
        with pytest.raises(duckdb.Error) as caught:
            con.execute(statement)
        # what a client could be shown names no path
        assert "/" not in scrub_paths(str(caught.value)).replace("<path>", "")
    finally:
        con.close()


_ABORT_PROBE = textwrap.dedent(
    """
    import sys, duckdb
    from routerlab.agents.db import connect_duckdb_readonly
    sealed = sys.argv[2] == "sealed"
    if sealed:
        engine = connect_duckdb_readonly(sys.argv[1])
    else:  # the engine of issue 62: read-only, no external access, configuration not locked
        engine = duckdb.connect(sys.argv[1], read_only=True, config={"enable_external_access": False})
    for sql in (
        "SELECT * FROM enable_logging('QueryLog', storage='file', storage_path='nowhere/')",
        "SELECT count(*) FROM areas",
        "SELECT 2",
    ):
        cursor = engine.cursor()
        if sealed:  # a cursor of the sealed engine starts in its host catalogue (Database._connect does this)
            cursor.execute("USE sales")
        try:
            print("ok", cursor.execute(sql).fetchall(), flush=True)
        except duckdb.Error as exc:
            print("refused", str(exc).splitlines()[0], flush=True)
        cursor.close()
    engine.close()
    print("alive", flush=True)
    """
)


def test_the_statement_that_aborted_the_server_cannot_abort_a_sealed_engine(sales_db: Path) -> None:
    def probe(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", _ABORT_PROBE, str(sales_db), mode], capture_output=True, text=True, timeout=120
        )

    sealed = probe("sealed")
    assert sealed.returncode == 0, sealed.stderr
    lines = sealed.stdout.splitlines()
    assert lines[0].startswith("refused") and "the configuration has been locked" in lines[0]
    assert lines[1:] == ["ok [(3,)]", "ok [(2,)]", "alive"]
    # the engine as it was configured before: the same statements abort the process (SIGABRT),
    # which is what took the server down; if a DuckDB release stops aborting, the sealed result stands
    unsealed = probe("unsealed")
    if unsealed.returncode != 0:
        assert unsealed.returncode in (-6, 134) and "PermissionException" in unsealed.stderr, unsealed.stderr


def test_engine_messages_lose_their_paths() -> None:
    message = 'Permission Error: Cannot access directory "/root/.duckdb/extensions/v2.0.0/linux_amd64" - disabled'
    assert scrub_paths(message) == 'Permission Error: Cannot access directory "<path>" - disabled'
    assert scrub_paths("IO Error: cannot open ~/secret.duckdb, C:\\Users\\me\\x.db") == (
        "IO Error: cannot open <path>, <path>"
    )
    # arithmetic and plain text are left alone
    assert scrub_paths("LINE 1: SELECT a / b FROM t") == "LINE 1: SELECT a / b FROM t"
