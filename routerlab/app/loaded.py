"""A stored session as a notebook holds it: a short summary on display, pandas frames on demand.

:func:`load` reads a session's runs (with full traces) from the results store once; the object
it returns shows the session id, dataset, LM, routers, examples and headline rates in a dozen
lines, where the loaded results themselves (every example's trace) would print for pages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from routerlab.app.defaults import DEFAULT_STORE_PATH

if TYPE_CHECKING:
    import pandas as pd

    from routerlab._runs.session import SessionResult
    from routerlab.app.compare import ComparedRuns
    from routerlab.eval.analysis import RouterResults
    from routerlab.eval.compare import Comparison

__all__ = ["HEADLINE_RATES", "LoadedSession", "load"]

#: the rates the summary shows, one column each (the rates table has every headline scorer)
HEADLINE_RATES: tuple[str, ...] = ("route", "ex", "success")


def _rate_text(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.2f}"


@dataclass(frozen=True, eq=False, repr=False)
class LoadedSession:
    """One session's runs and results, read from the results store.

    Attributes:
        session_id: The session's id (``YYYYmmdd-HHMMSS-xxxx``).
        store: The results store it was read from.
        tracking_uri: The MLflow store it was logged to (None: not logged, or not asked).
        data: The results by router label (:class:`~routerlab.eval.analysis.RouterResults`), the
            input of every analysis in :mod:`routerlab.eval.analysis` and :mod:`routerlab.eval.plots`.
        outcome: What running it returned, for a session :func:`routerlab.run` just ran (None
            for one loaded from the store): interruptions, crashes, left-out databases.
    """

    session_id: str
    store: str
    tracking_uri: str | None
    data: RouterResults
    outcome: SessionResult | None = field(default=None)

    @property
    def runs(self) -> pd.DataFrame:
        """One row per run: label, run id, router, LM, dataset, split, status, results."""
        return self.data.runs

    @property
    def routers(self) -> list[str]:
        """The routers' display labels, in run order."""
        return list(self.data)

    @property
    def run_ids(self) -> list[str]:
        """The runs' ids (``<session>.<router>``), in run order."""
        return [str(r) for r in self.data.runs["run_id"]]

    def results(self) -> pd.DataFrame:
        """One row per example result of every run (:func:`routerlab.eval.analysis.results_frame`)."""
        return self.data.frame()

    @property
    def parts(self) -> list[str]:
        """The session's parts present (``routing``: first decisions; ``end_to_end``: whole pipeline)."""
        return list(dict.fromkeys(str(p) for p in self.data.runs["part"]))

    @cached_property
    def _rates(self) -> pd.DataFrame:
        from routerlab._routing_eval.stored import FIRST_DECISION
        from routerlab.eval.analysis import RATE_METRICS, rates_table
        from routerlab.eval.store import ROUTING

        metrics = [*RATE_METRICS, FIRST_DECISION] if ROUTING in self.parts else list(RATE_METRICS)
        return rates_table(self.data, metrics)

    def rates(self) -> pd.DataFrame:
        """Per-router rates with 95 % CIs: ``router, metric, value, ci_low, ci_high, n, n_invalid``."""
        return self._rates.copy()

    def compare(self, cost: str = "cold") -> Comparison:
        """The comparison ``routerlab compare SESSION`` prints (rates, latency, tokens, paired tests).

        A session with both parts gives its end-to-end part's; :meth:`compare_parts` gives both.
        """
        return self.compare_parts(cost).comparison

    def compare_parts(self, cost: str = "cold") -> ComparedRuns:
        """Every part's comparison, the routing part's recall per intent and verdict (``routerlab compare``)."""
        from routerlab.app.compare import compare

        return compare(self.run_ids, store=self.store, cost=cost)

    def __repr__(self) -> str:
        """A summary that fits a screen: which session, on what, and each router's headline rates."""
        runs = self.data.runs
        first = runs.iloc[0] if len(runs) else None
        on = f"{first['dataset']}/{first['split']}, lm {first['lm']}" if first is not None else "no runs"
        lines = [f"<LoadedSession {self.session_id}: {on}; store {self.store}>"]
        rates = self._rates.set_index(["router", "metric"])
        width = max([len(label) for label in self.data] + [6])
        shown = (*HEADLINE_RATES, "first_decision") if "routing" in self.parts else HEADLINE_RATES
        lines.append(f"  {'router':<{width}}  {'status':<8}  {'n':>4}  " + "  ".join(f"{m:>7}" for m in shown))
        for label, status, n in zip(runs["label"], runs["status"], runs["n_results"], strict=True):
            values = [_rate_text(rates.loc[(label, m), "value"]) if (label, m) in rates.index else "-" for m in shown]
            lines.append(f"  {label:<{width}}  {status:<8}  {n:>4}  " + "  ".join(f"{v:>7}" for v in values))
        lines.append("  .rates(), .results(), .runs, .compare(), .compare_parts(), .data (for routerlab.eval.analysis)")
        return "\n".join(lines)


def load(
    session: str,
    *,
    store: str = DEFAULT_STORE_PATH,
    tracking_uri: str | None = None,
    outcome: Any = None,
) -> LoadedSession:
    """Read a stored session (its runs, results and traces) from the results store.

    Args:
        session: A session id printed by ``routerlab run`` (or :func:`routerlab.run`'s ``session_id``).
        store: The DuckDB results store; relative paths are the project's (found from wherever
            the process runs, as the notebook finds them: :func:`routerlab.project.locate`).
        tracking_uri: The MLflow store the session was logged to, located like the store (None:
            not asked; the results store holds every figure).
        outcome: What running the session returned, when it was just run.

    Returns:
        The session, with a short repr and pandas frames.

    Raises:
        ConfigError: No such store, or no such session in it.
    """
    from routerlab.eval.analysis import load_store
    from routerlab.project import locate

    store, tracking_uri = locate(store, tracking_uri)
    return LoadedSession(
        session_id=session,
        store=str(store),
        tracking_uri=tracking_uri,
        data=load_store(store, session=session),
        outcome=outcome,
    )
