r"""The ``text2sql_data`` dataset: the format of the text2sql-data collection.

That is the format of Finegan-Dollak et al. (2018), "Improving Text-to-SQL Evaluation
Methodology" (ATIS, GeoQuery, Restaurants, Scholar, Advising, ...).

A file is a JSON list of query entries::

    {"query-split": "train",
     "sentences": [{"text": "how big is state_name0", "variables": {"state_name0": "texas"},
                    "question-split": "dev"}],
     "sql": ["SELECT ... WHERE STATE_NAME = \"state_name0\" ;", ...equivalent variants],
     "variables": [{"name": "state_name0", "example": "texas", "location": "both", "type": "..."}]}

Every sentence becomes one example. Variable names are replaced by the sentence's values (falling
back to the variable's ``example``) in the text and in the SQL. The format writes string constants
in double quotes (``= "state_name0"``); the loader rewrites every double-quoted string as a
single-quoted SQL literal, because SQLite reads double-quoted text as a string only when no column
has that name. The first SQL is the gold; the others are kept in ``meta["sql_variants"]``.

Split values map as ``train``/``dev``/``test`` to themselves. The smaller datasets use ten
cross-validation folds ``"0"``..``"9"`` instead; they map deterministically to fold 0 = test,
fold 1 = dev, folds 2-9 = train (the raw value stays in ``meta["fold"]``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from routerlab.benchmarks.dataset import Dataset, dataset
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders._common import (
    check_choice,
    check_limit,
    data_version,
    field_error,
    read_json,
    require_file,
    require_items,
    require_list,
    require_object,
    require_records,
    require_str,
    sqlite_example,
)

__all__ = ["SPLIT_FIELDS", "load_text2sql_data", "map_split"]

SPLIT_FIELDS: tuple[str, ...] = ("question-split", "query-split")

#: cross-validation fold -> split (documented in the module docstring)
_FOLDS: dict[str, str] = {"0": "test", "1": "dev", **{str(k): "train" for k in range(2, 10)}}


def map_split(value: str) -> str | None:
    """Our split for one of the format's split values (``None`` when it is not one).

    Args:
        value: ``train``, ``dev``, ``test`` or a fold ``"0"``..``"9"``.
    """
    if value in ("train", "dev", "test"):
        return value
    return _FOLDS.get(value)


def _sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _substitute_text(text: str, values: Mapping[str, str]) -> str:
    """Replace every whole-token variable name in ``text`` by its value, in one pass.

    One pass keeps a value that happens to contain another variable's name intact.
    """
    if not values:
        return text
    names = "|".join(re.escape(n) for n in sorted(values, key=len, reverse=True))
    return re.sub(rf"(?<![\w$])({names})(?![\w$])", lambda m: values[m.group(1)], text)


#: a double-quoted string, a single-quoted string ('' escapes a quote), or anything else up to the next quote
_SQL_PART = re.compile(r"\"([^\"]*)\"|'((?:[^']|'')*)'|[^\"']+|[\"']")


def _substitute_sql(sql: str, values: Mapping[str, str]) -> str:
    """Substitute variables in SQL, turning the format's double-quoted strings into SQL literals.

    The format writes every string constant in double quotes (identifiers are never quoted), which
    SQLite reads as a string only when no column has that name; single quotes are always strings.
    """
    out: list[str] = []
    for m in _SQL_PART.finditer(sql):
        double, single = m.group(1), m.group(2)
        if double is not None:
            out.append(_sql_literal(_substitute_text(double, values)))
        elif single is not None:
            out.append(_sql_literal(_substitute_text(single.replace("''", "'"), values)))
        else:
            out.append(_substitute_text(m.group(0), values))
    return "".join(out)


def _variable_examples(entry: dict[str, Any], file: Path, label: str) -> dict[str, str | None]:
    """Map each declared variable to its ``example`` value (``None`` when it has none)."""
    raw = entry.get("variables", [])
    if not isinstance(raw, list):
        raise field_error(
            file,
            label,
            "variables",
            "not a list",
            expected='a list of {"name", "example", "location", "type"} objects',
            found=f"a JSON {type(raw).__name__}",
            fix="write the entry's variables as a JSON list",
        )
    out: dict[str, str | None] = {}
    for k, var in enumerate(raw):
        var_label = f"{label} variables[{k}]"
        var = require_object(var, file, var_label)
        name = require_str(var, "name", file, var_label)
        example = var.get("example")
        out[name] = None if example is None else str(example)
    return out


def _sentence_values(
    sentence: dict[str, Any], declared: Mapping[str, str | None], uses: str, file: Path, label: str
) -> dict[str, str]:
    """The value of every variable for one sentence: its own value, else the declared example.

    Args:
        sentence: The sentence object.
        declared: The entry's variables and their examples.
        uses: The sentence text and SQL, to tell whether a variable without value is needed.
        file: The dataset file (for the error message).
        label: Human label of the sentence.
    """
    given = sentence.get("variables", {})
    if not isinstance(given, dict):
        raise field_error(
            file,
            label,
            "variables",
            "not an object",
            expected="an object mapping variable names to values",
            found=f"a JSON {type(given).__name__}",
            fix="write the sentence's variables as a JSON object",
        )
    values = {str(k): v if isinstance(v, str) else str(v) for k, v in given.items()}
    for name, example in declared.items():
        if name in values:
            continue
        if example is not None:
            values[name] = example
        elif re.search(rf"(?<!\w){re.escape(name)}(?!\w)", uses):
            raise field_error(
                file,
                label,
                "variables",
                f"no value for variable {name!r}",
                expected=f"a value for {name!r} in the sentence's variables, or an example in the entry's",
                found=f"sentence variables: {sorted(values)}",
                fix=f"add {name!r} to the sentence's variables",
            )
    return values


def _sql_list(entry: dict[str, Any], file: Path, label: str) -> list[str]:
    sqls = entry.get("sql")
    if not isinstance(sqls, list) or not sqls or not all(isinstance(s, str) and s.strip() for s in sqls):
        raise field_error(
            file,
            label,
            "sql",
            "missing or malformed SQL list",
            expected="a non-empty list of SQL strings",
            found=repr(sqls)[:120],
            fix="give the entry at least one SQL query",
        )
    return sqls


def _split_of(container: dict[str, Any], split_field: str, file: Path, label: str) -> tuple[str, str]:
    raw = container.get(split_field)
    split = map_split(raw) if isinstance(raw, str) else None
    if split is None or not isinstance(raw, str):
        raise field_error(
            file,
            label,
            split_field,
            "missing or unknown split",
            expected='"train", "dev", "test" or a fold "0".."9"',
            found=repr(raw),
            fix=f"set {split_field!r}, or load with the other split_field ({' / '.join(SPLIT_FIELDS)})",
        )
    return split, raw


def _strip_semicolon(sql: str) -> str:
    return sql.strip().rstrip(";").rstrip()


@dataset("text2sql_data")
def load_text2sql_data(path: str, db: str, split_field: str = "question-split", limit: int = 0) -> Dataset:
    """Load a file of the Finegan-Dollak et al. (2018) text2sql-data collection.

    Args:
        path: The JSON file (e.g. ``geography.json``).
        db: The SQLite database of that file (e.g. ``geography-db.sqlite``).
        split_field: ``question-split`` (per sentence) or ``query-split`` (per query entry).
        limit: Load only the first ``limit`` examples (0: all).

    Returns:
        The dataset ``text2sql_data``: one ``sql`` example per sentence, ids
        ``<file stem>-<entry>-<sentence>``.

    Raises:
        DatasetError: Missing file or database, or a malformed entry or sentence.
        ConfigError: An unknown split_field or a negative limit.
    """
    check_choice("split_field", split_field, SPLIT_FIELDS)
    limit = check_limit(limit)
    file = require_file(
        Path(path),
        what="text2sql-data file",
        fix="pass the dataset's JSON file (e.g. data/geography.json) as path",
    )
    db_file = require_file(
        Path(db),
        what="text2sql-data database",
        fix="pass the SQLite file of the dataset as db (e.g. data/geography-db.added-in-2020.sqlite)",
    )
    db_path = str(db_file.resolve())
    db_id = db_file.stem
    entries = require_records(require_list(read_json(file), file, what="query entries"), file)
    examples: list[Example] = []
    for i, raw_entry in enumerate(entries):
        entry_label = f"entry {i}"
        entry = require_object(raw_entry, file, entry_label)
        sqls = _sql_list(entry, file, entry_label)
        declared = _variable_examples(entry, file, entry_label)
        sentences = require_items(
            entry,
            "sentences",
            file,
            entry_label,
            problem="missing or empty",
            expected="a non-empty list of sentence objects",
            fix="give the entry at least one sentence",
        )
        for j, raw_sentence in enumerate(sentences):
            label = f"{entry_label} sentences[{j}]"
            sentence = require_object(raw_sentence, file, label)
            text = require_str(sentence, "text", file, label)
            values = _sentence_values(sentence, declared, "\n".join([text, *sqls]), file, label)
            if split_field == "query-split":
                split, fold = _split_of(entry, split_field, file, entry_label)
            else:
                split, fold = _split_of(sentence, split_field, file, label)
            gold, *variants = (_strip_semicolon(_substitute_sql(s, values)) for s in sqls)
            examples.append(
                sqlite_example(
                    file,
                    label,
                    id=f"{file.stem}-{i:04d}-{j:02d}",
                    question=_substitute_text(text, values),
                    db_id=db_id,
                    db_path=db_path,
                    intent="sql",
                    gold_sql=gold,
                    split=split,
                    dataset="text2sql_data",
                    meta={
                        "entry": i,
                        "sentence": j,
                        "fold": fold,
                        "variables": values,
                        "sql_variants": variants,
                    },
                )
            )
            if limit and len(examples) >= limit:
                break
        if limit and len(examples) >= limit:
            break
    return Dataset(
        name="text2sql_data",
        version=data_version(file),
        examples=examples,
        source=str(file.resolve()),
        meta={"db_path": db_path, "split_field": split_field, "entries": str(len(entries))},
    )
