"""No silent wrong results: bad arguments, crashes, cut-offs and stop signals never read as scores.

Every run uses the scripted test-double LM and scratch stores in a temporary folder; the SIGTERM
case runs the real CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import duckdb
import pytest
from typer.testing import CliRunner

from routerlab import routers
from routerlab.agents.errors import ConfigError
from routerlab.agents.registry import Range, Registry
from routerlab.cli import app
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.analysis.console import render_console
from routerlab.eval.store import ResultsStore
from routerlab.routers.rules import RulesRouter

ROUTERLAB = str(Path(sys.executable).with_name("routerlab"))
_SESSION = re.compile(r"session id: (\S+)")


def _run(tmp: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, ["run", "--lm", "scripted:basic", "--no-mlflow", "--store", str(tmp / "r.duckdb"), *args]
    )
    return result.exit_code, result.output


def _session(output: str) -> str:
    m = _SESSION.search(output)
    assert m, output
    return m.group(1)


class _Crashy(RulesRouter):
    """A router whose every decision raises: each example is a crash, not a wrong answer."""

    def classify(self, state):
        raise TypeError("unsupported operand")


# -- item 1: argument types at build time; a run of crashes is FAILED ------------------------------


def test_router_argument_of_wrong_type_is_refused_when_built() -> None:
    with pytest.raises(ConfigError) as err:
        routers.router.build("hybrid", threshold="abc")
    text = str(err.value)
    assert "'hybrid'" in text and "'threshold'" in text
    assert "float" in text and "'abc'" in text
    # a JSON integer is a valid float; a bool is not a number
    assert routers.router.build("hybrid", threshold=1).threshold == 1
    with pytest.raises(ConfigError):
        routers.router.build("hybrid", fix_budget=True)


def test_declared_range_is_checked() -> None:
    reg: Registry[object] = Registry("widget")

    @reg("dial")
    class Dial:
        def __init__(self, level: Annotated[float, Range(0, 1)] = 0.5, label: str | None = None) -> None:
            self.level = level

    assert reg.build("dial", level=0.25).level == 0.25
    with pytest.raises(ConfigError, match="between 0 and 1"):
        reg.build("dial", level=1.5)
    with pytest.raises(ConfigError, match="label"):
        reg.build("dial", label=3)


def test_run_with_bad_router_argument_exits_2_before_anything_runs(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "--router", "hybrid", "--router-arg", "hybrid.threshold=abc", "--limit", "6")
    assert code == 2, out
    assert "threshold" in out and "float" in out
    assert "session " not in out  # no session was started


def test_route_with_bad_router_argument_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["route", "--lm", "scripted:basic", "--router", "hybrid", "--router-arg", "hybrid.threshold=abc"]
    )
    assert result.exit_code == 2, result.output
    assert "threshold" in result.output


def test_run_whose_examples_mostly_crash_ends_failed_with_exit_1(tmp_path: Path) -> None:
    with routers.router.scoped("crashy", _Crashy):
        code, out = _run(tmp_path, "--router", "crashy,rules", "--limit", "4")
    assert code == 1, out
    assert "crashy FAILED: 4 of 4 examples crashed" in out
    store = ResultsStore(str(tmp_path / "r.duckdb"))
    session = _session(out)
    assert store.run(f"{session}.crashy")["status"] == "FAILED"
    assert store.run(f"{session}.rules")["status"] == "FINISHED"
    crashed = store.results(f"{session}.crashy")
    assert len(crashed) == 4 and {r.outcome for r in crashed} == {"crash"}  # still stored
    # compare on it says the run is not a measure of the router
    result = CliRunner().invoke(app, ["compare", session, "--store", str(tmp_path / "r.duckdb")])
    assert result.exit_code == 0
    assert f"{session}.crashy FAILED" in result.output


# -- item 2: examples that never ran are "not run" ------------------------------------------------


def test_examples_the_deadline_kept_from_starting_are_not_run_and_in_no_rate(tmp_path: Path) -> None:
    # 1 ms: the deadline passes before any example of the second router starts
    code, out = _run(tmp_path, "--router", "rules,oracle", "--limit", "6", "--deadline-s", "0.001")
    assert code == 124, out
    assert "not run" in out
    session = _session(out)
    store = ResultsStore(str(tmp_path / "r.duckdb"))
    ids = [f"{session}.rules", f"{session}.oracle"]
    stored = {r: store.results(r) for r in ids}
    not_run = {r: sum(x.outcome == "not_run" for x in stored[r]) for r in ids}
    assert sum(not_run.values()) > 0
    c = build_comparison(store, ids)
    part = c.part("end_to_end")
    assert sorted(row.run_id for row in part.routers) == sorted(ids)
    for row in part.routers:
        ran = len(stored[row.run_id]) - not_run[row.run_id]
        assert row.not_run == not_run[row.run_id]
        assert row.n == ran
        assert all(rate.n <= ran for rate in row.rates.values())
    both = {(x.example_id, x.attempt) for x in stored[ids[0]] if x.outcome != "not_run"} & {
        (x.example_id, x.attempt) for x in stored[ids[1]] if x.outcome != "not_run"
    }
    assert all(t.n <= len(both) for t in part.pairs)
    assert "not run (never started, in no rate or test" in " ".join(render_console(c, width=120).split())


# -- item 3: resume refuses options that change the recorded session -----------------------------


def test_resume_refuses_options_that_change_the_session(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "--router", "rules", "--limit", "6")
    assert code == 0, out
    session = _session(out)
    code, out = _run(tmp_path, "--resume", session, "--router", "hybrid", "--limit", "2")
    assert code == 2, out
    assert "routers rules -> hybrid" in out and "limit 6 -> 2" in out
    code, out = _run(tmp_path, "--resume", session, "--router-arg", "rules.fix_budget=3")
    assert code == 2 and "rules arguments" in out, out
    # settings that change only the speed are accepted
    code, out = _run(tmp_path, "--resume", session, "--concurrency", "2")
    assert code == 0, out
    store = ResultsStore(str(tmp_path / "r.duckdb"))
    assert [r for r in store.runs()["run_id"] if r.startswith(session)] == [f"{session}.rules"]
    assert len(store.results(f"{session}.rules")) == 6


def _as_recorded_before_call_timeout(store_path: Path, run_id: str) -> None:
    """Rewrite a stored run as a version without ``pipeline.call_timeout_s`` recorded it."""
    con = duckdb.connect(str(store_path))
    try:
        config_text, params_text = con.execute("SELECT config, params FROM runs WHERE run_id = ?", [run_id]).fetchone()
        config, params = json.loads(config_text), json.loads(params_text)
        del config["pipeline"]["call_timeout_s"], params["config"]["pipeline"]["call_timeout_s"]
        con.execute(
            "UPDATE runs SET config = ?, params = ?, status = 'KILLED' WHERE run_id = ?",
            [json.dumps(config), json.dumps(params), run_id],
        )
        # the older session was stopped before its last examples
        kept = [
            r[0]
            for r in con.execute(
                "SELECT example_id FROM examples WHERE run_id = ? ORDER BY example_id", [run_id]
            ).fetchall()
        ]
        con.execute("DELETE FROM examples WHERE run_id = ? AND example_id IN (SELECT unnest(?))", [run_id, kept[3:]])
    finally:
        con.close()


def test_resume_reads_a_setting_an_older_session_lacks_as_its_default(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "--router", "rules", "--limit", "6")
    assert code == 0, out
    session, store_path = _session(out), tmp_path / "r.duckdb"
    finished = {
        r.example_id: r.scores["route"].value for r in ResultsStore(str(store_path)).results(f"{session}.rules")
    }
    _as_recorded_before_call_timeout(store_path, f"{session}.rules")
    recorded = ResultsStore(str(store_path), read_only=True).run(f"{session}.rules")
    assert "call_timeout_s" not in recorded["config"]["pipeline"] and recorded["status"] == "KILLED"
    assert len(ResultsStore(str(store_path), read_only=True).results(f"{session}.rules")) == 3

    # a cap other than the default still changes what the session computes: refused, naming it
    changed = tmp_path / "cap.yaml"
    changed.write_text("pipeline:\n  call_timeout_s: 30\n")
    code, out = _run(tmp_path, "--resume", session, "--config", str(changed))
    assert code == 2, out
    said = " ".join(out.split())
    assert "'call_timeout_s': 600.0" in said and "'call_timeout_s': 30" in said, out

    code, out = _run(tmp_path, "--resume", session)
    assert code == 0, out
    store = ResultsStore(str(store_path), read_only=True)
    assert store.run(f"{session}.rules")["status"] == "FINISHED"
    resumed = {r.example_id: r.scores["route"].value for r in store.results(f"{session}.rules")}
    assert resumed == finished


# -- item 6: SIGTERM stops a run like Ctrl-C -------------------------------------------------------


def test_sigterm_closes_runs_killed_and_prints_the_resume_command(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"} | {"PYTHONUNBUFFERED": "1"}
    store = tmp_path / "r.duckdb"
    cmd = [ROUTERLAB, "run", "--lm", "scripted:basic", "--router", "rules", "--limit", "0"]
    proc = subprocess.Popen(
        [*cmd, "--no-mlflow", "--store", str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.stdout is not None
    session = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if m := re.match(r"^session (\S+): ", line):
            session = m.group(1)
        if session and re.match(rf"^{re.escape(session)}\.rules 2/", line):
            break
    assert session, "the run never started"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "stopped by SIGTERM" in err
    assert re.search(r"interrupted: resume with\s+routerlab run --resume", err)
    assert f"routerlab run --resume {session} --store {store} --no-mlflow" in err
    rs = ResultsStore(str(store))
    assert rs.run(f"{session}.rules")["status"] == "KILLED"
    finished = len(rs.results(f"{session}.rules"))
    assert finished >= 2
    result = CliRunner().invoke(app, ["compare", session, "--store", str(store)])
    assert "was interrupted or cut off (KILLED)" in result.output


@pytest.mark.server
def test_serve_refuses_a_mistyped_router_argument_with_400() -> None:
    import httpx

    from routerlab.serve import API_PREFIX, ServeSettings, create_app, serve_in_background

    app = create_app(ServeSettings(lm_spec="scripted:basic", poll_s=0.05))
    with serve_in_background(app) as url:
        body = {"question": "How many areas have EV charging?", "router": "hybrid", "router_args": {"threshold": "abc"}}
        resp = httpx.post(f"{url}{API_PREFIX}/ask_agent", json=body, timeout=30)
    assert resp.status_code == 400, resp.text
    text = resp.text
    assert "threshold" in text and "float" in text
    assert "TypeError" not in text
