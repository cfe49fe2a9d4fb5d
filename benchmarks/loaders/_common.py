"""Helpers shared by the on-disk loaders: reading files, naming bad records, building examples.

Every problem with a dataset file becomes a :class:`DatasetError` whose first line names the file,
the record and the field, followed by what was expected, what was found and how to fix it.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from routerlab.agents.errors import ConfigError, DatasetError, not_utf8
from routerlab.agents.plan import CHAINS
from routerlab.benchmarks.difficulty import sql_hardness
from routerlab.benchmarks.example import DIFFICULTIES, Example

__all__ = [
    "build_example",
    "check_choice",
    "check_limit",
    "data_version",
    "field_error",
    "get_str",
    "hardness",
    "iter_jsonl",
    "read_csv",
    "read_json",
    "read_jsonl",
    "require_dir",
    "require_file",
    "require_items",
    "require_list",
    "require_object",
    "require_records",
    "require_str",
    "sqlite_example",
    "sqlite_path",
    "take",
]

T = TypeVar("T")

#: Example fields named by Example's validation messages, most specific first ("alt_intents"
#: contains "intent", "error_text" appears next to "input_sql")
_EXAMPLE_FIELDS: tuple[str, ...] = (
    "alt_intents",
    "intent",
    "split",
    "difficulty",
    "gold_sql",
    "user_reply",
    "input_sql",
    "error_text",
)

_MAX_FOUND_CHARS = 120


def _short(value: Any) -> str:
    """``repr`` of a found value, cut so one bad record cannot flood the terminal."""
    text = repr(value)
    return text if len(text) <= _MAX_FOUND_CHARS else text[: _MAX_FOUND_CHARS - 1] + "…"


def data_version(*paths: Path) -> str:
    """Version string of a dataset: the first 12 hex digits of the SHA-256 of its source files.

    Args:
        paths: The files the examples are read from, in a fixed order.

    Returns:
        Twelve hex digits that change whenever any of the files' bytes change.
    """
    h = hashlib.sha256()
    for path in paths:
        h.update(path.name.encode())
        h.update(b"\0")
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()[:12]


def require_dir(path: Path, *, what: str, layout: str) -> Path:
    """Return ``path`` if it is a directory, else raise a DatasetError showing the expected layout.

    Args:
        path: The directory.
        what: Human name of the dataset ("Spider").
        layout: The expected layout, shown in the fix-it line.
    """
    if not path.is_dir():
        raise DatasetError(
            f"{what} directory not found: {path}",
            expected=f"a directory laid out as {layout}",
            found="a file" if path.exists() else "no such directory",
            fix=f"pass the {what} directory with --dataset-path (layout: {layout})",
            details={"file": str(path)},
        )
    return path


def require_file(path: Path, *, what: str, fix: str) -> Path:
    """Return ``path`` if it is a file, else raise a DatasetError.

    Args:
        path: The file.
        what: What the file is ("Spider dev split file").
        fix: The fix-it line.
    """
    if not path.is_file():
        raise DatasetError(
            f"{what} not found: {path}",
            expected=f"an existing file at {path}",
            found="a directory" if path.exists() else "no such file",
            fix=fix,
            details={"file": str(path)},
        )
    return path


def field_error(
    file: Path | str, record: str, field: str, problem: str, *, expected: str, found: str, fix: str
) -> DatasetError:
    """A DatasetError naming the file, the record and the field.

    Args:
        file: The dataset file.
        record: Human label of the record ("record 3", "line 7 (id 'q1')").
        field: The offending field (or ``"-"`` when the whole record is wrong).
        problem: What is wrong, in a few words.
        expected: What a valid value looks like.
        found: What the record holds.
        fix: How to repair the file.
    """
    return DatasetError(
        f"{file}: {record}: field {field!r}: {problem}",
        expected=expected,
        found=found,
        fix=fix,
        details={"file": str(file), "record": record, "field": field},
    )


def read_json(path: Path) -> Any:
    """Parse a JSON file, reporting the line and column of a syntax error.

    Raises:
        DatasetError: The file is not UTF-8 or not valid JSON.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(path, exc, DatasetError, expected="a UTF-8 encoded JSON file") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}",
            expected="a valid JSON document",
            found=exc.msg,
            fix=f"repair the JSON near line {exc.lineno} of {path.name}",
            details={"file": str(path), "record": f"line {exc.lineno}"},
        ) from None
    except (RecursionError, ValueError) as exc:
        raise _unreadable_json(path, "the file", exc) from None


