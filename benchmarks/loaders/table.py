"""The generic ``jsonl`` and ``csv`` datasets: one example per line or row.

Recognised keys (CSV columns), all optional except ``question``:

* ``question``: the request;
* ``db_path``: the DuckDB or SQLite file, relative to the data file's directory; records without
  one use the loader's ``db`` argument (relative to the working directory);
* ``gold_sql``, ``intent`` (default ``sql``), ``alt_intents`` (a list, or in CSV a comma or
  space separated string), ``id`` (default ``<file stem>-<index>``), ``split`` (default ``dev``),
  ``hint``, ``user_reply``, ``input_sql``, ``error_text``, ``db_id`` (default: the database
  file's stem), ``difficulty`` (used only when the Spider hardness of ``gold_sql`` cannot be
  computed);
* ``meta`` (JSON Lines only): an object merged into the example's ``meta``;
* ``conversation`` and ``turn``: the id of the conversation a record is a turn of, and its
  position in it (from 1; default: its position among the conversation's records in the file).
  A conversation's turns must be 1..n with no gap or repeat, any intent per turn; ``turns``, if
  given, must be n. ``routerlab run`` replays them in order, ``routerlab route`` decides each with
  the earlier ones as history (docs/metrics.md §10). ``limit`` keeps whole conversations: a
  conversation with a record among the first ``limit`` loads with all its turns.

A run's ``--limit`` reaches the loader as a :class:`~routerlab.benchmarks.dataset.Draw`: the file is
read once and only the drawn records become examples, the same examples the run would take from
the whole file. A single request is held while it is among the ``limit`` smallest ids of its
intent and database (all a stratified draw can take from there); conversation records are all held
(a conversation's turns can be anywhere in the file) but built only when drawn. The records left
out are checked for what the draw reads (a JSON object; id, intent, split, database,
conversation and turn); the checks that only building does (a duplicate id, the other fields) see
the drawn records alone.

Any other key is kept in the example's ``meta``. Empty CSV cells and JSON ``null`` count as missing.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from routerlab.agents.db import open_database
from routerlab.agents.errors import DatabaseError
from routerlab.agents.state import INTENTS
from routerlab.benchmarks.dataset import Dataset, Draw, LayoutCheck, dataset, draws, recognizes
from routerlab.benchmarks.example import SPLITS, Example
from routerlab.benchmarks.loaders._common import (
    build_example,
    check_limit,
    data_version,
    field_error,
    get_str,
    hardness,
    iter_jsonl,
    read_csv,
    require_file,
    require_object,
    require_records,
    require_str,
    take,
)
from routerlab.benchmarks.selection import of_intents, stratified_subset

__all__ = ["KNOWN_KEYS", "load_csv", "load_jsonl"]

KNOWN_KEYS: frozenset[str] = frozenset(
    {
        "question",
        "db_path",
        "gold_sql",
        "intent",
        "alt_intents",
        "id",
        "split",
        "hint",
        "user_reply",
        "input_sql",
        "error_text",
        "db_id",
        "difficulty",
        "meta",
        "conversation",
        "turn",
        "turns",
    }
)

#: string fields copied to the Example as they are (None when missing)
_TEXT_FIELDS: tuple[str, ...] = ("gold_sql", "user_reply", "input_sql", "error_text")


class _Databases:
    """Resolves and checks the database of each record, opening each file once per load."""

    def __init__(self, file: Path, default: str | None) -> None:
        self.file = file
        self.default = str(Path(default).resolve()) if default else None
        self._dialects: dict[str, str] = {}
        # raw db_path -> absolute path: a large file names few databases, resolved once each
        self._resolved: dict[str, str] = {}

    def resolve(self, rec: dict[str, Any], label: str) -> tuple[str, str]:
        """Return ``(absolute db path, sqlglot dialect)`` of a record's database."""
        raw = get_str(rec, "db_path", self.file, label, required=False)
        field = "db_path"
        if raw is not None:
            if raw not in self._resolved:
                path = Path(raw)
                # relative paths follow the data file so a dataset directory can be moved as a whole
                self._resolved[raw] = self._resolve(path if path.is_absolute() else self.file.parent / path, label)
            resolved = self._resolved[raw]
        elif self.default is not None:
            resolved, field = self.default, "db (loader argument)"
        else:
            raise field_error(
                self.file,
                label,
                "db_path",
                "no database for this record",
                expected="a db_path in the record, or the loader's db argument",
                found="neither",
                fix="add db_path to the record, or pass db=<file> (dataset_args.db in the run config)",
            )
        if resolved not in self._dialects:
            try:
                self._dialects[resolved] = open_database(resolved).dialect
            except DatabaseError as exc:
                raise field_error(
                    self.file,
                    label,
                    field,
                    f"database not usable: {exc.what}",
                    expected=exc.expected or "an existing DuckDB or SQLite file",
                    found=f"{resolved}: {exc.found}",
                    fix="fix the path (relative db_path values start at the data file's directory)",
                ) from None
        return resolved, self._dialects[resolved]

    def _resolve(self, path: Path, label: str) -> str:
        """The absolute path of a record's database; a symbolic link loop is the record's error."""
        try:
            return str(path.resolve())
        except (RuntimeError, OSError) as exc:  # Python 3.11 raises RuntimeError for a loop, 3.13 OSError
            raise field_error(
                self.file,
                label,
                "db_path",
                "the path cannot be resolved",
                expected="a path to a DuckDB or SQLite file",
                found=f"{path}: {str(exc).split(':')[0]}",
                fix="fix the symbolic links on the path (one of them points back to itself), or name the file itself",
            ) from None


