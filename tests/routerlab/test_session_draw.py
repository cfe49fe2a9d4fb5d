"""A run's ``--limit`` reaches a loader that draws while it reads: the same examples, one pass."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from routerlab import cli
from routerlab._runs.config import load_run_config
from routerlab._runs.session_plan import load_dataset, run_draw, select
from routerlab.benchmarks.dataset import Draw
from routerlab.eval.store import ResultsStore
from routerlab.sweep.grid import DatasetEntry
from tests.benchmarks.loaders.conftest import make_sqlite


def _file(tmp_path: Path) -> Path:
    make_sqlite(tmp_path / "shop.sqlite", "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1)")
    rng = random.Random(3)
    records = [
        {
            "id": f"r{n:04d}",
            "question": f"q{n}",
            "intent": rng.choice(["sql", "chat", "explain"]),
            "gold_sql": "SELECT 1",
        }
        | {"db_path": "shop.sqlite", "split": rng.choice(["dev", "train"])}
        for n in rng.sample(range(5000), 400)
    ]
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_limited_run_loads_only_its_draw_and_selects_what_the_whole_file_gives(tmp_path: Path) -> None:
    path = _file(tmp_path)
    config = load_run_config(None, dataset="jsonl", dataset_path=str(path), split="dev", limit=7, lm="scripted:basic")
    ds = load_dataset(config)
    assert ds.drawn == run_draw(config) == Draw(7, "dev", None) and len(ds.examples) == 7
    whole_config = load_run_config(None, dataset="jsonl", dataset_path=str(path), split="dev", lm="scripted:basic")
    whole = load_dataset(whole_config)
    assert whole.drawn is None and len(whole.examples) == 400
    assert select(ds, config) == select(whole, config)  # the same examples in the same schedule


def test_routerlab_run_with_a_limit_reads_its_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the size line and the plan share one load: the records are parsed once, not once per step
    path = _file(tmp_path)
    opened: list[str] = []
    real_open = Path.open

    def counted(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if self.resolve() == path.resolve():
            opened.append(mode)
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counted)
    config = load_run_config(None, dataset="jsonl", dataset_path=str(path), split="dev", limit=5, lm="scripted:basic")
    drawn = select(load_dataset(config), config)
    one_load, opened[:] = sorted(opened), []
    store = tmp_path / "r.duckdb"
    args = ["run", "--dataset", "jsonl", "--dataset-path", str(path), "--split", "dev", "--limit", "5"]
    args += ["--router", "rules", "--lm", "scripted:basic", "--no-mlflow", "--store", str(store)]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    # one load opens the file twice: its records read as text, its bytes hashed for the version
    assert one_load == ["r", "rb"] and sorted(opened) == one_load, opened
    assert result.output.splitlines()[0].strip() == "5 example(s) x 1 router(s)"
    (run_id,) = ResultsStore(store, read_only=True).runs()["run_id"]
    stored = ResultsStore(store, read_only=True).results(run_id)
    assert sorted(r.example_id for r in stored) == sorted(e.id for e in drawn)  # the same sample


def test_a_sweep_loads_a_dataset_once_per_draw() -> None:
    # a loader that draws loads a split and limit's examples only: cells differing there share nothing
    keys = {
        DatasetEntry("jsonl", {"path": "q.jsonl"}, split=s, limit=n).load_key for s in ("dev", "train") for n in (5, 9)
    }
    assert len(keys) == 4