def _unreadable_json(path: Path, record: str, exc: RecursionError | ValueError) -> DatasetError:
    """The error of valid JSON the parser refuses: nesting past its depth, a number of over 4,300 digits."""
    if isinstance(exc, RecursionError):
        found, fix = "values nested deeper than the JSON parser allows (about 1,000 levels)", "flatten the nesting"
    else:
        found = str(exc).split(";")[0]  # "Exceeds the limit (4300 digits) ...: value has 5001 digits"
        fix = "write the value as a string (an id), or shorten it"
    return DatasetError(
        f"{path}: {record}: JSON the parser cannot read",
        expected="JSON nested at most a few hundred levels, numbers of at most 4,300 digits",
        found=found,
        fix=f"{fix} ({record} of {path.name})",
        details={"file": str(path), "record": record},
    )


def require_list(value: Any, path: Path, *, what: str) -> list[Any]:
    """Return ``value`` if it is a JSON array, else raise a DatasetError naming the file."""
    if not isinstance(value, list):
        raise DatasetError(
            f"{path}: top-level value is not a list",
            expected=f"a JSON array of {what}",
            found=f"a JSON {type(value).__name__}",
            fix=f"point to the {what} file itself (a JSON array)",
            details={"file": str(path)},
        )
    return value


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """Parse a JSON Lines file into ``(line number, value)`` pairs, skipping blank lines.

    Raises:
        DatasetError: A line is not valid JSON (naming the line).
    """
    return list(iter_jsonl(path))


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """:func:`read_jsonl` one line at a time: a caller that keeps few records holds only those.

    Raises:
        DatasetError: A line is not valid JSON (naming the line).
    """
    try:
        with path.open(encoding="utf-8-sig") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(
                        f"{path}: line {lineno}: invalid JSON (column {exc.colno})",
                        expected="one JSON object per line",
                        found=f"{exc.msg}: {_short(line.rstrip())}",
                        fix=f"repair line {lineno} of {path.name}",
                        details={"file": str(path), "record": f"line {lineno}"},
                    ) from None
                except (RecursionError, ValueError) as exc:
                    raise _unreadable_json(path, f"line {lineno}", exc) from None
                yield lineno, value
    except UnicodeDecodeError as exc:
        raise not_utf8(path, exc, DatasetError, expected="a UTF-8 encoded JSON Lines file") from None


def read_csv(path: Path) -> list[tuple[int, dict[str, str | None]]]:
    """Parse a CSV file with a header row into ``(line number, row)`` pairs.

    Empty cells become ``None`` so they count as missing; blank lines are skipped.

    Raises:
        DatasetError: No header, or a row with more cells than the header has columns.
    """
    rows: list[tuple[int, dict[str, str | None]]] = []
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            if not reader.fieldnames:
                raise DatasetError(
                    f"{path}: no header row",
                    expected="a CSV file whose first row names the columns (question, gold_sql, ...)",
                    found="an empty file",
                    fix="add a header row",
                    details={"file": str(path), "record": "line 1"},
                )
            _check_delimiter(path, reader.fieldnames)
            end = reader.line_num
            for row in reader:
                # line_num is where the row ended (quoted cells may span lines); name where it began
                lineno, end = end + 1, reader.line_num
                if None in row:
                    raise field_error(
                        path,
                        f"line {lineno}",
                        "-",
                        "more cells than header columns",
                        expected=f"{len(reader.fieldnames)} cells ({', '.join(reader.fieldnames)})",
                        found=f"extra cells {_short(row[None])}",
                        fix="quote cells containing commas, or add the missing header column",
                    )
                rows.append((lineno, {k: (v if v not in ("", None) else None) for k, v in row.items()}))
            _check_quotes(path, rows)
    except UnicodeDecodeError as exc:
        raise not_utf8(path, exc, DatasetError, expected="a UTF-8 encoded CSV file") from None
    except csv.Error as exc:
        raise DatasetError(
            f"{path}: malformed CSV: {exc}",
            expected="a CSV file with a header row",
            found=str(exc),
            fix="check the quoting of the file",
            details={"file": str(path)},
        ) from None
    return rows


def _check_delimiter(path: Path, header: Sequence[str]) -> None:
    """A one-column header holding ``;`` or a tab: the file uses another separator than commas."""
    if len(header) != 1:
        return
    for sep, name in ((";", "semicolon"), ("\t", "tab")):
        if sep in header[0]:
            raise DatasetError(
                f"{path}: the header is one column, {_short(header[0])}: the file looks {name}-separated",
                expected="comma-separated columns (question,gold_sql,...)",
                found=f"{name}-separated header",
                fix=f"save the file with commas as the separator (or replace each {name} in the header and rows)",
                details={"file": str(path), "record": "line 1"},
            )


