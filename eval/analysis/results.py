"""``ResultsByRouter``: results keyed by a router's display label, the input of every analysis.

Its own module because every analysis module reads it and :mod:`~routerlab.eval.analysis.loading`
builds on :func:`~routerlab.eval.analysis.failures.results_frame`: naming the type in ``loading``
tied ``loading`` and ``failures`` in a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from routerlab.eval.scoring import ExampleResult

__all__ = ["ResultsByRouter"]

ResultsByRouter = Mapping[str, Sequence[ExampleResult]]
"""Results keyed by router label, the input of every analysis here."""
