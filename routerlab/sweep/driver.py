"""``routerlab sweep``: run a grid of cells on an executor, under one MLflow parent run.

A sweep has an id (``sweep-<session id>``). Its grid is recorded beside the results store
(``<store dir>/sweeps/<id>/sweep.json``) before anything runs, so ``--resume ID`` needs no file
and reruns exactly the cells that did not finish, each resuming from its stored examples. Cells
are runs of the results store (``<sweep>.<cell>.<router>``): ``routerlab compare SWEEP_ID``
compares them, and :func:`~routerlab.sweep.merge.sweep_results` reads them back as one table.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console

from routerlab._runs.session import load_dataset, new_session_id
from routerlab.agents.errors import ConfigError
from routerlab.agents.registry import component_spec
from routerlab.eval.store import ResultsStore
from routerlab.sweep.cell import TAG_SWEEP, CellOutcome, CellTracking
from routerlab.sweep.executors import Executor, SweepContext
from routerlab.sweep.grid import Cell, SweepSpec
from routerlab.sweep.merge import sweep_results

__all__ = ["SweepResult", "new_sweep_id", "recorded_sweep", "run_sweep", "summary_frame", "sweep_dir"]

_SPEC_FILE = "sweep.json"


@dataclass
class SweepResult:
    """What a sweep invocation did.

    Attributes:
        sweep_id: The sweep.
        status: ``FINISHED`` (every cell finished), ``FAILED`` (a cell failed) or ``KILLED``.
        cells: Every cell of the grid.
        outcomes: The cells run by this invocation, by key (their results are in the store).
        done_before: Cells an earlier invocation had finished (``--resume``).
        interrupted: Ctrl-C stopped it.
        wall_s: Wall time of the executor.
        slot_stats: Per capped provider: cap, most LM calls in flight at once, slots granted.
        summary: One row per cell (see :func:`summary_frame`).
    """

    sweep_id: str
    status: str
    cells: list[Cell]
    outcomes: dict[str, CellOutcome] = field(default_factory=dict)
    done_before: list[str] = field(default_factory=list)
    interrupted: bool = False
    wall_s: float = 0.0
    slot_stats: dict[str, dict[str, int]] = field(default_factory=dict)
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)


def new_sweep_id() -> str:
    """Sortable, unique: ``sweep-YYYYmmdd-HHMMSS-<4 hex>``."""
    return f"sweep-{new_session_id()}"


def sweep_dir(store_path: str | Path, sweep_id: str) -> Path:
    """Where a sweep keeps its recorded grid and its workers' store files."""
    return Path(store_path).parent / "sweeps" / sweep_id


def recorded_sweep(store_path: str | Path, sweep_id: str) -> SweepSpec:
    """The grid a sweep recorded when it started.

    Raises:
        ConfigError: No such sweep beside this store.
    """
    path = sweep_dir(store_path, sweep_id) / _SPEC_FILE
    if not path.is_file():
        known = sorted(p.name for p in path.parent.parent.glob("sweep-*")) if path.parent.parent.is_dir() else []
        raise ConfigError(
            f"no sweep {sweep_id!r} beside {store_path}",
            expected="a sweep id printed by an earlier `routerlab sweep`",
            found=f"latest sweeps: {known[-5:]}",
            fix="check the id, or the --store path",
            details={"option": "--resume"},
        )
    return SweepSpec.from_dict(json.loads(path.read_text())["spec"])


def _record(spec: SweepSpec, sweep_id: str, store_path: str, executor: str) -> None:
    path = sweep_dir(store_path, sweep_id) / _SPEC_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    cells = [c.to_dict() for c in spec.cells()]
    doc = {"sweep_id": sweep_id, "executor": executor, "spec": spec.to_dict(), "cells": cells}
    path.write_text(json.dumps(doc, indent=2, default=str))


