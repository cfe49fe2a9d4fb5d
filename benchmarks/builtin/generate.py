"""Build ``examples.jsonl`` (and ``conversations.jsonl``) from the sources in ``data/`` and the built database.

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

from routerlab.agents.plan import CHAINS
from routerlab.benchmarks.builtin.database import builtin_database_path
from routerlab.benchmarks.builtin.loader import CONVERSATIONS_PATH, EXAMPLES_PATH
from routerlab.benchmarks.builtin.validate import connect_readonly, query_error
from routerlab.benchmarks.difficulty import sql_hardness

__all__ = [
    "CHAINS",
    "DATA_DIR",
    "build_conversation_records",
    "build_records",
    "load_conversations",
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
        error_text = query_error(con, src["input_sql"])
        if error_text is None:
            raise ValueError(f"{src['id']}: the broken SQL runs without error")
    if intent == "explain":
        if (problem := query_error(con, src["input_sql"])) is not None:
            raise ValueError(f"{src['id']}: the SQL to explain fails: {problem}")
        meta["input_difficulty"] = sql_hardness(src["input_sql"])
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


def load_conversations(data_dir: Path = DATA_DIR) -> list[dict[str, Any]]:
    """Read ``conversations.yaml``: multi-turn conversations, each turn a data question.

    Returns:
        One source record per turn (intent ``sql``), with ``conversation``, ``turn`` (from 1) and
        ``turns``; its id is ``<conversation id>-t<turn>``.

    Raises:
        ValueError: For a malformed conversation id, a conversation without turns, or a turn
            with a missing or unknown field.
    """
    path = data_dir / "conversations.yaml"
    out: list[dict[str, Any]] = []
    for i, conv in enumerate(yaml.safe_load(path.read_text(encoding="utf-8")) or []):
        where = f"{path.name} conversation {i}"
        cid = str(conv.get("id", ""))
        if not cid.startswith("sa-conv-") or set(conv) != {"id", "turns"}:
            raise ValueError(f"{where}: expected fields id ('sa-conv-...') and turns, found {sorted(conv)}")
        turns = conv["turns"] or []
        if len(turns) < 2:
            raise ValueError(f"{where}: a conversation needs at least two turns, found {len(turns)}")
        for k, turn in enumerate(turns, start=1):
            if set(turn) != {"question", "gold_sql"}:
                raise ValueError(f"{where} turn {k}: expected question and gold_sql, found {sorted(turn)}")
            out.append(
                {"intent": "sql", "id": f"{cid}-t{k}", "conversation": cid, "turn": k, "turns": len(turns), **turn}
            )
    return out


def build_conversation_records(
    db_path: str | Path, sources: Sequence[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Complete the turns of :func:`load_conversations` into example records.

    Each record is a single request's record followed by ``conversation``, ``turn`` and ``turns``.
    """
    con = connect_readonly(db_path)
    try:
        return [
            {**_complete(con, src), "conversation": src["conversation"], "turn": src["turn"], "turns": src["turns"]}
            for src in (sources if sources is not None else load_conversations())
        ]
    finally:
        con.close()


def render_examples(records: Sequence[dict[str, Any]]) -> str:
    """The JSON Lines text of ``records`` (stable: one record per line, fixed key order)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def main(argv: Sequence[str] | None = None) -> int:
    """Regenerate (or with ``--check`` verify) ``examples.jsonl`` and ``conversations.jsonl``.

    Returns the exit code.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the files are up to date")
    args = parser.parse_args(argv)
    db = builtin_database_path()
    stale = 0
    for path, records in (
        (EXAMPLES_PATH, build_records(db)),
        (CONVERSATIONS_PATH, build_conversation_records(db)),
    ):
        text = render_examples(records)
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if args.check:
            if text != current:
                print(f"{path} is out of date: run python -m routerlab.benchmarks.builtin.generate", file=sys.stderr)
                stale += 1
            continue
        path.write_text(text, encoding="utf-8")
        print(f"wrote {text.count(chr(10))} examples to {path}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
