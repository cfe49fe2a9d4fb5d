"""``routerlab run``: a comparison of routers on one dataset, persisted as it goes.

A session has an id. Each router's run within it has the run id ``<session>.<router>``, one
MLflow child run under the session's parent run, and rows in the DuckDB results store written as
each example completes. ``--resume SESSION`` reruns only the examples that have no stored result.

Long because every way a session stops (a signal, an error, a full or busy store, a deadline)
must close the same runs in both stores and leave a resumable session, and those paths are
checked side by side here.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import logging
import re
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
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

from routerlab.agents.errors import ConfigError, RouterlabError, RunError
from routerlab.agents.faults import FaultCall, summarize_calls
from routerlab.agents.registry import component_spec
from routerlab.agents.signals import is_stop, shield
from routerlab.agents.tools.sql_program import sql_program_record
from routerlab.benchmarks.dataset import Dataset, dataset
from routerlab.benchmarks.db_digest import check_database_digests, database_digests
from routerlab.benchmarks.dbcheck import BAD_DATABASE_CLASS, BadDatabase, bad_databases_error, check_databases
from routerlab.benchmarks.example import Example
from routerlab.eval.defaults import DEFAULT_STORE_PATH, DEFAULT_TRACKING_URI
from routerlab.eval.metrics import gold_failure_line
from routerlab.eval.scoring import ExampleResult, did_run
from routerlab.eval.store import StoreBusyError
from routerlab.resume import resume_command
from routerlab.runner import DEADLINE_ERROR_CLASS, RouterRun, RunConfig, build_scorers, run_router
from routerlab.selection import of_intents, schedule, stratified_subset
from routerlab.session_spec import (
    check_resume,
    parse_routers,
    recorded_session,
    session_runs,
    unknown_session,
)

__all__ = [
    "SessionResult",
    "SessionSpec",
    "check_resume",
    "crash_verdict",
    "load_dataset",
    "new_session_id",
    "parse_routers",
    "recorded_session",
    "run_session",
    "select",
    "write_summary",
]

_log = logging.getLogger(__name__)


@dataclass
class SessionSpec:
    """A comparison to run.

    Attributes:
        routers: ``(name, constructor args)`` per router, in display order.
        config: The run config shared by all routers.
        tracking_uri: MLflow tracking URI (None: no MLflow logging).
        store_path: DuckDB results store file.
        traces: Log one MLflow trace per example.
        skip_bad_databases: Leave the examples of a bad database out as ``not_run`` (error class
            ``bad_database``) instead of refusing the run (see :mod:`routerlab.benchmarks.dbcheck`).
    """

    routers: list[tuple[str, dict[str, Any]]]
    config: RunConfig
    tracking_uri: str | None = DEFAULT_TRACKING_URI
    store_path: str = DEFAULT_STORE_PATH
    traces: bool = True
    skip_bad_databases: bool = False


@dataclass
class SessionResult:
    """What a session produced."""

    session_id: str
    run_ids: list[str]
    results: dict[str, list[ExampleResult]] = field(default_factory=dict)
    interrupted: bool = False
    #: examples the run's deadline kept from starting (recorded as ``not_run``, in no rate)
    skipped: int = 0
    #: run id -> why it ended FAILED although it ran to the end (most of its examples crashed)
    failed: dict[str, str] = field(default_factory=dict)
    #: the signal that stopped the session (``SIGINT``, ``SIGTERM``), when ``interrupted``
    signal_name: str | None = None
    #: every fault-injection decision of this invocation, by run id (empty without ``faults``)
    fault_calls: dict[str, list[FaultCall]] = field(default_factory=dict)
    #: databases whose examples were left out (``--skip-bad-databases``)
    bad_databases: list[BadDatabase] = field(default_factory=list)
    #: run id -> (examples that crashed, examples that ran, first crash) of a run that stands
    crashed: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    #: the store stayed locked by another process past the wait limit: the session stopped,
    #: runs not closed stay RUNNING (resumable), runs already closed keep their status
    store_busy: RunError | None = None
    #: the session's runs are in the store (False: a stop or an error came before they were)
    registered: bool = False


def new_session_id() -> str:
    """Sortable, unique: ``YYYYmmdd-HHMMSS-<16 hex>`` (64 random bits; a collision is refused too)."""
    return f"{_dt.datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(8)}"


def load_dataset(config: RunConfig) -> Dataset:
    """Build the configured dataset through the registry (importing the built-in loaders)."""
    import routerlab.benchmarks.builtin
    import routerlab.benchmarks.loaders  # noqa: F401  (registers the on-disk formats)

    try:
        return dataset.build(config.dataset, **config.dataset_args)
    except RunError as exc:
        # loaders name their argument ("pass ... as path"); the user typed --dataset-path
        fix = re.sub(r"\bas path\b", "as --dataset-path (dataset_args.path in a run config)", exc.fix or "")
        if fix == exc.fix:
            raise
        raise dataclasses.replace(exc, fix=fix) from None


def select(ds: Dataset, config: RunConfig) -> list[Example]:
    """The examples the run replays, scheduled by database."""
    return schedule(stratified_subset(of_intents(ds.split(config.split), config.intents), config.limit))


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


def _close(
    store: Any, sink: Any, run_id: str, mlflow_id: str | None, status: str, *, error: str | None = None
) -> list[ExampleResult]:
    """Close a run in the store and in MLflow with ``status``; returns its stored results."""
    # a stop signal here waits until both stores agree: a run closed in one and RUNNING in the
    # other is what a signal during the final logging used to leave
    with shield():
        results = store.results(run_id)
        store.finish_run(run_id, status)
        if sink is not None and mlflow_id is not None:
            sink.finish_run(mlflow_id, results, status=status, error=error)
    return results


def _close_quietly(store: Any, sink: Any, run_id: str, mlflow_id: str | None, status: str, error: str) -> None:
    """:func:`_close` on the way out of a failure: a second failure must not hide the first."""
    try:
        _close(store, sink, run_id, mlflow_id, status, error=error)
    except Exception as exc:  # the original error is re-raised by the caller
        _log.warning("could not mark run %s %s: %s", run_id, status, exc)


def _close_unstarted(
    store: Any,
    runs: Sequence[RouterRun],
    session_id: str,
    closed: Mapping[str, Any],
    current: tuple[str, str | None] | None,
    status: str,
) -> None:
    """Give the runs a stopped session never reached its final status too (resume reopens them)."""
    for rr in runs:
        run_id = f"{session_id}.{rr.router_name}"
        if run_id not in closed and (current is None or run_id != current[0]):
            try:
                store.finish_run(run_id, status)
            except Exception as exc:  # the session's own error or interrupt matters more
                _log.warning("could not mark run %s %s: %s", run_id, status, exc)


@dataclass
class _Plan:
    """A session's inputs, every one checked before anything is written."""

    session_id: str
    #: run ids the resumed session already has in the store (empty for a new session)
    existing: set[str]
    reader: Any
    ds: Dataset
    examples: list[Example]
    bad: list[BadDatabase]
    runs: list[RouterRun]
    #: sha256 of each database the examples read, recorded with the runs, checked on resume
    db_digests: dict[str, str] = field(default_factory=dict)

    @property
    def by_id(self) -> dict[str, Example]:
        return {e.id: e for e in self.examples}

    @property
    def left_out(self) -> dict[str, BadDatabase]:
        return {eid: b for b in self.bad for eid in b.examples}

    def run_id(self, rr: RouterRun) -> str:
        return f"{self.session_id}.{rr.router_name}"


