"""The ``sparc`` and ``cosql`` datasets: the Spider family's conversations, one example per turn.

SParC (Yu et al., ACL 2019) and CoSQL's SQL-state-tracking task (Yu et al., EMNLP 2019) share one
official layout::

    <path>/dev.json      records: database_id, interaction: [{utterance, query}, ...], final
    <path>/train.json    the train split (CoSQL names its files cosql_dev.json / cosql_train.json)
    <path>/tables.json   the schemas (hashed into the version when present)
    <db dir>/<database_id>/<database_id>.sqlite

Every turn becomes an :class:`Example` carrying its ``conversation`` id, its ``turn`` (from 1)
and the conversation's number of ``turns``, like the built-in conversations, so ``routerlab run``
replays a conversation's turns in order and ``routerlab route`` decides each turn with the
earlier ones as its history.

* ``sparc``: every turn is a data question (intent ``sql``) with its gold SQL.
* ``cosql``: a user turn that led to a clarification exchange is written as one turn,
  ``question | clarifying question | user's reply``: its gold intent is ``clarify``, the reply is
  the scripted ``user_reply``, the clarifying question is kept in ``meta["clarifying_question"]``
  and its gold SQL is what the assistant runs after the reply. (A turn with several exchanges,
  ``q | c1 | r1 | c2 | r2``, keeps every clarifying question and joins the replies.)

The releases store their queries tokenized (``count ( * )``), which SQLite reads, except for a
comparison operator split in two (``> =``, ``< =``, ``! =``, ``< >``): the loader joins those
outside string literals, so the gold query runs (10 of cosql-dev-a's 400 turns); the query as
released is kept in ``meta["released_query"]`` when it changed.

``final`` (the conversation's goal question and its SQL) is kept in every turn's
``meta["final"]``; it is not a turn and is never scored.

The databases are looked up in ``db_dir`` when given (``--db-dir``, config
``dataset_args.db_dir``), else in ``<path>/database``, else in the ``database/`` folder of a
sibling directory holding every database the conversations name (``../spider-dev-a/database``
for the shared dev parts, which reuse Spider's databases as the official releases do).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routerlab.agents.errors import DatasetError
from routerlab.benchmarks.dataset import Dataset, dataset
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders._common import (
    check_choice,
    check_limit,
    data_version,
    field_error,
    read_json,
    require_dir,
    require_file,
    require_items,
    require_list,
    require_object,
    require_records,
    require_str,
    sqlite_example,
    sqlite_path,
    take,
)

__all__ = [
    "ConversationRelease",
    "TurnFields",
    "cosql_turn",
    "join_operators",
    "load_conversations",
    "load_cosql",
    "load_sparc",
]

TurnFields = Callable[[str, Path, str], dict[str, Any]]
"""``(utterance, file, label) -> example fields`` of one turn (``question``, ``intent``...)."""


@dataclass(frozen=True)
class ConversationRelease:
    """How a conversational release lays out its files and reads a turn.

    Attributes:
        name: The dataset's registry name, also the prefix of example and conversation ids.
        title: Its name in messages.
        files: ``split -> questions file names``, the first existing one is read.
        turn: Example fields of one utterance.
    """

    name: str
    title: str
    files: dict[str, tuple[str, ...]]
    turn: TurnFields

    @property
    def layout(self) -> str:
        """One line describing the expected layout, quoted in fix-it messages."""
        names = " or ".join(n for names in self.files.values() for n in names)
        return f"{names} (records: database_id, interaction, final), tables.json, database/<db_id>/<db_id>.sqlite"


def sparc_turn(utterance: str, file: Path, label: str) -> dict[str, Any]:
    """A SParC turn: a data question."""
    return {"question": utterance.strip(), "intent": "sql"}


def cosql_turn(utterance: str, file: Path, label: str) -> dict[str, Any]:
    """A CoSQL turn: a data question, or ``question | clarifying question | reply`` (intent clarify).

    Raises:
        DatasetError: A ``|``-separated utterance without a reply for each clarifying question.
    """
    parts = [p.strip() for p in utterance.split("|")]
    if len(parts) == 1:
        return {"question": parts[0], "intent": "sql"}
    if len(parts) % 2 == 0 or not all(parts):
        raise field_error(
            file,
            label,
            "utterance",
            "malformed clarification exchange",
            expected="'question | clarifying question | user reply' (each part non-empty, one reply per question)",
            found=repr(utterance)[:120],
            fix="write the exchange as three '|'-separated parts, or remove the '|'",
        )
    return {
        "question": parts[0],
        "intent": "clarify",
        "user_reply": " ".join(parts[2::2]),
        "meta": {"clarifying_question": " | ".join(parts[1::2])},
    }


SPARC = ConversationRelease(
    name="sparc", title="SParC", files={"dev": ("dev.json",), "train": ("train.json",)}, turn=sparc_turn
)
COSQL = ConversationRelease(
    name="cosql",
    title="CoSQL",
    files={"dev": ("dev.json", "cosql_dev.json"), "train": ("train.json", "cosql_train.json")},
    turn=cosql_turn,
)


#: a quoted SQL string or identifier: operators inside one are left alone
_QUOTED = re.compile(r"""('(?:[^']|'')*'|"(?:[^"]|"")*")""")
_SPLIT_OPERATOR = re.compile(r"([<>!])\s+=|<\s+>")


