"""Every view of a session shows the comparison model's numbers, and no part's figure under another part.

Two sessions with the scripted LM (control flow), a real DuckDB store and a real MLflow store in
tmp: the main job (a routing part and an end-to-end part) and a ``route``-only session. Each is
rendered by every view (the console at 80 and 120 columns, ``compare`` through the command line,
the HTML report from the notebook, MLflow, CSV / Parquet, the Python API), and each view's
figures are checked against :func:`routerlab.eval.analysis.build.build_comparison`'s model.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import routerlab
from routerlab.app.main_job import ROUTERS
from routerlab.cli import app
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.analysis.console import render_console
from routerlab.eval.analysis.markdown import part_heading, verdict_md
from routerlab.eval.analysis.measures import measure
from routerlab.eval.analysis.model import Part, SessionComparison
from routerlab.eval.analysis.tracked import child_metrics
from routerlab.eval.analysis.words import count_text, interval_text, num, part_title, verdict_sentences
from routerlab.eval.store import END_TO_END, ROUTING, ResultsStore

#: the measures a part's text may name: a routing figure never appears under end to end, and back
_OTHER_PART_WORDS = {ROUTING: ("success", "EX", "served", "pipeline route"), END_TO_END: ("routing accuracy",)}


def _invoke(*args: str, columns: int | None = None) -> str:
    env = {"COLUMNS": str(columns)} if columns else None
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.output


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[SessionComparison, Path, str, str]:
    tmp = tmp_path_factory.mktemp("main-job")
    store, uri = tmp / "results.duckdb", f"sqlite:///{tmp / 'mlflow.db'}"
    out = _invoke(
        "run", "--lm", "scripted:basic", "--limit", "20", "--store", str(store), "--tracking-uri", uri, columns=80
    )
    session = re.search(r"session id: (\S+)", out).group(1)  # type: ignore[union-attr]
    return build_comparison(ResultsStore(store, read_only=True), session), store, uri, out


@pytest.fixture(scope="module")
def route_only(tmp_path_factory: pytest.TempPathFactory) -> tuple[SessionComparison, Path, str, str]:
    tmp = tmp_path_factory.mktemp("route")
    store, uri = tmp / "results.duckdb", f"sqlite:///{tmp / 'mlflow.db'}"
    out = _invoke(
        "route", "--router", "rules,semantic,hybrid", "--lm", "scripted:basic", "--limit", "20",
        "--store", str(store), "--tracking-uri", uri, columns=80,
    )  # fmt: skip
    session = re.search(r"session (\S+) \(store", out).group(1)  # type: ignore[union-attr]
    return build_comparison(ResultsStore(store, read_only=True), session), store, uri, out


@pytest.fixture(params=["main_job", "route_only"])
def session(request: pytest.FixtureRequest) -> tuple[SessionComparison, Path, str, str]:
    return request.getfixturevalue(request.param)


def _sections(text: str, model: SessionComparison, heading: object) -> dict[str, str]:
    """The text of each part, cut at each part's heading (``heading(part)``)."""
    at = [(text.index(str(heading(p))), p.key) for p in model.parts]
    at.sort()
    return {key: text[start : (at[i + 1][0] if i + 1 < len(at) else len(text))] for i, (start, key) in enumerate(at)}


def _check_part_text(p: Part, text: str, *, with_verdict: bool = True) -> None:
    """Every figure of the part is in ``text`` as the model words it; no other part's measure is."""
    flat = _words(text)
    for r in p.routers:
        if r.same_as is not None:
            assert f"= {r.same_as}" in flat, (p.key, r.router)
            continue
        for key, rate in r.rates.items():
            shown = {interval_text(rate), count_text(rate)}
            assert any(s in flat for s in shown), (p.key, r.router, key, shown)
        assert num(r.cost.p50, 1) in flat and num(r.cost.p95, 1) in flat, (p.key, r.router)
    if with_verdict and not p.smoke:
        for v in p.verdicts:
            assert _words(" ".join(verdict_sentences(p, v))) in flat
    for word in _OTHER_PART_WORDS[p.key]:
        assert not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", flat), (p.key, word)


