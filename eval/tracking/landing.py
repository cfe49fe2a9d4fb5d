"""The MLflow page a session opens on: its runs table with the headline metrics as columns.

MLflow 3.17's UI opens an experiment on its GenAI overview (traces, "Detect issues"): its
``workflowType`` switch defaults to ``genai`` and the ``mlflow.experimentKind`` experiment tag
alone does not change that (checked in headless Chromium). What the UI does honour is a *shared
view*: an experiment tag ``mlflow.sharedViewState.<key>`` holding the runs page's state (search
filter, sort, selected columns) as JSON, opened by the URL
``#/experiments/<id>/runs?workflowType=machine_learning&viewStateShareKey=<key>``.
:func:`share_landing_views` writes one such view per experiment (every routerlab run, headline
columns) and one for the newest session (its runs, each router's figures on the parent rows), and returns their URLs
for ``routerlab ui`` to print.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from routerlab.eval.tracking.client import store_client
from routerlab.eval.tracking.layout import TAG_KIND, TAG_RUN_KEY, search_literal

__all__ = ["HEADLINE_COLUMNS", "LandingPage", "landing_state", "landing_url", "share_landing_views"]

#: the children's metrics shown as columns, one per measure (docs/metrics.md, glossary): routing
#: accuracy (routing runs), served, success and EX (end-to-end runs), the share of data questions
#: diverted, the cost of one decision and of one request (cold p50)
HEADLINE_COLUMNS: tuple[str, ...] = (
    "routing_accuracy",
    "served",
    "success",
    "ex",
    "diverted",
    "decision_p50_ms",
    "cold.latency.end_to_end.p50_s",
)
#: the experiment tag prefix MLflow's UI reads shared views from
_SHARED_VIEW_TAG = "mlflow.sharedViewState."
#: the share key of an experiment's view of every routerlab run
_ALL_RUNS_KEY = "routerlab"


@dataclass(frozen=True)
class LandingPage:
    """A page ``routerlab ui`` prints.

    Attributes:
        experiment: The experiment's name (``routerlab/<dataset>``).
        what: ``all runs`` or ``session <id>``.
        path: The URL relative to the UI's address (``#/experiments/...``).
    """

    experiment: str
    what: str
    path: str


def landing_state(search_filter: str, parent_metrics: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The runs page's state: the filter, newest first, ``parent_metrics`` then the headline columns.

    A shared view cannot open a parent run's children (MLflow drops ``runsExpanded`` from it), so
    a session's view also shows the parent's per-part, per-router headline figures
    (``routing.<router>.routing_accuracy``, ``end_to_end.<router>.success``): the collapsed row
    carries the comparison.

    Args:
        search_filter: An MLflow search filter (``tags.`routerlab.run_key` LIKE '...'``).
        parent_metrics: Metrics of the parent runs to show first.
    """
    # MLflow's column keys are `<type>.\`<name>\``; without an order it sorts them by name
    columns = [f"metrics.`{m}`" for m in (*parent_metrics, *HEADLINE_COLUMNS)]
    return {
        "searchFilter": search_filter,
        "orderByKey": "attributes.start_time",
        "orderByAsc": False,
        "selectedColumns": columns,
        "columnOrder": columns,
    }


def landing_url(experiment_id: str, key: str) -> str:
    """The runs page of ``experiment_id`` in the shared view ``key`` (relative to the UI's address)."""
    return f"#/experiments/{experiment_id}/runs?workflowType=machine_learning&viewStateShareKey={key}"


#: the parent's per-router figures a session's view shows (routing part; end-to-end part)
_PARENT_HEADLINES = ("routing_accuracy", "served", "success")


def _newest_session(client: Any, experiment_id: str) -> tuple[str, list[str]] | None:
    """The newest session of an experiment and its parent's headline metrics (``routing.<router>.routing_accuracy``...).

    A session has one parent, ``session <id>``, carrying both parts (older stores: one per part).
    """
    parents = [
        r
        for r in client.search_runs(
            [experiment_id], f"tags.`{TAG_KIND}` != ''", order_by=["attributes.start_time DESC"]
        )
        if "mlflow.parentRunId" not in r.data.tags and r.data.tags.get(TAG_RUN_KEY)
    ]
    if not parents:
        return None
    # a session's parent is keyed <session> (older stores: also <session>.routing)
    session = parents[0].data.tags[TAG_RUN_KEY].split(".")[0]
    mine = [r for r in parents if r.data.tags[TAG_RUN_KEY].split(".")[0] == session]
    shown = [k for r in mine for k in r.data.metrics if "." in k and k.rpartition(".")[2] in _PARENT_HEADLINES]
    # routing accuracy first (the part large enough to tell routers apart), then served, success
    shown.sort(key=lambda k: (_PARENT_HEADLINES.index(k.rpartition(".")[2]), k))
    return session, shown


def share_landing_views(tracking_uri: str) -> list[LandingPage]:
    """Write each routerlab experiment's landing views as experiment tags; return their pages.

    Per experiment: ``routerlab`` (every routerlab run, headline columns) and, for its newest
    session, a view keyed by the session id (that session's runs, with each router's headline figures
    on its parent rows). The tags
    are rewritten on every call, so the session view follows the newest session.

    Args:
        tracking_uri: The MLflow store.

    Returns:
        The pages, newest session first within each experiment.
    """
    client = store_client(tracking_uri)
    pages: list[LandingPage] = []
    for experiment in client.search_experiments():
        if not experiment.name.startswith("routerlab/"):
            continue
        eid = experiment.experiment_id
        client.set_experiment_tag(
            eid, _SHARED_VIEW_TAG + _ALL_RUNS_KEY, json.dumps(landing_state(f"tags.`{TAG_KIND}` LIKE '%'"))
        )
        newest = _newest_session(client, eid)
        if newest is not None:
            session, parent_metrics = newest
            state = landing_state(f"tags.`{TAG_RUN_KEY}` LIKE {search_literal(session + '%')}", parent_metrics)
            client.set_experiment_tag(eid, _SHARED_VIEW_TAG + session, json.dumps(state))
            pages.append(LandingPage(experiment.name, f"session {session}", landing_url(eid, session)))
        pages.append(LandingPage(experiment.name, "all runs", landing_url(eid, _ALL_RUNS_KEY)))
    return pages