def join_operators(sql: str) -> str:
    """``sql`` with the comparison operators the releases' tokenization split (``> =``) joined again."""
    parts = _QUOTED.split(sql)
    # even parts are outside quotes (re.split keeps the captured quoted parts at odd indices)
    return "".join(
        _SPLIT_OPERATOR.sub(lambda m: f"{m.group(1)}=" if m.group(1) else "<>", p) if i % 2 == 0 else p
        for i, p in enumerate(parts)
    )


def _final(rec: dict[str, Any], file: Path, label: str) -> dict[str, str] | None:
    """The record's goal question and SQL, or None when it has no ``final``."""
    raw = rec.get("final")
    if raw is None:
        return None
    final = require_object(raw, file, f"{label} final")
    return {
        "utterance": require_str(final, "utterance", file, f"{label} final"),
        "query": require_str(final, "query", file, f"{label} final"),
    }


def _database_ids(records: list[Any]) -> set[str]:
    return {r["database_id"] for r in records if isinstance(r, dict) and isinstance(r.get("database_id"), str)}


def _db_root(root: Path, db_dir: str | None, needed: set[str]) -> Path:
    """Where the databases are: ``db_dir``, ``<root>/database``, else a sibling's ``database/``."""
    if db_dir is not None:
        path = Path(db_dir)
        if not path.is_dir():
            raise DatasetError(
                f"database directory not found: {path}",
                expected="a directory holding <db_id>/<db_id>.sqlite for every database_id",
                found="a file" if path.exists() else "no such directory",
                fix="pass the folder of the databases with --db-dir (dataset_args.db_dir in a run config)",
                details={"option": "--db-dir", "file": str(path)},
            )
        return path
    own = root / "database"
    if own.is_dir():
        return own
    # the official dev parts reuse Spider's databases: a sibling release that holds all of them
    for sibling in sorted(p / "database" for p in root.resolve().parent.iterdir() if p.is_dir()):
        if sibling.is_dir() and all((sibling / d / f"{d}.sqlite").is_file() for d in needed):
            return sibling
    # nothing found: point at the conventional place (the record naming a missing one says so)
    return own


def _database(db_root: Path, db_id: str, file: Path, label: str, found: dict[str, bool]) -> Path:
    """The conversation's SQLite file; a missing one names the conversation, turn and ``--db-dir``."""
    try:
        return sqlite_path(db_root, db_id, file, label, found)
    except DatasetError as exc:
        raise DatasetError(
            exc.what,
            expected=exc.expected,
            found=exc.found,
            fix=f"pass the folder holding <db_id>/<db_id>.sqlite with --db-dir (dataset_args.db_dir), or {exc.fix}",
            details=exc.details,
        ) from None


