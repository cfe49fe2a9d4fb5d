"""The built-in multi-turn conversations: a family of their own, generated, split by conversation."""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict

import pytest

from routerlab.agents.db.guard import check_sql
from routerlab.benchmarks.builtin.generate import build_conversation_records, load_conversations, render_examples
from routerlab.benchmarks.builtin.loader import (
    CONVERSATIONS_PATH,
    assign_conversation_splits,
    load_builtin,
    load_builtin_conversations,
    read_examples,
)
from routerlab.benchmarks.builtin.validate import execute, is_ordered, normalize_rows, ordering_problems
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.example import Example

TURNS = read_examples(CONVERSATIONS_PATH)


def test_conversations_file_is_up_to_date(fresh_db):
    fresh = render_examples(build_conversation_records(fresh_db, load_conversations()))
    assert fresh == CONVERSATIONS_PATH.read_text(encoding="utf-8"), (
        "conversations.jsonl is stale: run python -m routerlab.benchmarks.builtin.generate"
    )


def test_turns_are_numbered_and_complete():
    by_conv: dict[str, list[dict]] = defaultdict(list)
    for r in TURNS:
        assert re.fullmatch(r"sa-conv-\d{2}-t\d", r["id"]), r["id"]
        assert r["id"] == f"{r['conversation']}-t{r['turn']}" and r["intent"] == "sql" and r["gold_sql"]
        by_conv[r["conversation"]].append(r)
    assert len(by_conv) >= 8 and len(TURNS) >= 18
    for turns in by_conv.values():
        assert [t["turn"] for t in turns] == list(range(1, len(turns) + 1))
        assert {t["turns"] for t in turns} == {len(turns)} and len(turns) >= 2
    assert len({r["question"] for r in TURNS}) == len(TURNS)


@pytest.mark.parametrize("record", TURNS, ids=[r["id"] for r in TURNS])
def test_gold_sql_per_turn_runs_and_is_deterministic(record, db, reversed_db):
    sql = record["gold_sql"]
    check_sql(sql)
    _, rows = execute(db, sql)
    assert rows
    ordered = is_ordered(sql)
    assert normalize_rows(reversed_db.execute(sql).fetchall(), ordered) == normalize_rows(rows, ordered)
    assert ordering_problems(db, sql) == []


def test_follow_ups_need_their_context(db):
    # a later turn's gold answer differs from the earlier turn's: the follow-up changes something
    by_conv: dict[str, list[dict]] = defaultdict(list)
    for r in TURNS:
        by_conv[r["conversation"]].append(r)
    for turns in by_conv.values():
        results = [normalize_rows(execute(db, t["gold_sql"])[1], is_ordered(t["gold_sql"])) for t in turns]
        assert all(a != b for a, b in itertools.pairwise(results)), turns[0]["conversation"]


def test_splits_keep_conversations_whole_and_are_seeded():
    splits = assign_conversation_splits(TURNS, 0)
    per_conv = defaultdict(set)
    for r in TURNS:
        per_conv[r["conversation"]].add(splits[r["id"]])
    assert all(len(s) == 1 for s in per_conv.values())
    assert Counter(next(iter(s)) for s in per_conv.values()) == Counter({"train": 4, "dev": 3, "test": 1})
    assert assign_conversation_splits(list(reversed(TURNS)), 0) == splits
    assert assign_conversation_splits(TURNS, 1) != splits


def test_the_dataset_and_the_single_request_benchmark_stay_apart():
    conv = dataset.build("builtin_conversations")
    assert conv.name == "builtin_conversations" and len(conv.examples) == len(TURNS)
    assert all(e.conversation and 1 <= e.turn <= e.turns for e in conv.examples)
    assert Counter(e.split for e in conv.examples)["dev"] == 7
    single = load_builtin()
    assert all(e.conversation is None and e.turn == e.turns == 1 for e in single.examples)
    assert not {e.id for e in single.examples} & {e.id for e in conv.examples}
    assert load_builtin_conversations(split_seed=0).digest() == conv.digest()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"turn": 2, "turns": 2}, "needs the id of its conversation"),
        ({"turn": 3, "turns": 2, "conversation": "c"}, "past"),
    ],
)
def test_example_turn_fields_are_checked(fields, message):
    with pytest.raises(ValueError, match=message):
        Example(id="x", question="q", db_id="d", db_path="p", intent="sql", gold_sql="SELECT 1", **fields)
