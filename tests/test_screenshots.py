"""Screenshots of what a person looks at, taken in headless Chromium and checked.

A scripted session (no model) is logged to a real MLflow store; ``routerlab ui`` serves it on
loopback. The MLflow runs page must list the session's runs with their headline rates, the
compare page of the session (linked from the parent run's description) must plot the router
against the end-to-end verdict measure (served), and the comparison notebook, rendered to HTML by nbconvert from the
``notebooks/`` folder as the README opens it, must show its verdict. Each page is screenshotted
into the test's tmp folder and checked for MLflow's or Jupyter's error banners. (The report's
layout at two page widths is checked in tests/routerlab/test_report.py.)
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mlflow
import pytest

from routerlab.app.demo import make_demo_session
from tests.browser import chromium, need_browser
from tests.servers import routerlab_ui

pytestmark = [pytest.mark.browser, pytest.mark.server]

ROOT = Path(__file__).resolve().parents[1]
#: texts MLflow's and Jupyter's pages show when something failed
ERROR_BANNERS = ("Something went wrong", "Request failed", "Traceback (most recent call last)")
#: an exception's own line (``ValueError: …``); not "Error:" anywhere, which the data's questions
#: hold ("… it gives me: Binder Error: …" in a fix request)
_EXCEPTION_LINE = re.compile(r"(?m)^\s*[A-Z]\w*(Error|Exception): ")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(driver: Any, predicate: Any, what: str, timeout: float = 120.0) -> Any:
    """Poll ``predicate(driver)`` until it is truthy (the pages are React apps that load in steps)."""
    deadline = time.monotonic() + timeout
    while True:
        found = predicate(driver)
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} did not appear; page text: {_text(driver)[:2000]}"
        time.sleep(0.25)  # reading the page's text is cheap: poll often


def _text(driver: Any) -> str:
    return driver.execute_script("return document.body ? document.body.innerText : ''")


def _no_error_banner(driver: Any) -> None:
    text = _text(driver)
    assert not [b for b in ERROR_BANNERS if b in text], text[:3000]
    assert not _EXCEPTION_LINE.search(text), _EXCEPTION_LINE.search(text)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    # the directory the other demo tests use: one demo per pytest run
    return make_demo_session(tmp_path_factory.getbasetemp() / "routerlab-demo")


@pytest.fixture(scope="module")
def ui(demo, tmp_path_factory):
    """``routerlab ui`` on the demo's store, on a free loopback port; its base URL."""
    _, uri, _ = demo
    with routerlab_ui(uri, tmp_path_factory.mktemp("ui")) as running:
        yield running.base


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    need_browser()
    with chromium(tmp_path_factory.mktemp("chromium-profile"), 1400, 1000) as driver:
        yield driver


def _session_runs(uri: str, session: str) -> tuple[Any, list[Any]]:
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("routerlab/builtin")
    runs = client.search_runs([experiment.experiment_id], f"tags.`routerlab.run_key` LIKE '{session}%'")
    parent = next(r for r in client.search_runs([experiment.experiment_id], "tags.`routerlab.kind` = 'comparison'"))
    return parent, [r for r in runs if r.data.tags.get("routerlab.kind") == "router-run"]


def test_mlflow_runs_page_lists_the_session_with_its_rates(demo, ui, browser, tmp_path):
    _, uri, session = demo
    parent, children = _session_runs(uri, session)
    experiment = children[0].info.experiment_id
    browser.get(f"{ui}/#/experiments/{experiment}/runs")
    # the session is one row, its parent run; the router runs are nested under it
    _wait(browser, lambda d: parent.info.run_name in _text(d), "the session's parent run")
    assert f"{len(children) + 1} matching runs" in _text(browser)
    _no_error_banner(browser)
    assert browser.save_screenshot(str(tmp_path / "mlflow-runs.png"))

    # the parent run's page shows the verdict (its description) and the link to the compare page
    browser.get(f"{ui}/#/experiments/{experiment}/runs/{parent.info.run_id}")
    _wait(browser, lambda d: "Compare the 3 router runs" in _text(d), "the link in the parent's description")
    text = _text(browser)
    # the verdict the comparison model words for this part (n=6: too few to compare, said so)
    assert "End to end" in text and "too few to compare" in text, text[:3000]
    _no_error_banner(browser)
    assert browser.save_screenshot(str(tmp_path / "mlflow-parent.png"))


