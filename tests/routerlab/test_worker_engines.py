"""Each worker of a run queries the database on an engine of its own (issue 62, item 2)."""

from __future__ import annotations

from rich.console import Console

from routerlab._runs.runner import RunConfig
from routerlab._runs.session import SessionSpec, run_session
from routerlab.agents.db import clear_database_cache, open_database
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field
from routerlab.benchmarks.builtin import builtin_database_path
from routerlab.eval.store import ResultsStore


def test_two_workers_run_on_two_engines(tmp_path) -> None:
    clear_database_cache()
    spec = SessionSpec(
        routers=[("rules", {})],
        config=RunConfig(limit=6, split="dev", concurrency=2),
        tracking_uri=None,
        store_path=str(tmp_path / "r.duckdb"),
    )
    lm = scripted_lm(lambda request: answer_field(request, "SELECT count(*) FROM service_areas"))
    done = run_session(spec, console=Console(quiet=True), lm=lm)
    assert len(ResultsStore(spec.store_path, read_only=True).results(done.run_ids[0])) >= 6
    workers = [s for s in open_database(builtin_database_path()).engine_scopes() if s.startswith("scope:worker:")]
    assert len(workers) == 2, open_database(builtin_database_path()).engine_scopes()