@pytest.mark.parametrize("width", [80, 120])
def test_the_console_fits_and_shows_the_models_figures(session, width: int) -> None:
    model = session[0]
    text = render_console(model, width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text and "n/a" not in text and not re.search(r"\bnan\b", text, re.IGNORECASE)
    parts = _sections(text, model, lambda p: f"== {part_title(p, max(r.n for r in p.routers))} ==")
    for p in model.parts:
        _check_part_text(p, parts[p.key])
    # a part too small to compare says so once, and shows no test
    for p in model.parts:
        if p.smoke:
            assert parts[p.key].count("too few to compare") == 1 and "Paired tests" not in parts[p.key]


def test_compare_on_the_command_line_is_the_console_view(session) -> None:
    model, store, _, _ = session
    shown = _invoke("compare", model.session, "--store", str(store), columns=80)
    assert shown == render_console(model, width=80)
    assert max(len(line) for line in shown.splitlines()) <= 80
    back = SessionComparison.from_json(_invoke("compare", model.session, "--store", str(store), "--format", "json"))
    assert back == model


def test_the_main_jobs_closing_table_is_the_models(main_job) -> None:
    model, _, _, printed = main_job
    expected = render_console(model, width=80, detail=False)
    assert expected in printed
    closing = printed[printed.index(expected) : printed.index("\nsession id:")]
    assert max(len(line) for line in closing.splitlines()) <= 80
    assert [p.key for p in model.parts] == [ROUTING, END_TO_END]
    assert sorted(r.router for r in model.part(ROUTING).routers) == sorted(ROUTERS)


def test_routes_table_is_the_models_closing_table_and_compares_numbers(route_only) -> None:
    """``routerlab route`` prints the run's closing table of its session: compare's numbers, not its own."""
    model, store, _, printed = route_only
    expected = render_console(model, width=80, detail=False)
    assert expected in printed
    shown = printed[printed.index(expected) : printed.index("\nMLflow: route")]
    assert max(len(line) for line in shown.splitlines()) <= 80
    # every figure of the routing part route printed is one compare prints for the same session
    compared = _invoke("compare", model.session, "--store", str(store), columns=80)
    assert expected in compared
    assert [p.key for p in model.parts] == [ROUTING]
    _check_part_text(model.part(ROUTING), shown)


def test_mlflow_holds_one_parent_per_session_with_the_models_figures(session) -> None:
    from mlflow import MlflowClient

    from routerlab.eval.tracking import resolve_tracking_uri

    model, _, uri, _ = session
    client = MlflowClient(resolve_tracking_uri(uri))
    experiments = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(experiments, f"tags.`routerlab.run_key` LIKE '{model.session}%'")
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    (parent,) = parents
    assert parent.info.run_name == f"session {model.session}" and parent.info.status == "FINISHED"
    children = {r.info.run_name: r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id}
    expected = {
        f"{'routing' if p.key == ROUTING else 'end to end'} · {r.router}" for p in model.parts for r in p.routers
    }
    assert set(children) == expected
    metrics = parent.data.metrics
    for p in model.parts:
        for r in p.routers:
            if r.same_as is not None:
                continue
            for key, rate in r.rates.items():
                base = f"{p.key}.{r.router}.{key}"
                # rounded to 3 decimals, as the runs table shows them
                assert [metrics[base], metrics[f"{base}_low"], metrics[f"{base}_high"]] == [
                    round(rate.value, 3),
                    round(rate.low, 3),
                    round(rate.high, 3),
                ]
            assert metrics[f"{p.key}.{r.router}.p50"] == round(r.cost.p50, 3)
        # a part's metrics name only that part's measures
        mine = [k.rpartition(".")[2] for k in metrics if k.startswith(f"{p.key}.")]
        assert {k.removesuffix("_low").removesuffix("_high") for k in mine} <= {*p.measures, "p50", "p95"}
    # each child's metrics, routing and end to end, are the model's figures for its router,
    # rounded as the runs table shows them: its rates with their intervals, cost, further figures
    for p in model.parts:
        for r in p.routers:
            child = children[f"{'routing' if p.key == ROUTING else 'end to end'} · {r.router}"].data.metrics
            assert child == child_metrics(p, r)
            for key, rate in r.rates.items():
                assert [child[key], child[f"{key}_low"], child[f"{key}_high"], child[f"{key}_n"]] == pytest.approx(
                    [rate.value, rate.low, rate.high, rate.n], abs=5e-4
                )
            assert child["n_examples"] == r.n and all(child[k] == round(v, 3) for k, v in r.figures.items())
    # the verdict the parent shows (artifact and description) is the model's
    verdict = Path(client.download_artifacts(parent.info.run_id, "verdict.md")).read_text()
    assert verdict == verdict_md(model)
    assert _words(verdict_md(model)) in _words(parent.data.tags["mlflow.note.content"])


def test_csv_and_parquet_hold_the_models_figures(session, tmp_path: Path) -> None:
    model, store, _, _ = session
    for fmt in ("csv", "parquet"):
        out = tmp_path / fmt
        _invoke("compare", model.session, "--store", str(store), "--format", fmt, "--out-dir", str(out))
        for p in model.parts:
            path = out / f"{p.key}_rates.{fmt}"
            rates = (pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)).set_index("router")
            assert sorted(rates.index) == sorted(r.router for r in p.routers)
            # only this part's measures are columns
            assert {c for c in rates.columns if c in {"routing_accuracy", "success", "ex", "served"}} <= set(p.measures)
            for r in p.routers:
                if r.same_as is None:
                    for key, rate in r.rates.items():
                        row = rates.loc[r.router]
                        assert [row[key], row[f"{key}_low"], row[f"{key}_high"], row[f"{key}_n"]] == pytest.approx(
                            [rate.value, rate.low, rate.high, rate.n]
                        )
            if p.pairs:
                pairs = (
                    pd.read_csv(out / f"{p.key}_pairs.csv")
                    if fmt == "csv"
                    else pd.read_parquet(out / f"{p.key}_pairs.parquet")
                )
                assert list(pairs["p"]) == pytest.approx([t.p for t in p.pairs])


