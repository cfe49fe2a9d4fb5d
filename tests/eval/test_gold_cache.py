"""The on-disk gold cache: exact round trips, keys that follow the file, failures never stored."""

from __future__ import annotations

import os
import sqlite3
import threading

import pytest

from routerlab.agents.db import QueryResult
from routerlab.agents.trace import Trace
from routerlab.benchmarks.example import Example
from routerlab.eval.scorers import CachedGold, ExecutionAccuracy, GoldCache


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def small_sqlite(tmp_path):
    path = tmp_path / "small.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, x REAL, name TEXT, flag INTEGER);"
        "INSERT INTO t VALUES (1, 1.0, 'a', 1), (2, 0.1, 'b''s', NULL), (3, 2.5, 'ü', 0);"
    )
    con.commit()
    con.close()
    return path


def _example(db, gold: str) -> Example:
    return Example("g1", "q", "small", str(db), "sql", gold_sql=gold)


def test_round_trip_keeps_values_and_types(tmp_path, small_sqlite):
    cache = GoldCache(tmp_path / "gold.sqlite")
    rows = [[1, 1.0, "a", True, None], [2, 0.1, "b's", False, 12345678901234567], [3, 2.5, "ü", None, -0.0]]
    cache.put(str(small_sqlite), "SELECT 1", 100, CachedGold(QueryResult(["a", "b", "c", "d", "e"], rows), True))
    got = GoldCache(tmp_path / "gold.sqlite").get(str(small_sqlite), "SELECT 1", 100)
    assert got is not None and got.ordered is True
    assert got.result.columns == ["a", "b", "c", "d", "e"]
    assert got.result.rows == rows
    # 1 and 1.0 compare equal in Python: check the types survived too, since EX normalises them itself
    assert [[type(v) for v in r] for r in got.result.rows] == [[type(v) for v in r] for r in rows]
    assert got.result.row_count == 3 and got.result.truncated is False


def test_key_includes_sql_row_cap_and_file_identity(tmp_path, small_sqlite):
    cache = GoldCache(tmp_path / "gold.sqlite")
    cache.put(str(small_sqlite), "SELECT 1", 100, CachedGold(QueryResult(["a"], [[1]]), False))
    assert cache.get(str(small_sqlite), "SELECT 2", 100) is None
    assert cache.get(str(small_sqlite), "SELECT 1", 10) is None
    other = tmp_path / "other.sqlite"
    other.write_bytes(small_sqlite.read_bytes())
    assert cache.get(str(other), "SELECT 1", 100) is None
    # an edited file (new modification time) is a new key, so a stale result is never served
    st = small_sqlite.stat()
    os.utime(small_sqlite, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert cache.get(str(small_sqlite), "SELECT 1", 100) is None
    assert cache.get(str(tmp_path / "missing.sqlite"), "SELECT 1", 100) is None


def test_unwritable_cache_costs_speed_not_scores(tmp_path, small_sqlite):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    cache = GoldCache(blocker / "gold.sqlite")
    assert cache.put(str(small_sqlite), "SELECT 1", 100, CachedGold(QueryResult(["a"], [[1]]), False)) is False
    assert cache.get(str(small_sqlite), "SELECT 1", 100) is None


def test_second_scorer_reads_gold_from_disk_without_running_it(cache_root, small_sqlite, monkeypatch):
    ex = _example(small_sqlite, "SELECT name FROM t ORDER BY id")
    first = ExecutionAccuracy()
    assert first.score(ex, Trace("g1", sql="SELECT name FROM t ORDER BY id")).value == 1.0
    assert len(GoldCache()) == 1

    second = ExecutionAccuracy()
    ran: list[str] = []
    real_run = ExecutionAccuracy._run

    def counting_run(self, db_path, sql):
        ran.append(sql)
        return real_run(self, db_path, sql)

    monkeypatch.setattr(ExecutionAccuracy, "_run", counting_run)
    # reversed order: the cached gold must still say "ordered", so this is a mismatch
    score = second.score(ex, Trace("g1", sql="SELECT name FROM t ORDER BY id DESC"))
    assert score.value == 0.0 and score.detail["ordered"] is True
    assert ran == ["SELECT name FROM t ORDER BY id DESC"]


def test_failed_gold_is_not_stored(cache_root, small_sqlite):
    # the "exclude" mode marks such an example invalid (the default counts it wrong): either way
    # nothing is cached for a gold query that failed
    scorer = ExecutionAccuracy(gold_failure="exclude")
    score = scorer.score(_example(small_sqlite, "SELECT nope FROM t"), Trace("g1", sql="SELECT 1"))
    assert score.value is None and score.detail["invalid"]
    assert len(GoldCache()) == 0


def test_cache_off_writes_nothing(cache_root, small_sqlite):
    ExecutionAccuracy(gold_cache=False).score(_example(small_sqlite, "SELECT id FROM t"), Trace("g1", sql="SELECT 1"))
    assert not (cache_root / "gold").exists()


def test_threads_share_one_cache_file(tmp_path, small_sqlite):
    cache = GoldCache(tmp_path / "gold.sqlite")
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(20):
                sql = f"SELECT {k * 100 + i}"
                assert cache.put(str(small_sqlite), sql, 100, CachedGold(QueryResult(["v"], [[k * 100 + i]]), False))
                got = cache.get(str(small_sqlite), sql, 100)
                assert got is not None and got.result.rows == [[k * 100 + i]]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(cache) == 80
