"""A run's ``--limit`` drawn while the ``jsonl``/``csv`` loaders read: one pass, the same examples."""

from __future__ import annotations

import csv
import json
import random
import weakref
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
import routerlab.benchmarks.loaders.table as table
from routerlab.agents.errors import ConfigError, DatasetError
from routerlab.agents.registry import component_spec
from routerlab.benchmarks.dataset import Dataset, Draw, dataset, draws_while_reading
from routerlab.benchmarks.selection import of_intents, stratified_subset
from tests.benchmarks.loaders.conftest import _copy

INTENTS = ("sql", "explain", "chat", "refuse")
DATABASES = ("shop", "geo", "pets")


@pytest.fixture
def dbs(tmp_path: Path, _db_templates: dict[str, Path]) -> Path:
    """Three real SQLite databases under ``tmp_path/dbs``, the data files' ``db_path`` targets."""
    for name in DATABASES:
        _copy(_db_templates[name], tmp_path / "dbs" / f"{name}.sqlite")
    return tmp_path


def _drawn_from_whole(ds: Dataset, spec: Draw) -> list[Any]:
    """What a run takes of the whole file (session_plan.select without the schedule)."""
    return stratified_subset(of_intents(ds.split(spec.split), spec.intents), spec.limit, spec.seed)


def _by_id(examples: list[Any]) -> list[Any]:
    return sorted(examples, key=lambda e: e.id)


@st.composite
def _files(draw: Any) -> tuple[list[dict[str, Any]], int, Draw]:
    """Records (single requests and conversations, in shuffled file order), a loader limit, a draw."""
    records: list[dict[str, Any]] = []
    ids = iter(draw(st.permutations(range(200))))
    for u in range(draw(st.integers(1, 25))):
        turns = draw(st.integers(1, 3)) if draw(st.booleans()) else 0
        for t in range(max(turns, 1)):
            rec: dict[str, Any] = {
                "question": f"q{u}.{t}",
                "intent": draw(st.sampled_from(INTENTS)),
                "gold_sql": "SELECT 1",
                "db_path": f"dbs/{draw(st.sampled_from(DATABASES))}.sqlite",
                "split": draw(st.sampled_from(("dev", "dev", "train"))),
            }
            if draw(st.booleans()):
                rec["id"] = f"r{next(ids):03d}"  # else the default id, from the record's index
            if turns:
                rec.update(conversation=f"c{u}", turn=t + 1)
            records.append(rec)
    order = draw(st.permutations(records))
    spec = Draw(
        limit=draw(st.integers(1, 12)),
        split=draw(st.sampled_from((None, "all", "dev", "train"))),
        intents=draw(st.one_of(st.none(), st.sets(st.sampled_from(INTENTS), min_size=1).map(tuple))),
        seed=draw(st.integers(0, 3)),
    )
    return list(order), draw(st.sampled_from((0, 0, 5, 15))), spec


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_files())
def test_a_draw_while_reading_takes_what_a_run_takes_of_the_whole_file(dbs: Path, case: Any) -> None:
    records, limit, spec = case
    path = _write(dbs / "draw.jsonl", records)
    whole = dataset.build("jsonl", path=str(path), limit=limit)
    drawn = dataset.build("jsonl", path=str(path), limit=limit, draw=spec)
    assert drawn.drawn == spec
    assert _by_id(drawn.examples) == _by_id(_drawn_from_whole(whole, spec))
    assert drawn.meta["records"] == whole.meta["records"] == str(len(records))


def test_csv_draws_the_same_examples(dbs: Path) -> None:
    rng = random.Random(7)
    rows = [
        {"id": f"r{k:03d}", "question": f"q{k}", "intent": rng.choice(INTENTS), "gold_sql": "SELECT 1"}
        for k in rng.sample(range(300), 120)
    ]
    path = dbs / "draw.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["id", "question", "intent", "gold_sql"])
        writer.writeheader()
        writer.writerows(rows)
    db = str(dbs / "dbs" / "shop.sqlite")
    spec = Draw(limit=9)
    drawn = dataset.build("csv", path=str(path), db=db, draw=spec)
    assert len(drawn.examples) == 9
    assert _by_id(drawn.examples) == _by_id(_drawn_from_whole(dataset.build("csv", path=str(path), db=db), spec))