def _plan(spec: SessionSpec, resume: str | None, lm: Any, session_id: str | None = None) -> _Plan:
    """Check every input (dataset, databases, scorers, LM, routers, a resumed session's digest, MLflow).

    Raises:
        ConfigError: Bad input; nothing has been written.
    """
    from routerlab.agents.lm import resolve_lm
    from routerlab.eval.store import ResultsStore

    config = spec.config
    session_id = resume or session_id or new_session_id()
    # nothing is written until every input is checked: bad input leaves no store behind
    reader = ResultsStore(spec.store_path, read_only=True) if resume is not None else None
    existing = set(session_runs(reader, session_id)) if reader is not None else set()
    if reader is not None and not existing:
        raise unknown_session(reader, session_id)
    ds = load_dataset(config)
    examples = select(ds, config)
    # every database opens and has its examples' tables, or the run stops here (exit 2)
    bad = check_databases(examples)
    if bad and not spec.skip_bad_databases:
        raise bad_databases_error(bad)
    scorers = build_scorers(config)
    lm = lm if lm is not None else resolve_lm(config.lm, api_base=config.lm_api_base, cache=config.lm_cache)
    # build every router (and check its contract) before anything runs
    runs = [RouterRun(name, args, lm, config, scorers) for name, args in spec.routers]
    plan = _Plan(session_id, existing, reader, ds, examples, list(bad), runs, database_digests(examples))
    _check_digests(plan)
    if spec.tracking_uri:
        from routerlab.eval.tracking import check_tracking_store, resolve_tracking_uri

        # a store that cannot take the runs must fail here, before any run is created
        check_tracking_store(resolve_tracking_uri(spec.tracking_uri))
    return plan


