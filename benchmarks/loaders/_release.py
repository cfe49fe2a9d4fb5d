"""The skeleton shared by loaders of a benchmark release (Spider, BIRD).

Such a release ships a JSON file of records per split and one SQLite database per ``db_id``.

A loader describes its release once (:class:`Release`) and turns one record into example fields
(:data:`RecordReader`); :func:`load_release` does the rest: argument checks, the directory and
file checks with fix-it messages, record validation, database paths, the version hash.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from routerlab.benchmarks.dataset import Dataset
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders._common import (
    check_choice,
    check_limit,
    data_version,
    read_json,
    require_dir,
    require_file,
    require_list,
    require_object,
    require_records,
    require_str,
    sqlite_example,
    sqlite_path,
    take,
)

__all__ = ["RecordReader", "Release", "load_release"]


@dataclass(frozen=True)
class Release:
    """How a release lays out its files.

    Attributes:
        name: The dataset's registry name (``spider``), also the prefix of default example ids.
        title: Its name in messages (``Spider``).
        layout: One line describing the expected layout, quoted in fix-it messages.
        files: ``split -> (questions file, databases directory)``.
        sql_field: The record key holding the gold SQL (``query``, ``SQL``).
        missing_fix: ``split -> fix`` for a missing questions file (private test sets say so).
        extra_version_files: ``split -> files`` hashed into the version when they exist
            (a schema file such as ``tables.json``).
        fallback_db_dir: A databases directory to use when the split's own is missing.
    """

    name: str
    title: str
    layout: str
    files: dict[str, tuple[str, str]]
    sql_field: str
    missing_fix: Callable[[str], str]
    extra_version_files: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fallback_db_dir: str | None = None

    def recognizes(self, path: Path) -> bool:
        """Whether ``path`` is a directory with a split's questions file next to its databases folder.

        Spider keeps its databases in ``database/``, BIRD in ``dev_databases/`` (per split), so a
        questions file alone (both have ``dev.json``) cannot tell them apart; the pair can.
        """
        if not path.is_dir():
            return False
        dirs = [d for d in (*(d for _, d in self.files.values()), self.fallback_db_dir) if d]
        questions = any((path / q).is_file() for q, _ in self.files.values())
        return questions and any((path / d).is_dir() for d in dirs)


RecordReader = Callable[[dict[str, Any], int, Path, str, str], dict[str, Any]]
"""``(record, index, file, label, split) -> extra example fields`` (``id``, ``hint``, ``meta``...).

Raise a ``DatasetError`` (``field_error``) for a malformed field; the common fields (question,
db_id, gold SQL, database path, difficulty, split) are filled in by :func:`load_release`.
"""


def load_release(release: Release, path: str, split: str, limit: int, read: RecordReader) -> Dataset:
    """Load one split of a release.

    Args:
        release: The release's layout.
        path: Its directory on disk.
        split: A key of ``release.files``.
        limit: Load only the first ``limit`` records (0: all).
        read: Extra fields of one record.

    Returns:
        ``sql`` examples, one per record, with ``meta["record"]`` the record's index.

    Raises:
        DatasetError: Missing directory, file or database, or a malformed record.
        ConfigError: An unknown split or a negative limit.
    """
    check_choice("split", split, tuple(release.files))
    limit = check_limit(limit)
    root = require_dir(Path(path), what=release.title, layout=release.layout)
    questions_name, db_dir = release.files[split]
    file = require_file(root / questions_name, what=f"{release.title} {split} file", fix=release.missing_fix(split))
    db_root = root / db_dir
    if not db_root.is_dir() and release.fallback_db_dir:
        db_root = root / release.fallback_db_dir
    records = require_records(require_list(read_json(file), file, what=f"{release.title} records"), file)
    found: dict[str, bool] = {}
    examples: list[Example] = []
    for i, raw in enumerate(take(records, limit)):
        label = f"record {i}"
        rec = require_object(raw, file, label)
        extra = read(rec, i, file, label, split)
        db_id = require_str(rec, "db_id", file, label)
        question = require_str(rec, "question", file, label)
        sql = require_str(rec, release.sql_field, file, label)
        fields: dict[str, Any] = {
            "id": f"{release.name}-{split}-{i:04d}",
            "question": question,
            "db_id": db_id,
            "db_path": str(sqlite_path(db_root, db_id, file, label, found)),
            "intent": "sql",
            "gold_sql": sql,
            "split": split,
            "dataset": release.name,
            "meta": {"record": i},
        }
        meta = {**fields["meta"], **extra.pop("meta", {})}
        examples.append(sqlite_example(file, label, **{**fields, **extra, "meta": meta}))
    extra_files = [root / name for name in release.extra_version_files.get(split, ())]
    return Dataset(
        name=release.name,
        version=data_version(file, *[p for p in extra_files if p.is_file()]),
        examples=examples,
        source=str(root.resolve()),
        meta={"split": split, "file": str(file.resolve()), "records": str(len(records))},
    )
