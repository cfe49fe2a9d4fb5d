"""Robustness: the share of data questions a router sends away from SQL.

Accuracy weighs every routing error alike. For a user the costliest one is a data question that
never reaches SQL generation: it is chatted at, refused, asked back or declined, and the answer
the database holds is never given. A router can gain accuracy by sending borderline requests to
chat or clarify and still be worse to use, so this share is reported next to accuracy
(``routerlab route``, ``routerlab compare``, MLflow and the report; docs/metrics.md §2.8).

A *data question* is an example whose gold intent is ``sql``. It is *sent away* when the router's
decision is one of :data:`AWAY_FROM_SQL` (chat, refuse, clarify, unanswerable) and that decision
is not an accepted answer for the example (an example whose alternates accept a clarification is
not diverted by asking). A decision for explain or fix is a wrong route but still works on SQL,
and no decision at all (a crash) is a failure of its own: both count in ``n`` and not as sent away.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from routerlab.eval.scoring import ExampleResult
from routerlab.eval.stats import bootstrap_ci

__all__ = ["AWAY_FROM_SQL", "DATA_INTENT", "Diversion", "diversion", "diversion_of_results"]

#: the gold intent of a data question
DATA_INTENT = "sql"
#: decisions that leave a data question without a SQL answer
AWAY_FROM_SQL: tuple[str, ...] = ("chat", "refuse", "clarify", "unanswerable")


@dataclass(frozen=True)
class Diversion:
    """How many data questions a router sent away from SQL, and where.

    Attributes:
        share: Sent away / data questions (NaN when there is no data question).
        n: Data questions decided (gold intent ``sql``).
        diverted: Data questions sent away.
        ci_low / ci_high: 95 % percentile-bootstrap CI of ``share``.
        to: Count per destination of :data:`AWAY_FROM_SQL` (every destination present, 0 or more).
    """

    share: float
    n: int
    diverted: int
    ci_low: float
    ci_high: float
    to: dict[str, int] = field(default_factory=dict)

    def fmt(self) -> str:
        """``0.05 [0.01, 0.10] (3/62)``, or ``n/a`` without data questions."""
        if self.n == 0:
            return "n/a"
        return f"{self.share:.2f} [{self.ci_low:.2f}, {self.ci_high:.2f}] ({self.diverted}/{self.n})"


def diversion(decisions: Iterable[tuple[str, str | None, bool]]) -> Diversion:
    """The diversion figures of ``(gold intent, decided intent, accepted)`` triples.

    Args:
        decisions: One triple per example: its gold intent, the intent the router decided (None:
            no decision) and whether that decision is accepted for the example (the gold intent
            or one of its alternates).
    """
    flags: list[float] = []
    to = dict.fromkeys(AWAY_FROM_SQL, 0)
    for gold, predicted, accepted in decisions:
        if gold != DATA_INTENT:
            continue
        away = predicted in AWAY_FROM_SQL and not accepted
        flags.append(float(away))
        if away:
            to[str(predicted)] += 1
    if not flags:
        return Diversion(math.nan, 0, 0, math.nan, math.nan, to)
    low, high = bootstrap_ci(flags)
    return Diversion(float(np.mean(flags)), len(flags), int(sum(flags)), low, high, to)


def diversion_of_results(results: Sequence[ExampleResult]) -> Diversion:
    """:func:`diversion` of a run's results, from each result's first-decision intent.

    A result records no alternates, so a decision counts as accepted when it is the gold intent
    or when the ``route`` scorer (which reads the example's alternates) scored it 1, or, for a
    stored first decision (:mod:`routerlab._routing_eval.stored`), its ``first_decision`` score is 1.
    """
    return diversion(
        (
            r.intent,
            r.predicted_intent,
            r.predicted_intent == r.intent or r.value("route") == 1.0 or r.value("first_decision") == 1.0,
        )
        for r in results
    )
