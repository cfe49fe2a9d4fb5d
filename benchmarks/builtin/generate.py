"""Build ``examples.jsonl`` from the hand-written sources in ``data/`` and the built database.

The YAML sources hold what a person writes (questions, gold SQL, broken SQL, scripted replies).
This module adds what must be computed so it is never typed by hand: DuckDB's real error text
for every fix request, the Spider hardness of every gold query and the canonical tool chain.
Splits are not stored: the loader assigns them from a seed.

Regenerate after editing a source (the tests fail while the file is stale)::

    python -m routerlab.benchmarks.builtin.generate          # rewrite examples.jsonl
    python -m routerlab.benchmarks.builtin.generate --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import yaml

from routerlab.benchmarks.builtin.database import builtin_database_path
from routerlab.benchmarks.builtin.loader import EXAMPLES_PATH
from routerlab.benchmarks.builtin.validate import connect_readonly, query_error
from routerlab.benchmarks.chains import CHAINS
from routerlab.benchmarks.difficulty import sql_hardness

__all__ = [
    "CHAINS",
    "DATA_DIR",
    "build_records",
    "load_sources",
    "main",
    "render_examples",
]

DATA_DIR = Path(__file__).parent / "data"


#: source fields each intent requires / allows (everything else in a record is a typo)
_REQUIRED: dict[str, frozenset[str]] = {
    "sql": frozenset({"id", "question", "gold_sql"}),
    "explain": frozenset({"id", "question", "input_sql"}),
    "fix": frozenset({"id", "question", "input_sql", "gold_sql"}),
    "chat": frozenset({"id", "question"}),
    "clarify": frozenset({"id", "question", "user_reply", "gold_sql"}),
    "refuse": frozenset({"id", "question"}),
    "unanswerable": frozenset({"id", "question"}),
}
_OPTIONAL = frozenset({"alt_intents", "meta"})
_FIELD_ORDER = (
    "id", "intent", "question", "alt_intents", "gold_sql", "expected_chain", "difficulty",
    "user_reply", "hint", "input_sql", "error_text", "meta",
)  # fmt: skip


def load_sources(data_dir: Path = DATA_DIR) -> list[dict[str, Any]]:
    """Read every intent's YAML source, tagging each record with its intent.

    Args:
        data_dir: Folder holding ``<intent>.yaml`` files.

    Returns:
        Records in intent order, then file order.

    Raises:
        ValueError: For a missing file, a missing or unknown field, or a malformed id.
    """
    records: list[dict[str, Any]] = []
    for intent, required in _REQUIRED.items():
        path = data_dir / f"{intent}.yaml"
        items = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        for i, item in enumerate(items):
            where = f"{path.name} record {i}"
            missing = required - item.keys()
            unknown = item.keys() - required - _OPTIONAL
            if missing or unknown:
                raise ValueError(f"{where}: missing {sorted(missing)}, unknown {sorted(unknown)}")
            if not str(item["id"]).startswith(f"sa-{intent}-"):
                raise ValueError(f"{where}: id {item['id']!r} must start with 'sa-{intent}-'")
            records.append({"intent": intent, **item})
    return records


def _question(record: dict[str, Any], error_text: str | None) -> str:
    template: str = record["question"]
    if record.get("input_sql") is None:
        return template
    # plain replacement, not str.format: SQL and error texts may contain braces
    for placeholder, value in (("{sql}", record["input_sql"]), ("{error}", error_text)):
        if value is None:
            continue
        if placeholder not in template:
            raise ValueError(f"{record['id']}: question must contain {placeholder}")
        template = template.replace(placeholder, value.strip())
    return template


def build_records(db_path: str | Path, sources: Sequence[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Complete the source records into example records.

    Args:
        db_path: The built database (fix requests are run on it read-only).
        sources: Records from :func:`load_sources` (read from ``data/`` when omitted).

    Returns:
        One JSON-able dict per example, in the order of the sources.

    Raises:
        ValueError: If a fix request's SQL runs, or an explain request's SQL fails.
    """
    out = []
    con = connect_readonly(db_path)
    try:
        for src in sources if sources is not None else load_sources():
            out.append(_complete(con, src))
    finally:
        con.close()
    return out


def _complete(con: duckdb.DuckDBPyConnection, src: dict[str, Any]) -> dict[str, Any]:
    intent = src["intent"]
    gold = src.get("gold_sql")
    input_sql = src.get("input_sql")
    error_text = None
    meta = dict(src.get("meta") or {})
    if intent == "fix":
        error_text = query_error(con, input_sql)
        if error_text is None:
            raise ValueError(f"{src['id']}: the broken SQL runs without error")
    if intent == "explain":
        if (problem := query_error(con, input_sql)) is not None:
            raise ValueError(f"{src['id']}: the SQL to explain fails: {problem}")
        meta["input_difficulty"] = sql_hardness(input_sql)
    record = {
        "id": src["id"],
        "intent": intent,
        "question": _question(src, error_text),
        "alt_intents": list(src.get("alt_intents") or []),
        "gold_sql": gold,
        "expected_chain": list(CHAINS[intent]),
        "difficulty": sql_hardness(gold) if gold else None,
        "user_reply": src.get("user_reply"),
        "hint": "",
        "input_sql": input_sql,
        "error_text": error_text,
        "meta": meta,
    }
    return {k: record[k] for k in _FIELD_ORDER}


def render_examples(records: Sequence[dict[str, Any]]) -> str:
    """The JSON Lines text of ``records`` (stable: one record per line, fixed key order)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def main(argv: Sequence[str] | None = None) -> int:
    """Regenerate (or with ``--check`` verify) ``examples.jsonl``. Returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the file is up to date")
    args = parser.parse_args(argv)
    text = render_examples(build_records(builtin_database_path()))
    current = EXAMPLES_PATH.read_text(encoding="utf-8") if EXAMPLES_PATH.exists() else ""
    if args.check:
        if text != current:
            print(
                f"{EXAMPLES_PATH} is out of date: run python -m routerlab.benchmarks.builtin.generate", file=sys.stderr
            )
            return 1
        return 0
    EXAMPLES_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {text.count(chr(10))} examples to {EXAMPLES_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
