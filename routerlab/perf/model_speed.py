"""``routerlab perf``'s model section: SQL generation by the embedded model, cold and with the prefix reused."""

from __future__ import annotations

import statistics
import time
from typing import Any

from routerlab.agents.db import open_database
from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.adapter import lm_context
from routerlab.agents.tools.context import ToolContext
from routerlab.agents.tools.programs import SQLPrograms
from routerlab.agents.tools.schema_linking import overlap_tables
from routerlab.benchmarks.builtin import builtin_database_path, load_builtin
from routerlab.perf._common import PerfFigure

__all__ = ["model_speed"]


def model_speed(spec: str = "local", questions: int = 3) -> list[PerfFigure]:
    """SQL-generation latency of the embedded model on the built-in schema, and prefix reuse.

    Runs ``generate_sql``'s program on built-in questions twice: after a reset of the model's
    KV cache (cold) and right after another question on the same schema (warm, the shared
    prefix is reused); also counts prompt tokens with the full schema and after linking.
    """
    import dspy

    lm = resolve_lm(spec, cache=False)
    engine: Any = getattr(lm, "_engine_spec", None)  # the embedded engine, when the LM has one
    llama = engine.llama() if hasattr(engine, "llama") else None
    forget = getattr(engine, "forget_prefixes", None)
    db = open_database(builtin_database_path())
    programs = SQLPrograms()
    ctx = ToolContext(db=db, lm=lm, programs=programs)
    qs = [e.question for e in load_builtin().split("dev") if e.intent == "sql"][:questions]
    cold: list[float] = []
    warm: list[float] = []
    linked_tokens: list[int] = []
    full_tokens: list[int] = []
    full_schema = db.schema_text()
    for q in qs:
        schema = db.schema_text(overlap_tables(db, q, ctx.settings.max_tables))
        for label in ("cold", "warm"):
            if label == "cold" and forget is not None:
                forget()
            t = time.perf_counter()
            with lm_context(lm):
                programs.generate(db_schema=schema, dialect=db.dialect, hint="", question=q)
            (cold if label == "cold" else warm).append(time.perf_counter() - t)
        usage = lm.history[-1].get("usage") or {}
        linked_tokens.append(usage.get("prompt_tokens", 0))
        if llama is not None:
            full_tokens.append(
                len(llama.tokenize(full_schema.encode())) + linked_tokens[-1] - len(llama.tokenize(schema.encode()))
            )
    del dspy
    figures = [
        PerfFigure(
            "model",
            "generate_sql median, cold KV cache",
            round(statistics.median(cold), 2),
            "s",
            "<= 2 s",
            statistics.median(cold) <= 2,
        ),
        PerfFigure("model", "generate_sql median, shared prefix reused", round(statistics.median(warm), 2), "s"),
        PerfFigure(
            "model", "prefix-reuse saving", round(1 - statistics.median(warm) / statistics.median(cold), 3), "fraction"
        ),
        PerfFigure("model", "prompt tokens after linking (median)", statistics.median(linked_tokens), "tokens"),
    ]
    if full_tokens:
        figures.append(
            PerfFigure("model", "prompt tokens with the full schema (median)", statistics.median(full_tokens), "tokens")
        )
    return figures
