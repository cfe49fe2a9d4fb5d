"""The ``sparc`` and ``cosql`` loaders on a tiny folder written here (no shared data needed)."""

from __future__ import annotations

from pathlib import Path

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
from routerlab.agents.db import open_database
from routerlab.benchmarks.loaders.conversational import load_cosql, load_sparc
from tests.benchmarks.loaders.conftest import CONVERSATIONS


def test_sparc_and_cosql_read_the_same_folder_their_own_way(conversations_dir: Path, spider_dir: Path):
    sparc = load_sparc(str(conversations_dir), db_dir=str(spider_dir / "database")).examples
    cosql = load_cosql(str(conversations_dir), db_dir=str(spider_dir / "database")).examples
    assert [(e.conversation, e.turn, e.turns) for e in sparc] == [
        ("sparc-dev-0000", 1, 3),
        ("sparc-dev-0000", 2, 3),
        ("sparc-dev-0000", 3, 3),
        ("sparc-dev-0001", 1, 2),
        ("sparc-dev-0001", 2, 2),
    ]
    assert {e.intent for e in sparc} == {"sql"}
    exchange = cosql[3]
    assert (exchange.intent, exchange.question, exchange.user_reply) == ("clarify", "Show the pets", "just the types")
    assert exchange.meta["clarifying_question"] == "the pet ids or every column?"
    assert [e.intent for e in cosql] == ["sql", "sql", "sql", "clarify", "sql"]
    # the split operator is joined, the released query kept; every gold runs on its database
    third = sparc[2]
    assert (
        third.gold_sql.endswith("age >= 30")
        and third.meta["released_query"] == CONVERSATIONS[0]["interaction"][2]["query"]
    )
    assert all(open_database(e.db_path).execute(e.gold_sql).columns for e in sparc)
    assert sparc[0].meta["final"] == CONVERSATIONS[0]["final"]


def test_databases_found_in_a_sibling_release(conversations_dir: Path, spider_dir: Path):
    """Without db_dir and without <path>/database: the sibling folder holding every database."""
    ds = load_sparc(str(conversations_dir))
    assert ds.meta["db_dir"] == str((spider_dir / "database").resolve())
    assert {Path(e.db_path).parent.parent for e in ds.examples} == {(spider_dir / "database").resolve()}
