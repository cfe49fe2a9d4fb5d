"""``ex`` in ``spider`` mode reproduces the official Spider evaluator's verdicts on real pairs.

The pairs come from the Spider dev databases at ``SPIDER_DEV`` (Spider layout, loaded with the
``spider`` loader): every gold query against itself, against a copy with DISTINCT added or
removed, and against the next gold query of the same database, all made deterministically. The
reference verdicts come from ``spider_reference`` (the evaluator's documented procedure).
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from routerlab.agents.trace import Trace
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders.spider import load_spider
from routerlab.eval.scorers.execution import ExecutionAccuracy, remove_distinct
from routerlab.eval.scorers.routing import Success
from tests.eval.spider_reference import drop_distinct, official_match

SPIDER_DEV = Path(os.environ.get("ROUTERLAB_SPIDER_DEV", "/work/shared/data/spider-dev-a"))


def toggle_distinct(sql: str) -> str:
    """The gold with its first DISTINCT removed, or with DISTINCT added after the first SELECT."""
    if re.search(r"\bdistinct\b", sql, re.IGNORECASE):
        return re.sub(r"\bdistinct\s+", "", sql, count=1, flags=re.IGNORECASE)
    return re.sub(r"\bselect\s+", "SELECT DISTINCT ", sql, count=1, flags=re.IGNORECASE)


def spider_pairs(examples: list[Example]) -> list[tuple[str, Example, str]]:
    """``(kind, example, predicted SQL)`` for every example: same, distinct toggled, other gold."""
    by_db: dict[str, list[Example]] = {}
    for e in examples:
        by_db.setdefault(e.db_path, []).append(e)
    pairs = []
    for e in examples:
        peers = by_db[e.db_path]
        other = peers[(peers.index(e) + 1) % len(peers)]
        pairs += [("same", e, e.gold_sql), ("distinct", e, toggle_distinct(e.gold_sql)), ("other", e, other.gold_sql)]
    return pairs


def ours(mode: str, pairs: list[tuple[str, Example, str]]) -> list[bool]:
    """Whether ``ex`` in ``mode`` accepts each pair's predicted SQL."""
    scorer = ExecutionAccuracy(mode=mode, gold_cache=False)
    return [scorer.score(e, Trace(example_id=e.id, sql=pred)).value == 1.0 for _, e, pred in pairs]


def theirs(keep_distinct: bool, pairs: list[tuple[str, Example, str]]) -> list[bool]:
    """The reference evaluator's verdict on each pair."""
    return [official_match(e.db_path, pred, e.gold_sql, keep_distinct=keep_distinct) for _, e, pred in pairs]


def agreement(pairs: list[tuple[str, Example, str]], ours_: list[bool], theirs_: list[bool]) -> tuple[int, int, list]:
    """Pairs on which the two verdict lists agree, all pairs, the disagreements."""
    differ = [(k, e.id, pred, o, t) for (k, e, pred), o, t in zip(pairs, ours_, theirs_, strict=True) if o != t]
    return len(pairs) - len(differ), len(pairs), differ


@pytest.fixture(scope="module")
def spider_dev() -> list[Example]:
    if not (SPIDER_DEV / "dev.json").exists():
        pytest.skip(f"no Spider dev data at {SPIDER_DEV} (set ROUTERLAB_SPIDER_DEV)")
    return load_spider(str(SPIDER_DEV)).examples


def test_spider_mode_agrees_with_the_official_evaluator(spider_dev):
    pairs = spider_pairs(spider_dev)
    # each verdict list is computed once (every pair runs its SQL twice per list): the third
    # comparison pairs keep_distinct's verdicts with the plain evaluator's, both already computed
    ours_spider, ours_kept = ours("spider", pairs), ours("spider_keep_distinct", pairs)
    theirs_plain, theirs_kept = theirs(False, pairs), theirs(True, pairs)
    agree, n, differ = agreement(pairs, ours_spider, theirs_plain)
    kept, n_kept, differ_kept = agreement(pairs, ours_kept, theirs_kept)
    old, _, _ = agreement(pairs, ours_kept, theirs_plain)
    print(
        f"\nSPIDER_AGREEMENT pairs={n} spider_vs_official={agree}/{n} ({agree / n:.2%}) "
        f"keep_distinct_vs_official_keep_distinct={kept}/{n_kept} ({kept / n_kept:.2%}) "
        f"keep_distinct_vs_official={old}/{n} ({old / n:.2%}) disagreements={differ[:5]}"
    )
    assert n == 3 * len(spider_dev) and n > 1000
    assert agree / n >= 0.995, differ[:10]
    assert kept / n_kept >= 0.995, differ_kept[:10]
    # the DISTINCT pairs are where the two modes part: keeping DISTINCT disagrees on some of them
    assert old < agree


def test_remove_distinct_cuts_every_keyword_like_the_evaluator(tmp_path):
    cases = [
        "SELECT DISTINCT name FROM t",
        "SELECT count(DISTINCT name) FROM t WHERE name != 'distinct'",
        "select distinct a, b from t order by a",
        "SELECT name FROM t",
    ]
    for sql in cases:
        assert " ".join(remove_distinct(sql).split()) == " ".join(drop_distinct(sql).split()), sql


def test_spider_mode_ignores_distinct_and_keep_distinct_does_not(tmp_path):
    db = tmp_path / "dup.sqlite"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE t (name TEXT); INSERT INTO t VALUES ('a'), ('a'), ('b');")
    con.commit()
    con.close()
    ex = Example(
        id="d", question="q", db_id="dup", db_path=str(db), intent="sql", gold_sql="SELECT DISTINCT name FROM t"
    )
    pred = Trace(example_id="d", sql="SELECT name FROM t")
    assert ExecutionAccuracy(mode="spider", gold_cache=False).score(ex, pred).value == 1.0
    assert ExecutionAccuracy(mode="spider_keep_distinct", gold_cache=False).score(ex, pred).value == 0.0
    # COUNT(DISTINCT x) becomes COUNT(x) as well
    counted = replace(ex, gold_sql="SELECT count(DISTINCT name) FROM t")
    assert ExecutionAccuracy(mode="spider", gold_cache=False).score(counted, Trace("d", sql="SELECT 3")).value == 1.0


def test_success_reuses_the_ex_verdict_without_running_the_sql_again(tmp_path, monkeypatch):
    db = tmp_path / "one.sqlite"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE t (name TEXT); INSERT INTO t VALUES ('a'), ('a');")
    con.commit()
    con.close()
    ex = Example(
        id="s", question="q", db_id="one", db_path=str(db), intent="sql", gold_sql="SELECT DISTINCT name FROM t"
    )
    trace = Trace(example_id="s", sql="SELECT name FROM t")
    ex_scorer = ExecutionAccuracy(mode="spider_keep_distinct", gold_cache=False)
    success = Success()
    runs: list[str] = []
    for s in (ex_scorer, success._ex):
        original = s._run
        monkeypatch.setattr(s, "_run", lambda path, sql, _o=original: (runs.append(sql), _o(path, sql))[1])
    verdict = ex_scorer.score(ex, trace)
    assert runs == ["SELECT DISTINCT name FROM t", "SELECT name FROM t"]  # gold once, prediction once
    assert verdict.value == 0.0  # keep_distinct: two rows against one
    assert success.score(ex, trace).value == 0.0  # the same verdict, although success defaults to spider
    assert len(runs) == 2  # and nothing ran again
    # asking success for another mode explicitly computes that mode's verdict
    assert Success(ex_mode="spider").score(ex, Trace(example_id="s", sql="SELECT name FROM t")).value == 1.0
