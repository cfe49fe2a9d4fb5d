"""Running a sweep: a grid file (or a recorded sweep to finish) on an executor, into the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from routerlab._runs.resume import resume_command
from routerlab.agents.errors import ConfigError
from routerlab.app.defaults import DEFAULT_STORE_PATH, DEFAULT_TRACKING_URI
from routerlab.sweep import load_sweep, make_executor, recorded_sweep, run_sweep

__all__ = ["again", "sweep"]


def sweep(
    config_file: Path | None = None,
    *,
    resume: str | None = None,
    executor: str = "local",
    address: str | None = None,
    store: str = DEFAULT_STORE_PATH,
    tracking_uri: str | None = DEFAULT_TRACKING_URI,
    console: Any = None,
) -> Any:
    """Run a grid of datasets x routers x LMs x seeds (``routerlab sweep`` in Python).

    Args:
        config_file: The sweep file (YAML/JSON); None with ``resume``.
        resume: A sweep id to finish with its recorded grid.
        executor: ``local`` (cells in this process) or ``ray``.
        address: The Ray cluster to join (default: a local one).
        store: The DuckDB results store.
        tracking_uri: The MLflow store; None: no MLflow logging.
        console: Where progress goes (default: nowhere).

    Returns:
        The :class:`~routerlab.sweep.SweepResult`.

    Raises:
        ConfigError: Neither a file nor a sweep to resume, or a bad file (nothing runs).
    """
    runner = make_executor(executor, address=address)
    if config_file is None and resume is None:
        raise ConfigError(
            "no sweep given",
            expected="--config sweep.yaml (a new sweep) or --resume SWEEP_ID",
            found="neither",
            fix="see the README's Sweeps section for the file format",
            details={"option": "--config"},
        )
    spec = load_sweep(config_file) if config_file is not None else recorded_sweep(store, resume or "")
    return run_sweep(
        spec,
        executor=runner,
        store_path=store,
        tracking_uri=tracking_uri,
        console=console if console is not None else Console(quiet=True),
        resume=resume,
    )


def again(
    sweep_id: str, *, store: str, tracking_uri: str | None, executor: str = "local", address: str | None = None
) -> str:
    """The command that finishes a sweep (its cells that did not finish), on the same executor."""
    options = f" --executor {executor}" + (f" --address {address}" if address else "")
    return resume_command(sweep_id, store, tracking_uri, command="sweep", options=options)