def _alt_intents(rec: dict[str, Any], file: Path, label: str) -> tuple[str, ...]:
    raw = rec.get("alt_intents")
    if raw is None:
        return ()
    if isinstance(raw, str):
        return tuple(p for p in re.split(r"[,\s]+", raw) if p)
    if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        return tuple(raw)
    raise field_error(
        file,
        label,
        "alt_intents",
        "not a list of intents",
        expected='a list of intent names (CSV: "explain, chat")',
        found=repr(raw)[:120],
        fix="write alt_intents as a list of strings",
    )


def _record_id(rec: dict[str, Any], index: int, file: Path, label: str) -> str:
    raw = rec.get("id")
    if raw is None:
        return f"{file.stem}-{index:04d}"
    if isinstance(raw, bool) or not isinstance(raw, str | int) or not str(raw).strip():
        raise field_error(
            file,
            label,
            "id",
            "not an id",
            expected="a non-empty string or an integer",
            found=repr(raw)[:120],
            fix="fix the id or remove it (the record index is used without it)",
        )
    return str(raw)


def _meta(rec: dict[str, Any], file: Path, label: str) -> dict[str, Any]:
    meta = {k: v for k, v in rec.items() if k not in KNOWN_KEYS and v is not None}
    extra = rec.get("meta")
    if extra is not None:
        if not isinstance(extra, dict):
            raise field_error(
                file,
                label,
                "meta",
                "not an object",
                expected="a JSON object",
                found=repr(extra)[:120],
                fix="write meta as a JSON object, or rename the key",
            )
        meta.update(extra)
    return meta


def _position(rec: dict[str, Any], key: str, file: Path, label: str) -> int | None:
    """An integer >= 1 under ``key`` (a CSV cell holds it as text), or None when absent."""
    raw = rec.get(key)
    if raw is None:
        return None
    text = str(raw).strip()
    if isinstance(raw, bool | float) or not text.isdigit() or int(text) < 1:
        raise field_error(
            file,
            label,
            key,
            f"not a {key} number",
            expected="an integer >= 1",
            found=repr(raw)[:120],
            fix=f"write {key} as 1, 2, 3, ... (or remove it: turns then follow the file's order)",
        )
    return int(text)


