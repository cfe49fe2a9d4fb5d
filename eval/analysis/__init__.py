"""A session's comparison: the one package that computes what every view shows, and the views.

:func:`~routerlab.eval.analysis.build.build_comparison` reads a session (or stored runs) from the
results store into :class:`~routerlab.eval.analysis.model.SessionComparison`, every figure
computed once (:mod:`~routerlab.eval.analysis.measures` names each measure once). The views only
render it: :mod:`~routerlab.eval.analysis.console` (``routerlab compare``, the run's closing
table), :mod:`~routerlab.eval.analysis.markdown`, :mod:`~routerlab.eval.analysis.figures` and
:mod:`~routerlab.eval.analysis.report_view` (the report's notebook),
:mod:`~routerlab.eval.analysis.tracked` (MLflow's parent run) and
:mod:`~routerlab.eval.analysis.frames` (the Python API, CSV and Parquet), all worded by
:mod:`~routerlab.eval.analysis.words`.

The per-example frames a person explores beyond the comparison (a run's results by router label
from the store or MLflow, failure attribution, latency frames, the risk-coverage curve a run's
MLflow page plots) stay in :mod:`~routerlab.eval.analysis.loading`, ``rates``, ``failures`` and
``cost``; their public names are re-exported here.
"""

from routerlab.eval.analysis.cost import (
    COST_BASIS,
    COST_COLUMNS,
    baseline_labels,
    cost_basis,
    latency_frame,
    latency_table,
    pareto_front,
    risk_coverage_frame,
    router_cost,
)
from routerlab.eval.analysis.failures import (
    ATTRIBUTION_CLASSES,
    attribute_failure,
    attribution_counts,
    disagreement_counts,
    disagreements,
    failure_attribution,
    is_failure,
    results_frame,
)
from routerlab.eval.analysis.loading import RouterResults, load_mlflow, load_store
from routerlab.eval.analysis.rates import (
    RATE_METRICS,
    best_routers,
    confusion_matrices,
    rates_table,
    success_per_intent,
)
from routerlab.eval.analysis.results import ResultsByRouter

__all__ = [
    "ATTRIBUTION_CLASSES",
    "COST_BASIS",
    "COST_COLUMNS",
    "RATE_METRICS",
    "ResultsByRouter",
    "RouterResults",
    "attribute_failure",
    "attribution_counts",
    "baseline_labels",
    "best_routers",
    "confusion_matrices",
    "cost_basis",
    "disagreement_counts",
    "disagreements",
    "failure_attribution",
    "is_failure",
    "latency_frame",
    "latency_table",
    "load_mlflow",
    "load_store",
    "pareto_front",
    "rates_table",
    "results_frame",
    "risk_coverage_frame",
    "router_cost",
    "success_per_intent",
]
