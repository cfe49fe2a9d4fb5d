"""``routerlab perf``'s pipeline-split section: seconds per stage of a question, per router."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from routerlab import routers
from routerlab.agents.graph import PipelineConfig
from routerlab.agents.lm import resolve_lm
from routerlab.agents.tools import ToolSettings
from routerlab.benchmarks.builtin import load_builtin
from routerlab.benchmarks.loaders.spider import load_spider
from routerlab.perf._common import PerfFigure, p95

__all__ = ["pipeline_split", "stage_seconds"]


#: the pipeline's stages, by the tool whose call is timed as that stage
_STAGES: dict[str, str] = {
    "data_discovery": "discovery",
    "generate_sql": "generation",
    "execute_sql_and_analyze_result": "execution",
    "fix_sql": "repair",
}


_STAGE_ORDER = ("routing", "discovery", "generation", "execution", "repair", "other")


def stage_seconds(trace: Any) -> dict[str, float]:
    """One question's wall time split by stage: the router's decisions, each tool's calls, the rest.

    ``routing`` is the ``route`` node; each tool stage sums its calls' ``ended - started``;
    ``other`` is what remains of the example's wall time (dispatch, graph overhead, scoring
    excluded). Every stage is present, 0.0 when it did not run.
    """
    out = dict.fromkeys(_STAGE_ORDER, 0.0)
    out["routing"] = float(trace.node_latency_s.get("route", 0.0))
    for call in trace.tool_calls:
        stage = _STAGES.get(call.get("name", ""))
        if stage is not None and call.get("ended") and call.get("started"):
            out[stage] += call["ended"] - call["started"]
    out["other"] = max(0.0, trace.total_latency_s - sum(out.values()))
    return out


def _split_examples(databases: Path | None, n: int) -> list[Any]:
    """``n`` sql questions spread over the databases: a Spider-layout folder's, else the built-in dev split's."""
    if databases is None:
        return [e for e in load_builtin().split("dev") if e.intent == "sql"][:n]

    by_db: dict[str, list[Any]] = {}
    for e in load_spider(str(databases)).examples:
        by_db.setdefault(e.db_id, []).append(e)
    # round-robin over the databases, so every schema's prefill is in the figures
    out: list[Any] = []
    queues = [by_db[k] for k in sorted(by_db)]
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop(0))
    return out


def pipeline_split(
    spec: str = "local",
    databases: Path | None = None,
    n: int = 12,
    tools: dict[str, Any] | None = None,
    routers_: Sequence[str] = ("single_call", "oracle"),
) -> list[PerfFigure]:
    """Where a question's time goes: the routed pipeline's p50 per stage next to the plain call's.

    Runs the same ``n`` sql questions through each router (``single_call``: the plain call;
    ``oracle``: the pipeline with perfect routing) and reports, per router, the p50 seconds per
    question of each stage (:func:`stage_seconds`), the p50 and p95 per question, and the
    pipeline's p50 minus the plain call's (issue 40's target: at most 1 s). Each router starts
    with no evaluated prompt prefix (in memory or on disk), so the order of ``routers_`` does not
    change the figures; within a router, questions on one database reuse their schema prefix as
    a run does.

    Args:
        spec: The LM.
        databases: A Spider-layout folder (None: the built-in benchmark's dev split).
        n: Questions.
        tools: Tool settings of the pipeline (``pipeline.tools`` of a run config; None: the defaults).
        routers_: The routers compared, the plain call first.
    """
    lm = resolve_lm(spec, cache=False)
    forget = getattr(getattr(lm, "_engine_spec", None), "forget_prefixes", None)
    examples = _split_examples(databases, n)
    config = PipelineConfig(tools=ToolSettings(**(tools or {})))
    figures: list[PerfFigure] = []
    p50: dict[str, float] = {}
    for name in routers_:
        pipe = routers.build_pipeline(name, lm, config=config)
        splits, totals = [], []
        # every router starts cold: without this the second one finds the first one's schema
        # prefixes evaluated (in memory or on disk) and its figures depend on the run order
        # (measured 2026-11-26: the pipeline came out 3.9 s below the plain call it runs after)
        if forget is not None:
            forget()
        with mock.patch.dict(os.environ, {"ROUTERLAB_PREFIX_CACHE": "off"}):
            for e in examples:
                trace = pipe.run(e.question, e.db_path, oracle_intent="sql", example_id=e.id)
                splits.append(stage_seconds(trace))
                totals.append(trace.total_latency_s)
        p50[name] = statistics.median(totals)
        for stage in _STAGE_ORDER:
            value = statistics.median(s[stage] for s in splits)
            figures.append(PerfFigure("pipeline split", f"{name}: p50 {stage}", round(value, 3), "s"))
        figures += [
            PerfFigure("pipeline split", f"{name}: p50 per question", round(p50[name], 3), "s"),
            PerfFigure("pipeline split", f"{name}: p95 per question", round(p95(totals), 3), "s"),
        ]
    if len(routers_) > 1:
        plain, routed = routers_[0], routers_[-1]
        gap = p50[routed] - p50[plain]
        figures.append(
            PerfFigure(
                "pipeline split",
                f"{routed} p50 minus {plain} p50",
                round(gap, 3),
                "s",
                "<= 1 s",
                gap <= 1.0,
            )
        )
    return figures
