"""Executors: where a sweep's cells run. Both hand each cell to :func:`~routerlab.sweep.cell.run_cell`.

* :class:`LocalExecutor` (the default) runs the cells one after another in this process, writing
  the main results store directly.
* :class:`RayExecutor` submits one Ray task per cell. A task whose worker process dies is rerun
  by Ray (``max_retries``) and resumes from the examples it had stored in its own store file; the
  driver merges each finished cell into the main store. LM calls take a slot of their provider
  from one actor per sweep, so a provider's cap holds across all workers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from rich.console import Console

from routerlab.agents.errors import ConfigError
from routerlab.agents.registry import Registry
from routerlab.benchmarks.dataset import Dataset
from routerlab.eval.store import ResultsStore
from routerlab.sweep.cell import CellOutcome, CellTracking, run_cell
from routerlab.sweep.grid import Cell, RayOptions
from routerlab.sweep.limits import DEFAULT_LEASE_TTL_S, LocalSlots, RaySlots, start_slot_actor
from routerlab.sweep.merge import merge_outcome, outcome_from_store

__all__ = [
    "EXECUTORS",
    "Executor",
    "ExecutorReport",
    "LocalExecutor",
    "RayExecutor",
    "SweepContext",
    "executor",
    "make_executor",
]

OnOutcome = Callable[[Cell, CellOutcome], None]


@dataclass
class SweepContext:
    """What every cell of one sweep invocation shares.

    Attributes:
        sweep_id: The sweep.
        store_path: The main results store.
        work_dir: The sweep's directory (its recorded grid, the Ray workers' store files).
        tracking: Where cells log in MLflow (None: nowhere).
        providers: Concurrency cap per LM provider.
        ray: Ray task options.
        datasets: The loaded datasets, by :attr:`~routerlab.sweep.grid.DatasetEntry.load_key`.
        console: Progress output.
    """

    sweep_id: str
    store_path: str
    work_dir: Path
    tracking: CellTracking | None
    providers: dict[str, int]
    ray: RayOptions
    datasets: dict[str, Dataset]
    console: Console


@dataclass
class ExecutorReport:
    """What an executor reports besides the cells' outcomes.

    Attributes:
        slot_stats: Per capped provider: cap, most calls in flight at once, slots granted.
        interrupted: Ctrl-C stopped the sweep.
    """

    slot_stats: dict[str, dict[str, int]] = field(default_factory=dict)
    interrupted: bool = False


class Executor(Protocol):
    """Runs cells and lands their results in the main store."""

    name: ClassVar[str]

    def check(self, tracking_uri: str | None) -> None:
        """Fail before anything runs when this executor cannot run the sweep as asked."""
        ...

    def run(self, cells: Sequence[Cell], ctx: SweepContext, on_outcome: OnOutcome) -> ExecutorReport:
        """Run ``cells``, calling ``on_outcome`` as each one ends."""
        ...


executor: Registry[Executor] = Registry("sweep executor")
"""Registry of executors (``--executor NAME``); a built one records its arguments."""


@executor("local")
@dataclass
class LocalExecutor:
    """The cells one after another in this process, through the runner (the default)."""

    name: ClassVar[str] = "local"

    def check(self, tracking_uri: str | None) -> None:
        """Any tracking store works from one process."""

    def run(self, cells: Sequence[Cell], ctx: SweepContext, on_outcome: OnOutcome) -> ExecutorReport:
        """See :class:`Executor`."""
        slots = LocalSlots(ctx.providers) if ctx.providers else None
        report = ExecutorReport()
        for i, cell in enumerate(cells, 1):
            ctx.console.print(f"cell {cell.key} ({i}/{len(cells)}): {cell.label()}", highlight=False, markup=False)
            outcome = run_cell(
                cell,
                sweep_id=ctx.sweep_id,
                store_path=ctx.store_path,
                tracking=ctx.tracking,
                slots=slots,
                console=ctx.console,
            )
            on_outcome(cell, outcome)
            if outcome.interrupted:
                report.interrupted = True
                break
        report.slot_stats = slots.stats() if slots is not None else {}
        return report


def _cell_task(
    cell: Cell,
    sweep_id: str,
    store_path: str,
    tracking: CellTracking | None,
    actor: Any,
    caps: dict[str, int],
    lease_ttl_s: float,
) -> CellOutcome:
    """The Ray task of one cell (runs in a worker process)."""
    slots = RaySlots(actor, caps, lease_ttl_s) if actor is not None else None
    try:
        return run_cell(cell, sweep_id=sweep_id, store_path=store_path, tracking=tracking, slots=slots)
    finally:
        if slots is not None:
            slots.close()


def _import_ray() -> Any:
    try:
        import ray
    except ModuleNotFoundError:
        raise ConfigError(
            "the ray executor needs Ray, which is not installed",
            expected="the sweep extra (ray)",
            found="no module named ray",
            fix="pip install -e '.[sweep]' (scripts/setup.sh installs it), or use --executor local",
            details={"option": "--executor"},
        ) from None
    return ray


@executor("ray")
@dataclass
class RayExecutor:
    """One Ray task per cell, with retries, provider caps and a merge into the main store.

    Args:
        address: Cluster to join (``auto``, ``ray://host:10001``, ``host:6379``); None starts a
            local cluster on loopback for the sweep (or uses the one this process already joined).
        lease_ttl_s: How soon a lost worker's provider slots come back.
    """

    address: str | None = None
    lease_ttl_s: float = DEFAULT_LEASE_TTL_S
    name: ClassVar[str] = "ray"

    def check(self, tracking_uri: str | None) -> None:
        """Ray installed, and an MLflow tracking server every worker can reach.

        Raises:
            ConfigError: Without Ray, or with a tracking URI that is a local file or database
                (workers in other processes and on other machines cannot share it).
        """
        _import_ray()
        if tracking_uri is not None and not tracking_uri.startswith(("http://", "https://")):
            raise ConfigError(
                "Ray workers log to one MLflow tracking server",
                expected="--tracking-uri http://HOST:PORT",
                found=tracking_uri,
                fix="start one with `routerlab server mlflow` and pass the URI it prints, or pass --no-mlflow",
                details={"option": "--tracking-uri"},
            )

    def _connect(self, ray: Any) -> bool:
        """Join (or start) the cluster; True when this call started it (and must shut it down)."""
        if ray.is_initialized():
            return False
        if self.address:
            ray.init(address=self.address)
        else:
            # a cluster of this machine only: loopback, no dashboard (cheap to start)
            ray.init(include_dashboard=False, _node_ip_address="127.0.0.1")
        return True

    def run(self, cells: Sequence[Cell], ctx: SweepContext, on_outcome: OnOutcome) -> ExecutorReport:
        """See :class:`Executor`."""
        ray = _import_ray()
        owned = self._connect(ray)
        report = ExecutorReport()
        actor = None
        store = ResultsStore(ctx.store_path)
        shards = ctx.work_dir / "shards"
        try:
            if ctx.providers:
                actor = start_slot_actor(
                    ctx.providers, name=f"routerlab-slots-{ctx.sweep_id}", lease_ttl_s=self.lease_ttl_s
                )
            # only a lost worker is retried: an exception of the cell itself would fail again
            task = ray.remote(_cell_task)
            pending = {}
            for cell in cells:
                ref = task.options(
                    name=f"{ctx.sweep_id}.{cell.key}",
                    num_cpus=ctx.ray.num_cpus,
                    max_retries=ctx.ray.max_retries,
                    retry_exceptions=False,
                ).remote(
                    cell,
                    ctx.sweep_id,
                    str(shards / f"{cell.key}.duckdb"),
                    ctx.tracking,
                    actor,
                    ctx.providers,
                    self.lease_ttl_s,
                )
                pending[ref] = cell
            ctx.console.print(
                f"{len(cells)} cell(s) submitted to Ray ({ray.cluster_resources().get('CPU', 0):g} CPUs)",
                highlight=False,
            )
            try:
                while pending:
                    ready, _ = ray.wait(list(pending), num_returns=1)
                    for ref in ready:
                        cell = pending.pop(ref)
                        outcome = self._collect(ray, ref, cell, ctx, shards)
                        self._merge(store, cell, outcome, ctx)
                        on_outcome(cell, outcome)
            except KeyboardInterrupt:
                report.interrupted = True
                for ref in pending:
                    ray.cancel(ref, force=True)
                for cell in pending.values():
                    outcome = self._lost(cell, ctx, shards, "KILLED", "interrupted (Ctrl-C)")
                    outcome.interrupted = True
                    self._merge(store, cell, outcome, ctx)
                    on_outcome(cell, outcome)
            if actor is not None:
                report.slot_stats = ray.get(actor.stats.remote())
        finally:
            if actor is not None:
                ray.kill(actor)
            if owned:
                ray.shutdown()
        return report

    def _collect(self, ray: Any, ref: Any, cell: Cell, ctx: SweepContext, shards: Path) -> CellOutcome:
        try:
            return ray.get(ref)
        except ray.exceptions.RayError as exc:
            # retries used up (or the task was cancelled): keep what its store file holds
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return self._lost(cell, ctx, shards, "FAILED", f"{type(exc).__name__}: {first}"[:2000])

    def _lost(self, cell: Cell, ctx: SweepContext, shards: Path, status: str, error: str) -> CellOutcome:
        run_id = cell.run_id(ctx.sweep_id)
        try:
            outcome = outcome_from_store(shards / f"{cell.key}.duckdb", cell.key, run_id, status=status, error=error)
        except Exception as exc:  # a cancelled worker may still hold its file: keep the error, not its rows
            error = f"{error}; its store file was not readable: {exc}"
            outcome = None
        outcome = outcome or CellOutcome(key=cell.key, run_id=run_id, status=status, error=error)
        if ctx.tracking is not None:
            _close_child(ctx.tracking, run_id, outcome)
        return outcome

    @staticmethod
    def _merge(store: Any, cell: Cell, outcome: CellOutcome, ctx: SweepContext) -> None:
        merged = merge_outcome(store, outcome, ctx.datasets[cell.dataset.load_key])
        if outcome.resumed:
            ctx.console.print(
                f"cell {cell.key}: {outcome.resumed} example(s) resumed from an earlier attempt", highlight=False
            )
        ctx.console.print(
            f"cell {cell.key} {outcome.status}: {merged} result(s) merged ({outcome.worker or 'no worker'})",
            highlight=False,
            markup=False,
        )


def _close_child(tracking: CellTracking, run_id: str, outcome: CellOutcome) -> None:
    """Close the MLflow child run of a cell whose task never returned (it would stay RUNNING)."""
    # imported here: MLflow costs seconds at import, and a run without MLflow never loads it
    from routerlab.eval.tracking import MlflowSink

    try:
        with MlflowSink(tracking.tracking_uri, experiment=tracking.experiment, traces=False) as sink:
            sink.experiment("")
            child = sink.find_run(run_id)
            if child is not None:
                sink.finish_run(child, outcome.results, status=outcome.status, error=outcome.error)
                outcome.mlflow_run_id = child
    except Exception as exc:  # the store keeps the truth; MLflow is the mirror
        outcome.error = f"{outcome.error}; MLflow: {type(exc).__name__}: {exc}"


#: executor names of ``--executor``
EXECUTORS: tuple[str, ...] = tuple(executor.names())


def make_executor(name: str, *, address: str | None = None) -> Executor:
    """Build the executor called ``name`` through the registry (``local`` or ``ray``).

    Raises:
        ConfigError: An unknown name, or ``--address`` with the local executor.
    """
    if name == "local" and address:
        raise ConfigError(
            "--address names a Ray cluster",
            expected="--executor ray with --address",
            found=f"--executor local --address {address}",
            fix="add --executor ray, or drop --address",
            details={"option": "--address"},
        )
    try:
        return executor.build(name, **({"address": address} if address else {}))
    except ConfigError as exc:
        raise type(exc)(
            f"{exc.what} (--executor)",
            expected=exc.expected,
            found=exc.found,
            fix=exc.fix,
            details={**exc.details, "option": "--executor"},
        ) from None