def load_conversations(release: ConversationRelease, path: str, split: str, limit: int, db_dir: str | None) -> Dataset:
    """Load one split of a conversational release, one example per turn.

    Args:
        release: The release's layout and turn reader.
        path: Its directory.
        split: A key of ``release.files``.
        limit: Load only the first ``limit`` conversations (0: all).
        db_dir: The databases' folder, when not beside the JSON (see the module docstring).

    Returns:
        Examples with ids ``<name>-<split>-<conversation>-t<turn>``, conversations
        ``<name>-<split>-<conversation>`` (the record's index, 4 digits).

    Raises:
        DatasetError: Missing directory, file or database (naming the conversation and turn), or
            a malformed record.
        ConfigError: An unknown split or a negative limit.
    """
    check_choice("split", split, tuple(release.files))
    limit = check_limit(limit)
    root = require_dir(Path(path), what=release.title, layout=release.layout)
    names = release.files[split]
    file = next((root / n for n in names if (root / n).is_file()), root / names[0])
    require_file(
        file, what=f"{release.title} {split} file", fix=f"pass the {release.title} directory ({release.layout})"
    )
    records = require_records(require_list(read_json(file), file, what=f"{release.title} conversations"), file)
    chosen = take(records, limit)
    db_root = _db_root(root, db_dir, _database_ids(chosen))
    found: dict[str, bool] = {}
    examples: list[Example] = []
    for i, raw in enumerate(chosen):
        conversation = f"{release.name}-{split}-{i:04d}"
        label = f"conversation {conversation} (record {i})"
        rec = require_object(raw, file, label)
        db_id = require_str(rec, "database_id", file, label)
        turns = require_items(
            rec,
            "interaction",
            file,
            label,
            problem="no turns",
            expected="a non-empty list of {utterance, query} turns",
            fix="give the conversation its turns, or remove the record",
        )
        final = _final(rec, file, label)
        for t, raw_turn in enumerate(turns, start=1):
            turn_label = f"conversation {conversation} turn {t} (record {i})"
            turn = require_object(raw_turn, file, turn_label)
            db_path = _database(db_root, db_id, file, turn_label, found)
            released = require_str(turn, "query", file, turn_label)
            sql = join_operators(released)
            fields = release.turn(require_str(turn, "utterance", file, turn_label), file, turn_label)
            meta = {"record": i, **fields.pop("meta", {}), **({"final": final} if final else {})}
            if sql != released:
                meta["released_query"] = released
            examples.append(
                sqlite_example(
                    file,
                    turn_label,
                    id=f"{conversation}-t{t}",
                    db_id=db_id,
                    db_path=str(db_path),
                    gold_sql=sql,
                    split=split,
                    dataset=release.name,
                    conversation=conversation,
                    turn=t,
                    turns=len(turns),
                    meta=meta,
                    **fields,
                )
            )
    tables = root / "tables.json"
    return Dataset(
        name=release.name,
        version=data_version(file, *([tables] if tables.is_file() else [])),
        examples=examples,
        source=str(root.resolve()),
        meta={
            "split": split,
            "file": str(file.resolve()),
            "records": str(len(records)),
            "db_dir": str(db_root.resolve()),
        },
    )


@dataset("sparc")
def load_sparc(path: str, split: str = "dev", limit: int = 0, db_dir: str | None = None) -> Dataset:
    """Load one split of SParC, one ``sql`` example per turn (layout in the module docstring).

    Args:
        path: The SParC directory.
        split: ``dev`` or ``train``.
        limit: Load only the first ``limit`` conversations (0: all).
        db_dir: The databases' folder when it is not ``<path>/database``.

    Raises:
        DatasetError: Missing directory, file or database, or a malformed record.
        ConfigError: An unknown split or a negative limit.
    """
    return load_conversations(SPARC, path, split, limit, db_dir)


@dataset("cosql")
def load_cosql(path: str, split: str = "dev", limit: int = 0, db_dir: str | None = None) -> Dataset:
    """Load one split of CoSQL's SQL-state-tracking task, one example per turn.

    A clarification exchange ``question | clarifying question | reply`` is a ``clarify`` turn
    whose scripted reply is the user's and whose gold SQL runs after the reply. Arguments and
    errors as :func:`load_sparc`'s (both are :func:`load_conversations` over their release).
    """
    return load_conversations(COSQL, path, split, limit, db_dir)