def _turns(rows: Sequence[tuple[int, Any]], file: Path) -> dict[int, tuple[str, int, int]]:
    """``line -> (conversation, turn, turns)`` of every record that belongs to a conversation.

    Raises:
        DatasetError: A turn that is not a number, or a conversation whose turns are not 1..n.
    """
    members: dict[str, list[tuple[int, int | None, int | None]]] = {}
    for lineno, raw in rows:
        if not isinstance(raw, dict) or raw.get("conversation") is None:
            continue
        label = f"line {lineno}"
        conv = get_str(raw, "conversation", file, label)
        members.setdefault(str(conv), []).append(
            (lineno, _position(raw, "turn", file, label), _position(raw, "turns", file, label))
        )
    out: dict[int, tuple[str, int, int]] = {}
    for conv, recs in members.items():
        turns = [t if t is not None else k for k, (_, t, _) in enumerate(recs, start=1)]
        n = len(recs)
        if sorted(turns) != list(range(1, n + 1)):
            raise field_error(
                file,
                f"line {recs[0][0]} (conversation {conv!r})",
                "turn",
                "turns are not 1..n",
                expected=f"the conversation's {n} records numbered 1..{n}, each once",
                found=f"turns {sorted(turns)} on lines {[line for line, _, _ in recs]}",
                fix="number the conversation's turns from 1 without gaps or repeats",
            )
        for (lineno, _, declared), turn in zip(recs, turns, strict=True):
            if declared is not None and declared != n:
                raise field_error(
                    file,
                    f"line {lineno} (conversation {conv!r})",
                    "turns",
                    "wrong number of turns",
                    expected=f"{n} (the conversation's records in the file)",
                    found=str(declared),
                    fix="correct turns, or remove it (it is counted from the file)",
                )
            out[lineno] = (conv, turn, n)
    return out


def _limited(rows: Sequence[tuple[int, Any]], limit: int) -> list[tuple[int, Any]]:
    """The first ``limit`` records, plus the other turns of the conversations among them."""
    first = take(rows, limit)
    if not limit:
        return first

    def conversation(record: Any) -> str | None:
        # a conversation that is no string (a list, say) is refused by _turns, naming its line;
        # here it would be an unhashable set member
        value = record.get("conversation") if isinstance(record, dict) else None
        return value if isinstance(value, str) else None

    started = {c for _, r in first if (c := conversation(r)) is not None}
    kept = {lineno for lineno, _ in first}
    return [(lineno, r) for lineno, r in rows if lineno in kept or conversation(r) in started]


def _examples(rows: Sequence[tuple[int, Any]], file: Path, db: str | None, name: str) -> list[Example]:
    """Build the examples of a JSONL or CSV file from ``(line number, record)`` pairs."""
    items = [(index, lineno, raw) for index, (lineno, raw) in enumerate(rows)]
    return _build(items, _turns(rows, file), _Databases(file, db), name)


def _build(
    items: Sequence[tuple[int, int, Any]],
    positions: dict[int, tuple[str, int, int]],
    databases: _Databases,
    name: str,
) -> list[Example]:
    """Build examples from ``(index, line number, record)`` triples.

    Args:
        items: The records, each with its index among the file's records (the default id) and
            its line.
        positions: ``line -> (conversation, turn, turns)`` of the conversations' records.
        databases: Resolves each record's database.
        name: The dataset's name.
    """
    file = databases.file
    seen: dict[str, str] = {}
    examples: list[Example] = []
    for index, lineno, raw in items:
        rec = require_object(raw, file, f"line {lineno}")
        example_id = _record_id(rec, index, file, f"line {lineno}")
        label = f"line {lineno} (id {example_id!r})"
        conversation, turn, turns = positions.get(lineno, (None, 1, 1))
        if example_id in seen:
            raise field_error(
                file,
                label,
                "id",
                f"duplicate id {example_id!r}",
                expected="ids unique within the file",
                found=f"the same id on {seen[example_id]}",
                fix="rename or remove one of the two records",
            )
        seen[example_id] = f"line {lineno}"
        db_path, dialect = databases.resolve(rec, label)
        texts = {f: get_str(rec, f, file, label, required=False) for f in _TEXT_FIELDS}
        own_difficulty = get_str(rec, "difficulty", file, label, required=False)
        examples.append(
            build_example(
                file,
                label,
                record_keys=list(rec),
                id=example_id,
                question=require_str(rec, "question", file, label),
                db_id=get_str(rec, "db_id", file, label, required=False) or Path(db_path).stem,
                db_path=db_path,
                intent=get_str(rec, "intent", file, label, required=False) or "sql",
                alt_intents=_alt_intents(rec, file, label),
                difficulty=hardness(texts["gold_sql"], dialect, own_difficulty),
                split=get_str(rec, "split", file, label, required=False) or "dev",
                hint=get_str(rec, "hint", file, label, required=False, allow_empty=True) or "",
                dataset=name,
                conversation=conversation,
                turn=turn,
                turns=turns,
                meta=_meta(rec, file, label),
                **texts,
            )
        )
    return examples


