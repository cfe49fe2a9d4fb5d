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

from routerlab.benchmarks.dataset import Dataset, dataset
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders._common import (
    build_example,
    check_choice,
    check_limit,
    data_version,
    hardness,
    read_json,
    require_dir,
    require_file,
    require_list,
    require_object,
    require_records,
    require_str,
    sqlite_path,
    take,
)

__all__ = ["LAYOUT", "load_spider"]

LAYOUT = "dev.json, train_spider.json, tables.json and database/<db_id>/<db_id>.sqlite"

#: split -> (questions file, tables file, databases directory)
_FILES: dict[str, tuple[str, str, str]] = {
    "dev": ("dev.json", "tables.json", "database"),
    "train": ("train_spider.json", "tables.json", "database"),
    "test": ("test.json", "test_tables.json", "test_database"),
}


@dataset("spider")
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
    check_choice("split", split, tuple(_FILES))
    limit = check_limit(limit)
    root = require_dir(Path(path), what="Spider", layout=LAYOUT)
    questions_name, tables_name, db_dir = _FILES[split]
    file = require_file(
        root / questions_name,
        what=f"Spider {split} file",
        fix=(
            "Spider's public release has no test questions: use split='dev' or 'train'"
            if split == "test"
            else f"download Spider and pass its directory (layout: {LAYOUT})"
        ),
    )
    db_root = root / db_dir
    if split == "test" and not db_root.is_dir():
        db_root = root / "database"  # some copies keep the test databases with the others
    records = require_records(require_list(read_json(file), file, what="Spider records"), file)
    found: dict[str, bool] = {}
    examples: list[Example] = []
    for i, raw in enumerate(take(records, limit)):
        label = f"record {i}"
        rec = require_object(raw, file, label)
        db_id = require_str(rec, "db_id", file, label)
        question = require_str(rec, "question", file, label)
        sql = require_str(rec, "query", file, label)
        examples.append(
            build_example(
                file,
                label,
                id=f"spider-{split}-{i:04d}",
                question=question,
                db_id=db_id,
                db_path=str(sqlite_path(db_root, db_id, file, label, found)),
                intent="sql",
                gold_sql=sql,
                difficulty=hardness(sql, "sqlite"),
                split=split,
                dataset="spider",
                meta={"record": i},
            )
        )
    tables = root / tables_name
    sources = [file, tables] if tables.is_file() else [file]
    return Dataset(
        name="spider",
        version=data_version(*sources),
        examples=examples,
        source=str(root.resolve()),
        meta={"split": split, "file": str(file.resolve()), "records": str(len(records))},
    )
