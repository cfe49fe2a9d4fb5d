"""``routerlab run``: a comparison of routers on one dataset, persisted as it goes.

A session has an id. Each router's run within it has the run id ``<session>.<router>``, one
MLflow child run under the session's parent run, and rows in the DuckDB results store written as
each example completes. ``--resume SESSION`` reruns only the examples that have no stored result.

Every way a session stops (a signal, an error, a full or busy store, a deadline) closes the same
runs in both stores and leaves a resumable session: :func:`run_session` handles them side by side
here; the plan and the runs' registration are in :mod:`routerlab._runs.session_plan`, the live run in
:mod:`routerlab._runs.session_live`, closing in :mod:`routerlab._runs.session_close`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from rich.console import Console

from routerlab._runs.session_close import close_quietly, close_unstarted, fail, finish_parent, tracking_failure
from routerlab._runs.session_live import crash_verdict, run_all
from routerlab._runs.session_plan import (
    Live,
    SessionResult,
    SessionSpec,
    create_runs,
    load_dataset,
    new_session_id,
    plan_session,
    select,
)
from routerlab._runs.session_spec import (
    check_resume,
    parse_routers,
    recorded_session,
)
from routerlab.agents.signals import is_stop, shield
from routerlab.eval.store import ResultsStore, StoreBusyError

__all__ = [
    "SessionResult",
    "SessionSpec",
    "check_resume",
    "crash_verdict",
    "load_dataset",
    "new_session_id",
    "parse_routers",
    "recorded_session",
    "run_session",
    "select",
]


def run_session(
    spec: SessionSpec,
    *,
    console: Console,
    resume: str | None = None,
    lm: Any = None,
    session_id: str | None = None,
) -> SessionResult:
    """Run every router of ``spec`` over the selected examples and persist results as they come.

    Everything that can be checked (dataset, split, scorers, LM, routers, a resumed session's
    dataset digest) is checked before any run is created, so bad input leaves no run behind. Each
    run ends in the store and in MLflow as ``FINISHED`` (every example has a result),
    ``KILLED`` (Ctrl-C, or the deadline left examples unstarted) or ``FAILED`` (an error stopped
    the session; the error is re-raised). A killed process leaves its runs ``RUNNING``;
    ``resume`` reopens and finishes them.

    Args:
        spec: What to run.
        console: Where progress goes (the session id is printed first).
        resume: An earlier session id: finish its missing examples only (and those its deadline
            skipped).
        lm: A resolved LM (default: resolve ``spec.config.lm``).
        session_id: The id of a new session whose other part is already stored (the main job's
            routing part); default: a new id (:func:`new_session_id`).

    Returns:
        The session's run ids and results. On Ctrl-C, ``interrupted`` is True and what finished
        is kept; ``skipped`` counts examples the deadline kept from starting.
    """
    # imported here: MLflow costs seconds at import, and a run without MLflow never loads it
    from routerlab.eval.tracking import MlflowSink

    plan = plan_session(spec, resume, lm, session_id)
    store = ResultsStore(spec.store_path)
    # a lock held by another process is waited for visibly (up to store_wait_s), not in silence
    store.on_wait = lambda message: console.print(message, highlight=False, markup=False, soft_wrap=True)
    try:
        sink = MlflowSink(spec.tracking_uri, traces=spec.traces) if spec.tracking_uri else None
    except Exception as exc:
        # a new mlflow.db on a full disk fails while MLflow creates its tables: named, not a traceback
        if (failure := tracking_failure(spec, exc)) is not None:
            fix = "free space there, then run the same command again (nothing was written yet); or run with --no-mlflow"
            raise dataclasses.replace(failure, fix=fix) from None
        raise
    out = SessionResult(session_id=plan.session_id, run_ids=[])
    deadline = time.monotonic() + spec.config.deadline_s if spec.config.deadline_s is not None else None
    live = Live(spec, plan, store, sink, out, console, deadline=deadline)
    try:
        create_runs(live)
        run_all(live)
    except StoreBusyError as exc:
        # another process took the store: nothing can be written, so nothing is marked; what
        # finished is stored, and the runs left RUNNING are what --resume reopens and finishes
        # (MLflow's run stays RUNNING too, as after a kill: --resume reopens it by its run key)
        out.store_busy = exc
        return out
    except BaseException as exc:
        if not is_stop(exc):
            # a full disk or a damaged MLflow store is named with its recovery (exit 2), not a traceback
            failure = tracking_failure(spec, exc)
            if out.registered:  # before that, nothing of this session exists to close
                fail(live, failure or exc)
            if failure is not None:
                raise failure from None
            raise
        # a stop outside an example (registering, opening a run, closing one): the same clean stop
        out.interrupted = True
        if out.registered:  # before that, nothing of this session exists to close
            with shield(raise_after=False):
                if live.current is not None:
                    close_quietly(store, sink, live.current[0], live.current[1], "KILLED", "interrupted")
                close_unstarted(store, plan.runs, plan.session_id, out.results, live.current, "KILLED")
    out.bad_databases = list(plan.bad)
    finish_parent(live)
    return out
