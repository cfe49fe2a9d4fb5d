"""Measuring conversations honestly: subsets spread over databases, empty matches counted apart.

Real CoSQL conversations (the shared ``cosql-dev-a`` folder) for the subset, and the real
``concert_singer`` SQLite file of ``spider-dev-a`` for the EX verdicts. Skipped where the shared
data is absent (``ROUTERLAB_SPIDER_DEV``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
from routerlab.agents.trace import Trace
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.selection import stratified_subset
from routerlab.eval.conversation_metrics import conversation_summary
from routerlab.eval.rate import rate
from routerlab.eval.scorers.execution import ExecutionAccuracy
from routerlab.eval.scoring import ExampleResult
from tests.conftest import SPIDER_DEV_A, figures_of

COSQL = SPIDER_DEV_A.parent / "cosql-dev-a"
CONCERT = SPIDER_DEV_A / "database" / "concert_singer" / "concert_singer.sqlite"

pytestmark = pytest.mark.skipif(
    not (COSQL / "dev.json").is_file() or not CONCERT.is_file(),
    reason="shared conversation data not found (set ROUTERLAB_SPIDER_DEV)",
)


@pytest.fixture(scope="module")
def sorted_by_database() -> list[Example]:
    """The real CoSQL turns renumbered as a file sorted by database would number them."""
    examples = dataset.build("cosql", path=str(COSQL)).examples
    convs = sorted({e.conversation for e in examples}, key=lambda c: (_db(examples, c), c))
    new_id = {c: f"conv-{i:04d}" for i, c in enumerate(convs)}
    return [
        dataclasses.replace(e, id=f"{new_id[e.conversation]}-t{e.turn}", conversation=new_id[e.conversation])
        for e in examples
    ]


def _db(examples: list[Example], conversation: str | None) -> str:
    return next(e.db_id for e in examples if e.conversation == conversation)


def test_a_limited_conversational_subset_spans_the_databases(sorted_by_database):
    dbs = sorted({e.db_id for e in sorted_by_database})
    assert len(dbs) == 8
    # the file's first conversations all come from one database: the trap the subset avoids
    first_ids = sorted({e.conversation for e in sorted_by_database})[:8]
    assert len({_db(sorted_by_database, c) for c in first_ids}) == 1
    subset = stratified_subset(sorted_by_database, 24)
    conversations = {e.conversation for e in subset}
    assert len(conversations) >= 8 and {e.db_id for e in subset} == set(dbs)
    # stratified: no database gets two conversations before every database has one
    per_db = [sum(_db(subset, c) == db for c in conversations) for db in dbs]
    assert max(per_db) - min(per_db) <= 1
    # conversations stay whole
    for c in conversations:
        turns = sorted(e.turn for e in subset if e.conversation == c)
        assert turns == list(range(1, turns and next(e.turns for e in subset if e.conversation == c) + 1))


def test_the_subset_is_seeded(sorted_by_database):
    first = [e.id for e in stratified_subset(sorted_by_database, 10, seed=0)]
    assert first == [e.id for e in stratified_subset(sorted_by_database, 10, seed=0)]
    # fewer conversations than databases: the seed decides which databases are drawn
    draws = {tuple(sorted({e.db_id for e in stratified_subset(sorted_by_database, 10, seed=s)})) for s in range(6)}
    assert len(draws) > 1
    # every example is still reachable: no limit, no loss
    assert len(stratified_subset(sorted_by_database, None)) == len(sorted_by_database)


def _example(i: int, gold: str) -> Example:
    return Example(f"q{i}", "question", "concert_singer", str(CONCERT), "sql", gold_sql=gold)


def _result(example: Example, sql: str, scorer: ExecutionAccuracy, conversation: str | None = None) -> ExampleResult:
    score = scorer.score(example, Trace(example.id, sql=sql))
    return ExampleResult(
        example_id=example.id,
        dataset="cosql",
        split="dev",
        intent="sql",
        difficulty=None,
        router="always_sql",
        lm="scripted",
        outcome="ok",
        scores={"ex": score},
        conversation=conversation,
        turn=int(example.id[1:]) + 1,
        turns=4,
    )


def test_empty_matches_are_counted_apart(tmp_path):
    scorer = ExecutionAccuracy(gold_cache=False)
    empty_gold = "SELECT name FROM singer WHERE age > 1000"
    cases = [
        # both empty: a match, flagged
        (_example(0, empty_gold), "SELECT name FROM singer WHERE country = 'Atlantis'", True, True),
        # a real match on rows
        (_example(1, "SELECT count(*) FROM singer"), "SELECT count(*) FROM singer", True, False),
        # gold empty, prediction not: no match, not flagged
        (_example(2, empty_gold), "SELECT name FROM singer", False, False),
        # prediction empty, gold not
        (_example(3, "SELECT name FROM singer"), "SELECT name FROM singer WHERE age > 1000", False, False),
    ]
    results = []
    for example, sql, match, empty in cases:
        r = _result(example, sql, scorer, conversation="c1")
        assert (r.value("ex") == 1.0) is match and r.scores["ex"].detail["empty_match"] is empty
        results.append(r)
    ex = rate(results, "ex")
    assert (ex.value, ex.n, ex.n_empty) == (0.5, 4, 1)
    assert ex.fmt().endswith(" (1 empty)")
    rates = figures_of(tmp_path / "r.duckdb", results).rates
    assert rates["ex"].empty == 1 and rates["ex"].empty / rates["ex"].n == 0.25
    # only scorers that flag empty matches count them
    assert [k for k, r in rates.items() if r.empty] == ["ex"]
    # the conversation figures carry it (question level: every turn)
    summary = conversation_summary(results, ("ex",))
    assert summary is not None and summary.per_question["ex"].n_empty == 1
    # the comparison every view renders counts them apart and says so beside the rate
    from routerlab.eval.analysis.build import _interval
    from routerlab.eval.analysis.words import interval_text

    shown = _interval(results, lambda r: r.value("ex"), "ex")
    assert shown is not None and shown.empty == 1 and interval_text(shown).endswith("(1 empty)")


def test_a_rate_without_empty_matches_prints_as_before(tmp_path):
    scorer = ExecutionAccuracy(gold_cache=False)
    ex = _example(1, "SELECT count(*) FROM singer")
    results: list[Any] = [_result(ex, "SELECT count(*) FROM singer", scorer)]
    r = rate(results, "ex")
    assert r.n_empty == 0 and "empty" not in r.fmt()
    assert figures_of(tmp_path / "r.duckdb", results).rates["ex"].empty == 0
