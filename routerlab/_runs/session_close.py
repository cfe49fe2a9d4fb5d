"""How a session's runs are closed.

With their status in both stores, on the way out of an error or a stop, and the MLflow parent run
with its dashboard.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from routerlab._runs.resume import resume_command
from routerlab._runs.runner import RouterRun
from routerlab._runs.session_plan import Live, SessionResult, SessionSpec
from routerlab.agents.errors import ConfigError, RouterlabError
from routerlab.agents.signals import is_stop, shield
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.analysis.tracked import child_metrics, session_dashboard
from routerlab.eval.scoring import ExampleResult
from routerlab.eval.store import END_TO_END, session_of

__all__ = [
    "close_quietly",
    "close_run",
    "close_unstarted",
    "fail",
    "finish_parent",
    "parent_dashboard",
    "tracking_failure",
]

_log = logging.getLogger(__name__)


def close_run(
    store: Any, sink: Any, run_id: str, mlflow_id: str | None, status: str, *, error: str | None = None
) -> list[ExampleResult]:
    """Close a run in the store and in MLflow with ``status``; returns its stored results."""
    # a stop signal here waits until both stores agree: a run closed in one and RUNNING in the
    # other is what a signal during the final logging used to leave
    with shield():
        results = store.results(run_id)
        store.finish_run(run_id, status)
        if sink is not None and mlflow_id is not None:
            sink.finish_run(mlflow_id, results, status=status, error=error)
    return results


def close_quietly(store: Any, sink: Any, run_id: str, mlflow_id: str | None, status: str, error: str) -> None:
    """:func:`close_run` on the way out of a failure: a second failure must not hide the first."""
    try:
        close_run(store, sink, run_id, mlflow_id, status, error=error)
    except Exception as exc:  # the original error is re-raised by the caller
        _log.warning("could not mark run %s %s: %s", run_id, status, exc)


def close_unstarted(
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


def fail(live: Live, exc: BaseException) -> None:
    """Close what an error stopped FAILED (runs, MLflow parent) and say how to resume."""
    error = f"{type(exc).__name__}: {exc}"
    plan, spec, current = live.plan, live.spec, live.current
    if current is not None:
        close_quietly(live.store, live.sink, current[0], current[1], "FAILED", error)
    close_unstarted(live.store, plan.runs, plan.session_id, live.out.results, current, "FAILED")
    if live.sink is not None and live.parent is not None:
        try:
            live.sink.finish_parent(live.parent, status="FAILED")
        except Exception as close_exc:
            _log.warning("could not mark the comparison run FAILED: %s", close_exc)
    live.console.print(
        f"session {plan.session_id} stopped by an error; what finished is stored: "
        f"resume with  {resume_command(plan.session_id, spec.store_path, spec.tracking_uri)}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def tracking_failure(spec: SessionSpec, exc: BaseException) -> ConfigError | None:
    """The clear error for an MLflow store fault (full disk, damaged file); None: not one."""
    # imported here: MLflow costs seconds at import, and a run without MLflow never loads it
    from routerlab.eval.tracking import tracking_store_failure

    if spec.tracking_uri is None or isinstance(exc, RouterlabError):
        return None
    return tracking_store_failure(spec.tracking_uri, exc)


def finish_parent(live: Live) -> None:
    """Close the session's MLflow parent run with its dashboard; a stop here closes it KILLED.

    A signal during the dashboard (it takes seconds) used to leave the parent RUNNING: now the
    parent is closed KILLED without it, and ``--resume`` (nothing left to run) logs it again.
    """
    sink, out = live.sink, live.out
    if sink is None or live.parent is None:
        return
    final = "KILLED" if out.interrupted or out.skipped else "FAILED" if out.failed else "FINISHED"
    try:
        dashboard = parent_dashboard(live.store, out, sink)
        with shield():
            sink.finish_parent(live.parent, status=final, **dashboard)
    except BaseException as exc:
        if not is_stop(exc):
            failure = tracking_failure(live.spec, exc)
            live.console.print(
                f"session {out.session_id}: every run is stored, but its MLflow parent run could not be closed: "
                f"resume with  {resume_command(out.session_id, live.spec.store_path, live.spec.tracking_uri)}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
            if failure is not None:
                raise failure from None
            raise
        out.interrupted = True
        with shield(raise_after=False):
            sink.finish_parent(live.parent, status="KILLED")


def parent_dashboard(store: Any, out: SessionResult, sink: Any) -> dict[str, Any]:
    """What a session's MLflow parent run shows: the session's comparison, both parts (docs/metrics.md §6).

    Metrics ``<part>.<router>.<measure>`` with their interval bounds and cost, the comparison and
    verdict as Markdown, a rounded table and each part's rates figure
    (:func:`routerlab.eval.analysis.tracked.session_dashboard`); the description links the router
    runs' compare page. Each end-to-end child gets the same model's figures for its router
    (:func:`routerlab.eval.analysis.tracked.child_metrics`). A failure here never fails the
    session: the child runs keep every example.
    """
    if not [r for r in out.run_ids if store.results(r)]:
        return {}
    try:
        model = build_comparison(store, out.session_id)
        runs = store.runs()
        mine = [r for r in runs["run_id"] if session_of(str(r)) == out.session_id]
        mlflow_ids = runs.set_index("run_id").reindex(mine)["mlflow_run_id"].dropna()
        for part in (p for p in model.parts if p.key == END_TO_END):
            for r in (r for r in part.routers if mlflow_ids.get(r.run_id)):
                sink.log_metrics(str(mlflow_ids[r.run_id]), child_metrics(part, r))
        return session_dashboard(model) | {"children": [str(m) for m in mlflow_ids if m]}
    except Exception as exc:  # the dashboard is a summary: the session's results stand without it
        # imported here: MLflow costs seconds at import, and a run without MLflow never gets here
        from routerlab.eval.tracking import tracking_store_failure

        if tracking_store_failure(sink.tracking_uri, exc) is not None:
            raise  # a full or damaged store stops the session (exit 2 and its resume), never a silent gap
        logging.getLogger(__name__).warning("parent run summary not logged: %s", exc)
        return {}
