"""``routerlab perf``'s routing section: one-pass intent scoring on a reused prefix."""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

from routerlab.agents.db import open_database
from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.adapter import lm_context
from routerlab.agents.tools.programs import SQLPrograms
from routerlab.benchmarks.builtin import builtin_database_path, load_builtin
from routerlab.perf._common import PerfFigure
from routerlab.routers.dspy_router import RouteProgram, load_program
from routerlab.routers.support.lm_intent import IntentPrompt, classify_one_pass
from routerlab.routers.support.schema_outline import schema_outline

__all__ = ["routing_prefix_reuse"]


def routing_prefix_reuse(spec: str = "local", questions: int = 6) -> list[PerfFigure]:
    """One-pass intent decisions: the routing prefix evaluated once, then only each request's tokens.

    Uses the ``dspy`` router's compiled prompt (instructions and demos) on dev requests of every
    intent: the first decision evaluates the prefix (cold); later ones truncate the live context
    back to it; after a ``generate_sql`` call took the context, the prefix comes back from its
    saved state. The same requests through the program's generation path give the comparison.
    Wall times are of this machine as shared at the time of the run.
    """
    lm = resolve_lm(spec, cache=False, max_tokens=48)
    engine: Any = getattr(lm, "engine", None)  # the embedded engine, when the LM has one
    if not hasattr(engine, "score_choices"):
        return [PerfFigure("routing", f"one-pass routing needs the embedded engine, not {spec}", math.nan, "")]
    engine.forget_prefixes()
    program, _ = load_program("builtin")
    prompt = IntentPrompt.from_predict(program.route)
    db = open_database(builtin_database_path())
    # the database as the program sees it (its saved schema view), so the prefix is the router's
    names = ", ".join(t.name for t in db.tables())
    tables = {"columns": schema_outline(db), "tables": names}.get(program.route.schema, "")
    dev = load_builtin().split("dev")
    by_intent: dict[str, list[str]] = {}
    for e in dev:
        by_intent.setdefault(e.intent, []).append(e.question)
    qs = [q for i in range(questions) for qs_ in by_intent.values() for q in qs_[i : i + 1]][:questions]
    runs = [classify_one_pass(lm, prompt, tables=tables, request=q) for q in qs]
    cold, warm = runs[0], [r for r in runs[1:] if r is not None]
    assert cold is not None
    restored = []
    programs = SQLPrograms()
    for q in qs[:2]:
        with lm_context(lm):  # another prompt takes the context: the next decision restores the prefix
            programs.generate(db_schema=db.schema_text(), dialect=db.dialect, hint="", question=q)
        r = classify_one_pass(lm, prompt, tables=tables, request=q)
        assert r is not None
        restored.append(r.scores.seconds)
    gen_seconds = []
    gen_program = RouteProgram(one_pass=False)
    gen_program.load_state(program.dump_state())
    for q in qs[:2]:
        t = time.perf_counter()
        with lm_context(lm):
            try:
                gen_program(tables=tables, request=q)
            except Exception:  # an unparsable reply still cost its time; the time is what is measured
                pass
        gen_seconds.append(time.perf_counter() - t)
    warm_s = statistics.median(r.scores.seconds for r in warm)
    return [
        PerfFigure("routing", "routing prefix tokens (evaluated once)", cold.scores.prefix_tokens, "tokens"),
        PerfFigure("routing", "first decision, prefix evaluated (cold)", round(cold.scores.seconds, 2), "s"),
        PerfFigure(
            "routing",
            "one-pass decision, prefix reused (median)",
            round(warm_s, 2),
            "s",
            "<= 0.6 s",
            warm_s <= 0.6,
        ),
        PerfFigure(
            "routing",
            "one-pass decision after a sub-agent call, prefix restored (median)",
            round(statistics.median(restored), 2),
            "s",
        ),
        PerfFigure(
            "routing",
            "tokens evaluated per decision, prefix reused (median)",
            statistics.median(r.scores.evaluated_tokens for r in warm),
            "tokens",
        ),
        PerfFigure(
            "routing",
            "prompt tokens per decision (median)",
            statistics.median(r.scores.prompt_tokens for r in warm),
            "tokens",
        ),
        PerfFigure(
            "routing",
            "prefix-reuse saving in evaluated tokens",
            round(1 - sum(r.scores.evaluated_tokens for r in warm) / sum(r.scores.prompt_tokens for r in warm), 3),
            "fraction",
        ),
        PerfFigure("routing", "same program by generation (median)", round(statistics.median(gen_seconds), 2), "s"),
    ]
