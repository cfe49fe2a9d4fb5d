"""MLflow tracking: where a comparison's runs, metrics, tables and traces go.

Layout:

* one **experiment** per dataset, ``routerlab/<dataset name>`` (or the name given);
* one **parent run** per comparison (tag ``routerlab.kind = comparison``) and one **child run**
  per (router, LM, dataset, config) (``routerlab.kind = router-run``, nested through the
  ``mlflow.parentRunId`` tag);
* **params**: every recorded component argument flattened (``router.name``,
  ``router.args.threshold``...), ``lm.spec``, ``dataset.{name,version,digest,split}``,
  ``git.commit``, ``routerlab.version`` and ``config.*``;
* the replayed examples as a **dataset input** (``mlflow.data.from_pandas``, context = split);
* **metrics**: the session comparison's figures for the run's router
  (:func:`routerlab.eval.analysis.tracked.child_metrics`: rates with their intervals, cost...);
* the per-example **table** ``examples.json`` (``mlflow.log_table``);
* one **trace** per example: a root span for the example, a CHAIN span per graph node, a span
  per router decision, an AGENT span per agent activation and a TOOL span per tool call, linked
  to its run. A decision made by one agent (every router but ``handoff``) is one AGENT span; a
  decision that several agents took part in (the ``handoff`` router's ``activations``) is a
  CHAIN span with an AGENT span per activation under it.

``routerlab route`` logs first decisions, not example results, through the same writer: a parent
run per invocation (``routerlab.kind = route-comparison``) and a child run per router
(``route-run``) with its params, first-decision metrics and ``decisions.csv``
(:mod:`routerlab._routing_eval.tracking`).

Thread safety: the runner logs from worker threads, and MLflow's fluent API keeps the active
run in thread-local state, so everything here goes through :class:`mlflow.MlflowClient` with
explicit run ids. The one process-wide setting is the tracking URI, which MLflow's tracer uses
to export traces: a sink with traces on adopts its URI for the process while it is open and
:meth:`MlflowSink.close` restores the previous one.

Resume: runs carry a ``routerlab.run_key`` tag (``<session>.<router>`` for the runner). Starting
a run with a key that already exists reopens that run instead of creating a duplicate.

The package, one module per job: :mod:`~routerlab.eval.tracking.address` (the store's URI and
health checks), :mod:`~routerlab.eval.tracking.provenance` (git commit, version),
:mod:`~routerlab.eval.tracking.layout` (tag and artifact names),
:mod:`~routerlab.eval.tracking.artifacts` (artifacts stored relative to the store),
:mod:`~routerlab.eval.tracking.client` (:func:`store_client`, how every reader and writer opens a
store: it registers the store-relative artifact repository first), :mod:`~routerlab.eval.tracking.sink`
(the writer, :class:`MlflowSink`), :mod:`~routerlab.eval.tracking.traces` (one trace per example)
and :mod:`~routerlab.eval.tracking.reader` (runs and tables read back). This ``__init__`` only
re-exports their public names, so ``from routerlab.eval.tracking import MlflowSink`` keeps working.
"""

from routerlab.eval.metrics import metric_name
from routerlab.eval.tracking.address import (
    DEFAULT_TRACKING_URI,
    check_tracking_store,
    one_line_store_errors,
    resolve_tracking_uri,
    tracking_store_failure,
)
from routerlab.eval.tracking.artifacts import register_store_relative_artifacts
from routerlab.eval.tracking.client import store_client
from routerlab.eval.tracking.landing import LandingPage, share_landing_views
from routerlab.eval.tracking.layout import (
    DECISIONS_CSV,
    EXAMPLES_TABLE,
    FINAL_STATUSES,
    KIND_ROUTE_PARENT,
    KIND_ROUTE_RUN,
    RISK_CURVE,
    RISK_FIGURE,
    TAG_DATASET,
    TAG_KIND,
    TAG_LM,
    TAG_ROUTER,
    TAG_RUN_KEY,
    TAG_STATUS,
)
from routerlab.eval.tracking.provenance import git_commit
from routerlab.eval.tracking.reader import load_examples, load_runs
from routerlab.eval.tracking.sink import MlflowSink, examples_frame, flatten_params

__all__ = [
    "DECISIONS_CSV",
    "DEFAULT_TRACKING_URI",
    "EXAMPLES_TABLE",
    "FINAL_STATUSES",
    "KIND_ROUTE_PARENT",
    "KIND_ROUTE_RUN",
    "RISK_CURVE",
    "RISK_FIGURE",
    "TAG_DATASET",
    "TAG_KIND",
    "TAG_LM",
    "TAG_ROUTER",
    "TAG_RUN_KEY",
    "TAG_STATUS",
    "LandingPage",
    "MlflowSink",
    "check_tracking_store",
    "examples_frame",
    "flatten_params",
    "git_commit",
    "load_examples",
    "load_runs",
    "metric_name",
    "one_line_store_errors",
    "register_store_relative_artifacts",
    "resolve_tracking_uri",
    "share_landing_views",
    "store_client",
    "tracking_store_failure",
]
