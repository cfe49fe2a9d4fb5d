"""A session's MLflow parent run is its dashboard: each router's headline metrics, the table, the verdict."""

from __future__ import annotations

from pathlib import Path

import mlflow
from rich.console import Console

from routerlab._runs.runner import RunConfig
from routerlab._runs.session import SessionSpec, run_session
from routerlab.agents.lm import resolve_lm
from routerlab.eval.store import ResultsStore


def test_parent_run_carries_headline_metrics_and_the_comparison(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    spec = SessionSpec(
        routers=[("rules", {}), ("oracle", {})],
        config=RunConfig(limit=3, split="dev", lm="scripted:basic"),
        tracking_uri=uri,
        store_path=str(tmp_path / "r.duckdb"),
        traces=False,
    )
    out = run_session(spec, console=Console(quiet=True), lm=resolve_lm("scripted:basic"))
    client = mlflow.MlflowClient(uri)
    experiments = [e.experiment_id for e in client.search_experiments()]
    parent = client.search_runs(experiments, "tags.`routerlab.kind` = 'comparison'")[0]
    metrics = parent.data.metrics
    store = ResultsStore(str(tmp_path / "r.duckdb"), read_only=True)
    assert parent.info.run_name == f"session {out.session_id}"
    from routerlab.eval.analysis.build import build_comparison

    part = build_comparison(store, out.session_id).part("end_to_end")
    shown = [r.router for r in part.routers if not r.same_as]
    assert "rules" in shown  # a baseline that decided as rules did is shown once, as "= rules"
    for router in shown:
        results = store.results(f"{out.session_id}.{router}")
        success = [r.value("success") for r in results if r.value("success") is not None]
        # one name per measure, under its part: end_to_end.<router>.success
        key = f"end_to_end.{router}.success"
        assert metrics[key] == round(sum(success) / len(success), 3)  # as the runs table shows it
        assert metrics[f"{key}_low"] <= metrics[key] <= metrics[f"{key}_high"]
        assert f"end_to_end.{router}.p50" in metrics
    files = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"comparison.md", "verdict.md", "end_to_end_rates.png", "comparison.json"} <= files
    local = Path(client.download_artifacts(parent.info.run_id, "verdict.md", str(tmp_path)))
    # n=3 tells no routers apart: the verdict says so instead of naming a "best" (issue 47)
    said = "**End to end** (whole turns, n=3):\n\n- too few to compare: n=3"
    assert local.read_text().startswith(said)
    # the parent page's description: the verdict, then a link to the router runs' compare page
    description = parent.data.tags["mlflow.note.content"]
    assert description.startswith(said)
    children = client.search_runs(experiments, "tags.`routerlab.kind` = 'router-run'")
    assert len(children) == 2
    assert sorted(c.info.run_name for c in children) == ["end to end · oracle", "end to end · rules"]
    link = description.rsplit("\n", 1)[-1]
    assert link.startswith("[Compare the 2 router runs](#/compare-runs?runs=[")
    assert (
        all(f'"{c.info.run_id}"' in link for c in children)
        and f'experiments=["{children[0].info.experiment_id}"]' in link
    )
    for child in children:
        # the part's verdict measure comes first (the compare page plots a run's first metric)
        # and the router is named by the param that sorts first (it takes the first differing params)
        headline = part.verdict_measures[0]
        assert list(child.data.metrics)[:3] == [headline, f"{headline}_low", f"{headline}_high"]
        assert child.data.params["Router"] == child.data.tags["routerlab.router"]
        assert sorted(child.data.params)[0] == "Router"
