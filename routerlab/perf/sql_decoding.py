"""``routerlab perf``'s SQL-decoding section: SQL generation with and without a draft."""

from __future__ import annotations

import statistics
import time

from routerlab.perf._common import PerfFigure

__all__ = ["sql_decoding"]


def sql_decoding(spec: str = "local", questions: int = 5, draft: int = 10) -> list[PerfFigure]:
    """``generate_sql`` with and without prompt-lookup decoding, same prompts, same warm prefix.

    Each engine first evaluates the whole built-in schema once (a generate_sql call, timed as
    the cold prefill), then answers the same dev questions greedily with that prefix reused,
    as the pipeline does for consecutive questions on one database. Reported per engine: p50
    seconds per SQL call, completion tokens per second over those calls, and how many SQL
    outputs are identical to the plain engine's (greedy decoding must not change them).
    """
    from routerlab.agents.db import open_database
    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.lm.adapter import lm_context
    from routerlab.agents.lm.local import clear_models
    from routerlab.agents.tools.programs import SQLPrograms
    from routerlab.benchmarks.builtin import builtin_database_path, load_builtin

    db = open_database(builtin_database_path())
    schema = db.schema_text()
    qs = [e.question for e in load_builtin().split("dev") if e.intent == "sql"][: questions + 1]
    runs: dict[int, tuple[float, list[float], list[int], list[str]]] = {}
    for n_draft in (0, draft):
        clear_models()  # one model in memory at a time; each engine starts cold
        # two saved prefixes: with a draft model every state also holds the logits of each token
        lm = resolve_lm(spec, cache=False, max_tokens=256, prefix_states=2, draft=n_draft)
        programs = SQLPrograms()
        seconds, tokens, sqls = [], [], []
        for i, q in enumerate(qs):
            t = time.perf_counter()
            with lm_context(lm):
                pred = programs.generate(db_schema=schema, dialect=db.dialect, hint="", question=q)
            dt = time.perf_counter() - t
            if i == 0:
                cold = dt
                continue
            seconds.append(dt)
            tokens.append((lm.history[-1].get("usage") or {}).get("completion_tokens", 0))
            sqls.append(pred.sql or "")
        runs[n_draft] = (cold, seconds, tokens, sqls)
    clear_models()
    figures = []
    for n_draft, (cold, seconds, tokens, _sqls) in runs.items():
        way = f"prompt lookup ({n_draft} drafted)" if n_draft else "plain decoding"
        figures += [
            PerfFigure("sql decoding", f"{way}: first call, schema prefill included", round(cold, 2), "s"),
            PerfFigure(
                "sql decoding", f"{way}: p50 per SQL call, prefix reused", round(statistics.median(seconds), 2), "s"
            ),
            PerfFigure("sql decoding", f"{way}: completion tokens/s", round(sum(tokens) / sum(seconds), 2), "tok/s"),
        ]
    plain, drafted = runs[0][3], runs[draft][3]
    same = sum(a == b for a, b in zip(plain, drafted, strict=True))
    speedup = statistics.median(runs[0][1]) / statistics.median(runs[draft][1])
    figures += [
        PerfFigure("sql decoding", "identical SQL with and without prompt lookup", same, f"of {len(plain)}"),
        PerfFigure(
            "sql decoding",
            "p50 speed-up from prompt lookup",
            round(speedup, 2),
            "x",
            "> 1 and identical",
            speedup > 1 and same == len(plain),
        ),
    ]
    return figures
