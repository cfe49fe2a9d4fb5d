"""A session's runs are registered whole: an interruption half-way leaves none of them.

The probe (issue 50, item 3): SIGTERM while the runs of a session were being registered exited
with no message, and ``--resume`` then finished only the first router; the others were dropped
without a word. Here the interruption is raised inside the registration of the second run (the
moment a signal handler's exception would surface), on a real results store.
"""

from __future__ import annotations

from rich.console import Console

from routerlab._runs.runner import RunConfig
from routerlab._runs.session import SessionSpec, run_session
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field
from routerlab.eval.store import ResultsStore


def test_an_interruption_during_registration_leaves_no_run(tmp_path, monkeypatch) -> None:
    store_path = str(tmp_path / "results.duckdb")
    real = ResultsStore._create_run
    seen: list[str] = []

    def interrupted(self, con, run_id, *args, **kwargs):
        seen.append(run_id)
        if len(seen) == 2:
            raise KeyboardInterrupt  # what the CLI's SIGTERM/SIGINT handler raises
        return real(self, con, run_id, *args, **kwargs)

    monkeypatch.setattr(ResultsStore, "_create_run", interrupted)
    spec = SessionSpec(
        routers=[("rules", {}), ("oracle", {}), ("random", {})],
        config=RunConfig(limit=2, split="dev"),
        tracking_uri=None,
        store_path=store_path,
    )
    lm = scripted_lm(lambda request: answer_field(request, "SELECT 1"))
    # the stop is the session's outcome (the CLI prints it and exits 128 + signal), not an escape
    stopped = run_session(spec, console=Console(quiet=True), lm=lm)
    assert stopped.interrupted and not stopped.registered and stopped.run_ids == []
    assert len(seen) == 2
    # all or nothing: the first run's insert was rolled back with the second's
    assert ResultsStore(store_path).runs().empty
    monkeypatch.setattr(ResultsStore, "_create_run", real)
    # and the same session, run again, registers all three
    done = run_session(spec, console=Console(quiet=True), lm=lm)
    assert sorted(ResultsStore(store_path).runs()["run_id"]) == sorted(done.run_ids) and len(done.run_ids) == 3