def _check_digests(plan: _Plan) -> None:
    """Refuse to resume a run recorded on another version of the dataset."""
    digest = plan.ds.digest()
    for rr in plan.runs:
        run_id = plan.run_id(rr)
        if run_id not in plan.existing:
            continue
        stored = plan.reader.run(run_id)
        # the databases' contents, not only the dataset file: changed rows would mix two versions
        check_database_digests(run_id, stored["params"].get("databases", {}), plan.db_digests)
        if (recorded := stored["dataset_digest"]) != digest:
            raise ConfigError(
                f"run {run_id!r} was recorded on another version of dataset {plan.ds.name!r}",
                expected=f"dataset digest {recorded[:12]}...",
                found=f"{digest[:12]}...",
                fix="start a new session instead of resuming this one",
                details={"option": "--resume"},
            )


def _create_runs(live: _Live) -> None:
    """Say what the session runs, and create every run (RUNNING) before any MLflow run exists."""
    store, spec, plan, console = live.store, live.spec, live.plan, live.console
    config = spec.config
    faults = f", faults {config.faults.to_text()}" if config.faults is not None else ""
    console.print(
        f"session {plan.session_id}: {config.dataset}/{config.split}, {len(plan.examples)} examples, "
        f"routers {','.join(n for n, _ in spec.routers)}, lm {config.lm}{faults}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if not plan.existing:
        # a new id that an earlier session holds is refused whole, never merged into
        store.refuse_existing([plan.run_id(rr) for rr in plan.runs])
    # every run exists (RUNNING) before any MLflow run does: a kill from here on is resumable.
    # They are registered in one transaction: a signal half-way leaves all of them or none, so
    # --resume never knows only some of the routers the session was asked to run
    registrations = []
    for rr in plan.runs:
        params = {
            "router": component_spec(rr.router),
            "config": config.to_dict(),
            "session": plan.session_id,
            "databases": plan.db_digests,
        }
        program = config.pipeline.tools.sql_program
        if program:  # the compiled generate_sql program's file and digest, next to its name in config
            params["sql_program"] = sql_program_record(program)
        run_id = plan.run_id(rr)
        registrations.append(
            {
                "run_id": run_id,
                "router": rr.router_name,
                "lm": config.lm,
                "dataset": plan.ds,
                "split": config.split,
                "config": config.to_dict(),
                "params": params,
                "new": run_id not in plan.existing,
            }
        )
    # held signals: the transaction commits (every router known to --resume), then the stop is raised
    with shield():
        store.create_runs(registrations)
        live.out.registered = True


@dataclass
class _Live:
    """What the runs of a session share while it runs."""

    spec: SessionSpec
    plan: _Plan
    store: Any
    sink: Any
    out: SessionResult
    console: Console
    stop: threading.Event = field(default_factory=threading.Event)
    deadline: float | None = None
    parent: str | None = None
    #: the run being run: (run id, MLflow run id), to close it if the session stops
    current: tuple[str, str | None] | None = None


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

    def __init__(self, live: _Live, run_id: str, mlflow_id: str | None, progress: Progress, task: Any, total: int):
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
        ex = [r.value("ex") for r in self._results if r.value("ex") is not None]
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


def _start_mlflow_run(live: _Live, rr: RouterRun, run_id: str) -> str | None:
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
    )


def _report_faults(live: _Live, rr: RouterRun, run_id: str) -> None:
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


def _final_status(live: _Live, run_id: str) -> tuple[str, str | None]:
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


def _run_router(live: _Live, rr: RouterRun, progress: Progress) -> None:
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
    live.out.results[run_id] = _close(store, live.sink, run_id, mlflow_id, status, error=crashed)
    live.current = None