@dataclass(frozen=True)
class _Candidate:
    """A record as a draw reads it (a :class:`~routerlab.benchmarks.selection.Drawable`), and where it is."""

    id: str
    intent: str
    db_id: str
    split: str
    conversation: str | None
    index: int
    lineno: int
    record: dict[str, Any]
    turn: int = 1


def _candidate(index: int, lineno: int, raw: Any, databases: _Databases) -> _Candidate:
    """What a draw reads of a record, checked as building its example would check it.

    Raises:
        DatasetError: The record is not an object, or its id, intent, split, database or
            conversation is invalid.
    """
    file = databases.file
    rec = require_object(raw, file, f"line {lineno}")
    example_id = _record_id(rec, index, file, f"line {lineno}")
    label = f"line {lineno} (id {example_id!r})"
    values = {
        "intent": get_str(rec, "intent", file, label, required=False) or "sql",
        "split": get_str(rec, "split", file, label, required=False) or "dev",
    }
    for key, allowed in (("intent", INTENTS), ("split", SPLITS)):
        if values[key] not in allowed:
            raise field_error(
                file,
                label,
                key,
                f"invalid example: {key} must be one of {allowed}, got {values[key]!r}",
                expected=f"one of {', '.join(allowed)}",
                found=repr(values[key])[:120],
                fix=f"correct {key!r} in the record",
            )
    db_path, _ = databases.resolve(rec, label)
    return _Candidate(
        id=example_id,
        intent=values["intent"],
        db_id=get_str(rec, "db_id", file, label, required=False) or Path(db_path).stem,
        split=values["split"],
        # as _turns reads it: present means a conversation, and then it must be a string
        conversation=None if rec.get("conversation") is None else get_str(rec, "conversation", file, label),
        index=index,
        lineno=lineno,
        record=rec,
    )


def _draw(
    records: Iterable[tuple[int, Any]], limit: int, spec: Draw, databases: _Databases, name: str
) -> tuple[list[Example], int]:
    """Build only the examples ``spec`` draws, reading ``records`` once.

    The draw is :func:`~routerlab.benchmarks.selection.draw` on the whole file, computed on
    candidates. A single request of intent *i* and database *d* is drawn only if it is among the
    ``spec.limit`` smallest ids of *(i, d)*: the round-robin takes at most ``spec.limit`` requests
    in all, and from *(i, d)* always the smallest ids left (for single requests the first in id
    order; with conversations, the least-drawn database's first). So each *(i, d)* holds at most
    ``spec.limit`` candidates, and drawing from the candidates takes the same examples as drawing
    from every record. Conversation records are all held: their turns are numbered by their
    order in the file, which the last record can still change.

    Args:
        records: ``(line number, record)`` pairs, in file order.
        limit: The loader's own limit: the first ``limit`` records and their conversations (0: all).
        spec: The draw.
        databases: Resolves each record's database.
        name: The dataset's name.

    Returns:
        The drawn examples in file order, and the number of records in the file.
    """
    strata: dict[tuple[str, str], list[_Candidate]] = {}
    talks: list[_Candidate] = []
    started: set[str] = set()
    index = count = 0
    for count, (lineno, raw) in enumerate(records, start=1):
        conversation = raw.get("conversation") if isinstance(raw, dict) else None
        if limit and count > limit and not (isinstance(conversation, str) and conversation in started):
            continue  # as _limited: past the loader's limit, only the turns of conversations begun
        c = _candidate(index, lineno, raw, databases)
        index += 1
        if c.conversation is not None:
            started.add(c.conversation)
            talks.append(c)
        elif spec.split in (None, "all", c.split) and (spec.intents is None or c.intent in spec.intents):
            stratum = strata.setdefault((c.intent, c.db_id), [])
            if len(stratum) < spec.limit or c.id < stratum[-1].id:
                bisect.insort(stratum, c, key=lambda x: x.id)
                del stratum[spec.limit :]
    require_records(range(count), databases.file)
    positions = _turns([(c.lineno, c.record) for c in talks], databases.file)
    talks = [replace(c, turn=positions[c.lineno][1]) for c in talks if spec.split in (None, "all", c.split)]
    drawn = stratified_subset(
        [*of_intents(talks, spec.intents), *(c for s in strata.values() for c in s)], spec.limit, spec.seed
    )
    items = sorted((c.index, c.lineno, c.record) for c in drawn)
    return _build(items, positions, databases, name), count


