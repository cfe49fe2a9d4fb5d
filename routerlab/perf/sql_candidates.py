"""``routerlab perf``'s SQL-candidates section: N candidates of one prompt, batched against one by one."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

from routerlab.agents.db import open_database
from routerlab.agents.lm import resolve_lm
from routerlab.agents.tools.framing import CHAT_MAX_TOKENS, chat_messages
from routerlab.benchmarks.builtin import builtin_database_path, load_builtin
from routerlab.perf._common import PerfFigure

__all__ = ["candidate_decoding"]


def candidate_decoding(
    spec: str = "local", questions: int = 3, sizes: Sequence[int] = (1, 2, 4, 8), temperature: float = 0.7
) -> list[PerfFigure]:
    """N SQL candidates per question decoded together (one batch) against one after another.

    The chat framing's request (``agents/tools/framing.py``) on built-in dev questions, with the
    schema prefix warm in both ways (a first question, not timed, evaluates it). Batched: one
    :meth:`LlamaEngine.sample_candidates` call per question (greedy sequence plus N-1 samples).
    One by one: the greedy chat call and N-1 sampled ones (seeds 1..N-1), as execution-guided
    selection samples today. Reported per N: p50 seconds per question each way, generated tokens
    per second of the batched decode, and distinct candidates per question.
    """
    lm = resolve_lm(spec, cache=False)
    engine: Any = getattr(lm, "_engine_spec", None)  # the embedded engine, when the LM has one
    if not hasattr(engine, "sample_candidates"):
        return [PerfFigure("sql candidates", "skipped: not the embedded engine", 0, "")]
    llm = engine.llama()
    db = open_database(builtin_database_path())
    schema = db.schema_text()
    qs = [e.question for e in load_builtin().split("dev") if e.intent == "sql"][: questions + 1]
    msgs = [chat_messages(schema=schema, dialect=db.dialect, hint="", question=q) for q in qs]
    # warm both contexts on the schema prefix (not timed)
    engine.sample_candidates(msgs[0], 1, max_tokens=CHAT_MAX_TOKENS)
    llm.create_chat_completion(messages=msgs[0], max_tokens=CHAT_MAX_TOKENS, temperature=0.0)
    figures = []
    for n in sizes:
        batched, one_by_one, rates, distinct, same_greedy = [], [], [], [], 0
        for m in msgs[1:]:
            t = time.perf_counter()
            got = engine.sample_candidates(m, n, temperature=temperature, max_tokens=CHAT_MAX_TOKENS)
            batched.append(time.perf_counter() - t)
            rates.append(got.generated_tokens / max(got.decode_seconds, 1e-9))
            distinct.append(len(set(got.texts)))
            t = time.perf_counter()
            greedy = ""
            for seed in range(n):
                out = llm.create_chat_completion(
                    messages=m,
                    max_tokens=CHAT_MAX_TOKENS,
                    temperature=0.0 if seed == 0 else temperature,
                    seed=seed,
                )
                greedy = greedy or out["choices"][0]["message"].get("content") or ""
            one_by_one.append(time.perf_counter() - t)
            same_greedy += greedy.strip() == got.texts[0].strip()
        b, o = statistics.median(batched), statistics.median(one_by_one)
        figures += [
            PerfFigure("sql candidates", f"N={n}: batched, p50 s per question", round(b, 2), "s"),
            PerfFigure("sql candidates", f"N={n}: one by one, p50 s per question", round(o, 2), "s"),
            PerfFigure(
                "sql candidates",
                f"N={n}: batched decode, generated tok/s (p50)",
                round(statistics.median(rates), 2),
                "tok/s",
            ),
            PerfFigure(
                "sql candidates",
                f"N={n}: distinct candidates per question (p50)",
                statistics.median(distinct),
                f"of {n}",
            ),
            PerfFigure(
                "sql candidates",
                f"N={n}: greedy candidate equals the plain greedy call",
                same_greedy,
                f"of {len(batched)}",
            ),
            PerfFigure(
                "sql candidates", f"N={n}: speed-up of batching", round(o / b, 2), "x", "> 1 for N > 1", n == 1 or o > b
            ),
        ]
    return figures
