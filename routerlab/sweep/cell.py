"""One grid cell through the existing runner: the unit of work of every executor.

:func:`run_cell` records the cell's run in a results store under its own session id
(``<sweep>.<cell>``) and hands it to :func:`routerlab.app.run.execute` (as every session) to
resume, so the runner's resume does the rest: an example already stored there (by an earlier
attempt of the cell, on a worker that died) is not run again, and a rerun adds no duplicates.
The local executor passes the main results store; a Ray worker passes its own store file
(DuckDB files take one writing process) and the driver merges what it returns.

MLflow: the cell's child run is started under the sweep's parent before the runner starts and
closed with the run's final status and results after; its ``routerlab.run_key`` is the run id,
so a retried cell reopens the same child instead of adding one.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from routerlab._runs.session import load_dataset
from routerlab.agents.lm import resolve_lm
from routerlab.agents.registry import component_spec
from routerlab.app.run import execute, session_spec
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.analysis.tracked import child_metrics
from routerlab.eval.scoring import ExampleResult
from routerlab.eval.store import ResultsStore
from routerlab.routers import router as router_registry
from routerlab.sweep.grid import Cell
from routerlab.sweep.limits import ProviderSlotCallback, Slots

__all__ = ["CellOutcome", "CellTracking", "cell_params", "run_cell", "worker_name"]

TAG_SWEEP = "routerlab.sweep"
TAG_CELL = "routerlab.cell"
TAG_WORKER = "routerlab.worker"


@dataclass(frozen=True)
class CellTracking:
    """Where a cell logs in MLflow.

    Attributes:
        tracking_uri: The tracking server (``http://...``) or store.
        experiment: Experiment of the sweep.
        parent_run_id: The sweep's parent run.
    """

    tracking_uri: str
    experiment: str
    parent_run_id: str


@dataclass
class CellOutcome:
    """What running a cell produced (returned across processes by a Ray task).

    Attributes:
        key: The cell (``c003``).
        run_id: Its run id in the results store.
        status: ``FINISHED``, ``KILLED`` or ``FAILED``.
        results: Every stored result of the run (earlier attempts' included).
        run: The run's row in the store it ran in (router, lm, split, config, params...).
        worker: ``host:pid`` of the process that ran it.
        resumed: Examples already stored when this attempt started (an earlier attempt's).
        interrupted: Ctrl-C stopped it.
        error: Why it failed.
        mlflow_run_id: Its MLflow child run.
    """

    key: str
    run_id: str
    status: str
    results: list[ExampleResult] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=dict)
    worker: str = ""
    resumed: int = 0
    interrupted: bool = False
    error: str | None = None
    mlflow_run_id: str | None = None


def worker_name() -> str:
    """``host:pid`` of this process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def cell_params(cell: Cell, sweep_id: str, router: Any) -> dict[str, Any]:
    """The params recorded with a cell's run: the router's spec, the config and the sweep cell.

    Args:
        cell: The cell.
        sweep_id: Its sweep.
        router: The built router (its recorded constructor arguments are logged).
    """
    return {
        "router": component_spec(router),
        "config": cell.run_config().to_dict(),
        "session": cell.session_id(sweep_id),
        "sweep": {
            "id": sweep_id,
            "cell": cell.key,
            "seed": cell.seed,
            "seeded": list(cell.seeded),
            "lm": {"spec": cell.lm.spec, "api_base": cell.lm.api_base, "cache": cell.lm.cache},
            "provider": cell.provider,
        },
    }


def run_cell(
    cell: Cell,
    *,
    sweep_id: str,
    store_path: str | Path,
    tracking: CellTracking | None = None,
    slots: Slots | None = None,
    console: Console | None = None,
) -> CellOutcome:
    """Run one cell through :func:`routerlab.app.run.execute`, resuming what is stored.

    Never raises for a failure of the cell itself (an LM that does not load, a crashed router):
    the run is closed ``FAILED`` in the store and in MLflow and the outcome says why, so one bad
    cell does not stop a sweep. Ctrl-C is reported as ``interrupted``.

    Args:
        cell: The cell.
        sweep_id: Its sweep (names the session and run).
        store_path: The results store to write (the main one, or a worker's own file).
        tracking: Where to log the cell's MLflow child run (None: no MLflow).
        slots: Provider concurrency caps (None: none).
        console: Progress output (default: none).

    Returns:
        The outcome, with every result stored for the run.
    """
    console = console or Console(quiet=True)
    run_id, session_id = cell.run_id(sweep_id), cell.session_id(sweep_id)
    config = cell.run_config()
    store = ResultsStore(store_path)
    outcome = CellOutcome(key=cell.key, run_id=run_id, status="FAILED", worker=worker_name())
    sink = None
    try:
        ds = load_dataset(config)
        router = router_registry.build(cell.router, **cell.router_args)
        if _has_run(store, run_id):
            outcome.resumed = len(store.completed_ids(run_id, min_attempts=config.attempts))
        params = cell_params(cell, sweep_id, router)
        # the run exists before the runner starts, so run_session resumes it under this id
        store.create_run(
            run_id,
            router=cell.router,
            lm=config.lm,
            dataset=ds,
            split=config.split,
            config=config.to_dict(),
            params=params,
        )
        if tracking is not None:
            from mlflow.entities import Param

            # imported here: MLflow costs seconds at import; a cell without tracking never loads it
            from routerlab.eval.tracking import MlflowSink, flatten_params

            sink = MlflowSink(tracking.tracking_uri, experiment=tracking.experiment, traces=False)
            outcome.mlflow_run_id = sink.start_run(
                router,
                config.lm,
                ds,
                {**config.to_dict(), "session": session_id, "run_id": run_id},
                parent_run_id=tracking.parent_run_id,
                run_key=run_id,
                split=config.split,
                run_name=f"{cell.key} {cell.label()}",
                tags={TAG_SWEEP: sweep_id, TAG_CELL: cell.key},
            )
            sweep_params = flatten_params({"sweep": params["sweep"]})
            sink.client.log_batch(outcome.mlflow_run_id, params=[Param(k, v) for k, v in sweep_params.items()])
            # the worker of the latest attempt (a retried cell reopens its child run)
            sink.client.set_tag(outcome.mlflow_run_id, TAG_WORKER, outcome.worker)
            store.set_mlflow_run(run_id, outcome.mlflow_run_id)
        lm = resolve_lm(config.lm, api_base=config.lm_api_base, cache=cell.lm.cache)
        if slots is not None:
            lm.callbacks = [*lm.callbacks, ProviderSlotCallback(slots, cell.provider)]
        spec = session_spec([(cell.router, cell.router_args)], config, store=store_path, tracking_uri=None)
        session = execute(spec, console=console, resume=session_id, lm=lm)
        outcome.interrupted = session.interrupted
        outcome.status = str(store.run(run_id)["status"])
    except Exception as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"
        _mark_failed(store, run_id)
    if _has_run(store, run_id):
        outcome.results = store.results(run_id)
        outcome.run = store.run(run_id)
    if sink is not None and outcome.mlflow_run_id is not None:
        try:
            if outcome.results:  # the cell's figures are its run's in the comparison model
                (part,) = build_comparison(store, [run_id]).parts
                sink.log_metrics(outcome.mlflow_run_id, child_metrics(part, part.routers[0]))
            sink.finish_run(outcome.mlflow_run_id, outcome.results, status=outcome.status, error=outcome.error)
        except Exception as exc:  # the results are stored; the outcome still says what happened
            outcome.error = outcome.error or f"MLflow: {type(exc).__name__}: {exc}"
        finally:
            sink.close()
    return outcome


def _has_run(store: Any, run_id: str) -> bool:
    return not store.query("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).empty


def _mark_failed(store: Any, run_id: str) -> None:
    """Close a run the cell opened as FAILED (run_session already did when it was the one failing)."""
    if _has_run(store, run_id) and store.run(run_id)["status"] == "RUNNING":
        store.finish_run(run_id, "FAILED")
