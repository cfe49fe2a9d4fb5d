"""Schema-linking recall: does the schema the SQL sub-agents see hold what the gold query reads?

For each data question, the gold SQL is resolved against the database with sqlglot (aliases,
subqueries) into real tables and ``(table, column)`` pairs; the question is linked as
``data_discovery`` would link it; the example counts as recalled when every gold table (or
column) is among the linked ones. Nothing here calls a model, so it runs in seconds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from sqlglot.errors import SqlglotError

from routerlab.agents.db import open_database
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools.repair import catalog_of, query_identifiers
from routerlab.agents.tools.schema_linking import link_tables
from routerlab.benchmarks.example import Example

__all__ = ["LinkedExample", "link_examples", "linking_table"]


@dataclass(frozen=True)
class LinkedExample:
    """The linking outcome of one example under one linking mode.

    Attributes:
        example_id: The example.
        db_id: Its database.
        mode: The linking mode.
        tables_recalled: Every gold table is linked (None when the gold SQL does not parse).
        columns_recalled: Every gold column's table is linked (None likewise).
        linked_tables: How many tables were linked.
        total_tables: Tables in the database.
        schema_chars: Length of the schema text shown.
    """

    example_id: str
    db_id: str
    mode: str
    tables_recalled: bool | None
    columns_recalled: bool | None
    linked_tables: int
    total_tables: int
    schema_chars: int


def link_examples(examples: Sequence[Example], settings: ToolSettings, modes: Sequence[str]) -> list[LinkedExample]:
    """Link every example carrying gold SQL under each of ``modes``.

    Args:
        examples: Examples; those without ``gold_sql`` are skipped.
        settings: The sub-agents' settings (example values, budgets); ``linking`` is replaced by each mode.
        modes: Linking modes to measure (``auto``, ``full``, ``overlap``).
    """
    out = []
    for mode in modes:
        s = dataclasses.replace(settings, linking=mode)
        for e in examples:
            if not e.gold_sql:
                continue
            db = open_database(e.db_path)
            tables = db.tables()
            try:
                gold_t, gold_c = query_identifiers(e.gold_sql, catalog_of(tables), db.dialect)
                parsed = True
            except SqlglotError:
                gold_t, gold_c, parsed = set(), set(), False
            linked = set(link_tables(db, e.question, s))
            out.append(
                LinkedExample(
                    example_id=e.id,
                    db_id=e.db_id,
                    mode=mode,
                    tables_recalled=gold_t <= linked if parsed else None,
                    columns_recalled=all(t in linked for t, _ in gold_c) if parsed else None,
                    linked_tables=len(linked),
                    total_tables=len(tables),
                    schema_chars=len(db.schema_text(sorted(linked), example_values=s.example_values)),
                )
            )
    return out


def linking_table(rows: Sequence[LinkedExample]) -> pd.DataFrame:
    """One row per linking mode: table and column recall, tables shown, schema size, unparsed gold."""
    frame = pd.DataFrame([dataclasses.asdict(r) for r in rows])
    if frame.empty:
        return frame
    parsed = frame[frame["tables_recalled"].notna()]
    table = parsed.groupby("mode", sort=False).agg(
        examples=("example_id", "size"),
        table_recall=("tables_recalled", "mean"),
        column_recall=("columns_recalled", "mean"),
        tables_shown=("linked_tables", "mean"),
        tables_total=("total_tables", "mean"),
        schema_chars_p50=("schema_chars", "median"),
    )
    table["gold_unparsed"] = frame[frame["tables_recalled"].isna()].groupby("mode").size()
    table["gold_unparsed"] = table["gold_unparsed"].fillna(0).astype(int)
    return table.reset_index()
