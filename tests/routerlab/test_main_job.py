"""`routerlab run` with no options: the main job's two parts and its verdict (scripted LM: control flow)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from routerlab.app.main_job import E2E_INTENTS, E2E_LIMIT, ROUTERS
from routerlab.cli import app
from routerlab.eval.store import ResultsStore


def test_main_job_ends_with_a_verdict_in_narrow_tables(tmp_path: Path) -> None:
    store = tmp_path / "results.duckdb"
    result = CliRunner().invoke(
        app, ["run", "--lm", "scripted:basic", "--store", str(store), "--no-mlflow"], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0, result.output
    out = result.output
    # the closing comparison fits an 80-column terminal (progress lines of the log are not part of it)
    closing = out[out.index("== routing") : out.index("\n  (store ")].splitlines()
    assert max(len(line) for line in closing) <= 80, max(closing, key=len)
    session = re.search(r"session id: (\S+)", out).group(1)  # type: ignore[union-attr]
    # part 1: every fast router's first decision on the whole dev split, written beside the store
    decisions = pd.read_csv(tmp_path / f"{session}.routing.csv")
    assert sorted(decisions["router"].unique()) == sorted(ROUTERS)
    assert decisions.groupby("router").size().eq(111).all()
    # part 2: the end-to-end session, one run per router, one request per intent
    runs = ResultsStore(str(store), read_only=True).runs()
    mine = runs[runs["run_id"].str.startswith(session)]
    e2e = mine[mine["part"] == "end_to_end"]
    assert sorted(e2e["router"]) == sorted(ROUTERS) and set(e2e["status"]) == {"FINISHED"}
    # part 1 is in the same session of the store too: one run per fast router, every decision kept
    routing = mine[mine["part"] == "routing"]
    assert sorted(routing["router"]) == sorted(ROUTERS) and set(routing["status"]) == {"FINISHED"}
    assert all(len(ResultsStore(str(store), read_only=True).results(rid)) == 111 for rid in routing["run_id"])
    hybrid = ResultsStore(str(store), read_only=True).results(f"{session}.hybrid")
    assert len(hybrid) == E2E_LIMIT and sorted(r.intent for r in hybrid) == sorted(E2E_INTENTS)
    # the end-to-end cost table gives cold p50 and p95 latency, as the session's model holds them
    from routerlab.eval.analysis.build import build_comparison

    model = build_comparison(ResultsStore(str(store), read_only=True), session)
    e2e_part = out[out.index("== end to end") :]
    assert "too few to compare: n=5" in " ".join(e2e_part.split())
    cost_table = e2e_part[e2e_part.index("p50 s") :].splitlines()
    for r in model.part("end_to_end").routers:
        if r.same_as is None:
            row = next(line for line in cost_table if line.startswith(f"{r.router} "))
            assert row.split()[1:3] == [f"{r.cost.p50:.1f}", f"{r.cost.p95:.1f}"], row
    # the verdict: best routing router with its interval, and a significant difference
    verdict = " ".join(out[out.index("Verdict:") :].split())
    best = re.search(r"routing accuracy \(n=111\): best (\w+) (\d\.\d\d) \[(\d\.\d\d), (\d\.\d\d)\]", verdict)
    assert best, verdict
    acc = decisions[decisions["router"] == best.group(1)]["correct"].mean()
    assert f"{acc:.2f}" == best.group(2) and float(best.group(3)) <= acc <= float(best.group(4))
    assert "Significantly better than" in verdict and "cheapest within its interval" in verdict.lower()
    assert f"routerlab compare {session}" in out


def test_limit_keeps_the_main_jobs_shape_on_fewer_requests(tmp_path: Path) -> None:
    """``--limit N`` takes N requests as ``route --limit N`` does; both parts and the verdict stay."""
    from routerlab.app.defaults import DEFAULT_ROUTERS

    store = tmp_path / "results.duckdb"
    args = ["run", "--lm", "scripted:basic", "--limit", "20", "--store", str(store), "--no-mlflow"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    session = re.search(r"session id: (\S+)", result.output).group(1)  # type: ignore[union-attr]
    runs = ResultsStore(str(store), read_only=True).runs()
    mine = runs[runs["run_id"].str.startswith(session)]
    # one router set for both parts, the one `route` defaults to
    assert tuple(DEFAULT_ROUTERS.split(",")) == ROUTERS
    for part in ("routing", "end_to_end"):
        assert sorted(mine[mine["part"] == part]["router"]) == sorted(ROUTERS), part
    routing = mine[mine["part"] == "routing"]
    decided = {rid: ResultsStore(str(store), read_only=True).results(rid) for rid in routing["run_id"]}
    assert all(len(rs) == 20 for rs in decided.values())
    # the same 20 requests `route --limit 20` decides: one selection helper for both commands
    route_out = tmp_path / "route.csv"
    route_args = ["route", "--router", "rules", "--lm", "scripted:basic", "--limit", "20", "--no-mlflow"]
    route = CliRunner().invoke(app, [*route_args, "--store", str(tmp_path / "r.duckdb"), "--out", str(route_out)])
    assert route.exit_code == 0, route.output
    rules = next(rs for rid, rs in decided.items() if rid.endswith(".rules"))
    assert sorted(r.example_id for r in rules) == sorted(pd.read_csv(route_out)["example_id"])
    hybrid = ResultsStore(str(store), read_only=True).results(f"{session}.hybrid")
    assert len(hybrid) == E2E_LIMIT and sorted(r.intent for r in hybrid) == sorted(E2E_INTENTS)
    assert "routing accuracy (n=20)" in " ".join(result.output.split())
