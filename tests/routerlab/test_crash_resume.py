"""Crash and resume through the real CLI: SIGKILL at seeded random points, ``--resume`` each time.

The final store must equal an uninterrupted run's (same examples, same scores, none twice, none
missing) and MLflow must hold exactly one finished run per router. Ctrl-C (SIGINT) must stop
cleanly with exit code 130 and print a resume command that works as printed.

The CLI runs with ``--lm scripted:basic``, the deterministic test-double LM (no model loads).
"""

from __future__ import annotations

import os
import random
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from routerlab.cli import app
from routerlab.eval.store import ResultsStore

ROUTERS = ("rules", "oracle")
LIMIT = 6
SEED = 20261124
ROUTERLAB = str(Path(sys.executable).with_name("routerlab"))
_SESSION = re.compile(r"^session (\S+): ")
_ROW = re.compile(r"^\S+\.(\w+) (\d+)/(\d+) ")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    # unbuffered and wide: the test reads the one-line-per-example log as it is written
    return env | {"PYTHONUNBUFFERED": "1", "COLUMNS": "250"}


def _where(tmp: Path) -> list[str]:
    return ["--store", str(tmp / "results.duckdb"), "--tracking-uri", f"sqlite:///{tmp}/mlflow.db"]


def _start(args: list[str], tmp: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [ROUTERLAB, "run", *args, *_where(tmp)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=tmp,
    )


def _run_until(proc: subprocess.Popen[str], rows: int, sig: int, fraction: float, timeout: float = 90.0) -> str | None:
    """Read the log until ``rows`` examples were stored, wait ``fraction`` of an example, send ``sig``.

    The wait is a fraction of the gap between the last two stored examples (how long one takes on
    this machine right now; none after the first), so the signal lands inside the next example
    however fast the harness is. Returns the session id the process printed. Sends nothing if
    the process ends first.
    """
    assert proc.stdout is not None
    session, seen, t0 = None, 0, time.monotonic()
    last_row: float | None = None
    for line in proc.stdout:
        now = time.monotonic()
        assert now - t0 < timeout, "the run hung"
        if m := _SESSION.match(line):
            session = m.group(1)
        elif _ROW.match(line):
            seen += 1
            if seen == rows:
                time.sleep(fraction * (now - last_row) if last_row is not None else 0.0)
                proc.send_signal(sig)
                break
            last_row = now
    return session


def _scores(store: ResultsStore, run_id: str) -> dict[str, tuple]:
    return {
        r.example_id: (r.outcome, r.error_class, tuple(sorted((k, s.value) for k, s in r.scores.items())))
        for r in store.results(run_id)
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, dict[str, tuple]]:
    """An uninterrupted run of the same examples (in process, no MLflow)."""
    tmp = tmp_path_factory.mktemp("reference")
    store = tmp / "results.duckdb"
    args = ["run", "--lm", "scripted:basic", "--router", ",".join(ROUTERS), "--limit", str(LIMIT)]
    out = CliRunner().invoke(app, [*args, "--store", str(store), "--no-mlflow"])
    assert out.exit_code == 0, out.output
    rs = ResultsStore(store)
    return {rid.rsplit(".", 1)[1]: _scores(rs, rid) for rid in rs.runs()["run_id"]}


def _stored(tmp: Path, session: str) -> int:
    store = ResultsStore(tmp / "results.duckdb")
    return int(store.query("SELECT count(*) AS n FROM examples WHERE run_id LIKE ?", [f"{session}.%"])["n"][0])


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """One store and MLflow database for both tests (creating an MLflow database takes seconds)."""
    return tmp_path_factory.mktemp("crash")


def _statuses(store: ResultsStore, session: str) -> set[str]:
    runs = store.runs()
    return set(runs[runs["run_id"].str.startswith(f"{session}.")]["status"])


def _mlflow_runs(tmp: Path, session: str) -> dict[str, list]:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    exp = client.get_experiment_by_name("routerlab/builtin")
    runs = client.search_runs([exp.experiment_id], filter_string=f"tags.`routerlab.run_key` LIKE '{session}%'")
    by_key: dict[str, list] = {}
    for r in runs:
        by_key.setdefault(r.data.tags["routerlab.run_key"], []).append(r)
    return by_key


def test_sigkill_at_random_points_then_resume_equals_an_uninterrupted_run(workspace, reference):
    tmp_path = workspace
    rng = random.Random(SEED)
    # two kills cover both kinds of killed run: a fresh one, and a resumed one (whose resume is
    # resumed again); a third kill (a resumed run again, as CI ran it before) repeated the second
    # path at the cost of one more interpreter start-up. The seed's first two points are kept.
    kills = [(rng.randint(1, 3), rng.uniform(0.0, 1.0)) for _ in range(2)]
    first = ["--lm", "scripted:basic", "--router", ",".join(ROUTERS), "--limit", str(LIMIT)]
    session = None
    killed = 0
    stored_at_kill: list[int] = []
    for i, (rows, fraction) in enumerate(kills):
        # the resumed runs get no options but --resume: the session's own settings are used
        proc = _start(first if i == 0 else ["--resume", session], tmp_path)
        found = _run_until(proc, rows, signal.SIGKILL, fraction)
        session = session or found
        proc.wait(timeout=60)
        assert session is not None
        killed += proc.returncode == -signal.SIGKILL
        stored_at_kill.append(_stored(tmp_path, session))
    assert killed == len(kills), "every run was killed before it could finish"
    store = ResultsStore(tmp_path / "results.duckdb")
    assert 0 < stored_at_kill[-1] < LIMIT * len(ROUTERS), "the kills should leave the session unfinished"
    assert stored_at_kill == sorted(stored_at_kill), "a resumed run lost stored examples"
    # the last resume runs in process: the same CLI, without another interpreter start-up
    final = CliRunner().invoke(app, ["run", "--resume", session, *_where(tmp_path)])
    assert final.exit_code == 0, final.output[-2000:]
    for router in ROUTERS:
        run_id = f"{session}.{router}"
        assert _scores(store, run_id) == reference[router]
        counts = store.query("SELECT example_id, count(*) AS n FROM examples WHERE run_id = ? GROUP BY 1", [run_id])
        assert len(counts) == LIMIT and set(counts["n"]) == {1}
    assert _statuses(store, session) == {"FINISHED"}
    runs = _mlflow_runs(tmp_path, session)
    assert sorted(runs) == sorted([session, *(f"{session}.{r}" for r in ROUTERS)])
    for key, found in runs.items():
        assert len(found) == 1, f"{key} duplicated in MLflow"
        assert found[0].info.status == "FINISHED" and found[0].data.tags["routerlab.status"] == "FINISHED"
        if key != session:
            assert found[0].data.tags["routerlab.n_results"] == str(LIMIT)
    print(f"\nCRASH kills={kills} stored_after_each_kill={stored_at_kill} final={_stored(tmp_path, session)}")


def test_ctrl_c_stops_cleanly_with_130_and_a_resume_command_that_works(workspace, reference):
    tmp_path = workspace
    proc = _start(["--lm", "scripted:basic", "--router", "rules", "--limit", str(LIMIT)], tmp_path)
    session = _run_until(proc, 2, signal.SIGINT, 0.0)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr
    m = re.search(r"interrupted: resume with\s+(routerlab run --resume \S+.*)$", stderr, re.M)
    assert m is not None, stderr[-2000:]
    command = shlex.split(m.group(1))
    assert command[3] == session
    store = ResultsStore(tmp_path / "results.duckdb")
    assert _statuses(store, session) == {"KILLED"}
    assert 2 <= len(store.results(f"{session}.rules")) < LIMIT
    killed = _mlflow_runs(tmp_path, session)
    assert {r[0].info.status for r in killed.values()} == {"KILLED"}
    again = CliRunner().invoke(app, command[1:])
    assert again.exit_code == 0, again.output[-2000:]
    assert _scores(store, f"{session}.rules") == reference["rules"]
    assert _statuses(store, session) == {"FINISHED"}
    runs = _mlflow_runs(tmp_path, session)
    assert all(len(r) == 1 and r[0].info.status == "FINISHED" for r in runs.values())
