"""SharedSqliteFile: many threads and processes writing one cache file never lose a write."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest

from routerlab.agents.sqlite_file import SharedSqliteFile

_SCHEMA = "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL)"


def _hammer(path: Path, worker: int, n: int) -> list[str]:
    """Write then read back ``n`` keys; returns what went wrong (empty when all is well)."""
    file = SharedSqliteFile(path, _SCHEMA)
    problems = []
    for i in range(n):
        key = f"{worker}-{i}"
        try:
            file.write("INSERT OR REPLACE INTO kv VALUES (?, ?)", (key, i))
            row = file.read_one("SELECT v FROM kv WHERE k = ?", (key,))
        except sqlite3.Error as exc:
            problems.append(f"{key}: {exc}")
            continue
        if row != (i,):
            problems.append(f"{key}: read back {row}")
    return problems


def _process_worker(path: str, worker: int, n: int, out: multiprocessing.Queue) -> None:
    out.put(_hammer(Path(path), worker, n))


def test_threads_opening_a_new_file_together_lose_nothing(tmp_path):
    # the file does not exist yet: every thread races the WAL switch and the schema
    for trial in range(10):
        path = tmp_path / f"t{trial}.sqlite"
        results: list[list[str]] = []
        threads = [
            threading.Thread(target=lambda p=path, r=results, w=w: r.append(_hammer(p, w, 25))) for w in range(6)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [[]] * 6
        assert SharedSqliteFile(path, _SCHEMA).read_one("SELECT count(*) FROM kv") == (150,)


def test_processes_share_the_file(tmp_path):
    path = tmp_path / "p.sqlite"
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_process_worker, args=(str(path), w, 40, out)) for w in range(3)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert results == [[]] * 3
    assert SharedSqliteFile(path, _SCHEMA).read_one("SELECT count(*) FROM kv") == (120,)


def test_a_reader_does_not_block_its_own_later_write(tmp_path):
    # reading leaves no open snapshot behind, so writing after another connection's commit works
    path = tmp_path / "s.sqlite"
    mine, other = SharedSqliteFile(path, _SCHEMA), SharedSqliteFile(path, _SCHEMA)
    mine.write("INSERT INTO kv VALUES ('a', 1)")
    assert mine.read_one("SELECT v FROM kv WHERE k = 'a'") == (1,)
    other.write("INSERT INTO kv VALUES ('b', 2)")
    mine.write("INSERT INTO kv VALUES ('c', 3)")
    assert mine.read_one("SELECT count(*) FROM kv") == (3,)


def test_a_failed_write_is_rolled_back_and_the_connection_stays_usable(tmp_path):
    file = SharedSqliteFile(tmp_path / "r.sqlite", _SCHEMA)
    file.write("INSERT INTO kv VALUES ('a', 1)")
    with pytest.raises(sqlite3.IntegrityError):
        file.write("INSERT INTO kv VALUES ('a', 2)")
    assert not file.connection().in_transaction
    file.write("INSERT INTO kv VALUES ('b', 2)")
    assert file.read_one("SELECT count(*) FROM kv") == (2,)