def _check_quotes(path: Path, rows: Sequence[tuple[int, dict[str, str | None]]]) -> None:
    """An odd number of quote characters: a quoted cell never closed and swallowed the lines after it."""
    text = path.read_text(encoding="utf-8-sig")
    if text.count('"') % 2 == 0 or not rows:
        return
    lineno, _ = next(((n, r) for n, r in rows if any(v and "\n" in v for v in r.values())), rows[-1])
    raise DatasetError(
        f"{path}: a quoted cell is never closed (starting on line {lineno})",
        expected='every opening " closed by another " (a quote inside a cell is written "")',
        found=f"an odd number of quote characters; the row at line {lineno} runs to the end of the file",
        fix=f"close the quote on line {lineno}, or double the quote characters inside that cell",
        details={"file": str(path), "record": f"line {lineno}"},
    )


def require_items(
    container: Mapping[str, Any], key: str, file: Path, record: str, *, problem: str, expected: str, fix: str
) -> list[Any]:
    """Read a required, non-empty JSON array field of a record (a conversation's turns, an entry's sentences).

    Args:
        container: The record.
        key: The field.
        file: The dataset file.
        record: Human label of the record.
        problem: What is wrong when the field is missing, not a list or empty, in a few words.
        expected: What a valid value looks like.
        fix: How to repair the file.

    Raises:
        DatasetError: Naming the file, the record and the field.
    """
    value = container.get(key)
    if not isinstance(value, list) or not value:
        raise field_error(file, record, key, problem, expected=expected, found=_short(value), fix=fix)
    return value


def require_object(value: Any, file: Path, record: str) -> dict[str, Any]:
    """Return ``value`` if it is a JSON object, else raise a DatasetError naming the record."""
    if not isinstance(value, dict):
        raise field_error(
            file,
            record,
            "-",
            "record is not an object",
            expected="a JSON object with named fields",
            found=f"a JSON {type(value).__name__}: {_short(value)}",
            fix="make every record a JSON object",
        )
    return value


def get_str(
    rec: Mapping[str, Any],
    field: str,
    file: Path,
    record: str,
    *,
    required: bool = True,
    allow_empty: bool = False,
) -> str | None:
    """Read a string field of a record.

    Args:
        rec: The record.
        field: The field name.
        file: The dataset file (for the error message).
        record: Human label of the record.
        required: Whether a missing or null value is an error (else ``None`` is returned).
        allow_empty: Whether an empty or blank string is accepted.

    Raises:
        DatasetError: The value is missing (when required), not a string, or empty.
    """
    value = rec.get(field)
    if value is None:
        if not required:
            return None
        raise field_error(
            file,
            record,
            field,
            "missing required field",
            expected=f"a non-empty string under {field!r}",
            found=f"no {field!r} (keys: {', '.join(sorted(map(str, rec))) or 'none'})",
            fix=f"add {field!r} to the record",
        )
    if not isinstance(value, str):
        raise field_error(
            file,
            record,
            field,
            "not a string",
            expected="a string",
            found=f"{type(value).__name__} {_short(value)}",
            fix=f"write {field!r} as a JSON string",
        )
    if not allow_empty and not value.strip():
        if not required:
            return None
        raise field_error(
            file,
            record,
            field,
            "empty value",
            expected="a non-empty string",
            found=_short(value),
            fix=f"fill in {field!r}",
        )
    return value


def require_str(rec: Mapping[str, Any], field: str, file: Path, record: str) -> str:
    """Read a required, non-empty string field (see :func:`get_str`).

    Raises:
        DatasetError: The value is missing, not a string, or empty.
    """
    # get_str raises instead of returning None when required=True
    return cast(str, get_str(rec, field, file, record, required=True))


def _field_of(message: str, fields: Mapping[str, Any]) -> str:
    """The Example field a validation message is about (``"-"`` if none is named)."""
    named = [n for n in _EXAMPLE_FIELDS if re.search(rf"\b{n}\b", message)]
    # "needs input_sql and its real error_text": blame the one that is actually missing
    missing = [n for n in named if not fields.get(n)]
    return (missing or named or ["-"])[0]


def build_example(file: Path, record: str, *, record_keys: Sequence[str] = (), **fields: Any) -> Example:
    """Build an :class:`Example`, turning its validation error into a DatasetError.

    ``expected_chain`` defaults to the canonical chain of the intent.

    Args:
        file: The dataset file (for the error message).
        record: Human label of the record.
        record_keys: The keys the raw record has: a missing field's error lists them, so a
            gold query stored under another name (``sql``, ``query``) is seen at once.
        **fields: The Example's fields.

    Raises:
        DatasetError: The fields do not make a valid example (naming the offending field).
    """
    intent = fields.get("intent")
    if "expected_chain" not in fields and intent in CHAINS:
        fields["expected_chain"] = CHAINS[intent]
    try:
        return Example(**fields)
    except ValueError as exc:
        field = _field_of(str(exc), fields)
        raise field_error(
            file,
            record,
            field,
            f"invalid example: {exc}",
            expected="a valid example (see benchmarks/example.py)",
            found=_found(field, fields, record_keys, intent),
            fix=f"correct {field!r} in the record" if field != "-" else "correct the record",
        ) from None