def _run_all(live: _Live) -> None:
    """Every router's run in turn under the session's MLflow parent; an interruption ends them all KILLED."""
    spec, plan = live.spec, live.plan
    if live.sink is not None:
        live.parent = live.sink.start_parent(
            f"compare {plan.session_id}",
            {"session": plan.session_id, "routers": ",".join(n for n, _ in spec.routers), "lm": spec.config.lm},
            dataset=plan.ds,
            run_key=plan.session_id,
        )
    with _progress(live.console) as progress:
        for rr in plan.runs:
            _run_router(live, rr, progress)
            if live.out.interrupted:
                _close_unstarted(live.store, plan.runs, plan.session_id, live.out.results, None, "KILLED")
                break


def _fail(live: _Live, exc: BaseException) -> None:
    """Close what an error stopped FAILED (runs, MLflow parent) and say how to resume."""
    error = f"{type(exc).__name__}: {exc}"
    plan, spec, current = live.plan, live.spec, live.current
    if current is not None:
        _close_quietly(live.store, live.sink, current[0], current[1], "FAILED", error)
    _close_unstarted(live.store, plan.runs, plan.session_id, live.out.results, current, "FAILED")
    if live.sink is not None and live.parent is not None:
        try:
            live.sink.finish_parent(live.parent, status="FAILED")
        except Exception as close_exc:
            _log.warning("could not mark the comparison run FAILED: %s", close_exc)
    live.console.print(
        f"session {plan.session_id} stopped by an error; what finished is stored: "
        f"resume with  {resume_command(plan.session_id, spec.store_path, spec.tracking_uri)}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def run_session(
    spec: SessionSpec,
    *,
    console: Console,
    resume: str | None = None,
    lm: Any = None,
    session_id: str | None = None,
) -> SessionResult:
    """Run every router of ``spec`` over the selected examples and persist results as they come.

    Everything that can be checked (dataset, split, scorers, LM, routers, a resumed session's
    dataset digest) is checked before any run is created, so bad input leaves no run behind. Each
    run ends in the store and in MLflow as ``FINISHED`` (every example has a result),
    ``KILLED`` (Ctrl-C, or the deadline left examples unstarted) or ``FAILED`` (an error stopped
    the session; the error is re-raised). A killed process leaves its runs ``RUNNING``;
    ``resume`` reopens and finishes them.

    Args:
        spec: What to run.
        console: Where progress goes (the session id is printed first).
        resume: An earlier session id: finish its missing examples only (and those its deadline
            skipped).
        lm: A resolved LM (default: resolve ``spec.config.lm``).
        session_id: The id of a new session whose other part is already stored (the main job's
            routing part); default: a new id (:func:`new_session_id`).

    Returns:
        The session's run ids and results. On Ctrl-C, ``interrupted`` is True and what finished
        is kept; ``skipped`` counts examples the deadline kept from starting.
    """
    from routerlab.eval.store import ResultsStore
    from routerlab.eval.tracking import MlflowSink

    plan = _plan(spec, resume, lm, session_id)
    store = ResultsStore(spec.store_path)
    # a lock held by another process is waited for visibly (up to store_wait_s), not in silence
    store.on_wait = lambda message: console.print(message, highlight=False, markup=False, soft_wrap=True)
    sink = MlflowSink(spec.tracking_uri, traces=spec.traces) if spec.tracking_uri else None
    out = SessionResult(session_id=plan.session_id, run_ids=[])
    deadline = time.monotonic() + spec.config.deadline_s if spec.config.deadline_s is not None else None
    live = _Live(spec, plan, store, sink, out, console, deadline=deadline)
    try:
        _create_runs(live)
        _run_all(live)
    except StoreBusyError as exc:
        # another process took the store: nothing can be written, so nothing is marked; what
        # finished is stored, and the runs left RUNNING are what --resume reopens and finishes
        # (MLflow's run stays RUNNING too, as after a kill: --resume reopens it by its run key)
        out.store_busy = exc
        return out
    except BaseException as exc:
        if not is_stop(exc):
            # a full disk or a damaged MLflow store is named with its recovery (exit 2), not a traceback
            failure = _tracking_failure(spec, exc)
            if out.registered:  # before that, nothing of this session exists to close
                _fail(live, failure or exc)
            if failure is not None:
                raise failure from None
            raise
        # a stop outside an example (registering, opening a run, closing one): the same clean stop
        out.interrupted = True
        if out.registered:  # before that, nothing of this session exists to close
            with shield(raise_after=False):
                if live.current is not None:
                    _close_quietly(store, sink, live.current[0], live.current[1], "KILLED", "interrupted")
                _close_unstarted(store, plan.runs, plan.session_id, out.results, live.current, "KILLED")
    out.bad_databases = list(plan.bad)
    _finish_parent(live)
    return out


