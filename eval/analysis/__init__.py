"""Router comparisons for notebooks: load runs, rates with CIs, failure attribution, disagreements.

Every analysis takes results keyed by a router's display label (``{"rules": [...], "oracle
(baseline)": [...]}``): a :class:`RouterResults` loaded with :func:`load_store` (the DuckDB
results store, full traces) or :func:`load_mlflow` (the per-example tables of MLflow runs: no
traces, so no tool names, node timings or router LM time), or any plain mapping of
:class:`~routerlab.eval.scoring.ExampleResult` lists. Rates and their CIs come from :mod:`routerlab.eval.metrics` (see
``docs/metrics.md`` for the definitions), so they match ``routerlab compare`` and MLflow.

Split by topic, one module each: :mod:`~routerlab.eval.analysis.loading`,
:mod:`~routerlab.eval.analysis.rates`, :mod:`~routerlab.eval.analysis.failures` (failure
attribution, disagreements), :mod:`~routerlab.eval.analysis.cost` (latency, cost, Pareto front)
and :mod:`~routerlab.eval.analysis.conclusions`. This ``__init__`` only re-exports their public
names, so the notebook's ``from routerlab.eval import analysis`` and ``analysis.rates_table``
keep working. The cost basis is a setting of :mod:`routerlab.eval.analysis.cost`
(``cost.COST_BASIS``); ``analysis.COST_BASIS`` is its value at import.

``routerlab.demo.make_demo_session`` records a small scripted session for the notebook and the tests;
analyses only read what runs stored and never start one.
"""

from routerlab.eval.analysis.conclusions import conclusions
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
    "conclusions",
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