def _load_datasets(cells: list[Cell]) -> dict[str, Any]:
    """Each dataset of the grid, loaded once (a bad path or file fails here, before any run)."""
    datasets: dict[str, Any] = {}
    for cell in cells:
        key = cell.dataset.load_key
        if key not in datasets:
            datasets[key] = load_dataset(cell.run_config())
    return datasets


def _spec_of(executor: Executor) -> Any:
    """The executor's recorded arguments (its name alone when it was not built by the registry)."""
    try:
        return component_spec(executor)
    except ConfigError:
        return {"name": executor.name}


def _mean(values: list[float | None]) -> float | None:
    # a DataFrame column holds a missing score as NaN, not None: NaN would poison the mean
    xs = [v for v in values if v is not None and v == v]
    return sum(xs) / len(xs) if xs else None


def summary_frame(store: Any, sweep_id: str, cells: list[Cell], outcomes: Mapping[str, CellOutcome]) -> pd.DataFrame:
    """One row per cell: its label, status, results, mean scores, worker and resumed examples.

    Read from the main store, so cells an earlier invocation finished are included.
    """
    frame = sweep_results(store, sweep_id)
    runs = store.query("SELECT run_id, status FROM runs WHERE starts_with(run_id, ?)", [f"{sweep_id}."])
    status = dict(zip(runs["run_id"], runs["status"], strict=True))
    rows = []
    for cell in cells:
        mine = frame[frame["cell"] == cell.key] if not frame.empty else frame
        outcome = outcomes.get(cell.key)
        row: dict[str, Any] = {
            "cell": cell.key,
            "router": cell.label().split(" | ")[0],
            "lm": cell.lm.spec,
            "dataset": f"{cell.dataset.name}/{cell.dataset.split}",
            "seed": cell.seed,
            "status": status.get(cell.run_id(sweep_id)) or (outcome.status if outcome is not None else "NOT RUN"),
            "results": len(mine),
        }
        for name in ("ex", "success", "route"):
            col = f"score_{name}"
            row[name] = _mean(mine[col].tolist()) if col in mine else None
        row["worker"] = outcome.worker if outcome is not None else ""
        row["resumed"] = outcome.resumed if outcome is not None else 0
        row["error"] = (outcome.error or "") if outcome is not None else ""
        rows.append(row)
    return pd.DataFrame(rows)


