"""``routerlab perf``'s schema section: SQL generation as the schema grows, full and linked."""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from routerlab.agents.db import open_database
from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.adapter import lm_context
from routerlab.agents.tools.context import ToolContext
from routerlab.agents.tools.programs import SQLPrograms, clean_sql
from routerlab.agents.tools.schema_linking import overlap_tables
from routerlab.eval.scorers.execution import results_match
from routerlab.perf._common import PerfFigure, schema_db

__all__ = ["schema_scaling"]

_log = logging.getLogger(__name__)


def schema_scaling(spec: str = "local", sizes: Sequence[int] = (5, 15, 40)) -> list[PerfFigure]:
    """SQL generation on schemas of several sizes: the full schema against data_discovery's linking.

    Each size gets a DuckDB file of themed tables and two counting questions on different tables.
    Every generation starts from a cold KV cache (saved prefixes forgotten), so the prompt's
    length is what is timed. Accuracy is EX against the gold SQL on the same file.
    """
    lm = resolve_lm(spec, cache=False)
    forget = getattr(getattr(lm, "_engine_spec", None), "forget_prefixes", None)
    programs = SQLPrograms()
    figures: list[PerfFigure] = []
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            path = Path(d) / f"schema{n}.duckdb"
            pairs = schema_db(path, n)
            db = open_database(path)
            ctx = ToolContext(db=db, lm=lm, programs=programs)
            for way in ("full schema", "linked"):
                seconds, tokens, hits, failed = [], [], 0, []
                for question, gold in pairs:
                    tables = None if way == "full schema" else overlap_tables(db, question, ctx.settings.max_tables)
                    schema = db.schema_text(tables)
                    if forget is not None:
                        forget()
                    t = time.perf_counter()
                    try:
                        with lm_context(lm):
                            pred = programs.generate(db_schema=schema, dialect=db.dialect, hint="", question=question)
                    except Exception as exc:  # e.g. a prompt beyond the model's context window
                        failed.append(f"{type(exc).__name__}: {str(exc)[:160]}")
                        continue
                    seconds.append(time.perf_counter() - t)
                    tokens.append((lm.history[-1].get("usage") or {}).get("prompt_tokens", 0))
                    try:
                        got = db.execute(clean_sql(pred.sql or ""), max_rows=100)
                        hits += results_match(got.rows, db.execute(gold).rows)[0]
                    except Exception:  # a failing prediction is a miss, not a crash
                        pass
                if failed:
                    _log.warning("%d tables, %s: %d call(s) failed: %s", n, way, len(failed), failed[0])
                    figures.append(PerfFigure("schemas", f"{n} tables, {way}: calls that failed", len(failed), "calls"))
                if not seconds:
                    continue
                med = statistics.median(seconds)
                figures += [
                    PerfFigure(
                        "schemas", f"{n} tables, {way}: generate_sql median", round(med, 2), "s", "<= 2 s", med <= 2
                    ),
                    PerfFigure("schemas", f"{n} tables, {way}: generate_sql max", round(max(seconds), 2), "s"),
                    PerfFigure(
                        "schemas", f"{n} tables, {way}: prompt tokens (median)", statistics.median(tokens), "tokens"
                    ),
                    PerfFigure("schemas", f"{n} tables, {way}: EX", hits / len(pairs), "fraction"),
                ]
    return figures