def _tracking_failure(spec: SessionSpec, exc: BaseException) -> ConfigError | None:
    """The clear error for an MLflow store fault (full disk, damaged file); None: not one."""
    from routerlab.eval.tracking import tracking_store_failure

    if spec.tracking_uri is None or isinstance(exc, RouterlabError):
        return None
    return tracking_store_failure(spec.tracking_uri, exc)


def _finish_parent(live: _Live) -> None:
    """Close the session's MLflow parent run with its dashboard; a stop here closes it KILLED.

    A signal during the dashboard (it takes seconds) used to leave the parent RUNNING: now the
    parent is closed KILLED without it, and ``--resume`` (nothing left to run) logs it again.
    """
    sink, out = live.sink, live.out
    if sink is None or live.parent is None:
        return
    final = "KILLED" if out.interrupted or out.skipped else "FAILED" if out.failed else "FINISHED"
    try:
        dashboard = parent_dashboard(live.store, out)
        with shield():
            sink.finish_parent(live.parent, status=final, **dashboard)
    except BaseException as exc:
        if not is_stop(exc):
            failure = _tracking_failure(live.spec, exc)
            live.console.print(
                f"session {out.session_id}: every run is stored, but its MLflow parent run could not be closed: "
                f"resume with  {resume_command(out.session_id, live.spec.store_path, live.spec.tracking_uri)}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
            if failure is not None:
                raise failure from None
            raise
        out.interrupted = True
        with shield(raise_after=False):
            sink.finish_parent(live.parent, status="KILLED")


def parent_dashboard(store: Any, out: SessionResult) -> dict[str, Any]:
    """What a session's MLflow parent run shows: each router's headline metrics, the comparison, a plot.

    The parent is the page a person opens first: its metrics (``<router>.success``,
    ``<router>.success_ci_low``, ``<router>.cold_latency_p50_s``...) make the runs table and
    the compare view show which router is best, and its artifacts hold the comparison table
    (``comparison.md``), the verdict (``verdict.md``) and the rates plot (``rates.png``); its
    description (the Description section of its page) is the verdict with a link to the router runs' compare page.
    A failure here never fails the session: the child runs already hold every figure.
    """
    from routerlab.eval.compare import compare_runs, render
    from routerlab.eval.verdict import render_verdict_markdown, verdicts_from_results
    from routerlab.routers import BASELINES

    ids = [r for r in out.run_ids if store.results(r)]
    if not ids:
        return {}
    try:
        comparison = compare_runs(store, ids)
        metrics: dict[str, float] = {}
        for row in comparison.runs:
            for scorer, r in row.rates.items():
                if r.n:
                    metrics |= {f"{row.router}.{scorer}": r.value, f"{row.router}.{scorer}_ci_low": r.ci_low}
                    metrics[f"{row.router}.{scorer}_ci_high"] = r.ci_high
            metrics[f"{row.router}.cold_latency_p50_s"] = row.cold_latency_p50_s
        results = {row.router: store.results(row.run_id) for row in comparison.runs}
        verdict = render_verdict_markdown(verdicts_from_results(results, baselines=tuple(BASELINES)))
        runs = store.runs()
        mlflow_ids = runs.set_index("run_id").reindex(ids)["mlflow_run_id"].dropna()
        return {
            "metrics": metrics,
            "texts": {"comparison.md": render(comparison, "markdown"), "verdict.md": verdict + "\n"},
            "figures": {"rates.png": _rates_figure(store, ids)},
            "children": [str(m) for m in mlflow_ids if m],
        }
    except Exception as exc:  # the dashboard is a summary: the session's results stand without it
        logging.getLogger(__name__).warning("parent run summary not logged: %s", exc)
        return {}


def _rates_figure(store: Any, run_ids: Sequence[str]) -> Any:
    """The rates-with-intervals figure of the report, for the parent run."""
    from routerlab.eval import analysis, plots

    data = analysis.load_store(store, run_ids=list(run_ids))
    return plots.plot_rates(analysis.rates_table(data))


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


def write_summary(path: Path, result: SessionResult) -> None:
    """A small JSON of the session (ids), for scripts."""
    path.write_text(json.dumps({"session": result.session_id, "runs": result.run_ids}, indent=2))
