"""A routing comparison is a session of the results store: compare, load, the report and MLflow read it.

Scripted LM (control flow), a real DuckDB store and a real MLflow store in tmp.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import routerlab
from routerlab._routing_eval.stored import FIRST_DECISION
from routerlab._routing_eval.tracking import routing_rates_from_mlflow
from routerlab._runs.main_job import ROUTERS
from routerlab.cli import app
from routerlab.eval.store import ROUTING, ResultsStore


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_route_prints_a_session_that_compare_tests_with_mcnemar(tmp_path: Path) -> None:
    store, mlflow_uri = tmp_path / "results.duckdb", f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = _invoke(
        "route", "--router", "rules,semantic", "--lm", "scripted:basic", "--limit", "20",
        "--store", str(store), "--tracking-uri", mlflow_uri,
    )  # fmt: skip
    session = re.search(r"session (\S+) \(store", out).group(1)  # type: ignore[union-attr]
    assert f"routerlab compare {session}" in out
    runs = ResultsStore(store, read_only=True).runs()
    assert list(runs["run_id"]) == [f"{session}.routing.rules", f"{session}.routing.semantic"]
    assert set(runs["part"]) == {ROUTING} and set(runs["status"]) == {"FINISHED"}

    shown = _invoke("compare", session, "--store", str(store))
    assert "McNemar p" in shown and "semantic vs rules" in shown and FIRST_DECISION in shown
    assert "Recall per gold intent" in shown
    verdict = " ".join(shown[shown.index("\nverdict") :].split())
    assert re.search(r"routing accuracy \(n=20\): best (rules|semantic) \d\.\d\d \[\d\.\d\d, \d\.\d\d\]", verdict)

    # the same comparison as JSON: a McNemar p-value on per-example correctness, over 20 pairs
    data = json.loads(_invoke("compare", session, "--store", str(store), "--format", "json"))
    (pair,) = data["parts"]["routing"]["pairs"]
    assert pair["scorer"] == FIRST_DECISION and pair["n"] == 20 and 0.0 <= pair["mcnemar_p"] <= 1.0
    assert data["verdict"][0]["axis"] == "routing accuracy" and data["verdict"][0]["n"] == 20
    recall = {(r["router"], r["intent"]): r for r in data["recall"]["routing"]}
    assert sum(r["n"] for (router, _), r in recall.items() if router == "rules") == 20

    # the Python API gives the same figures, and MLflow holds them too
    compared = routerlab.compare(session, store=str(store))
    loaded = routerlab.load(session, store=str(store)).rates().set_index(["router", "metric"])
    logged = routing_rates_from_mlflow(mlflow_uri, session).set_index("router")
    for row in compared.parts[ROUTING].runs:
        rate = row.rates[FIRST_DECISION]
        stored = loaded.loc[(row.label, FIRST_DECISION)]
        assert (rate.value, rate.ci_low, rate.ci_high, rate.n) == (
            stored["value"], stored["ci_low"], stored["ci_high"], stored["n"]
        )  # fmt: skip
        mine = logged.loc[row.router]
        assert [rate.value, rate.ci_low, rate.ci_high, rate.n] == pytest.approx(
            [mine["value"], mine["ci_low"], mine["ci_high"], mine["n"]]
        )


def test_route_without_a_store_keeps_nothing(tmp_path: Path) -> None:
    outcome = routerlab.route(["rules"], lm="scripted:basic", limit=3, store=None, tracking_uri=None)
    assert outcome.store is None and outcome.session_id and len(outcome.by_router["rules"]) == 3
    assert not list(tmp_path.iterdir())


@pytest.fixture(scope="module")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, str, str]:
    tmp = tmp_path_factory.mktemp("main-job")
    store, mlflow_uri = tmp / "results.duckdb", f"sqlite:///{tmp / 'mlflow.db'}"
    out = _invoke("run", "--lm", "scripted:basic", "--store", str(store), "--tracking-uri", mlflow_uri)
    session = re.search(r"session id: (\S+)", out).group(1)  # type: ignore[union-attr]
    return session, store, mlflow_uri, out


def test_main_job_is_one_session_that_compare_shows_whole(main_job: tuple[str, Path, str, str]) -> None:
    session, store, _, printed = main_job
    shown = _invoke("compare", session, "--store", str(store))
    routing_at, e2e_at = shown.index("== Routing part"), shown.index("== End-to-end part")
    assert routing_at < shown.index("\nverdict") < e2e_at
    routing = shown[routing_at:e2e_at]
    assert "McNemar p" in routing and all(r in routing for r in ROUTERS)
    assert all(r in shown[e2e_at:] for r in ROUTERS)
    # the routing verdict compare prints is the one the main job printed
    said = " ".join(printed[printed.index("\nverdict") :].split())
    line = re.search(r"routing accuracy \(n=111\): best \w+ \d\.\d\d \[\d\.\d\d, \d\.\d\d\]", said).group(0)  # type: ignore[union-attr]
    assert line in " ".join(routing.split())


def test_main_job_compare_report_and_mlflow_agree(main_job: tuple[str, Path, str, str], tmp_path: Path) -> None:
    from routerlab.report import make_report

    session, store, mlflow_uri, printed = main_job
    compared = routerlab.compare(session, store=str(store))
    report = make_report(session, tmp_path / "report.html", store=store, tracking_uri=mlflow_uri, cwd=tmp_path)
    page = Path(report.out).read_text()
    loaded = routerlab.load(session, store=str(store))
    rates = loaded.rates().set_index(["router", "metric"])
    logged = routing_rates_from_mlflow(mlflow_uri, session).set_index("router")
    labels = dict(
        zip(
            loaded.runs["router"][loaded.runs["part"] == ROUTING],
            loaded.runs["label"][loaded.runs["part"] == ROUTING],
            strict=True,
        )
    )
    for row in compared.parts[ROUTING].runs:
        rate = row.rates[FIRST_DECISION]
        in_report = rates.loc[(labels[row.router], FIRST_DECISION)]
        assert [rate.value, rate.ci_low, rate.ci_high] == pytest.approx(
            [in_report["value"], in_report["ci_low"], in_report["ci_high"]]
        )
        mine = logged.loc[row.router]
        assert [rate.value, rate.ci_low, rate.ci_high] == pytest.approx(
            [mine["value"], mine["ci_low"], mine["ci_high"]]
        )
        # the report page shows the figure compare prints
        assert rate.fmt() in page, (row.router, rate.fmt())
    # the verdict: the same best router and interval in compare, the page and the main job's output
    (verdict,) = compared.verdicts
    head = f"{verdict.value:.2f} [{verdict.ci[0]:.2f}, {verdict.ci[1]:.2f}]"
    assert head in page and head in printed
    assert "0 rates differ between the store and MLflow" in page
    # the end-to-end part agrees as well
    e2e = compared.parts["end_to_end"]
    for row in e2e.runs:
        success = row.rates["success"]
        assert not math.isnan(success.value) and success.fmt() in page
