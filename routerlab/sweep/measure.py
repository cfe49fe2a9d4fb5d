"""Sweep wall time, local executor vs Ray, against a simulated-latency LM (measured, never asserted).

The grid: the built-in dev split (``limit`` examples) x the ``rules`` and ``oracle`` routers x
``seeds`` seeds, with one LM, ``openai/stub`` served by :class:`~routerlab.stub_lm.
LatencyServer` (``delay_s`` per request, response cache off, so every cell pays its latency).
Every executor runs the same grid into a fresh store, MLflow off: what differs is only where the
cells run. The cluster's start-up is measured apart; the first Ray sweep on it also starts the
worker processes (each imports routerlab), later ones reuse them.

``routerlab perf`` can add :func:`sweep_wall_times` to its figures; on its own::

    .venv/bin/python -m routerlab.sweep.measure --delay-s 0.2 --seeds 4 --limit 6 --ray-cpus 1,0.5
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import yaml
from rich.console import Console

from routerlab.perf import PerfFigure
from routerlab.stub_lm import LatencyServer
from routerlab.sweep.driver import run_sweep
from routerlab.sweep.executors import Executor, LocalExecutor, RayExecutor
from routerlab.sweep.sweep_file import load_sweep

__all__ = ["sweep_wall_times"]


def _grid(path: Path, url: str, *, seeds: int, limit: int, num_cpus: float, concurrency: int) -> Path:
    doc = {
        "name": "wall-time",
        "datasets": ["builtin"],
        "split": "dev",
        "limit": limit,
        "routers": ["rules", "oracle"],
        "lms": [{"spec": "openai/stub", "api_base": url, "cache": False}],
        "seeds": list(range(seeds)),
        "run": {"concurrency": concurrency},
        "ray": {"num_cpus": num_cpus, "max_retries": 1},
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def sweep_wall_times(
    *,
    delay_s: float = 0.2,
    seeds: int = 4,
    limit: int = 6,
    concurrency: int = 1,
    ray_cpus: Sequence[float] = (1.0,),
    ray_runs: int = 2,
) -> list[PerfFigure]:
    """Wall time of the same sweep on the local executor and on a local Ray cluster.

    The Ray cluster is started once, here (its start-up is a figure of its own); the first Ray
    sweep on it also pays for starting the worker processes and their imports, later ones reuse
    the warm workers, which is what a long sweep mostly sees.

    Args:
        delay_s: Latency of each LM request.
        seeds: Seeds in the grid (cells = 2 routers x seeds).
        limit: Examples per cell.
        concurrency: Worker threads per cell (``run.concurrency``).
        ray_cpus: ``ray.num_cpus`` per cell to measure (below 1 packs I/O-bound cells per core).
        ray_runs: Sweeps per ``ray_cpus`` value on the same cluster.

    Returns:
        Seconds per executor run, examples and LM requests, and the speed-up over local.
    """
    import os

    import ray

    figures: list[PerfFigure] = []
    quiet = Console(quiet=True)
    walls: dict[str, float] = {}
    with LatencyServer(delay_s) as server, tempfile.TemporaryDirectory() as tmp:

        def sweep(label: str, executor: Executor, cpus: float) -> None:
            i = len(walls)
            grid = _grid(
                Path(tmp) / f"sweep{i}.yaml",
                server.url,
                seeds=seeds,
                limit=limit,
                num_cpus=cpus,
                concurrency=concurrency,
            )
            before = sum(server.requests.values())
            t0 = time.perf_counter()
            result = run_sweep(
                load_sweep(grid),
                executor=executor,
                store_path=str(Path(tmp) / f"results{i}.duckdb"),
                tracking_uri=None,
                console=quiet,
            )
            walls[label] = time.perf_counter() - t0
            n = int(result.summary["results"].sum())
            requests = sum(server.requests.values()) - before
            figures.append(PerfFigure("sweep", f"{label}: wall", round(walls[label], 2), "s"))
            figures.append(PerfFigure("sweep", f"{label}: examples", n, f"examples, {requests} LM requests"))

        sweep("local", LocalExecutor(), 1.0)
        started = not ray.is_initialized()
        t0 = time.perf_counter()
        if started:
            ray.init(
                num_cpus=os.cpu_count(), include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False
            )
        figures.append(PerfFigure("sweep", "ray: local cluster start", round(time.perf_counter() - t0, 2), "s"))
        try:
            for cpus in ray_cpus:
                for k in range(1, ray_runs + 1):
                    sweep(f"ray num_cpus {cpus:g}, sweep {k}", RayExecutor(), cpus)
        finally:
            if started:
                ray.shutdown()
    for label, wall in walls.items():
        if label != "local":
            figures.append(PerfFigure("sweep", f"{label}: speed-up over local", round(walls["local"] / wall, 2), "x"))
    figures.append(
        PerfFigure(
            "sweep", "grid", 2 * seeds, f"cells x {limit} examples, {delay_s:g} s per LM request, {os.cpu_count()} CPUs"
        )
    )
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    """Print :func:`sweep_wall_times` as a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay-s", type=float, default=0.2, help="latency of each LM request")
    parser.add_argument("--seeds", type=int, default=4, help="seeds (cells = 2 routers x seeds)")
    parser.add_argument("--limit", type=int, default=6, help="examples per cell")
    parser.add_argument("--concurrency", type=int, default=1, help="worker threads per cell")
    parser.add_argument("--ray-cpus", default="1", help="ray.num_cpus per cell to measure, comma-separated")
    parser.add_argument("--ray-runs", type=int, default=2, help="sweeps per ray.num_cpus value on one cluster")
    args = parser.parse_args(argv)
    figures = sweep_wall_times(
        delay_s=args.delay_s,
        seeds=args.seeds,
        limit=args.limit,
        concurrency=args.concurrency,
        ray_cpus=[float(x) for x in args.ray_cpus.split(",") if x],
        ray_runs=args.ray_runs,
    )
    for f in figures:
        print(f"{f.name:<48} {f.value:>8g} {f.unit}")


if __name__ == "__main__":  # pragma: no cover
    main()
