"""``routerlab perf``'s alternating-prefixes section: two programs' prefixes kept side by side."""

from __future__ import annotations

import statistics
import time

from routerlab.agents.db import open_database
from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.adapter import lm_context
from routerlab.agents.lm.chat import chat
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.tools.programs import SQLPrograms
from routerlab.benchmarks.builtin import builtin_database_path, load_builtin
from routerlab.perf._common import PerfFigure

__all__ = ["alternating_prefixes"]


def alternating_prefixes(spec: str = "local", questions: int = 2) -> list[PerfFigure]:
    """A router tool call and a ``generate_sql`` call, interleaved, with saved prefix states on and off.

    This is the ``llm`` router's pattern: the prompt switches between the router's (tool schemas +
    conversation) and a sub-agent's (schema + question) at every step, so the live KV cache alone
    never shares a prefix with the next prompt. The engine's saved prefix states
    (``LlamaEngine.prefix_states``) restore the longest matching earlier prompt instead.
    """
    db = open_database(builtin_database_path())
    schema = db.schema_text()
    tools = [t.openai_schema() for t in DEFAULT_TOOLS]
    qs = [e.question for e in load_builtin().split("dev") if e.intent == "sql"][:questions]
    medians: dict[int, float] = {}
    for states in (0, 6):
        lm = resolve_lm(spec, cache=False, max_tokens=48, prefix_states=states)
        engine = lm._engine_spec
        engine.forget_prefixes()
        programs = SQLPrograms()
        seconds: list[float] = []
        for q in qs:
            for step in ("route", "generate"):
                t = time.perf_counter()
                if step == "route":
                    chat(lm, [{"role": "user", "content": q}], tools, tool_choice="required")
                else:
                    with lm_context(lm):
                        programs.generate(db_schema=schema, dialect=db.dialect, hint="", question=q)
                seconds.append(time.perf_counter() - t)
        # the first router and generate calls are cold either way; the rest show the reuse
        medians[states] = statistics.median(seconds[2:])
    return [
        PerfFigure("model", "alternating router/generate call, no saved prefixes (median)", round(medians[0], 2), "s"),
        PerfFigure("model", "alternating router/generate call, 6 saved prefixes (median)", round(medians[6], 2), "s"),
        PerfFigure("model", "saving from saved prefixes", round(1 - medians[6] / medians[0], 3), "fraction"),
    ]
