"""``routerlab perf``'s concurrency section: runner throughput against a loopback stub LM."""

from __future__ import annotations

import time
from collections.abc import Sequence

from routerlab._runs.runner import RouterRun, RunConfig, build_scorers, run_router
from routerlab.agents.lm import resolve_lm
from routerlab.benchmarks.builtin import load_builtin
from routerlab.perf._common import PerfFigure, stub_server

__all__ = ["concurrency_scaling"]


def concurrency_scaling(workers: Sequence[int] = (1, 2, 4, 8, 16), n_examples: int = 32) -> list[PerfFigure]:
    """Runner throughput against an OpenAI-compatible stub on loopback that sleeps 200 ms a call.

    The ``rules`` router on built-in chat and explain requests: one LM call each, through LiteLLM
    exactly as a remote provider, with the response cache off.
    """
    pool = [e for e in load_builtin().split("all") if e.intent in ("chat", "explain")]
    examples = (pool * (n_examples // len(pool) + 1))[:n_examples]
    figures = []
    with stub_server(0.2) as base:
        lm = resolve_lm("openai/stub", api_base=base, api_key="stub", cache=False)
        config = RunConfig(lm="openai/stub")
        rates = {}
        for k in workers:
            rr = RouterRun("rules", {}, lm, config, build_scorers(config))
            t = time.perf_counter()
            n = run_router(rr, examples, on_result=lambda _r: None, concurrency=k)
            rates[k] = n / (time.perf_counter() - t)
            figures.append(PerfFigure("concurrency", f"{k} workers", round(rates[k], 2), "examples/s"))
    top = max(workers)
    speedup = rates[top] / rates[min(workers)]
    figures.append(
        PerfFigure("concurrency", f"speed-up at {top} workers", round(speedup, 2), "x", ">= 10x at 16", speedup >= 10)
    )
    return figures
