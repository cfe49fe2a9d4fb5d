"""The ``bird`` dataset: BIRD (Li et al., 2023) read from its release directory.

Expected layout::

    <path>/dev.json                                    dev split
    <path>/dev_databases/<db_id>/<db_id>.sqlite
    <path>/train.json                                  train split
    <path>/train_databases/<db_id>/<db_id>.sqlite

Each record has ``db_id``, ``question``, ``evidence`` (becomes the example's ``hint``), ``SQL``
and, in dev, ``question_id`` and ``difficulty`` (simple/moderate/challenging, kept in
``meta["bird_difficulty"]``; the example's own ``difficulty`` is the Spider hardness of the SQL).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from routerlab.benchmarks.dataset import Dataset, dataset
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders._common import (
    build_example,
    check_choice,
    check_limit,
    data_version,
    field_error,
    get_str,
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

__all__ = ["LAYOUT", "load_bird"]

LAYOUT = "dev.json and dev_databases/<db_id>/<db_id>.sqlite (train: train.json, train_databases/)"

#: split -> (questions file, databases directory); BIRD keeps its test set private
_FILES: dict[str, tuple[str, str]] = {
    "dev": ("dev.json", "dev_databases"),
    "train": ("train.json", "train_databases"),
    "test": ("test.json", "test_databases"),
}


def _example_id(split: str, index: int, rec: dict[str, Any], file: Path, label: str) -> str:
    qid = rec.get("question_id")
    if qid is None:
        return f"bird-{split}-{index:04d}"  # train.json has no question ids
    if isinstance(qid, bool) or not isinstance(qid, int | str) or not str(qid).strip():
        raise field_error(
            file,
            label,
            "question_id",
            "not an id",
            expected="an integer or a non-empty string",
            found=repr(qid),
            fix="fix or remove question_id (the record index is used without it)",
        )
    return f"bird-{split}-{qid:04d}" if isinstance(qid, int) else f"bird-{split}-{qid}"


@dataset("bird")
def load_bird(path: str, split: str = "dev", limit: int = 0) -> Dataset:
    """Load one split of BIRD.

    Args:
        path: The BIRD directory (see the module docstring for its layout).
        split: ``dev`` or ``train`` (``test`` reads ``test.json`` if you have one).
        limit: Load only the first ``limit`` records (0: all).

    Returns:
        The dataset ``bird``: ``sql`` examples with the evidence as ``hint``.

    Raises:
        DatasetError: Missing directory, file or database, a malformed record or a duplicate id.
        ConfigError: An unknown split or a negative limit.
    """
    check_choice("split", split, tuple(_FILES))
    limit = check_limit(limit)
    root = require_dir(Path(path), what="BIRD", layout=LAYOUT)
    questions_name, db_dir = _FILES[split]
    file = require_file(
        root / questions_name,
        what=f"BIRD {split} file",
        fix=(
            "BIRD's test set is not public: use split='dev' or 'train'"
            if split == "test"
            else f"unpack BIRD's {split} archive and pass its directory (layout: {LAYOUT})"
        ),
    )
    db_root = root / db_dir
    records = require_records(require_list(read_json(file), file, what="BIRD records"), file)
    found: dict[str, bool] = {}
    seen: dict[str, str] = {}
    examples: list[Example] = []
    for i, raw in enumerate(take(records, limit)):
        label = f"record {i}"
        rec = require_object(raw, file, label)
        example_id = _example_id(split, i, rec, file, label)
        if example_id in seen:
            raise field_error(
                file,
                label,
                "question_id",
                f"duplicate id {example_id!r}",
                expected="a question_id unique within the file",
                found=f"the same id as {seen[example_id]}",
                fix="remove the duplicate record",
            )
        seen[example_id] = label
        db_id = require_str(rec, "db_id", file, label)
        sql = require_str(rec, "SQL", file, label)
        bird_difficulty = get_str(rec, "difficulty", file, label, required=False)
        meta: dict[str, Any] = {"record": i}
        if bird_difficulty is not None:
            meta["bird_difficulty"] = bird_difficulty
        examples.append(
            build_example(
                file,
                label,
                id=example_id,
                question=require_str(rec, "question", file, label),
                db_id=db_id,
                db_path=str(sqlite_path(db_root, db_id, file, label, found)),
                intent="sql",
                gold_sql=sql,
                difficulty=hardness(sql, "sqlite"),
                split=split,
                hint=get_str(rec, "evidence", file, label, required=False, allow_empty=True) or "",
                dataset="bird",
                meta=meta,
            )
        )
    return Dataset(
        name="bird",
        version=data_version(file),
        examples=examples,
        source=str(root.resolve()),
        meta={"split": split, "file": str(file.resolve()), "records": str(len(records))},
    )
