"""The main job (``routerlab run`` with no ``--router``, ``--config`` or ``--resume``) under a stop-signal watch.

What the job does is :mod:`routerlab._runs.main_job`'s; its end-to-end part is a session built and
run by :func:`routerlab.app.run.session_spec` and :func:`routerlab.app.run.execute`, as every
session is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from routerlab._runs.main_job import MainJobResult
    from routerlab._runs.runner import RunConfig
    from routerlab._runs.session import SessionResult
    from routerlab.agents.signals import StopSignal

__all__ = ["MainJob", "main_job"]


@dataclass(frozen=True)
class MainJob:
    """How the main job ended.

    Attributes:
        job: Its routing part, end-to-end session and verdicts.
        stop: The stop-signal watch (its ``name`` and ``exit_code`` after a stop).
        again: The command that finishes the end-to-end session.
    """

    job: MainJobResult
    stop: StopSignal
    again: str


def main_job(
    *, store: str, tracking_uri: str | None, console: Console, settings: Mapping[str, Any] | None = None
) -> MainJob:
    """Run the main job, printing its progress, tables and verdict on ``console``.

    Args:
        store: The DuckDB results store.
        tracking_uri: The MLflow store; None: no MLflow logging.
        console: Where progress, the tables and the verdict go.
        settings: Run settings as ``routerlab run``'s options give them (None: not given).
    """
    from routerlab._runs.main_job import run_main_job
    from routerlab._runs.resume import resume_command
    from routerlab.agents.signals import stop_signals
    from routerlab.app.run import execute, session_spec

    def run_e2e(routers: Sequence[str], config: RunConfig, lm: Any, session_id: str) -> SessionResult:
        spec = session_spec([(r, {}) for r in routers], config, store=store, tracking_uri=tracking_uri)
        return execute(spec, console=console, lm=lm, session_id=session_id)

    with stop_signals() as stopped:
        job = run_main_job(store=store, tracking_uri=tracking_uri, console=console, run_e2e=run_e2e, settings=settings)
    return MainJob(job, stopped, resume_command(job.session.session_id, store, tracking_uri))
