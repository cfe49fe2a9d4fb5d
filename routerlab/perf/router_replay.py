"""``routerlab perf``'s replay section: what a second router costs when the first one's outcomes are stored."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from routerlab._runs.runner import RouterRun, RunConfig, build_scorers, run_router
from routerlab.agents.lm import resolve_lm
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.benchmarks.builtin import load_builtin
from routerlab.benchmarks.selection import stratified_subset
from routerlab.perf._common import PerfFigure, stub_server

__all__ = ["router_replay"]


def _first_intent(results: Sequence[Any], example_id: str) -> str | None:
    """The intent of an example's first routing decision in ``results`` (None if absent)."""
    for r in results:
        if r.example_id == example_id:
            return r.predicted_intent
    return None


def router_replay(n_examples: int = 24, delay_s: float = 0.2) -> list[PerfFigure]:
    """What a second router costs when the first one's sub-agent outcomes are stored.

    Against the loopback stub LM (``delay_s`` per call, as a remote provider): ``rules`` runs
    fresh and stores its outcomes; then ``oracle`` runs fresh (nothing stored) and replaying
    what ``rules`` stored, on every example and on those where the two routed alike (the goal's
    condition). A replayed call makes no LM call and no query; routing always runs. The
    share of calls replayed counts sub-agent calls only: a call that waits for the user
    (``ask_human``) computes nothing, so nothing is stored for it.
    """
    from dataclasses import replace as _replace

    examples = stratified_subset(load_builtin().split("all"), n_examples)
    figures: list[PerfFigure] = []
    with tempfile.TemporaryDirectory() as d, stub_server(delay_s) as base:
        lm = resolve_lm("openai/stub", api_base=base, api_key="stub", cache=False)
        stored = str(Path(d) / "outcomes.sqlite")

        def timed(router: str, cache: str, chosen: Sequence[Any]) -> tuple[float, list[Any]]:
            config = RunConfig(lm="openai/stub")
            config = _replace(config, pipeline=_replace(config.pipeline, replay=cache))
            rr = RouterRun(router, {}, lm, config, build_scorers(config))
            results: list[Any] = []
            t = time.perf_counter()
            run_router(rr, chosen, on_result=results.append)
            return time.perf_counter() - t, results

        first_s, first = timed("rules", stored, examples)
        figures.append(PerfFigure("replay", "first router (rules), fresh, storing outcomes", round(first_s, 2), "s"))
        chains = {r.example_id: [c["name"] for c in r.trace.tool_calls] for r in first if r.trace is not None}
        for label, chosen in (
            ("all examples", examples),
            ("examples routed alike", [e for e in examples if e.intent == _first_intent(first, e.id)]),
        ):
            fresh_s, _ = timed("oracle", str(Path(d) / f"fresh-{len(figures)}.sqlite"), chosen)
            replay_s, replayed = timed("oracle", stored, chosen)
            waits = {t.name for t in DEFAULT_TOOLS if t.interrupts}
            calls = [c for r in replayed if r.trace is not None for c in r.trace.tool_calls if c["name"] not in waits]
            alike = sum(
                1 for r in replayed if r.trace and [c["name"] for c in r.trace.tool_calls] == chains.get(r.example_id)
            )
            share = replay_s / fresh_s
            goal = label == "examples routed alike"
            figures += [
                PerfFigure("replay", f"second router (oracle), fresh, {label} ({len(chosen)})", round(fresh_s, 2), "s"),
                PerfFigure("replay", f"second router (oracle), replaying, {label}", round(replay_s, 2), "s"),
                PerfFigure(
                    "replay",
                    f"tool calls replayed, {label}",
                    round(sum(1 for c in calls if c.get("replayed")) / max(len(calls), 1), 3),
                    "fraction",
                ),
                PerfFigure("replay", f"examples with the same tool chain, {label}", alike, "examples"),
                PerfFigure(
                    "replay",
                    f"replayed cost / fresh cost, {label}",
                    round(share, 3),
                    "fraction",
                    "<= 0.10" if goal else "",
                    share <= 0.10 if goal else None,
                ),
            ]
    return figures