def _load(
    name: str,
    path: str,
    db: str | None,
    limit: int,
    *,
    read: Callable[[Path], Iterable[tuple[int, Any]]],
    what: str,
    suffix: str,
    draw: Draw | dict[str, Any] | None = None,
) -> Dataset:
    """Load a file of example records: the one body of the ``jsonl`` and ``csv`` loaders.

    Args:
        name: The dataset's name (also each example's ``dataset``).
        path: The file.
        db: Database of the records without ``db_path``.
        limit: The first ``limit`` records (0: all), plus the other turns of their conversations.
        read: The file's reader, giving ``(line number, record)`` pairs.
        what: The file's kind, for the message when it is missing.
        suffix: Its usual suffix, for the fix.
        draw: Build only this draw's examples (see :func:`_draw`); None: every record's.
    """
    limit = check_limit(limit)
    spec = Draw.of(draw) if draw is not None else None
    file = require_file(Path(path), what=what, fix=f"pass an existing {suffix} file as path")
    if spec is not None:
        examples, records = _draw(read(file), limit, spec, _Databases(file, db), name)
    else:
        rows = require_records(list(read(file)), file)
        examples, records = _examples(_limited(rows, limit), file, db, name), len(rows)
    return Dataset(
        name=name,
        version=data_version(file),
        examples=examples,
        source=str(file.resolve()),
        meta={"file": str(file.resolve()), "records": str(records)},
        drawn=spec,
    )


def _file_with_suffix(*suffixes: str) -> LayoutCheck:
    return lambda path: path.is_file() and path.suffix.lower() in suffixes


@dataset("jsonl")
@recognizes(_file_with_suffix(".jsonl", ".ndjson"))
@draws
def load_jsonl(path: str, db: str | None = None, limit: int = 0, draw: Draw | dict[str, Any] | None = None) -> Dataset:
    """Load a JSON Lines file of examples (keys in the module docstring).

    Args:
        path: The ``.jsonl`` file.
        db: Database used by records without ``db_path``.
        limit: Load only the first ``limit`` records (0: all).
        draw: Build only the examples of this draw, reading the file once (a run's ``--limit``).

    Returns:
        The dataset ``jsonl``.

    Raises:
        DatasetError: Missing file or database, invalid JSON, or a malformed record.
        ConfigError: A negative limit.
    """
    return _load("jsonl", path, db, limit, read=iter_jsonl, what="JSON Lines dataset", suffix=".jsonl", draw=draw)


@dataset("csv")
@recognizes(_file_with_suffix(".csv"))
@draws
def load_csv(path: str, db: str | None = None, limit: int = 0, draw: Draw | dict[str, Any] | None = None) -> Dataset:
    """Load a CSV file of examples with a header row (columns in the module docstring).

    Args:
        path: The ``.csv`` file.
        db: Database used by rows without ``db_path``.
        limit: Load only the first ``limit`` rows (0: all).
        draw: Build only the examples of this draw (a run's ``--limit``; the rows are parsed
            whole, the examples built for the drawn rows alone).

    Returns:
        The dataset ``csv``.

    Raises:
        DatasetError: Missing file or database, malformed CSV, or a malformed row.
        ConfigError: A negative limit.
    """
    return _load("csv", path, db, limit, read=read_csv, what="CSV dataset", suffix=".csv", draw=draw)
