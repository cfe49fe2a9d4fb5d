"""MLflow's first page of a session: the runs table with the headline metrics, not the GenAI overview.

A scripted ``routerlab route`` session is logged to a real MLflow store (SQLite in tmp);
``routerlab ui`` serves it on loopback and prints the session's landing URL; headless Chromium
opens that URL and must show the runs table with the headline columns and each router's
routing accuracy on the session's parent row, with none of the GenAI overview's widgets.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import mlflow
import pytest
from typer.testing import CliRunner

from routerlab.cli import app
from routerlab.eval.tracking.landing import HEADLINE_COLUMNS, landing_url, share_landing_views
from tests.browser import chromium, need_browser
from tests.servers import routerlab_ui

ROUTERS = ("rules", "semantic")
#: what MLflow 3's GenAI overview shows (the page an experiment opens on without a view)
OVERVIEW_ONLY = ("Detect Issues", "Tool calls", "Overall error rate")


def _route_session(tmp_path: Path) -> tuple[str, str]:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = ["route", "--router", ",".join(ROUTERS), "--lm", "scripted:basic", "--limit", "14"]
    result = CliRunner().invoke(app, [*args, "--tracking-uri", uri, "--store", str(tmp_path / "r.duckdb")])
    assert result.exit_code == 0, result.output
    session = re.search(r"^session (\S+) \(store ", result.output, re.M)
    assert session, result.output
    return uri, session[1]


def test_landing_views_are_experiment_tags_the_ui_reads(tmp_path: Path) -> None:
    uri, session = _route_session(tmp_path)
    pages = share_landing_views(uri)
    experiment = mlflow.MlflowClient(uri).get_experiment_by_name("routerlab/builtin")
    eid = experiment.experiment_id
    assert [(p.what, p.path) for p in pages] == [
        (f"session {session}", landing_url(eid, session)),
        ("all runs", landing_url(eid, "routerlab")),
    ]
    state = json.loads(experiment.tags[f"mlflow.sharedViewState.{session}"])
    assert state["searchFilter"] == f"tags.`routerlab.run_key` LIKE '{session}%'"
    # each router's routing accuracy on the parent row first, then the children's headline columns
    assert state["selectedColumns"][: len(ROUTERS)] == [f"metrics.`routing.{r}.routing_accuracy`" for r in ROUTERS]
    assert state["selectedColumns"][len(ROUTERS) :] == [f"metrics.`{m}`" for m in HEADLINE_COLUMNS]
    # a second call rewrites the same tags (the UI may be started any number of times)
    assert share_landing_views(uri) == pages


def _text(driver: Any) -> str:
    return driver.execute_script("return document.body ? document.body.innerText : ''")


def _headline_headers(driver: Any) -> list[str]:
    """The runs table's headline column headers, left to right.

    The grid draws some header cells twice (its pinned and scrolling parts): each is kept once.
    """
    headers = driver.execute_script(
        "return [...document.querySelectorAll('[role=columnheader]')].map(e => e.textContent.trim())"
    )
    return [h for h in dict.fromkeys(headers) if "routing_accuracy" in h or h in HEADLINE_COLUMNS]


@pytest.mark.browser
@pytest.mark.server
def test_the_printed_url_opens_the_runs_table_with_the_headline_metrics(tmp_path: Path) -> None:
    need_browser()
    uri, session = _route_session(tmp_path)
    parent = next(
        r
        for r in mlflow.MlflowClient(uri).search_runs(
            [mlflow.MlflowClient(uri).get_experiment_by_name("routerlab/builtin").experiment_id]
        )
        if r.data.tags.get("routerlab.kind") == "route-comparison"
    )
    # wide enough for every column: the runs table renders only the columns in view
    with routerlab_ui(uri, tmp_path) as ui, chromium(tmp_path / "profile", 2800, 900) as driver:
        printed = ui.log.read_text()
        url = re.search(rf"session {session}: (\S+)", printed)
        assert url, printed
        driver.get(url[1])
        deadline = time.monotonic() + 120
        while "matching runs" not in _text(driver) or "routing_accuracy" not in _text(driver):
            assert time.monotonic() < deadline, _text(driver)[:3000]
            time.sleep(0.25)
        time.sleep(2)  # the metric cells fill in after the rows
        text = _text(driver)
        # the runs table of this session: its parent row, the headline columns, no overview widgets
        assert "Run Name" in text and parent.info.run_name in text
        assert "3 matching runs" in text  # the parent and one child per router
        for router in ROUTERS:
            assert f"routing.{router}.routing_accuracy" in text
        # the session's columns in the view's order: per-router accuracy, then the headline figures
        # a route session has (success, EX and end-to-end latency are end-to-end runs' metrics);
        # one column per measure, so no two headers read alike
        expected = [f"routing.{r}.routing_accuracy" for r in ROUTERS]
        expected += ["routing_accuracy", "diverted", "decision_p50_ms"]
        # every headline column is on the page; their order is not asserted: MLflow 3.17 applies
        # the view's columnOrder in some page loads only (3 of 6 runs here), else sorts by name
        while sorted(shown := _headline_headers(driver)) != sorted(expected):
            assert time.monotonic() < deadline, shown
            time.sleep(0.25)
        assert not [w for w in OVERVIEW_ONLY if w in text], text[:3000]
        # the parent row shows each router's accuracy as logged (MLflow rounds to 4 digits at most)
        for router in ROUTERS:
            value = parent.data.metrics[f"routing.{router}.routing_accuracy"]
            assert f"{value:.4g}"[:4] in text, (router, value, text[:3000])
        assert driver.save_screenshot(str(tmp_path / "mlflow-landing.png"))
