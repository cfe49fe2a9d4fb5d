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

from routerlab.benchmarks.dataset import Dataset, dataset, recognizes
from routerlab.benchmarks.loaders._common import field_error, get_str
from routerlab.benchmarks.loaders._release import Release, load_release

__all__ = ["LAYOUT", "load_bird"]

LAYOUT = "dev.json and dev_databases/<db_id>/<db_id>.sqlite (train: train.json, train_databases/)"

_RELEASE = Release(
    name="bird",
    title="BIRD",
    layout=LAYOUT,
    # BIRD keeps its test set private
    files={
        "dev": ("dev.json", "dev_databases"),
        "train": ("train.json", "train_databases"),
        "test": ("test.json", "test_databases"),
    },
    sql_field="SQL",
    missing_fix=lambda split: (
        "BIRD's test set is not public: use split='dev' or 'train'"
        if split == "test"
        else f"unpack BIRD's {split} archive and pass its directory (layout: {LAYOUT})"
    ),
)


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


class _BirdRecords:
    """Reads BIRD's own fields (question id, evidence, difficulty), rejecting duplicate ids."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def __call__(self, rec: dict[str, Any], index: int, file: Path, label: str, split: str) -> dict[str, Any]:
        example_id = _example_id(split, index, rec, file, label)
        if example_id in self.seen:
            raise field_error(
                file,
                label,
                "question_id",
                f"duplicate id {example_id!r}",
                expected="a question_id unique within the file",
                found=f"the same id as {self.seen[example_id]}",
                fix="remove the duplicate record",
            )
        self.seen[example_id] = label
        meta: dict[str, Any] = {}
        bird_difficulty = get_str(rec, "difficulty", file, label, required=False)
        if bird_difficulty is not None:
            meta["bird_difficulty"] = bird_difficulty
        hint = get_str(rec, "evidence", file, label, required=False, allow_empty=True) or ""
        return {"id": example_id, "hint": hint, "meta": meta}


@dataset("bird")
@recognizes(_RELEASE.recognizes)
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
    return load_release(_RELEASE, path, split, limit, _BirdRecords())
