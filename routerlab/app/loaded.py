"""A stored session as a notebook holds it: its comparison model, a short summary, pandas frames on demand.

:func:`load` builds the session's comparison (:class:`~routerlab.eval.analysis.model.SessionComparison`)
from the results store once; the object it returns shows the verdict and each part's rates in a
screen of text (or an HTML block in Jupyter), and gives wide frames per part from that model, so a
notebook shows the numbers ``routerlab compare`` prints.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from routerlab.app.compare import compare
from routerlab.app.defaults import DEFAULT_STORE_PATH
from routerlab.eval.analysis.console import render_console
from routerlab.eval.analysis.frames import (
    disagreements_frame,
    failures_frame,
    pairs_frame,
    per_intent_frame,
    rates_frame,
    results_frame,
)
from routerlab.eval.analysis.measures import measure
from routerlab.eval.analysis.model import SessionComparison
from routerlab.eval.analysis.words import interval_text, num, part_title, verdict_sentences
from routerlab.eval.store import ResultsStore
from routerlab.project import locate

if TYPE_CHECKING:
    from routerlab._runs.session import SessionResult

__all__ = ["LoadedSession", "load"]

#: the width the text summary is rendered at
_REPR_WIDTH = 100


@dataclass(frozen=True, eq=False, repr=False)
class LoadedSession:
    """One stored session and its comparison.

    Attributes:
        session_id: The session's id (``YYYYmmdd-HHMMSS-xxxx``).
        store: The results store it was read from.
        tracking_uri: The MLflow store it was logged to (None: not logged, or not asked).
        comparison: Every figure of the session, part by part: what every view renders.
        outcome: What running it returned, for a session :func:`routerlab.run` just ran (None
            for one loaded from the store): interruptions, crashes, left-out databases.
    """

    session_id: str
    store: str
    tracking_uri: str | None
    comparison: SessionComparison
    outcome: SessionResult | None = field(default=None)

    @property
    def parts(self) -> list[str]:
        """The session's parts present (``routing``: first decisions; ``end_to_end``: whole turns)."""
        return [p.key for p in self.comparison.parts]

    @property
    def run_ids(self) -> list[str]:
        """The runs' ids, routing part first."""
        return [r.run_id for p in self.comparison.parts for r in p.routers]

    @property
    def routers(self) -> list[str]:
        """The routers that ran, in any part."""
        return list(dict.fromkeys(r.router for p in self.comparison.parts for r in p.routers))

    def _per_part(self, make: Any, part: str | None) -> pd.DataFrame:
        if part is not None or len(self.parts) == 1:
            return make(self.comparison, part or self.parts[0])
        return pd.concat({p: make(self.comparison, p) for p in self.parts}, names=["part"])

    def rates(self, part: str | None = None) -> pd.DataFrame:
        """One row per router of ``part``: each measure's rate with ``_low``, ``_high``, ``_n``, then cost.

        Args:
            part: ``routing`` or ``end_to_end``; None: the only part, or every part (a ``part`` index level).
        """
        return self._per_part(rates_frame, part)

    def pairs(self, part: str | None = None) -> pd.DataFrame:
        """The paired tests of ``part``: one per pair of distinct routers and verdict measure."""
        return self._per_part(pairs_frame, part)

    def per_intent(self, part: str | None = None) -> pd.DataFrame:
        """The verdict measure per gold intent of ``part`` (recall per intent for routing), with intervals."""
        return self._per_part(per_intent_frame, part)

    def failures(self, part: str | None = None) -> pd.DataFrame:
        """Every failure on the verdict measure of ``part``: the request's text, the decision and how it was made."""
        return self._per_part(failures_frame, part)

    def disagreements(self, part: str | None = None) -> pd.DataFrame:
        """The requests the routers of ``part`` decided differently, each router's decision, method and confidence."""
        return self._per_part(disagreements_frame, part)

    def results(self) -> pd.DataFrame:
        """One row per stored result: part, router, question, gold intent, decision, method, confidence, scores."""
        store = ResultsStore(self.store, read_only=True)
        parts = {r.run_id: p.key for p in self.comparison.parts for r in p.routers}
        return results_frame({rid: store.results(rid) for rid in parts}, parts)

    def __repr__(self) -> str:
        """The verdict and each part's rates, as ``routerlab run`` closes (no wider than 100 columns)."""
        methods = ".rates(part), .pairs(part), .per_intent(part), .failures(part), .disagreements(part), .results()"
        return render_console(self.comparison, width=_REPR_WIDTH, detail=False) + methods

    def _repr_html_(self) -> str:
        """The verdict and each part's rates as an HTML block (Jupyter)."""
        c = self.comparison
        out = [f"<h4>Session {html.escape(c.session)}</h4><p>{html.escape(f'{c.dataset}/{c.split}, lm {c.lm}')}</p>"]
        for p in c.parts:
            n = max((r.n for r in p.routers), default=0)
            out.append(f"<h5>{html.escape(part_title(p, n))}</h5><ul>")
            if p.smoke:
                out.append(f"<li>too few to compare (n={n}): a smoke check, not a finding</li>")
            else:
                out += [f"<li>{html.escape(' '.join(verdict_sentences(p, v)))}</li>" for v in p.verdicts]
            out.append("</ul><table><tr><th>router</th>")
            out += [f"<th>{html.escape(measure(m).name)}</th>" for m in p.measures]
            out.append("<th>p50</th><th>p95</th></tr>")
            for r in p.routers:
                cells = (
                    [f"= {r.same_as}"] + [""] * (len(p.measures) + 1)
                    if r.same_as
                    else [interval_text(r.rates[m]) if m in r.rates else "" for m in p.measures]
                    + [num(r.cost.p50, 1), num(r.cost.p95, 1)]
                )
                out.append(
                    f"<tr><td>{html.escape(r.router)}</td>"
                    + "".join(f"<td>{html.escape(x)}</td>" for x in cells)
                    + "</tr>"
                )
            out.append(f"</table><p><small>latency in {html.escape(p.routers[0].cost.unit)}</small></p>")
        return "".join(out)


def load(
    session: str,
    *,
    store: str = DEFAULT_STORE_PATH,
    tracking_uri: str | None = None,
    outcome: Any = None,
) -> LoadedSession:
    """Read a stored session and build its comparison.

    Args:
        session: A session id printed by ``routerlab run`` or ``routerlab route``.
        store: The DuckDB results store; relative paths are the project's (found from wherever
            the process runs, as the notebook finds them: :func:`routerlab.project.locate`).
        tracking_uri: The MLflow store the session was logged to, located like the store (None:
            not asked; the results store holds every figure).
        outcome: What running the session returned, when it was just run.

    Returns:
        The session, with its comparison, a short repr and pandas frames.

    Raises:
        ConfigError: No such store, or no such session in it.
    """
    store, tracking_uri = locate(store, tracking_uri)
    return LoadedSession(
        session_id=session,
        store=str(store),
        tracking_uri=tracking_uri,
        comparison=compare(session, store=str(store)),
        outcome=outcome,
    )
