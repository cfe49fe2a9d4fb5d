"""A session's live run.

Each router's run in turn, results stored as each example completes, progress shown, each run
closed with its status.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from routerlab._runs.runner import DEADLINE_ERROR_CLASS, RouterRun, run_router
from routerlab._runs.session_close import close_run, close_unstarted
from routerlab._runs.session_plan import Live
from routerlab.agents.faults import summarize_calls
from routerlab.agents.signals import is_stop, shield
from routerlab.benchmarks.dbcheck import BAD_DATABASE_CLASS
from routerlab.eval.analysis.tracked import child_name, parent_name
from routerlab.eval.metrics import gold_failure_line
from routerlab.eval.scoring import ExampleResult, did_run
from routerlab.eval.store import END_TO_END

__all__ = ["CRASH_FAILURE_SHARE", "crash_verdict", "run_all"]


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>6} ex/min"),
        TextColumn("EX {task.fields[ex]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def _done_ids(store: Any, run_id: str, attempts: int) -> set[str]:
    """The examples a resumed run has finished: all attempts stored, none skipped by a deadline or a bad database."""
    # an example counts as done once all its attempts have a result; one the deadline skipped has
    # a result but never ran, so it runs now
    skipped = store.query(
        "SELECT DISTINCT example_id FROM examples WHERE run_id = ? AND error_class IN (?, ?)",
        [run_id, DEADLINE_ERROR_CLASS, BAD_DATABASE_CLASS],
    )["example_id"]
    return store.completed_ids(run_id, min_attempts=attempts) - set(skipped)


class _ResultSink:
    """Where each example's result goes as it completes: the store, MLflow, the progress bar, the log."""

    def __init__(self, live: Live, run_id: str, mlflow_id: str | None, progress: Progress, task: Any, total: int):
        self._live, self._run_id, self._mlflow_id = live, run_id, mlflow_id
        self._progress, self._task, self._total = progress, task, total
        self._by_id = live.plan.by_id
        self._results: list[ExampleResult] = []
        self._started = _dt.datetime.now()
        self.writer: Any = None

    def __call__(self, result: ExampleResult) -> None:
        live = self._live
        # a signal inside the commit would become DuckDB's "Query interrupted" (a crash, exit 1):
        # it is held until the row is stored, then stops the run like any other
        with shield():
            self.writer.add(result)
        if live.sink is not None and self._mlflow_id is not None:
            live.sink.log_example(self._mlflow_id, result, question=self._by_id[result.example_id].question)
        self._results.append(result)
        minutes = max((_dt.datetime.now() - self._started).total_seconds() / 60, 1e-9)
        ex = [v for r in self._results if (v := r.value("ex")) is not None]
        self._progress.update(
            self._task,
            advance=1,
            rate=f"{len(self._results) / minutes:.1f}",
            ex=f"{sum(ex) / len(ex):.2f}" if ex else "-",
        )
        if not live.console.is_terminal:
            # a log file or CI gets no live bar: one line per example instead
            live.console.print(
                _log_line(self._run_id, len(self._results), self._total, result),
                highlight=False,
                markup=False,
                soft_wrap=True,
            )


def _start_mlflow_run(live: Live, rr: RouterRun, run_id: str) -> str | None:
    """The run's MLflow child run under the session's parent (None without MLflow)."""
    if live.sink is None:
        return None
    config = live.spec.config
    return live.sink.start_run(
        rr.router,
        config.lm,
        live.plan.ds,
        {**config.to_dict(), "session": live.plan.session_id, "run_id": run_id},
        parent_run_id=live.parent,
        run_key=run_id,
        split=config.split,
        components=rr.scorers,
        run_name=child_name(END_TO_END, run_id.removeprefix(f"{live.plan.session_id}.")),
    )


