"""``routerlab run``: a comparison of routers on one dataset, persisted as it goes.

A session has an id. Each router's run within it has the run id ``<session>.<router>``, one
MLflow child run under the session's parent run, and rows in the DuckDB results store written as
each example completes. ``--resume SESSION`` reruns only the examples that have no stored result.
"""

from __future__ import annotations

import datetime as _dt
import json
import secrets
import threading
from collections.abc import Sequence
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

from agents.errors import ConfigError
from agents.registry import component_spec
from benchmarks.dataset import Dataset, dataset
from benchmarks.example import Example
from benchmarks.runner import RouterRun, RunConfig, build_scorers, run_router
from benchmarks.selection import schedule, stratified_subset
from eval.result import ExampleResult

__all__ = ["SessionResult", "SessionSpec", "load_dataset", "new_session_id", "parse_routers", "run_session", "select"]


@dataclass
class SessionSpec:
    """A comparison to run.

    Attributes:
        routers: ``(name, constructor args)`` per router, in display order.
        config: The run config shared by all routers.
        tracking_uri: MLflow tracking URI (None: no MLflow logging).
        store_path: DuckDB results store file.
        traces: Log one MLflow trace per example.
    """

    routers: list[tuple[str, dict[str, Any]]]
    config: RunConfig
    tracking_uri: str | None = "sqlite:///mlflow.db"
    store_path: str = ".routerlab/results.duckdb"
    traces: bool = True


@dataclass
class SessionResult:
    """What a session produced."""

    session_id: str
    run_ids: list[str]
    results: dict[str, list[ExampleResult]] = field(default_factory=dict)
    interrupted: bool = False


def new_session_id() -> str:
    """Sortable, unique: ``YYYYmmdd-HHMMSS-<4 hex>``."""
    return f"{_dt.datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def load_dataset(config: RunConfig) -> Dataset:
    """Build the configured dataset through the registry (importing the built-in loaders)."""
    import benchmarks.builtin
    import benchmarks.loaders  # noqa: F401  (registers the on-disk formats)

    return dataset.build(config.dataset, **config.dataset_args)


def select(ds: Dataset, config: RunConfig) -> list[Example]:
    """The examples the run replays, scheduled by database."""
    return schedule(stratified_subset(ds.split(config.split), config.limit))


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


