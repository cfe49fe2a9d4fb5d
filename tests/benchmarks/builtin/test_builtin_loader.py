"""The ``builtin`` dataset loader and its registration."""

from __future__ import annotations

from pathlib import Path

import pytest

import routerlab.benchmarks.builtin  # noqa: F401  (registers "builtin")
from routerlab.agents.errors import DatasetError
from routerlab.benchmarks.builtin import loader
from routerlab.benchmarks.builtin.database import GENERATOR_VERSION
from routerlab.benchmarks.dataset import Dataset, dataset
from routerlab.benchmarks.example import Example


@pytest.fixture(scope="module")
def builtin() -> Dataset:
    return dataset.build("builtin")


def test_registered_and_built_through_the_registry(builtin):
    assert "builtin" in dataset
    assert builtin.name == "builtin"
    assert builtin.source == "builtin"
    assert builtin.version == f"{loader.BENCHMARK_VERSION}+db{GENERATOR_VERSION}"


def test_examples_point_at_the_built_database(builtin):
    assert len(builtin.examples) >= 220
    paths = {e.db_path for e in builtin.examples}
    assert len(paths) == 1 and Path(paths.pop()).exists()
    for e in builtin.examples:
        assert isinstance(e, Example)
        assert e.db_id == "service_areas"
        assert e.dataset == "builtin"


def test_splits_cover_everything(builtin):
    sizes = {s: len(builtin.split(s)) for s in ("train", "dev", "test")}
    assert sum(sizes.values()) == len(builtin.examples)
    assert sizes["train"] > sizes["test"] and sizes["dev"] > sizes["test"]


def test_loading_is_deterministic_and_seeded(builtin):
    assert dataset.build("builtin").digest() == builtin.digest()
    reseeded = loader.load_builtin(split_seed=7)
    assert reseeded.digest() != builtin.digest()
    assert reseeded.meta["split_seed"] == "7"


def test_invalid_record_is_a_dataset_error(tmp_path, monkeypatch):
    bad = tmp_path / "examples.jsonl"
    line = loader.EXAMPLES_PATH.read_text(encoding="utf-8").splitlines()[0]
    bad.write_text(line.replace('"intent": "sql"', '"intent": "banter"') + "\n", encoding="utf-8")
    monkeypatch.setattr(loader, "EXAMPLES_PATH", bad)
    with pytest.raises(DatasetError):
        loader.load_builtin()