def _report_faults(live: Live, rr: RouterRun, run_id: str) -> None:
    """Keep and print the run's fault-injection decisions (nothing without ``faults``)."""
    if rr.injector is None:
        return
    live.out.fault_calls[run_id] = list(rr.injector.calls)
    counts = summarize_calls(rr.injector.calls)
    live.console.print(
        f"{run_id}: {len(rr.injector.calls)} calls, {sum(counts.values())} faults injected "
        f"({', '.join(f'{k} {n}' for k, n in sorted(counts.items())) or 'none'})",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _final_status(live: Live, run_id: str) -> tuple[str, str | None]:
    """The run's status (FINISHED, KILLED or FAILED) and, when FAILED by crashes, why."""
    out, store = live.out, live.store
    skipped_now = store.query(
        "SELECT count(DISTINCT example_id) AS n FROM examples WHERE run_id = ? AND error_class = ?",
        [run_id, DEADLINE_ERROR_CLASS],
    )["n"][0]
    out.skipped += int(skipped_now)
    status = "KILLED" if out.interrupted or skipped_now else "FINISHED"
    stored = store.results(run_id)
    if line := gold_failure_line(run_id, stored):
        live.console.print(line, highlight=False, markup=False, soft_wrap=True)
    crashed = crash_verdict(stored)
    if crashed is not None and not out.interrupted:
        out.failed[run_id] = crashed
        return "FAILED", crashed
    if crashes := [r for r in stored if r.outcome == "crash"]:
        # fewer than half crashed: the run stands, but never silently (exit 3)
        out.crashed[run_id] = (len(crashes), sum(map(did_run, stored)), str(crashes[0].error))
    return status, crashed


#: a run in which more than this share of the examples that ran crashed is FAILED, not a result
CRASH_FAILURE_SHARE = 0.5


def crash_verdict(results: Sequence[ExampleResult]) -> str | None:
    """Why a run must end FAILED: most of the examples that ran crashed (None: it stands).

    A crash is the harness's or the component's failure, not a wrong answer: a run made mostly
    of crashes would print a table of zeros that reads like a router's score.
    """
    ran = [r for r in results if did_run(r)]
    crashes = [r for r in ran if r.outcome == "crash"]
    if not ran or len(crashes) <= CRASH_FAILURE_SHARE * len(ran):
        return None
    return f"{len(crashes)} of {len(ran)} examples crashed (first: {crashes[0].error})"


def _log_line(run_id: str, n: int, total: int, result: ExampleResult) -> str:
    scores = " ".join(f"{k}={v:g}" for k in ("route", "ex", "success") if (v := result.value(k)) is not None)
    failure = f" [{result.error_class}]" if result.error_class else ""
    chain = ">".join(result.trace.tool_names) if result.trace is not None else ""
    return f"{run_id} {n}/{total} {result.example_id} {result.latency_s:.1f}s {scores} {chain}{failure}"


def _run_router(live: Live, rr: RouterRun, progress: Progress) -> None:
    """One router's run: the examples it lacks, results stored as they come, closed with its status."""
    plan, store, config = live.plan, live.store, live.spec.config
    run_id = plan.run_id(rr)
    live.out.run_ids.append(run_id)
    done_ids = _done_ids(store, run_id, config.attempts) if run_id in plan.existing else set()
    live.current = (run_id, None)
    mlflow_id = _start_mlflow_run(live, rr, run_id)
    if mlflow_id is not None:
        live.current = (run_id, mlflow_id)
        store.set_mlflow_run(run_id, mlflow_id)
    # a conversation's later turns need its earlier ones: one with a turn left is replayed whole
    unfinished = {e.conversation for e in plan.examples if e.conversation and e.id not in done_ids}
    todo = [e for e in plan.examples if e.id not in done_ids or e.conversation in unfinished]
    total = len(plan.examples)
    task = progress.add_task(rr.router_name, total=total, completed=total - len(todo), rate="-", ex="-")
    on_result = _ResultSink(live, run_id, mlflow_id, progress, task, len(todo))
    left_out = plan.left_out
    try:
        with store.writer(run_id) as writer:
            on_result.writer = writer
            for e in (e for e in todo if e.id in left_out):
                for a in range(config.attempts):
                    why = f"left out: its database {left_out[e.id].reason}"
                    on_result(rr.skipped(e, a, why, BAD_DATABASE_CLASS))
            run_router(
                rr,
                [e for e in todo if e.id not in left_out],
                on_result=on_result,
                concurrency=config.concurrency,
                attempts=config.attempts,
                stop=live.stop,
                deadline=live.deadline,
            )
    except BaseException as exc:
        if not is_stop(exc):
            raise
        live.stop.set()
        live.out.interrupted = True
    _report_faults(live, rr, run_id)
    status, crashed = _final_status(live, run_id)
    live.out.results[run_id] = close_run(store, live.sink, run_id, mlflow_id, status, error=crashed)
    live.current = None


def run_all(live: Live) -> None:
    """Every router's run in turn under the session's MLflow parent; an interruption ends them all KILLED."""
    spec, plan = live.spec, live.plan
    if live.sink is not None:
        # the session's one parent (a main job's routing part opened it: reopened by the same key)
        live.parent = live.sink.start_parent(
            parent_name(plan.session_id),
            {"session": plan.session_id, "routers": ",".join(n for n, _ in spec.routers), "lm": spec.config.lm},
            dataset=plan.ds,
            run_key=plan.session_id,
        )
    with _progress(live.console) as progress:
        for rr in plan.runs:
            _run_router(live, rr, progress)
            if live.out.interrupted:
                close_unstarted(live.store, plan.runs, plan.session_id, live.out.results, None, "KILLED")
                break
