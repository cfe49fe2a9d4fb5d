"""``routerlab perf``'s harness section: the pipeline, scoring and tracking with a zero-latency LM."""

from __future__ import annotations

import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

import routerlab._runs.runner as runner_mod
import routerlab.agents.db.database as database_mod
import routerlab.agents.tools.subagents as subagents_mod
from routerlab._runs.runner import RouterRun, RunConfig, build_scorers
from routerlab.benchmarks.builtin import load_builtin
from routerlab.benchmarks.dataset import Dataset
from routerlab.benchmarks.selection import stratified_subset
from routerlab.eval.store import ResultsStore
from routerlab.perf._common import Clock, PerfFigure, zero_latency_lm

__all__ = ["harness_overhead"]


def harness_overhead(n_examples: int = 60) -> list[PerfFigure]:
    """The pipeline, scoring and tracking with a zero-latency scripted LM, split by component.

    Args:
        n_examples: Built-in examples replayed with the ``rules`` router.

    Returns:
        Milliseconds per example for graph, guard, SQL execution, scoring and tracking.
    """
    # imported here: MLflow costs seconds at import, and a run without MLflow never loads it
    from routerlab.eval.tracking import MlflowSink

    examples = stratified_subset(load_builtin().split("all"), n_examples)
    config = RunConfig()
    clock = Clock()
    with ExitStack() as stack:
        stack.enter_context(
            mock.patch.object(database_mod, "check_sql_to_run", clock.wrap("guard", database_mod.check_sql_to_run))
        )
        stack.enter_context(mock.patch.object(subagents_mod, "check_sql", clock.wrap("guard", subagents_mod.check_sql)))
        stack.enter_context(
            mock.patch.object(database_mod.Database, "execute", clock.wrap("sql", database_mod.Database.execute))
        )
        stack.enter_context(mock.patch.object(runner_mod, "score_trace", clock.wrap("scoring", runner_mod.score_trace)))
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        rr = RouterRun("rules", {}, zero_latency_lm(), config, build_scorers(config))
        store = ResultsStore(str(tmp / "results.duckdb"))
        sink = MlflowSink(f"sqlite:///{tmp}/mlflow.db")

        ds = Dataset("builtin", "perf", list(examples), source="builtin")
        store.create_run("perf.rules", router="rules", lm="scripted", dataset=ds, split="all", config={}, params={})
        mlflow_id = sink.start_run(rr.router, "scripted", ds, {"perf": True}, run_key="perf.rules", split="all")
        rr.run_example(examples[0])  # warm-up: imports, first connections
        writer = stack.enter_context(store.writer("perf.rules"))  # as the session stores results
        clock.seconds.clear()
        t0 = time.perf_counter()
        for e in examples:
            t = time.perf_counter()
            result = rr.run_example(e)
            clock.add("run_example", time.perf_counter() - t)
            t = time.perf_counter()
            writer.add(result)
            t_store = time.perf_counter()
            sink.log_example(mlflow_id, result, question=e.question)
            clock.add("tracking: results store", t_store - t)
            clock.add("tracking: mlflow", time.perf_counter() - t_store)
        wall = time.perf_counter() - t0
        sink.finish_run(mlflow_id, store.results("perf.rules"), status="FINISHED")
    s, n = clock.seconds, len(examples)
    graph = s.get("run_example", 0.0) - s.get("scoring", 0.0) - s.get("guard", 0.0) - s.get("sql", 0.0)
    per = {k: 1000 * v / n for k, v in {"graph": graph, **s}.items() if k != "run_example"}
    harness = sum(v for k, v in per.items() if k != "sql")
    figures = [PerfFigure("harness", f"{k} per example", round(v, 2), "ms") for k, v in sorted(per.items())]
    figures.append(PerfFigure("harness", "wall per example", round(1000 * wall / n, 2), "ms"))
    figures.append(
        PerfFigure(
            "harness", "harness excl. SQL execution", round(harness, 2), "ms", "<= 10 ms per example", harness <= 10
        )
    )
    return figures
