"""The built-in examples: labels, chains, splits, and gold SQL that runs and is deterministic."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from routerlab.agents.db.guard import check_sql
from routerlab.agents.state import INTENTS
from routerlab.benchmarks.builtin.generate import CHAINS, build_records, load_sources, render_examples
from routerlab.benchmarks.builtin.loader import EXAMPLES_PATH, assign_splits, read_examples
from routerlab.benchmarks.builtin.validate import execute, is_ordered, normalize_rows, ordering_problems, query_error
from routerlab.benchmarks.difficulty import sql_hardness
from routerlab.benchmarks.example import DIFFICULTIES, SPLITS

RECORDS = read_examples()
MINIMUM = {"sql": 130, "explain": 22, "fix": 22, "chat": 22, "clarify": 16, "refuse": 12, "unanswerable": 12}
MAX_ROWS = 200


def _with(field: str, *intents: str) -> list[dict]:
    return [r for r in RECORDS if r[field] and (not intents or r["intent"] in intents)]


GOLD = _with("gold_sql")
FIXES = _with("input_sql", "fix")
EXPLAINS = _with("input_sql", "explain")


def _ids(records):
    return [r["id"] for r in records]


# ---- the committed file is what the sources and the database produce -------------------------


def test_examples_file_is_up_to_date(fresh_db):
    fresh = render_examples(build_records(fresh_db, load_sources()))
    assert fresh == EXAMPLES_PATH.read_text(encoding="utf-8"), (
        "examples.jsonl is stale: run python -m routerlab.benchmarks.builtin.generate"
    )


# ---- labels ----------------------------------------------------------------------------------


def test_counts_per_intent():
    counts = Counter(r["intent"] for r in RECORDS)
    for intent, minimum in MINIMUM.items():
        assert counts[intent] >= minimum, (intent, counts[intent])
    assert sum(counts.values()) >= 220
    assert set(counts) == set(INTENTS)


def test_ids_are_unique_and_well_formed():
    ids = _ids(RECORDS)
    assert len(ids) == len(set(ids))
    for r in RECORDS:
        assert re.fullmatch(rf"sa-{r['intent']}-\d{{3}}", r["id"]), r["id"]


def test_questions_are_unique_and_not_blank():
    questions = [r["question"].strip() for r in RECORDS]
    assert all(questions)
    assert len(questions) == len(set(questions))


def test_chains_and_alt_intents():
    for r in RECORDS:
        assert r["expected_chain"] == list(CHAINS[r["intent"]]), r["id"]
        assert r["intent"] not in r["alt_intents"], r["id"]
        assert set(r["alt_intents"]) <= set(INTENTS), r["id"]
        assert r["hint"] == "", r["id"]


def test_fields_required_and_forbidden_per_intent():
    for r in RECORDS:
        intent = r["intent"]
        assert bool(r["gold_sql"]) == (intent in ("sql", "fix", "clarify")), r["id"]
        assert bool(r["input_sql"]) == (intent in ("explain", "fix")), r["id"]
        assert bool(r["error_text"]) == (intent == "fix"), r["id"]
        assert bool(r["user_reply"]) == (intent == "clarify"), r["id"]
        if intent in ("refuse", "unanswerable"):
            assert r["gold_sql"] is None and r["input_sql"] is None


def test_requests_quote_their_sql_and_error():
    for r in FIXES + EXPLAINS:
        assert r["input_sql"].strip() in r["question"], r["id"]
    for r in FIXES:
        assert r["error_text"].strip() in r["question"], r["id"]
        assert r["gold_sql"].strip() != r["input_sql"].strip(), r["id"]


def test_difficulty_is_the_hardness_of_the_gold_sql():
    for r in RECORDS:
        expected = sql_hardness(r["gold_sql"]) if r["gold_sql"] else None
        assert r["difficulty"] == expected, r["id"]


def test_every_level_is_present_among_sql_examples(capsys):
    by_level = Counter(r["difficulty"] for r in RECORDS if r["intent"] == "sql")
    with capsys.disabled():
        print("\nbuiltin sql difficulty:", {d: by_level[d] for d in DIFFICULTIES})
    assert all(by_level[d] > 0 for d in DIFFICULTIES), by_level


# ---- splits ------------------------------------------------------------------------------------


def test_every_split_has_every_intent_and_the_right_share():
    splits = assign_splits(RECORDS, 0)
    table = Counter((r["intent"], splits[r["id"]]) for r in RECORDS)
    for intent in INTENTS:
        for split in SPLITS:
            assert table[intent, split] > 0, (intent, split)
    totals = Counter(splits.values())
    for split, share in {"train": 0.4, "dev": 0.4, "test": 0.2}.items():
        assert abs(totals[split] / len(RECORDS) - share) < 0.03, (split, totals)


def test_splits_are_deterministic_and_seeded():
    assert assign_splits(RECORDS, 0) == assign_splits(list(reversed(RECORDS)), 0)
    other = assign_splits(RECORDS, 1)
    assert other != assign_splits(RECORDS, 0)
    assert Counter(other.values()) == Counter(assign_splits(RECORDS, 0).values())


# ---- gold SQL ----------------------------------------------------------------------------------


@pytest.mark.parametrize("record", GOLD, ids=_ids(GOLD))
def test_gold_sql_runs_and_is_deterministic(record, db, reversed_db):
    sql = record["gold_sql"]
    check_sql(sql)  # the project's read-only guard accepts every gold query
    _, rows = execute(db, sql)
    if not record["meta"].get("may_be_empty"):
        assert rows, "gold SQL returns no rows"
    assert len(rows) <= MAX_ROWS
    ordered = is_ordered(sql)
    _, again = execute(db, sql)
    assert normalize_rows(again, ordered) == normalize_rows(rows, ordered)
    # a result that leans on physical row order changes when the tables are stored reversed
    assert normalize_rows(reversed_db.execute(sql).fetchall(), ordered) == normalize_rows(rows, ordered)
    assert ordering_problems(db, sql) == []


@pytest.mark.parametrize("record", FIXES, ids=_ids(FIXES))
def test_fix_input_fails_with_its_recorded_error(record, db):
    assert query_error(db, record["input_sql"]) == record["error_text"]
    assert query_error(db, record["gold_sql"]) is None


@pytest.mark.parametrize("record", EXPLAINS, ids=_ids(EXPLAINS))
def test_explain_input_runs(record, db):
    assert query_error(db, record["input_sql"]) is None
    check_sql(record["input_sql"])


def test_fix_breakages_cover_every_kind():
    kinds = Counter(r["meta"]["breakage"] for r in FIXES)
    expected = {
        "misspelled_column", "missing_group_by_column", "wrong_table", "type_mismatch", "ambiguous_column",
        "syntax_error",
    }  # fmt: skip
    assert set(kinds) == expected
    assert min(kinds.values()) >= 3
