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

from pathlib import Path
from typing import Any

from routerlab.benchmarks.dataset import Dataset, dataset, recognizes
from routerlab.benchmarks.loaders._release import Release, load_release

__all__ = ["LAYOUT", "load_spider"]

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
def load_spider(path: str, split: str = "dev", limit: int = 0) -> Dataset:
    """Load one split of Spider.

    Args:
        path: The Spider directory (see the module docstring for its layout).
        split: ``dev`` (``dev.json``), ``train`` (``train_spider.json``) or ``test``
            (``test.json``, only in the later full release).
        limit: Load only the first ``limit`` records (0: all).

    Returns:
        The dataset ``spider``: ``sql`` examples with ids ``spider-<split>-<index>``.

    Raises:
        DatasetError: Missing directory, file or database, or a malformed record.
        ConfigError: An unknown split or a negative limit.
    """
    return load_release(_RELEASE, path, split, limit, _no_extra_fields)
