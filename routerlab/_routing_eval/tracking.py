"""First decisions in MLflow: the session's parent run and one child run per router.

``routerlab run`` logs example results through :class:`~routerlab.eval.tracking.MlflowSink`;
``route`` and the main job's routing part log first decisions through the same writer, in the
same experiment (``routerlab/<dataset>``), under the session's one parent:

* the **parent** (``session <id>``, run key the session id, so a main job's end-to-end part
  reopens it): params ``route``, ``routers``, ``lm``, ``history``; closed with the session's
  dashboard (:func:`routerlab.eval.analysis.tracked.session_dashboard`: metrics
  ``<part>.<router>.<measure>``, the comparison, the verdict);
* a **child** per router (``routing · <router>``, tag ``routerlab.kind = route-run``, run key
  ``<session>.routing.<router>`` as in the results store): params as ``run`` logs them plus
  ``config.*``; artifact ``decisions.csv``; metrics, once the session's comparison is built,
  its figures for that router (:func:`routerlab.eval.analysis.tracked.child_metrics`:
  ``routing_accuracy`` with ``_low`` / ``_high``, ``diverted``...).

A child is closed as soon as its router has decided every example; an error or Ctrl-C closes the
open runs FAILED or KILLED instead of leaving them RUNNING.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from routerlab._routing_eval.decisions import FirstDecision, decisions_frame
from routerlab.benchmarks.dataset import Dataset
from routerlab.eval.analysis.model import SessionComparison
from routerlab.eval.analysis.tracked import child_metrics, child_name, parent_name, session_dashboard
from routerlab.eval.store import ROUTING, part_run_id
from routerlab.eval.tracking import (
    DECISIONS_CSV,
    KIND_ROUTE_PARENT,
    KIND_ROUTE_RUN,
    TAG_KIND,
    MlflowSink,
    check_tracking_store,
    resolve_tracking_uri,
)

__all__ = ["RouteTracking"]


class RouteTracking:
    """The MLflow runs of one ``routerlab route`` invocation.

    Args:
        tracking_uri: The MLflow store; checked (:func:`check_tracking_store`) before anything is
            written, so a bad or unreachable store is a :class:`ConfigError`, not runs left RUNNING.
        route_id: The session id (the parent's run key; children are ``<session>.routing.<router>``).
        dataset: The dataset decided on (selects the experiment ``routerlab/<dataset>``).
        settings: What the decisions depend on besides the router (dataset, dataset_args, split,
            limit, lm, history), logged as each child's ``config.*``.
        routers: The router names, in order (a parent param).

    Use it as a context manager: leaving it by an exception closes the open child and the parent
    (KILLED on Ctrl-C, FAILED otherwise).

    Raises:
        ConfigError: The store cannot be written or does not answer.
    """

    def __init__(
        self,
        tracking_uri: str,
        route_id: str,
        dataset: Dataset,
        settings: Mapping[str, Any],
        routers: Sequence[str],
    ) -> None:
        uri = resolve_tracking_uri(tracking_uri)
        check_tracking_store(uri)
        self.route_id = route_id
        self.dataset = dataset
        self.settings = {**settings, "route": route_id}
        self.sink = MlflowSink(uri, traces=False)
        self.tracking_uri = self.sink.tracking_uri
        # the session's one parent: a main job's end-to-end part reopens it by the same key
        self.parent = self.sink.start_parent(
            parent_name(route_id),
            {
                "route": route_id,
                "routers": ",".join(routers),
                "lm": settings.get("lm"),
                "history": settings.get("history"),
            },
            dataset=dataset,
            run_key=route_id,
            tags={TAG_KIND: KIND_ROUTE_PARENT},
        )
        self.children: dict[str, str] = {}
        self._open: str | None = None
        self._parent_open = True

    def start_router(self, name: str, router: Any) -> str:
        """Open the child run of ``router`` (built, so its full arguments are recorded); returns its id."""
        child = self.sink.start_run(
            router,
            self.settings.get("lm") or "",
            self.dataset,
            self.settings,
            parent_run_id=self.parent,
            split=str(self.settings.get("split") or "all"),
            run_key=part_run_id(self.route_id, name, ROUTING),
            run_name=child_name(ROUTING, name),
            tags={TAG_KIND: KIND_ROUTE_RUN},
        )
        self.children[name] = child
        self._open = child
        return child

    def finish_router(self, name: str, label: str, decisions: Sequence[FirstDecision]) -> None:
        """Log a router's ``decisions.csv`` on its child run and close it (its metrics come with :meth:`finish`)."""
        child = self.children[name]
        try:
            self.sink.log_texts(child, {DECISIONS_CSV: decisions_frame(label, decisions).to_csv(index=False)})
        except Exception as exc:
            self._open = None
            self.sink.close_run(child, "FAILED", error=f"{type(exc).__name__}: {exc}")
            raise
        self._open = None
        self.sink.close_run(child, "FINISHED", tags={"routerlab.n_decisions": str(len(decisions))})

    def finish(self, model: SessionComparison) -> None:
        """Log each child's figures and close the parent with the session's dashboard, both from ``model``.

        Args:
            model: The session's comparison (its routing part holds every child's router).
        """
        self._parent_open = False
        try:
            by_key = {part_run_id(self.route_id, name, ROUTING): child for name, child in self.children.items()}
            part = model.part(ROUTING)
            for r in part.routers:
                if r.run_id in by_key:
                    self.sink.log_metrics(by_key[r.run_id], child_metrics(part, r))
            # the description links the router runs' compare page, under the verdict
            self.sink.finish_parent(
                self.parent, "FINISHED", children=list(self.children.values()), **session_dashboard(model)
            )
        finally:
            self.sink.close()

    def __enter__(self) -> RouteTracking:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            return
        status = "KILLED" if issubclass(exc_type, KeyboardInterrupt) else "FAILED"
        why = f"{exc_type.__name__}: {exc}"
        try:
            if self._open is not None:
                self.sink.close_run(self._open, status, error=why)
            if self._parent_open:
                self.sink.close_run(self.parent, status, error=why)
        finally:
            self.sink.close()