def test_the_python_api_gives_the_model(session) -> None:
    model, store, _, _ = session
    loaded = routerlab.load(model.session, store=str(store))
    assert loaded.comparison == model
    text = repr(loaded)
    assert max(len(line) for line in text.splitlines()) <= 100 and len(text.splitlines()) < 80
    shown = html.unescape(re.sub(r"<[^>]+>", " ", loaded._repr_html_()))
    for p in model.parts:
        rates = loaded.rates(part=p.key)
        for r in p.routers:
            if r.same_as is None:
                for key, rate in r.rates.items():
                    assert rates.loc[r.router, key] == pytest.approx(rate.value)
                    assert interval_text(rate) in _words(shown)
        assert len(loaded.disagreements(part=p.key)) == len(p.disagreements)
        assert len(loaded.failures(part=p.key)) == sum(len(r.failures) for r in p.routers if r.same_as is None)
        for v in [] if p.smoke else p.verdicts:
            assert _words(" ".join(verdict_sentences(p, v))) in _words(shown)
    results = loaded.results()
    routing = results[results["part"] == ROUTING]
    assert {"question", "decision", "method", "confidence"} <= set(results.columns)
    assert routing["question"].str.len().gt(0).all() and routing["method"].str.len().gt(0).all()


def test_the_report_shows_the_models_figures_part_by_part(main_job, tmp_path: Path) -> None:
    from routerlab.report import make_report

    model, store, uri, _ = main_job
    out = make_report(model.session, tmp_path / "report.html", store=store, tracking_uri=uri, cwd=tmp_path).out
    page = out.read_text()
    text = html.unescape(re.sub(r"<[^>]+>", " ", page[page.index("<body") :]))
    assert "n/a" not in text and not re.search(r"\bNaN\b", text)
    # verdict first, as the console words it
    first = _words(" ".join(verdict_sentences(model.parts[0], model.parts[0].verdicts[0])))
    assert _words(text).index(first) < _words(text).index(part_heading(model.parts[0])[3:])
    parts = _sections(text, model, lambda p: part_heading(p)[3:])
    for p in model.parts:
        # the verdict of every part opens the page, above the parts
        for v in [] if p.smoke else p.verdicts:
            assert _words(" ".join(verdict_sentences(p, v))) in _words(text[: text.index(part_heading(p)[3:])])
        _check_part_text(p, parts[p.key].split("The runs")[0], with_verdict=False)
    # no router is said to have no failure when its routing accuracy is below 1
    for r in model.part(ROUTING).routers:
        if r.same_as is None and r.rates["routing_accuracy"].value < 1:
            assert f"{r.router}: none of" not in _words(parts[ROUTING])
    assert measure("routing_accuracy").name in parts[ROUTING]


def test_swapping_the_routers_run_order_changes_no_figure(route_only, tmp_path: Path) -> None:
    """The same decisions stored in the other order: every figure of the model is the same."""
    model, store, _, _ = route_only
    source = ResultsStore(store, read_only=True)
    runs = source.runs()
    swapped = ResultsStore(tmp_path / "swapped.duckdb")
    from routerlab.benchmarks.dataset import Dataset

    for row in reversed(runs.to_dict("records")):
        dataset = Dataset(name=row["dataset"], examples=[], version=row["dataset_version"] or "1")
        swapped.create_run(
            row["run_id"], router=row["router"], lm=row["lm"], dataset=dataset, split=row["split"], part=row["part"]
        )
        swapped.add_results(row["run_id"], list(reversed(source.results(row["run_id"]))))
        swapped.finish_run(row["run_id"])
    again = build_comparison(swapped, model.session)
    mine, theirs = json.loads(model.to_json()), json.loads(again.to_json())
    for part in (*mine["parts"], *theirs["parts"]):
        for r in part["routers"]:
            r.pop("status")  # the copy's runs were finished by this test
    assert mine == theirs