def test_a_recorded_draw_rebuilds_the_same_dataset(dbs: Path) -> None:
    path = _write(dbs / "draw.jsonl", [{"question": f"q{k}", "intent": "chat"} for k in range(30)])
    db = str(dbs / "dbs" / "shop.sqlite")
    ds = dataset.build("jsonl", path=str(path), db=db, draw=Draw(limit=4, split="dev", intents=("chat",)))
    # recorded as JSON (the draw a dict, its intents a list), rebuilt as the same draw
    spec = json.loads(json.dumps(component_spec(ds)))
    assert spec["args"]["draw"] == {"limit": 4, "split": "dev", "intents": ["chat"], "seed": 0}
    again = dataset.rebuild(spec)
    assert again.drawn == ds.drawn and again.digest() == ds.digest() and len(ds.examples) == 4


def test_the_table_loaders_draw_while_reading() -> None:
    assert draws_while_reading("jsonl") and draws_while_reading("csv")
    assert not draws_while_reading("spider")


def test_a_record_outside_the_draw_is_still_checked_for_what_the_draw_reads(dbs: Path) -> None:
    db = str(dbs / "dbs" / "shop.sqlite")
    records = [{"id": f"r{k}", "question": f"q{k}", "intent": "chat"} for k in range(10)]
    records.append({"id": "r99", "question": "late", "intent": "summarize"})
    path = _write(dbs / "draw.jsonl", records)
    with pytest.raises(DatasetError) as err:
        dataset.build("jsonl", path=str(path), db=db, draw=Draw(limit=2))
    assert "line 11 (id 'r99')" in str(err.value) and "intent" in str(err.value)
    assert "sql, explain" in (err.value.expected or "")


@pytest.mark.parametrize("limit", [0, -3, True, "5"])
def test_a_draw_of_no_examples_is_refused(limit: Any) -> None:
    with pytest.raises(ConfigError) as err:
        Draw(limit=limit)
    assert "draw limit" in str(err.value) and "--limit" in (err.value.fix or "")


def test_a_draw_of_an_unknown_split_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        Draw(limit=3, split="validation")
    assert "unknown split 'validation'" in str(err.value)


N_LARGE = 200_000


@pytest.fixture
def large_file(dbs: Path) -> tuple[Path, dict[str, list[str]]]:
    """200,000 records in shuffled id order, and each intent's ids sorted (the draw's oracle)."""
    rng = random.Random(62)
    numbers = list(range(N_LARGE))
    rng.shuffle(numbers)
    by_intent: dict[str, list[str]] = {i: [] for i in INTENTS}
    path = dbs / "large.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for n in numbers:
            intent = INTENTS[n % len(INTENTS)]
            rid = f"q{n:07d}"
            by_intent[intent].append(rid)
            rec = {"id": rid, "question": f"how many products cost more than {n}?", "intent": intent}
            if intent == "sql":
                rec["gold_sql"] = f"SELECT count(*) FROM products WHERE price > {n}"
            f.write(json.dumps(rec) + "\n")
    return path, {i: sorted(ids) for i, ids in by_intent.items()}


def test_a_200k_record_file_is_read_once_holding_at_most_limit_candidates_per_stratum(
    dbs: Path, large_file: tuple[Path, dict[str, list[str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, sorted_ids = large_file
    db = str(dbs / "dbs" / "shop.sqlite")
    built: list[str] = []
    read: list[int] = []
    held = {"now": 0, "most": 0}
    real_build, real_candidate = table.build_example, table._candidate

    def counting_build(*args: Any, **fields: Any) -> Any:
        built.append(fields["id"])
        return real_build(*args, **fields)

    def release() -> None:
        held["now"] -= 1

    def counting_candidate(*args: Any) -> Any:
        c = real_candidate(*args)
        read.append(c.lineno)
        held["now"] += 1
        held["most"] = max(held["most"], held["now"])
        weakref.finalize(c, release)  # a candidate the draw does not keep is freed at once
        return c

    monkeypatch.setattr(table, "build_example", counting_build)
    monkeypatch.setattr(table, "_candidate", counting_candidate)
    spec = Draw(limit=20, split="dev", seed=0)
    ds = dataset.build("jsonl", path=str(path), db=db, draw=spec)
    # stratified: the round-robin over the 4 intents takes each intent's 5 smallest ids
    want = {rid for ids in sorted_ids.values() for rid in ids[:5]}
    assert {e.id for e in ds.examples} == want and len(ds.examples) == 20
    assert sorted(built) == sorted(want)  # only the drawn records became examples
    assert len(read) == len(set(read)) == N_LARGE and ds.meta["records"] == str(N_LARGE)  # each line once
    # held at once: at most 20 per (intent, database) stratum (4 here), the record being read and
    # the one it pushes out
    assert held["most"] <= 20 * len(INTENTS) + 2, held
    # deterministic: the same draw, the same examples
    again = dataset.build("jsonl", path=str(path), db=db, draw=spec)
    assert again.examples == ds.examples and again.digest() == ds.digest()
