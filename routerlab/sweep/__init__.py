"""Sweeps: a grid of datasets x routers x LMs x seeds, run locally or on a Ray cluster.

``routerlab sweep --config sweep.yaml`` reads the grid (:mod:`~routerlab.sweep.grid`), runs each
cell through the existing runner (:mod:`~routerlab.sweep.cell`) on an executor
(:mod:`~routerlab.sweep.executors`: in this process, or one Ray task per cell with retries and
a concurrency cap per LM provider, :mod:`~routerlab.sweep.limits`), merges Ray workers' results
into the results store (:mod:`~routerlab.sweep.merge`) and logs one MLflow parent run with a
child per cell (:mod:`~routerlab.sweep.driver`). ``routerlab server mlflow`` starts the shared
tracking server (:mod:`~routerlab.sweep.mlflow_server`).
"""

from routerlab.sweep.cell import CellOutcome, CellTracking, run_cell
from routerlab.sweep.driver import SweepResult, new_sweep_id, recorded_sweep, run_sweep, summary_frame, sweep_dir
from routerlab.sweep.executors import EXECUTORS, LocalExecutor, RayExecutor, executor, make_executor
from routerlab.sweep.grid import Cell, DatasetEntry, LMEntry, RayOptions, SweepSpec, lm_provider
from routerlab.sweep.limits import LocalSlots, ProviderSlotCallback, RaySlots, SlotTable
from routerlab.sweep.merge import merge_outcome, sweep_results
from routerlab.sweep.sweep_file import load_sweep

__all__ = [
    "EXECUTORS",
    "Cell",
    "CellOutcome",
    "CellTracking",
    "DatasetEntry",
    "LMEntry",
    "LocalExecutor",
    "LocalSlots",
    "ProviderSlotCallback",
    "RayExecutor",
    "RayOptions",
    "RaySlots",
    "SlotTable",
    "SweepResult",
    "SweepSpec",
    "executor",
    "lm_provider",
    "load_sweep",
    "make_executor",
    "merge_outcome",
    "new_sweep_id",
    "recorded_sweep",
    "run_cell",
    "run_sweep",
    "summary_frame",
    "sweep_dir",
    "sweep_results",
]