def test_compare_page_of_the_session_plots_router_against_success(demo, ui, browser, tmp_path):
    _, uri, session = demo
    parent, children = _session_runs(uri, session)
    link = re.search(r"\((#/compare-runs\?[^)]+)\)", parent.data.tags["mlflow.note.content"])
    assert link, parent.data.tags["mlflow.note.content"]
    browser.get(f"{ui}/{link[1]}")
    # the parallel-coordinates plot: its axes are the router param and the end-to-end verdict measure
    axes = _wait(
        browser,
        lambda d: d.execute_script(
            "return [...document.querySelectorAll('.parcoords .axis-title, svg .axis-title')].map(e => e.textContent)"
        ),
        "the parallel coordinates plot",
    )
    # the last axis is the first metric each child logs: its part's verdict measure (served, end to end)
    assert axes[0] == "Router" and axes[-1] == "served", axes
    text = _text(browser)
    assert all(c.info.run_name in text or c.info.run_id[:8] in text for c in children), text[:2000]
    _no_error_banner(browser)
    assert browser.save_screenshot(str(tmp_path / "mlflow-compare.png"))


def test_notebook_from_the_notebooks_folder_renders_its_verdict(demo, browser, tmp_path):
    store, uri, session = demo
    # a project as `routerlab run` leaves it, with the notebook in its notebooks/ folder
    project = tmp_path / "project"
    (project / ".routerlab").mkdir(parents=True)
    shutil.copy(store, project / ".routerlab" / "results.duckdb")
    shutil.copy(uri.removeprefix("sqlite:///"), project / "mlflow.db")
    shutil.copytree(Path(uri.removeprefix("sqlite:///")).parent / "mlartifacts", project / "mlartifacts")
    (project / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / "router_comparison.ipynb", project / "notebooks")
    out = tmp_path / "notebook.html"
    # the project's own defaults, not a tracking URI some fixture left in the environment
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env["JUPYTER_PATH"] = os.environ.get("JUPYTER_PATH", str(Path(sys.prefix) / "share" / "jupyter"))
    # the defaults, from the project's root: .routerlab/results.duckdb and sqlite:///mlflow.db
    cli = [sys.executable, "-m", "routerlab.cli", "report", session, "--with-code", "--out", str(out)]
    proc = subprocess.run(cli, cwd=project, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    browser.get(out.as_uri())
    text = _text(browser)
    assert "Verdict" in text and "best" in text and session in text
    assert "routerlab.load" in text  # --with-code: the notebook's code is on the page
    _no_error_banner(browser)
    assert not browser.find_elements(
        "css selector", ".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']"
    )
    assert browser.save_screenshot(str(tmp_path / "notebook.png"))


def test_screenshot_script_takes_and_checks_the_three_pages(demo, tmp_path):
    """scripts/screenshots.py on a scripted session: the report at both widths and MLflow's first page."""
    need_browser()
    store, uri, session = demo
    out = tmp_path / "shots"
    cli = [sys.executable, str(ROOT / "scripts" / "screenshots.py"), session, "--store", str(store)]
    proc = subprocess.run(
        [*cli, "--tracking-uri", uri, "--out", str(out)], capture_output=True, text=True, timeout=900, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shots = {p.name: p.read_bytes() for p in out.glob("*.png")}
    assert set(shots) == {"report-1400px.png", "report-900px.png", "mlflow-first-page.png"}
    assert all(b[:8] == b"\x89PNG\r\n\x1a\n" and len(b) > 10_000 for b in shots.values())
    assert "FAILED" not in proc.stdout
