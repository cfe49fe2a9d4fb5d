"""The ``bird`` loader on a tiny BIRD-layout directory."""

from __future__ import annotations

from pathlib import Path

import pytest

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
from routerlab.agents.db import open_database
from routerlab.agents.errors import DatasetError
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.difficulty import sql_hardness
from routerlab.benchmarks.loaders import load_bird
from tests.benchmarks.loaders.conftest import BIRD_DEV, BIRD_TRAIN, write_json


def test_dev_split_keeps_evidence_and_bird_difficulty(bird_dir: Path):
    ds = dataset.build("bird", path=str(bird_dir))
    assert ds.name == "bird" and ds.source == str(bird_dir.resolve())
    assert [e.id for e in ds.examples] == ["bird-dev-0000", "bird-dev-0001", "bird-dev-0002"]
    for e, rec in zip(ds.examples, BIRD_DEV, strict=True):
        assert e.question == rec["question"]
        assert e.gold_sql == rec["SQL"]
        assert e.hint == rec["evidence"]
        assert e.meta["bird_difficulty"] == rec["difficulty"]
        assert e.split == "dev" and e.intent == "sql" and e.dataset == "bird"
        assert Path(e.db_path).is_file() and Path(e.db_path).parent.parent.name == "dev_databases"
    # the Example's difficulty is the Spider hardness, never BIRD's label
    assert [e.difficulty for e in ds.examples] == [sql_hardness(r["SQL"], "sqlite") for r in BIRD_DEV]
    assert ds.examples[2].difficulty == "extra"


def test_train_split_without_question_ids(bird_dir: Path):
    ds = load_bird(str(bird_dir), split="train")
    assert [e.id for e in ds.examples] == ["bird-train-0000", "bird-train-0001"]
    assert {e.split for e in ds.examples} == {"train"}
    assert ds.examples[0].hint == BIRD_TRAIN[0]["evidence"]
    assert "bird_difficulty" not in ds.examples[0].meta
    assert all("train_databases" in e.db_path for e in ds.examples)


def test_gold_sql_runs_on_its_database(bird_dir: Path):
    for split in ("dev", "train"):
        for e in load_bird(str(bird_dir), split=split).examples:
            assert open_database(e.db_path).execute(e.gold_sql).rows


def test_limit_and_version(bird_dir: Path):
    assert len(load_bird(str(bird_dir), limit=1).examples) == 1
    before = load_bird(str(bird_dir)).version
    write_json(bird_dir / "dev.json", BIRD_DEV[:2])
    assert load_bird(str(bird_dir)).version != before


def test_test_split_is_not_public(bird_dir: Path):
    with pytest.raises(DatasetError, match="test set is not public"):
        load_bird(str(bird_dir), split="test")


def test_missing_file_and_directory(bird_dir: Path, tmp_path: Path):
    with pytest.raises(DatasetError, match="dev_databases"):
        load_bird(str(tmp_path / "absent"))
    (bird_dir / "dev.json").unlink()
    with pytest.raises(DatasetError, match=r"dev\.json"):
        load_bird(str(bird_dir))


def test_missing_database(bird_dir: Path):
    write_json(bird_dir / "dev.json", [dict(BIRD_DEV[0], db_id="financial")])
    with pytest.raises(DatasetError) as info:
        load_bird(str(bird_dir))
    message = str(info.value)
    assert "dev.json" in message and "record 0" in message and "'db_id'" in message
    assert str(Path("dev_databases") / "financial" / "financial.sqlite") in message


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"SQL": None}, "SQL"),
        ({"question": None}, "question"),
        ({"evidence": 3}, "evidence"),
        ({"question_id": 0}, "question_id"),  # duplicate of record 0
        ({"question_id": [1]}, "question_id"),
    ],
)
def test_malformed_record_names_file_record_and_field(bird_dir: Path, change: dict, field: str):
    second = {k: v for k, v in {**BIRD_DEV[1], **change}.items() if v is not None}
    write_json(bird_dir / "dev.json", [BIRD_DEV[0], second])
    with pytest.raises(DatasetError) as info:
        load_bird(str(bird_dir))
    message = str(info.value)
    assert "dev.json" in message and "record 1" in message and f"'{field}'" in message
