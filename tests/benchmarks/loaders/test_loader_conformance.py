"""Every registered loader passes the same suite. A new loader is done when it passes unchanged.

Like ``tests/routers/test_conformance.py`` for routers: parametrized over ``dataset.names()``, so
a loader added as one new file in ``benchmarks/loaders/`` runs through it with no edit here. Every
loader gets the contract checks (documented, bad input is a clear routerlab error, a declared
layout check answers a bool). Loaders this suite has a sample input for (real files from this
folder's conftest) or that need no input are also loaded, and their datasets checked.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import routerlab.benchmarks.builtin
import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
from routerlab.agents.errors import ConfigError, RouterlabError
from routerlab.agents.plan import CHAINS
from routerlab.agents.state import INTENTS
from routerlab.benchmarks.dataset import Dataset, dataset, layout_loaders
from routerlab.benchmarks.example import SPLITS

#: real inputs for the built-in loaders that read files, from the fixtures of this folder's conftest
SAMPLES: dict[str, Callable[[pytest.FixtureRequest], dict[str, Any]]] = {
    "spider": lambda rq: {"path": str(rq.getfixturevalue("spider_dir"))},
    "bird": lambda rq: {"path": str(rq.getfixturevalue("bird_dir"))},
    "text2sql_data": lambda rq: dict(zip(("path", "db"), map(str, rq.getfixturevalue("geo_files")), strict=True)),
    "jsonl": lambda rq: {"path": str(rq.getfixturevalue("jsonl_file")), "db": str(rq.getfixturevalue("shop_db"))},
    "csv": lambda rq: {"path": str(rq.getfixturevalue("csv_file")), "db": str(rq.getfixturevalue("shop_db"))},
    "sparc": lambda rq: {
        "path": str(rq.getfixturevalue("conversations_dir")),
        "db_dir": str(rq.getfixturevalue("spider_dir") / "database"),
    },
    "cosql": lambda rq: {
        "path": str(rq.getfixturevalue("conversations_dir")),
        "db_dir": str(rq.getfixturevalue("spider_dir") / "database"),
    },
    "mixed": lambda rq: {
        "path": str(rq.getfixturevalue("jsonl_file")),
        "db": str(rq.getfixturevalue("shop_db")),
        "seed": 1,
    },
}


def _params(name: str) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(dataset.get(name)).parameters)


def _required(name: str) -> list[str]:
    return [p.name for p in _params(name).values() if p.default is inspect.Parameter.empty]


def _sample(name: str, request: pytest.FixtureRequest) -> dict[str, Any] | None:
    if name in SAMPLES:
        return SAMPLES[name](request)
    return {} if not _required(name) else None


@pytest.mark.parametrize("name", dataset.names())
def test_is_documented(name):
    assert (dataset.get(name).__doc__ or "").strip(), f"loader {name!r} has no docstring"


@pytest.mark.parametrize("name", dataset.names())
def test_a_missing_file_is_a_clear_error(name, tmp_path, sales_db):
    """A path that does not exist raises a routerlab error (expected / found / fix), not an OSError."""
    params = _params(name)
    if "path" not in params:
        pytest.skip(f"{name} reads no path")
    args = {p: str(sales_db) if p == "db" else str(tmp_path / f"missing-{p}") for p in _required(name)}
    args["path"] = str(tmp_path / "no-such-dataset")
    with pytest.raises(RouterlabError) as info:
        dataset.build(name, **args)
    assert "fix" in str(info.value).lower() or getattr(info.value, "fix", None)


@pytest.mark.parametrize("name", dataset.names())
def test_a_negative_limit_is_refused(name, request):
    if "limit" not in _params(name):
        pytest.skip(f"{name} takes no limit")
    args = _sample(name, request)
    if args is None:
        pytest.skip(f"no sample input for {name}")
    with pytest.raises(ConfigError):
        dataset.build(name, **args, limit=-1)


@pytest.mark.parametrize("name", dataset.names())
def test_a_declared_layout_check_answers_a_bool(name, tmp_path):
    check = layout_loaders().get(name)
    if check is None:
        pytest.skip(f"{name} declares no layout")
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "empty", tmp_path / "no-such-thing", tmp_path / "x.txt"):
        assert check(path) in (True, False)
    assert check(tmp_path / "no-such-thing") is False


@pytest.mark.parametrize("name", dataset.names())
def test_loads_a_consistent_dataset(name, request):
    args = _sample(name, request)
    if args is None:
        pytest.skip(f"no sample input for {name}: add one to SAMPLES to load it here")
    ds = dataset.build(name, **args)
    assert isinstance(ds, Dataset)
    assert ds.examples, f"{name} loaded no example"
    ids = [(e.id, e.turn) for e in ds.examples]
    assert len(ids) == len(set(ids)), f"{name}: duplicate example ids"
    for e in ds.examples:
        assert e.intent in INTENTS, f"{name} {e.id}: intent {e.intent!r}"
        assert e.split is None or e.split in SPLITS, f"{name} {e.id}: split {e.split!r}"
        assert Path(e.db_path).is_file(), f"{name} {e.id}: no database at {e.db_path}"
        if e.intent in ("sql", "fix"):
            assert e.gold_sql, f"{name} {e.id}: a {e.intent} example without gold SQL"
        if e.conversation is None:
            assert tuple(e.expected_chain) == CHAINS[e.intent], f"{name} {e.id}: chain {e.expected_chain}"
    # loading is deterministic: the same arguments give the same examples
    assert dataset.build(name, **args).digest() == ds.digest()
