"""``routerlab run``: a comparison of routers on one dataset, persisted as it goes.

A session has an id. Each router's run within it has the run id ``<session>.<router>``, one
MLflow child run under the session's parent run, and rows in the DuckDB results store written as
each example completes. ``--resume SESSION`` reruns only the examples that have no stored result.
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

from routerlab.agents.errors import ConfigError, RunError
from routerlab.agents.faults import FaultCall, summarize_calls
from routerlab.agents.registry import component_spec
from routerlab.agents.tools.sql_program import sql_program_record
from routerlab.benchmarks.dataset import Dataset, dataset
from routerlab.benchmarks.dbcheck import BAD_DATABASE_CLASS, BadDatabase, bad_databases_error, check_databases
from routerlab.benchmarks.example import Example
from routerlab.eval.metrics import gold_failure_line
from routerlab.eval.scoring import ExampleResult, did_run
from routerlab.eval.store import DEFAULT_STORE_PATH, StoreBusyError
from routerlab.runner import DEADLINE_ERROR_CLASS, RouterRun, RunConfig, build_scorers, run_router
from routerlab.selection import of_intents, schedule, stratified_subset

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
    tracking_uri: str | None = "sqlite:///mlflow.db"
    store_path: str = ".routerlab/results.duckdb"
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


def _session_runs(store: Any, session_id: str) -> list[str]:
    return [r for r in store.runs()["run_id"].tolist() if r.startswith(f"{session_id}.")]


def _unknown_session(store: Any, session_id: str) -> ConfigError:
    sessions = sorted({r.rsplit(".", 1)[0] for r in store.runs()["run_id"]})
    return ConfigError(
        f"no session {session_id!r} in {store.path}",
        expected="a session id printed by an earlier `routerlab run`",
        found=f"latest sessions: {sessions[-5:]}",
        fix="check the id, or the --store path",
        details={"option": "--resume"},
    )


def recorded_session(store_path: str, session_id: str) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """The routers (with their recorded arguments) and run settings of a stored session.

    ``routerlab run --resume SESSION`` starts from these, so the printed resume command finishes
    the same examples with the same routers without repeating the original options.

    Raises:
        ConfigError: No such session in the store.
    """
    from routerlab.eval.store import ResultsStore

    store = ResultsStore(store_path, read_only=True)
    run_ids = _session_runs(store, session_id)
    if not run_ids:
        raise _unknown_session(store, session_id)
    rows = [store.run(r) for r in run_ids]
    rows.sort(key=lambda row: (row["started_at"], row["run_id"]))
    routers = [(row["router"], dict(row["params"].get("router", {}).get("args", {}))) for row in rows]
    return routers, rows[0]["config"]


#: run settings a resumed session may change: they decide how fast it runs, not what it computes
RESUME_MAY_CHANGE = frozenset({"concurrency", "deadline_s", "lm_api_base"})


def _canonical(value: Any) -> Any:
    """``value`` as a JSON round trip gives it back (tuples become lists), for comparisons."""
    return json.loads(json.dumps(value, sort_keys=True, default=repr))


def _with_defaults(recorded: Any, defaults: Any) -> Any:
    """``recorded`` with every key it lacks taken from ``defaults``, at every depth.

    A session written before a setting existed (``pipeline.call_timeout_s``, say) has no value for
    it; it is read as that setting's default, as :func:`routerlab.config.load_run_config` reads
    it, so the session stays resumable. A key both hold keeps its recorded value.
    """
    if not (isinstance(recorded, dict) and isinstance(defaults, dict)):
        return recorded
    filled = {k: _with_defaults(v, defaults[k]) if k in defaults else v for k, v in recorded.items()}
    return {**{k: v for k, v in defaults.items() if k not in recorded}, **filled}


def check_resume(
    session_id: str,
    recorded_routers: Sequence[tuple[str, Mapping[str, Any]]],
    recorded_config: Mapping[str, Any],
    routers: Sequence[tuple[str, Mapping[str, Any]]],
    config: RunConfig,
) -> None:
    """Refuse a resume whose options would change what the recorded session computes.

    Resuming fills in the examples a session is missing; a different router, limit, LM, dataset
    or scorer would mix two experiments under one id (``compare`` would then pair n = 6 with
    n = 2). Only the settings in :data:`RESUME_MAY_CHANGE` may differ; a setting the recorded
    session lacks (it predates the option) counts as its default.

    Raises:
        ConfigError: Naming each changed setting with its recorded and its new value.
    """
    changes: list[str] = []
    was = {n: _canonical(dict(a)) for n, a in recorded_routers}
    now = {n: _canonical(dict(a)) for n, a in routers}
    if sorted(was) != sorted(now):
        changes.append(f"routers {','.join(was)} -> {','.join(now)}")
    changes += [f"{n} arguments {was[n]} -> {now[n]}" for n in now if n in was and now[n] != was[n]]
    new = _canonical(config.to_dict())
    old = _with_defaults(_canonical(dict(recorded_config)), _canonical(RunConfig().to_dict()))
    for key in sorted(set(new) | set(old)):
        if key not in RESUME_MAY_CHANGE and new.get(key) != old.get(key):
            changes.append(f"{key} {old.get(key)!r} -> {new.get(key)!r}")
    if changes:
        raise ConfigError(
            f"--resume {session_id} with options that change the recorded session",
            expected="the session's recorded routers and settings (only --concurrency, --deadline-s and "
            "--lm-api-base may differ)",
            found="; ".join(changes),
            fix=f"drop those options to finish session {session_id}, or start a new session without --resume",
            details={"option": "--resume", "changes": changes},
        )


def _close(
    store: Any, sink: Any, run_id: str, mlflow_id: str | None, status: str, *, error: str | None = None
) -> list[ExampleResult]:
    """Close a run in the store and in MLflow with ``status``; returns its stored results."""
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


def run_session(
    spec: SessionSpec,
    *,
    console: Console,
    resume: str | None = None,
    lm: Any = None,
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

    Returns:
        The session's run ids and results. On Ctrl-C, ``interrupted`` is True and what finished
        is kept; ``skipped`` counts examples the deadline kept from starting.
    """
    from routerlab.agents.lm import resolve_lm
    from routerlab.eval.store import ResultsStore
    from routerlab.eval.tracking import MlflowSink

    config = spec.config
    session_id = resume or new_session_id()
    # nothing is written until every input is checked: bad input leaves no store behind
    reader = ResultsStore(spec.store_path, read_only=True) if resume is not None else None
    existing = set(_session_runs(reader, session_id)) if reader is not None else set()
    if reader is not None and not existing:
        raise _unknown_session(reader, session_id)
    ds = load_dataset(config)
    examples = select(ds, config)
    by_id = {e.id: e for e in examples}
    # every database opens and has its examples' tables, or the run stops here (exit 2)
    bad = check_databases(examples)
    if bad and not spec.skip_bad_databases:
        raise bad_databases_error(bad)
    left_out = {eid: b for b in bad for eid in b.examples}
    scorers = build_scorers(config)
    lm = lm if lm is not None else resolve_lm(config.lm, api_base=config.lm_api_base, cache=config.lm_cache)
    # build every router (and check its contract) before anything runs
    runs = [RouterRun(name, args, lm, config, scorers) for name, args in spec.routers]
    digest = ds.digest()
    for rr in runs:
        run_id = f"{session_id}.{rr.router_name}"
        if run_id in existing and (recorded := reader.run(run_id)["dataset_digest"]) != digest:  # type: ignore[union-attr]
            raise ConfigError(
                f"run {run_id!r} was recorded on another version of dataset {ds.name!r}",
                expected=f"dataset digest {recorded[:12]}...",
                found=f"{digest[:12]}...",
                fix="start a new session instead of resuming this one",
                details={"option": "--resume"},
            )
    if spec.tracking_uri:
        from routerlab.eval.tracking import check_tracking_store, resolve_tracking_uri

        # a store that cannot take the runs must fail here, before any run is created
        check_tracking_store(resolve_tracking_uri(spec.tracking_uri))
    store = ResultsStore(spec.store_path)
    if resume is None:
        # a new id that an earlier session holds is refused whole, never merged into
        store.refuse_existing([f"{session_id}.{rr.router_name}" for rr in runs])
    # a lock held by another process is waited for visibly (up to store_wait_s), not in silence
    store.on_wait = lambda message: console.print(message, highlight=False, markup=False, soft_wrap=True)
    faults = f", faults {config.faults.to_text()}" if config.faults is not None else ""
    console.print(
        f"session {session_id}: {config.dataset}/{config.split}, {len(examples)} examples, "
        f"routers {','.join(n for n, _ in spec.routers)}, lm {config.lm}{faults}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    # every run exists (RUNNING) before any MLflow run does: a kill from here on is resumable.
    # They are registered in one transaction: a signal half-way leaves all of them or none, so
    # --resume never knows only some of the routers the session was asked to run
    registrations = []
    for rr in runs:
        run_id = f"{session_id}.{rr.router_name}"
        params = {"router": component_spec(rr.router), "config": config.to_dict(), "session": session_id}
        program = config.pipeline.tools.sql_program
        if program:  # the compiled generate_sql program's file and digest, next to its name in config
            params["sql_program"] = sql_program_record(program)
        registrations.append(
            {
                "run_id": run_id,
                "router": rr.router_name,
                "lm": config.lm,
                "dataset": ds,
                "split": config.split,
                "config": config.to_dict(),
                "params": params,
                "new": run_id not in existing,
            }
        )
    store.create_runs(registrations)
    sink = MlflowSink(spec.tracking_uri, traces=spec.traces) if spec.tracking_uri else None
    out = SessionResult(session_id=session_id, run_ids=[])
    parent = None
    current: tuple[str, str | None] | None = None
    deadline = time.monotonic() + config.deadline_s if config.deadline_s is not None else None
    stop = threading.Event()
    try:
        if sink is not None:
            parent = sink.start_parent(
                f"compare {session_id}",
                {"session": session_id, "routers": ",".join(n for n, _ in spec.routers), "lm": config.lm},
                dataset=ds,
                run_key=session_id,
            )
        with _progress(console) as progress:
            for rr in runs:
                run_id = f"{session_id}.{rr.router_name}"
                out.run_ids.append(run_id)
                done_ids: set[str] = set()
                if run_id in existing:
                    # an example counts as done once all its attempts have a result; one the
                    # deadline skipped has a result but never ran, so it runs now
                    skipped = store.query(
                        "SELECT DISTINCT example_id FROM examples WHERE run_id = ? AND error_class IN (?, ?)",
                        [run_id, DEADLINE_ERROR_CLASS, BAD_DATABASE_CLASS],
                    )["example_id"]
                    done_ids = store.completed_ids(run_id, min_attempts=config.attempts) - set(skipped)
                mlflow_id = None
                current = (run_id, None)
                if sink is not None:
                    mlflow_id = sink.start_run(
                        rr.router,
                        config.lm,
                        ds,
                        {**config.to_dict(), "session": session_id, "run_id": run_id},
                        parent_run_id=parent,
                        run_key=run_id,
                        split=config.split,
                        components=rr.scorers,
                    )
                    current = (run_id, mlflow_id)
                    store.set_mlflow_run(run_id, mlflow_id)
                # a conversation's later turns need its earlier ones: one with a turn left is replayed whole
                unfinished = {e.conversation for e in examples if e.conversation and e.id not in done_ids}
                todo = [e for e in examples if e.id not in done_ids or e.conversation in unfinished]
                n_todo = len(todo)
                task = progress.add_task(
                    rr.router_name, total=len(examples), completed=len(examples) - len(todo), rate="-", ex="-"
                )
                results: list[ExampleResult] = []
                started = _dt.datetime.now()

                def on_result(
                    result: ExampleResult,
                    *,
                    _run_id: str = run_id,
                    _mlflow_id: str | None = mlflow_id,
                    _task: Any = task,
                    _results: list[ExampleResult] = results,
                    _started: _dt.datetime = started,
                    _total: int = n_todo,
                ) -> None:
                    writer.add(result)
                    if sink is not None and _mlflow_id is not None:
                        sink.log_example(_mlflow_id, result, question=by_id[result.example_id].question)
                    _results.append(result)
                    minutes = max((_dt.datetime.now() - _started).total_seconds() / 60, 1e-9)
                    ex = [r.value("ex") for r in _results if r.value("ex") is not None]
                    progress.update(
                        _task,
                        advance=1,
                        rate=f"{len(_results) / minutes:.1f}",
                        ex=f"{sum(ex) / len(ex):.2f}" if ex else "-",
                    )
                    if not console.is_terminal:
                        # a log file or CI gets no live bar: one line per example instead
                        console.print(
                            _log_line(_run_id, len(_results), _total, result),
                            highlight=False,
                            markup=False,
                            soft_wrap=True,
                        )

                try:
                    with store.writer(run_id) as writer:
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
                            stop=stop,
                            deadline=deadline,
                        )
                except KeyboardInterrupt:
                    stop.set()
                    out.interrupted = True
                if rr.injector is not None:
                    out.fault_calls[run_id] = list(rr.injector.calls)
                    counts = summarize_calls(rr.injector.calls)
                    console.print(
                        f"{run_id}: {len(rr.injector.calls)} calls, {sum(counts.values())} faults injected "
                        f"({', '.join(f'{k} {n}' for k, n in sorted(counts.items())) or 'none'})",
                        highlight=False,
                        markup=False,
                        soft_wrap=True,
                    )
                skipped_now = store.query(
                    "SELECT count(DISTINCT example_id) AS n FROM examples WHERE run_id = ? AND error_class = ?",
                    [run_id, DEADLINE_ERROR_CLASS],
                )["n"][0]
                out.skipped += int(skipped_now)
                status = "KILLED" if out.interrupted or skipped_now else "FINISHED"
                stored = store.results(run_id)
                if line := gold_failure_line(run_id, stored):
                    console.print(line, highlight=False, markup=False, soft_wrap=True)
                crashed = crash_verdict(stored)
                if crashed is not None and not out.interrupted:
                    status = "FAILED"
                    out.failed[run_id] = crashed
                elif crashes := [r for r in stored if r.outcome == "crash"]:
                    # fewer than half crashed: the run stands, but never silently (exit 3)
                    out.crashed[run_id] = (len(crashes), sum(map(did_run, stored)), str(crashes[0].error))
                out.results[run_id] = _close(store, sink, run_id, mlflow_id, status, error=crashed)
                current = None
                if out.interrupted:
                    _close_unstarted(store, runs, session_id, out.results, None, "KILLED")
                    break
    except StoreBusyError as exc:
        # another process took the store: nothing can be written, so nothing is marked; what
        # finished is stored, and the runs left RUNNING are what --resume reopens and finishes
        # (MLflow's run stays RUNNING too, as after a kill: --resume reopens it by its run key)
        out.store_busy = exc
        return out
    except KeyboardInterrupt:
        # Ctrl-C outside an example (opening a run, closing one): the same clean stop
        out.interrupted = True
        if current is not None:
            _close_quietly(store, sink, current[0], current[1], "KILLED", "interrupted")
        _close_unstarted(store, runs, session_id, out.results, current, "KILLED")
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        if current is not None:
            _close_quietly(store, sink, current[0], current[1], "FAILED", error)
        _close_unstarted(store, runs, session_id, out.results, current, "FAILED")
        if sink is not None and parent is not None:
            try:
                sink.finish_parent(parent, status="FAILED")
            except Exception as close_exc:
                _log.warning("could not mark the comparison run FAILED: %s", close_exc)
        console.print(
            f"session {session_id} stopped by an error; what finished is stored: "
            f"resume with  {resume_command(session_id, spec.store_path, spec.tracking_uri)}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        raise
    out.bad_databases = list(bad)
    if sink is not None and parent is not None:
        final = "KILLED" if out.interrupted or out.skipped else "FAILED" if out.failed else "FINISHED"
        sink.finish_parent(parent, status=final, **parent_dashboard(store, out))
    return out


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


def resume_command(session_id: str, store_path: str, tracking_uri: str | None) -> str:
    """The command that finishes a session, complete as printed (the store and tracking options)."""
    where = "" if store_path == DEFAULT_STORE_PATH else f" --store {store_path}"
    if tracking_uri is None:
        where += " --no-mlflow"
    elif tracking_uri != "sqlite:///mlflow.db":
        where += f" --tracking-uri {tracking_uri}"
    return f"routerlab run --resume {session_id}{where}"


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


def parse_routers(
    text: str, router_args: Sequence[str] = (), base_args: Mapping[str, Mapping[str, Any]] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Parse ``--router rules,llm`` and ``--router-arg hybrid.threshold=0.7`` options.

    Args:
        text: Comma-separated router names.
        router_args: ``ROUTER.PARAM=VALUE`` items (values parsed as JSON when they are).
        base_args: Arguments each router starts from (a resumed session's), under the given ones.

    Raises:
        ConfigError: No router, a router named twice, or a malformed ``--router-arg``.
    """
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ConfigError(
            "no router given",
            expected="comma-separated router names, e.g. --router rules,llm",
            found=repr(text),
            fix="see `routerlab routers` for the names",
            details={"option": "--router"},
        )
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(
            f"router(s) {repeated} given twice in --router",
            expected="each router once (one run per router)",
            found=text,
            fix="remove the repetition; use --attempts N to run each example several times",
            details={"option": "--router"},
        )
    args: dict[str, dict[str, Any]] = {n: dict((base_args or {}).get(n, {})) for n in names}
    for item in router_args:
        key, sep, value = item.partition("=")
        name, dot, param = key.partition(".")
        if not sep or not dot or name not in args:
            raise ConfigError(
                f"bad --router-arg {item!r}",
                expected="ROUTER.PARAM=VALUE for a router given in --router",
                found=item,
                fix="e.g. --router-arg hybrid.threshold=0.7",
                details={"option": "--router-arg"},
            )
        try:
            args[name][param] = json.loads(value)
        except json.JSONDecodeError:
            args[name][param] = value
    return [(n, args[n]) for n in names]
