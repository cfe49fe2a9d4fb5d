"""The ``spider`` loader on a tiny Spider-layout directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError, DatasetError
from routerlab.agents.plan import CHAINS
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.loaders import load_spider
from tests.benchmarks.loaders.conftest import SPIDER_DEV, SPIDER_TRAIN, write_json


def test_dev_split_loads_every_record(spider_dir: Path):
    ds = dataset.build("spider", path=str(spider_dir))
    assert ds.name == "spider"
    assert ds.source == str(spider_dir.resolve())
    assert [e.id for e in ds.examples] == [f"spider-dev-{i:04d}" for i in range(len(SPIDER_DEV))]
    for e, rec in zip(ds.examples, SPIDER_DEV, strict=True):
        assert e.question == rec["question"]
        assert e.gold_sql == rec["query"]
        assert e.db_id == rec["db_id"]
        assert e.intent == "sql" and e.expected_chain == CHAINS["sql"]
        assert e.split == "dev" and e.dataset == "spider"
        assert Path(e.db_path) == spider_dir.resolve() / "database" / e.db_id / f"{e.db_id}.sqlite"
    assert [e.difficulty for e in ds.examples] == ["easy", "easy", "medium", "easy"]


def test_train_split_maps_to_train(spider_dir: Path):
    ds = load_spider(str(spider_dir), split="train")
    assert len(ds.examples) == len(SPIDER_TRAIN)
    assert {e.split for e in ds.examples} == {"train"}
    assert ds.examples[0].id == "spider-train-0000"


def test_gold_sql_runs_on_its_database(spider_dir: Path):
    for split in ("dev", "train"):
        for e in load_spider(str(spider_dir), split=split).examples:
            assert open_database(e.db_path).execute(e.gold_sql).columns


def test_limit(spider_dir: Path):
    assert len(load_spider(str(spider_dir), limit=2).examples) == 2
    assert len(load_spider(str(spider_dir), limit=99).examples) == len(SPIDER_DEV)
    with pytest.raises(ConfigError):
        load_spider(str(spider_dir), limit=-1)


def test_version_changes_with_the_file(spider_dir: Path):
    before = load_spider(str(spider_dir)).version
    assert len(before) == 12 and load_spider(str(spider_dir)).version == before
    write_json(spider_dir / "dev.json", [*SPIDER_DEV, SPIDER_DEV[0]])
    assert load_spider(str(spider_dir)).version != before


def test_test_split_needs_a_test_file(spider_dir: Path):
    with pytest.raises(DatasetError) as info:
        load_spider(str(spider_dir), split="test")
    assert "test.json" in str(info.value) and "no test questions" in str(info.value)
    write_json(spider_dir / "test.json", SPIDER_DEV[:1])
    ds = load_spider(str(spider_dir), split="test")
    assert [e.split for e in ds.examples] == ["test"]


def test_unknown_split_is_a_config_error(spider_dir: Path):
    with pytest.raises(ConfigError):
        load_spider(str(spider_dir), split="validation")


def test_missing_directory_shows_the_layout(tmp_path: Path):
    with pytest.raises(DatasetError) as info:
        load_spider(str(tmp_path / "nowhere"))
    message = str(info.value)
    assert "nowhere" in message and "database/<db_id>/<db_id>.sqlite" in message


def test_missing_database_names_record_and_path(spider_dir: Path):
    records = [*SPIDER_DEV, {"db_id": "missing_db", "question": "Q?", "query": "SELECT 1"}]
    write_json(spider_dir / "dev.json", records)
    with pytest.raises(DatasetError) as info:
        load_spider(str(spider_dir))
    message = str(info.value)
    assert "dev.json" in message and "record 4" in message and "'db_id'" in message
    assert str(Path("missing_db") / "missing_db.sqlite") in message
    assert info.value.details["record"] == "record 4"


def test_invalid_json_names_the_line(spider_dir: Path):
    (spider_dir / "dev.json").write_text('[{"db_id": "concert_singer",\n "question": }]')
    with pytest.raises(DatasetError) as info:
        load_spider(str(spider_dir))
    assert "dev.json" in str(info.value) and "line 2" in str(info.value)


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"db_id": "concert_singer", "question": "Q?"}, "query"),
        ({"db_id": "concert_singer", "query": "SELECT 1"}, "question"),
        ({"question": "Q?", "query": "SELECT 1"}, "db_id"),
        ({"db_id": "concert_singer", "question": 7, "query": "SELECT 1"}, "question"),
        ({"db_id": "concert_singer", "question": "  ", "query": "SELECT 1"}, "question"),
    ],
)
def test_malformed_record_names_file_record_and_field(spider_dir: Path, record: dict, field: str):
    write_json(spider_dir / "dev.json", [SPIDER_DEV[0], record])
    with pytest.raises(DatasetError) as info:
        load_spider(str(spider_dir))
    message = str(info.value)
    assert "dev.json" in message and "record 1" in message and f"'{field}'" in message
    assert info.value.details == {"file": str(spider_dir / "dev.json"), "record": "record 1", "field": field}


def test_non_list_and_non_object_records(spider_dir: Path):
    write_json(spider_dir / "dev.json", {"db_id": "x"})
    with pytest.raises(DatasetError, match="not a list"):
        load_spider(str(spider_dir))
    write_json(spider_dir / "dev.json", [SPIDER_DEV[0], "just text"])
    with pytest.raises(DatasetError, match="record 1"):
        load_spider(str(spider_dir))
    write_json(spider_dir / "dev.json", [])
    with pytest.raises(DatasetError, match="no records"):
        load_spider(str(spider_dir))


def test_db_id_cannot_escape_the_database_directory(spider_dir: Path):
    write_json(spider_dir / "dev.json", [{"db_id": "../pets_1", "question": "Q?", "query": "SELECT 1"}])
    with pytest.raises(DatasetError, match="record 0"):
        load_spider(str(spider_dir))


def test_records_survive_a_json_round_trip(spider_dir: Path):
    ds = load_spider(str(spider_dir))
    assert json.loads(json.dumps([e.to_dict() for e in ds.examples]))


def test_sample_by_database_keeps_each_database_share_on_the_real_release():
    """spider-dev-a: 96 of 382 questions, every database's share by largest remainder, seeded."""
    from collections import Counter

    from tests.conftest import SPIDER_DEV_A

    if not (SPIDER_DEV_A / "dev.json").is_file():
        pytest.skip("real Spider data not found")
    whole = load_spider(str(SPIDER_DEV_A))
    ds = load_spider(str(SPIDER_DEV_A), sample=96, seed=0)
    counts = Counter(e.db_id for e in ds.examples)
    assert sum(counts.values()) == 96
    # 92/382*96 = 23.1 -> 23, ..., course_teach 30/382*96 = 7.54 -> 7 (smaller remainder than others)
    assert counts == {
        "car_1": 23,
        "dog_kennels": 21,
        "tvshow": 16,
        "concert_singer": 11,
        "poker_player": 10,
        "course_teach": 7,
        "battle_death": 4,
        "voter_1": 4,
    }
    assert [e.id for e in load_spider(str(SPIDER_DEV_A), sample=96, seed=0).examples] == [e.id for e in ds.examples]
    other = {e.id for e in load_spider(str(SPIDER_DEV_A), sample=96, seed=1).examples}
    assert other != {e.id for e in ds.examples}
    assert {e.id for e in ds.examples} <= {e.id for e in whole.examples}
    assert ds.meta["sample"] == "96" and ds.meta["sample_seed"] == "0"
    assert len(load_spider(str(SPIDER_DEV_A), sample=1000).examples) == 382


def test_sample_through_the_registry_rejects_a_negative_size(spider_dir: Path):
    with pytest.raises(ConfigError, match="sample"):
        dataset.build("spider", path=str(spider_dir), sample=-1)