def run_session(
    spec: SessionSpec,
    *,
    console: Console,
    resume: str | None = None,
    lm: Any = None,
) -> SessionResult:
    """Run every router of ``spec`` over the selected examples and persist results as they come.

    Args:
        spec: What to run.
        console: Where progress goes.
        resume: An earlier session id: finish its missing examples only.
        lm: A resolved LM (default: resolve ``spec.config.lm``).

    Returns:
        The session's run ids and results. On Ctrl-C, ``interrupted`` is True and what finished
        is kept.
    """
    from agents.lm import resolve_lm
    from eval.store import ResultsStore
    from eval.tracking import MlflowSink

    config = spec.config
    session_id = resume or new_session_id()
    store = ResultsStore(spec.store_path)
    if resume is not None:
        known = [r for r in store.runs()["run_id"].tolist() if r.startswith(f"{resume}.")]
        if not known:
            raise ConfigError(
                f"no session {resume!r} in {spec.store_path}",
                expected="a session id printed by an earlier `routerlab run`",
                found=f"sessions: {sorted({r.rsplit('.', 1)[0] for r in store.runs()['run_id']})[-5:]}",
                fix="check the id, or the --store path",
            )
    ds = load_dataset(config)
    examples = select(ds, config)
    by_id = {e.id: e for e in examples}
    scorers = build_scorers(config)
    lm = lm if lm is not None else resolve_lm(config.lm, api_base=config.lm_api_base)
    # build every router (and check its contract) before anything runs
    runs = [RouterRun(name, args, lm, config, scorers) for name, args in spec.routers]
    sink = MlflowSink(spec.tracking_uri, traces=spec.traces) if spec.tracking_uri else None
    parent = None
    if sink is not None:
        parent = sink.start_parent(
            f"compare {session_id}",
            {"session": session_id, "routers": ",".join(n for n, _ in spec.routers), "lm": config.lm},
            dataset=ds,
            run_key=session_id,
        )
    out = SessionResult(session_id=session_id, run_ids=[])
    stop = threading.Event()
    with _progress(console) as progress:
        for rr in runs:
            run_id = f"{session_id}.{rr.router_name}"
            out.run_ids.append(run_id)
            params = {"router": component_spec(rr.router), "config": config.to_dict(), "session": session_id}
            done_ids = store.completed_ids(run_id) if resume else set()
            if not resume or run_id not in set(store.runs()["run_id"]):
                store.create_run(
                    run_id,
                    router=rr.router_name,
                    lm=config.lm,
                    dataset=ds,
                    split=config.split,
                    config=config.to_dict(),
                    params=params,
                )
            mlflow_id = None
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
                store.set_mlflow_run(run_id, mlflow_id)
            todo = [e for e in examples if e.id not in done_ids]
            n_todo = len(todo)
            task = progress.add_task(
                rr.router_name, total=len(examples), completed=len(examples) - len(todo), rate="-", ex="-"
            )
            results: list[ExampleResult] = []
            started = _dt.datetime.now()

            def on_result(
                result: ExampleResult,
                *,
                _run_id=run_id,
                _mlflow_id=mlflow_id,
                _task=task,
                _results=results,
                _started=started,
                _total=n_todo,
            ) -> None:
                store.add_result(_run_id, result)
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
                    console.print(_log_line(_run_id, len(_results), _total, result), highlight=False)

            try:
                run_router(
                    rr,
                    todo,
                    on_result=on_result,
                    concurrency=config.concurrency,
                    attempts=config.attempts,
                    stop=stop,
                )
            except KeyboardInterrupt:
                stop.set()
                out.interrupted = True
            all_results = store.results(run_id)
            out.results[run_id] = all_results
            status = "KILLED" if out.interrupted else "FINISHED"
            store.finish_run(run_id, status)
            if sink is not None and mlflow_id is not None:
                sink.finish_run(mlflow_id, all_results, status=status)
            if out.interrupted:
                break
    if sink is not None and parent is not None:
        sink.finish_parent(parent, status="KILLED" if out.interrupted else "FINISHED")
    return out


def _log_line(run_id: str, n: int, total: int, result: ExampleResult) -> str:
    scores = " ".join(f"{k}={v:g}" for k in ("route", "ex", "success") if (v := result.value(k)) is not None)
    failure = f" [{result.error_class}]" if result.error_class else ""
    chain = ">".join(result.trace.tool_names) if result.trace is not None else ""
    return f"{run_id} {n}/{total} {result.example_id} {result.latency_s:.1f}s {scores} {chain}{failure}"


def write_summary(path: Path, result: SessionResult) -> None:
    """A small JSON of the session (ids), for scripts."""
    path.write_text(json.dumps({"session": result.session_id, "runs": result.run_ids}, indent=2))


def parse_routers(text: str, router_args: Sequence[str] = ()) -> list[tuple[str, dict[str, Any]]]:
    """Parse ``--router rules,llm`` and ``--router-arg hybrid.threshold=0.7`` options."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    args: dict[str, dict[str, Any]] = {n: {} for n in names}
    for item in router_args:
        key, sep, value = item.partition("=")
        name, dot, param = key.partition(".")
        if not sep or not dot or name not in args:
            raise ConfigError(
                f"bad --router-arg {item!r}",
                expected="ROUTER.PARAM=VALUE for a router given in --router",
                found=item,
                fix="e.g. --router-arg hybrid.threshold=0.7",
            )
        try:
            args[name][param] = json.loads(value)
        except json.JSONDecodeError:
            args[name][param] = value
    return [(n, args[n]) for n in names]
