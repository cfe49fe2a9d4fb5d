"""The ``spider`` dataset: Spider 1.0 (Yu et al., 2018) read from its release directory.

Expected layout::

    <path>/dev.json                      dev split   (records: db_id, question, query)
    <path>/train_spider.json             train split
    <path>/test.json                     test split, if you have it (with test_database/)
    <path>/tables.json                   schemas (optional here; hashed into the version)
    <path>/database/<db_id>/<db_id>.sqlite

The release's ``train_others.json`` (questions on other databases) is not loaded.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

from routerlab.agents.registry import Range
from routerlab.benchmarks.dataset import Dataset, dataset, recognizes
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders._release import Release, load_release

__all__ = ["LAYOUT", "load_spider", "sample_by_database"]

LAYOUT = "dev.json, train_spider.json, tables.json and database/<db_id>/<db_id>.sqlite"

_RELEASE = Release(
    name="spider",
    title="Spider",
    layout=LAYOUT,
    files={
        "dev": ("dev.json", "database"),
        "train": ("train_spider.json", "database"),
        "test": ("test.json", "test_database"),
    },
    sql_field="query",
    missing_fix=lambda split: (
        "Spider's public release has no test questions: use split='dev' or 'train'"
        if split == "test"
        else f"download Spider and pass its directory (layout: {LAYOUT})"
    ),
    extra_version_files={"dev": ("tables.json",), "train": ("tables.json",), "test": ("test_tables.json",)},
    # some copies keep the test databases with the others
    fallback_db_dir="database",
)


def _no_extra_fields(rec: dict[str, Any], index: int, file: Path, label: str, split: str) -> dict[str, Any]:
    return {}


@dataset("spider")
@recognizes(_RELEASE.recognizes)
def load_spider(
    path: str,
    split: str = "dev",
    limit: int = 0,
    sample: Annotated[int, Range(0)] = 0,
    seed: int = 0,
) -> Dataset:
    """Load one split of Spider.

    Args:
        path: The Spider directory (see the module docstring for its layout).
        split: ``dev`` (``dev.json``), ``train`` (``train_spider.json``) or ``test``
            (``test.json``, only in the later full release).
        limit: Load only the first ``limit`` records (0: all).
        sample: Keep a seeded subset of this many questions stratified by database
            (:func:`sample_by_database`; 0: all). ``--limit`` takes the first N by id, which
            follows the file's order of databases; a sample keeps every database's share.
        seed: Which questions the sample keeps within each database.

    Returns:
        The dataset ``spider``: ``sql`` examples with ids ``spider-<split>-<index>``.

    Raises:
        DatasetError: Missing directory, file or database, or a malformed record.
        ConfigError: An unknown split or a negative limit.
    """
    ds = load_release(_RELEASE, path, split, limit, _no_extra_fields)
    return sample_by_database(ds, sample, seed=seed) if sample else ds


def _rank(seed: int, example_id: str) -> str:
    return hashlib.sha256(f"{seed}:{example_id}".encode()).hexdigest()


def sample_by_database(ds: Dataset, n: int, *, seed: int = 0) -> Dataset:
    """``n`` examples of ``ds``, each database's share proportional to its question count.

    Shares are rounded by largest remainder (ties to the database with more questions, then by
    name), so they sum to ``n`` exactly; within a database the examples with the smallest
    ``sha256(f"{seed}:{id}")`` are kept. The subset depends on ids and the seed only, never on
    the questions' text or on any system's answers, and the same call gives the same subset.

    Args:
        ds: A loaded dataset.
        n: How many examples to keep (at least 1; all of them when ``n`` is at least their number).
        seed: Picks the examples within each database.
    """
    if n >= len(ds.examples):
        return ds
    by_db: dict[str, list[Example]] = defaultdict(list)
    for e in ds.examples:
        by_db[e.db_id].append(e)
    total = len(ds.examples)
    exact = {db: n * len(items) / total for db, items in by_db.items()}
    shares = {db: int(x) for db, x in exact.items()}
    order = sorted(by_db, key=lambda db: (-(exact[db] - shares[db]), -len(by_db[db]), db))
    for db in order[: n - sum(shares.values())]:
        shares[db] += 1
    kept = {e.id for db, items in by_db.items() for e in sorted(items, key=lambda e: _rank(seed, e.id))[: shares[db]]}
    return replace(
        ds,
        examples=[e for e in ds.examples if e.id in kept],
        meta={**ds.meta, "sample": str(n), "sample_seed": str(seed), "sample_by": "database"},
    )