def _found(field: str, fields: dict[str, Any], record_keys: Sequence[str], intent: Any) -> str:
    """What the record holds for ``field``; for a missing one, the keys the record does have."""
    if field == "-":
        return f"intent {intent!r}"
    if fields.get(field) is None and record_keys:
        return f"no {field}; the record's keys: {', '.join(record_keys)}"
    return _short(fields.get(field))


def sqlite_example(file: Path, record: str, *, gold_sql: str, **fields: Any) -> Example:
    """:func:`build_example` for a release answered on SQLite: its difficulty is the gold's Spider hardness.

    Args:
        file: The dataset file (for the error message).
        record: Human label of the record.
        gold_sql: The gold SQL (SQLite dialect).
        **fields: The Example's other fields (a ``difficulty`` among them wins over the computed one).

    Raises:
        DatasetError: The fields do not make a valid example (naming the offending field).
    """
    return build_example(file, record, **{"difficulty": hardness(gold_sql, "sqlite"), **fields, "gold_sql": gold_sql})


def hardness(sql: str | None, dialect: str, fallback: Any = None) -> str | None:
    """Spider hardness of ``sql``; when it cannot be computed, ``fallback`` if valid, else None.

    Args:
        sql: The gold SQL (may be None).
        dialect: sqlglot dialect to parse with.
        fallback: The dataset's own difficulty label, used only if it is a Spider hardness level.
    """
    if sql:
        try:
            return sql_hardness(sql, dialect)
        except ValueError:
            pass  # a gold query sqlglot cannot parse still loads; it just has no computed hardness
    return fallback if fallback in DIFFICULTIES else None


def check_limit(limit: Any) -> int:
    """Validate a ``limit`` argument (0 means no limit).

    Raises:
        ConfigError: Not a non-negative integer.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ConfigError(
            f"invalid limit {limit!r}",
            expected="a non-negative integer (0 loads every record)",
            found=repr(limit),
            fix="pass limit=0 or a positive number of records",
        )
    return limit


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """Validate a loader argument against its allowed values.

    Raises:
        ConfigError: ``value`` is not one of ``choices``.
    """
    if value not in choices:
        raise ConfigError(
            f"invalid {name} {value!r}",
            expected=f"one of {', '.join(choices)}",
            found=repr(value),
            fix=f"pass {name}= one of {', '.join(choices)}",
        )
    return value


def take(items: Sequence[T], limit: int) -> list[T]:
    """The first ``limit`` items (all of them when ``limit`` is 0)."""
    return list(items[:limit] if limit else items)


def require_records(items: Sequence[T], path: Path) -> Sequence[T]:
    """Return ``items`` if there is at least one, else raise a DatasetError naming the file."""
    if not items:
        raise DatasetError(
            f"{path}: no records",
            expected="at least one example record",
            found="an empty dataset file",
            fix="check that you passed the right file",
            details={"file": str(path)},
        )
    return items


def sqlite_path(db_root: Path, db_id: str, file: Path, record: str, found: dict[str, bool]) -> Path:
    """The database ``<db_root>/<db_id>/<db_id>.sqlite`` of a Spider/BIRD record, which must exist.

    Args:
        db_root: The databases directory (``database/``, ``dev_databases/``...).
        db_id: The record's database id.
        file: The dataset file (for the error message).
        record: Human label of the record.
        found: Cache of existence checks by db_id, shared across the records of one load.

    Raises:
        DatasetError: The database file is missing (naming the record and the expected path).
    """
    path = db_root / db_id / f"{db_id}.sqlite"
    if db_id not in found:
        # db_id comes from the file: refuse ids that would escape the databases directory
        found[db_id] = Path(db_id).name == db_id and path.is_file()
    if not found[db_id]:
        raise field_error(
            file,
            record,
            "db_id",
            f"database of {db_id!r} not found",
            expected=f"a SQLite file at {path}",
            found="no such file" if Path(db_id).name == db_id else f"a db_id that is a path: {db_id!r}",
            fix=f"download the databases into {db_root}/<db_id>/<db_id>.sqlite, or fix the record's db_id",
        )
    return path.resolve()