def run_sweep(
    spec: SweepSpec,
    *,
    executor: Executor,
    store_path: str,
    tracking_uri: str | None,
    console: Console,
    resume: str | None = None,
) -> SweepResult:
    """Run every cell of ``spec`` not finished yet, and close the sweep.

    Everything that can be checked (the executor's needs, every dataset) is checked before the
    sweep is recorded or any run exists. The MLflow parent run (tag ``routerlab.kind = sweep``)
    ends FINISHED when every cell finished, KILLED after Ctrl-C, FAILED otherwise.

    Args:
        spec: The checked grid (see :func:`~routerlab.sweep.grid.load_sweep`).
        executor: Where the cells run.
        store_path: The main results store.
        tracking_uri: MLflow tracking URI (None: no MLflow).
        console: Progress output.
        resume: An earlier sweep: run its cells that did not finish.

    Returns:
        The sweep's outcome and per-cell summary.
    """
    # long because the sweep's record, its MLflow parent and its cells close together on every way out
    # imported here: MLflow costs seconds at import, and a run without MLflow never loads it
    from routerlab.eval.tracking import TAG_KIND, MlflowSink

    executor.check(tracking_uri)
    if resume is not None:
        recorded = recorded_sweep(store_path, resume)
        if not recorded.same_grid(spec):
            raise ConfigError(
                f"sweep {resume!r} was recorded with another grid",
                expected=f"the grid recorded from {recorded.source or 'its file'}",
                found=f"the grid of {spec.source or 'the given file'}",
                fix="drop --config to resume the recorded grid, or start a new sweep",
                details={"option": "--config"},
            )
    sweep_id = resume or new_sweep_id()
    cells = spec.cells()
    datasets = _load_datasets(cells)
    store = ResultsStore(store_path)
    runs = store.query("SELECT run_id, status FROM runs WHERE starts_with(run_id, ?)", [f"{sweep_id}."])
    finished = set(runs.loc[runs["status"] == "FINISHED", "run_id"])
    todo = [c for c in cells if c.run_id(sweep_id) not in finished]
    if resume is None:
        _record(spec, sweep_id, store_path, executor.name)
    providers = ", ".join(f"{p} {n}" for p, n in spec.providers.items()) or "none"
    console.print(
        f"sweep {sweep_id}: {len(cells)} cells ({len(cells) - len(todo)} already finished), "
        f"executor {executor.name}, provider caps: {providers}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    sink = MlflowSink(tracking_uri, experiment=spec.experiment, traces=False) if tracking_uri else None
    parent = None
    if sink is not None:
        parent = sink.start_parent(
            f"sweep {spec.name} {sweep_id}",
            {
                "sweep": {"id": sweep_id, "name": spec.name, "cells": len(cells), "executor": _spec_of(executor)},
                "grid": {
                    "datasets": [d.name for d in spec.datasets],
                    "routers": [n for n, _ in spec.routers],
                    "lms": [m.spec for m in spec.lms],
                    "seeds": list(spec.seeds),
                },
                "providers": spec.providers,
            },
            run_key=sweep_id,
            tags={TAG_KIND: "sweep", TAG_SWEEP: sweep_id},
        )
    tracking = CellTracking(sink.tracking_uri, spec.experiment, parent) if sink is not None and parent else None
    ctx = SweepContext(
        sweep_id=sweep_id,
        store_path=store_path,
        # absolute: workers may run in another directory (or, on a cluster, another machine)
        work_dir=sweep_dir(store_path, sweep_id).resolve(),
        tracking=tracking,
        providers=spec.providers,
        ray=spec.ray,
        datasets=datasets,
        console=console,
    )
    result = SweepResult(sweep_id=sweep_id, status="FAILED", cells=cells)
    result.done_before = [c.key for c in cells if c not in todo]

    def on_outcome(cell: Cell, outcome: CellOutcome) -> None:
        # the store holds the results now: a long sweep must not keep every trace in memory
        result.outcomes[cell.key] = replace(outcome, results=[])
        if outcome.error:
            console.print(f"cell {cell.key} {outcome.status}: {outcome.error}", highlight=False, markup=False)

    t0 = time.perf_counter()
    try:
        report = executor.run(todo, ctx, on_outcome)
        result.interrupted, result.slot_stats = report.interrupted, report.slot_stats
    except KeyboardInterrupt:
        result.interrupted = True
    except BaseException:
        if sink is not None and parent is not None:
            sink.finish_parent(parent, status="FAILED")
        raise
    result.wall_s = time.perf_counter() - t0
    final = set(store.query("SELECT run_id, status FROM runs WHERE starts_with(run_id, ?)", [f"{sweep_id}."])["status"])
    every = len(store.query("SELECT run_id FROM runs WHERE starts_with(run_id, ?)", [f"{sweep_id}."])) == len(cells)
    if result.interrupted:
        result.status = "KILLED"
    elif every and final == {"FINISHED"}:
        result.status = "FINISHED"
    elif every and "FAILED" not in final:
        result.status = "KILLED"  # a run deadline left examples unstarted: --resume finishes them
    result.summary = summary_frame(store, sweep_id, cells, result.outcomes)
    if sink is not None and parent is not None:
        sink.finish_parent(parent, status=result.status, table=result.summary)
        sink.close()
    if result.status == "FINISHED":
        # the workers' store files are merged; only the recorded grid stays
        shutil.rmtree(ctx.work_dir / "shards", ignore_errors=True)
    return result
