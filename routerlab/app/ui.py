"""The MLflow UI on a project's store, as a child process stopped with its caller; a team's tracking server."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from typing import Any

from routerlab.eval.tracking.address import resolve_tracking_uri
from routerlab.eval.tracking.artifacts import artifacts_folder
from routerlab.eval.tracking.landing import LandingPage, share_landing_views
from routerlab.sweep.mlflow_server import mlflow_command, mlflow_env, serve_mlflow

__all__ = ["run_mlflow_ui", "serve_mlflow"]


def run_mlflow_ui(
    tracking_uri: str, *, host: str, port: int, workers: int, on_ready: Callable[[str, list[LandingPage]], None]
) -> int:
    """Start the MLflow UI on ``tracking_uri`` and wait; Ctrl-C or SIGTERM stops its server too.

    Before the server starts, each routerlab experiment gets its landing views (the runs table
    with the headline metrics as columns, :func:`~routerlab.eval.tracking.landing.share_landing_views`):
    MLflow 3 would otherwise open it on its GenAI overview.

    Args:
        tracking_uri: The MLflow store.
        host: Bind address.
        port: TCP port.
        workers: Server worker processes.
        on_ready: Told the URL to open and the landing pages (relative to it) once the server is started.

    Returns:
        The UI's exit code (0 after Ctrl-C or SIGTERM).
    """
    # artifacts are stored relative to a SQLite store (mlflow-artifacts:/...): serve them from its
    # folder, wherever the store was copied to and whatever the working directory
    folder = artifacts_folder(tracking_uri)
    cmd = mlflow_command(
        "ui",
        backend_store_uri=tracking_uri,
        host=host,
        port=port,
        artifacts_destination=str(folder) if folder is not None else None,
        # MLflow's default is 4 uvicorn workers, each importing MLflow at start-up: on a 2-core
        # machine the UI answered after about 60 s instead of 20 s with one, which serves one
        # person's browser (its requests run on the worker's thread pool)
        workers=workers,
    )
    # its own process group: the UI's server workers are stopped with it, never left behind
    # written before the server starts: the UI reads the experiment's tags when a page opens
    pages = share_landing_views(resolve_tracking_uri(tracking_uri))
    proc = subprocess.Popen(cmd, env=mlflow_env(), start_new_session=True)
    on_ready(f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}", pages)

    def stop(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        code = 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return code
