"""The local executor end to end: every cell through the runner, one MLflow parent, resume, merge."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

import routerlab.cli as cli
from routerlab.agents.errors import ConfigError
from routerlab.eval.store import ResultsStore
from routerlab.stub_lm import LatencyServer
from routerlab.sweep import (
    LocalExecutor,
    load_sweep,
    merge_outcome,
    recorded_sweep,
    sweep_dir,
    sweep_results,
)
from tests.routerlab.sweep.conftest import quiet_sweep

GRID = {
    "name": "local-check",
    "limit": 3,
    "routers": ["rules", {"name": "random", "grid": {"fix_budget": [1, 2]}}],
    "seeds": [0, 1],
}
N_CELLS, N_EXAMPLES = 6, 3


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """One sweep through the CLI: 3 router variants x 2 seeds, 3 examples each, MLflow on SQLite."""
    import yaml

    tmp = tmp_path_factory.mktemp("local")
    path = tmp / "sweep.yaml"
    path.write_text(yaml.safe_dump({"datasets": ["builtin"], "lms": ["scripted:basic"], **GRID}))
    store, tracking = tmp / "results.duckdb", f"sqlite:///{tmp}/mlflow.db"
    out = CliRunner().invoke(
        cli.app, ["sweep", "--config", str(path), "--store", str(store), "--tracking-uri", tracking]
    )
    assert out.exit_code == 0, out.output
    sweep_id = re.search(r"sweep id: (sweep-\S+)", out.output).group(1)
    return tmp, path, store, tracking, sweep_id, out.output


def test_every_cell_is_a_finished_run_with_every_example_once(swept):
    _, _, store, _, sweep_id, output = swept
    rs = ResultsStore(store)
    runs = rs.query("SELECT run_id, router, status, params FROM runs ORDER BY run_id")
    assert len(runs) == N_CELLS and set(runs["status"]) == {"FINISHED"}
    assert all(r.startswith(f"{sweep_id}.c00") for r in runs["run_id"])
    frame = sweep_results(rs, sweep_id)
    assert len(frame) == N_CELLS * N_EXAMPLES
    assert not frame.duplicated(["run_id", "example_id", "attempt"]).any()
    assert set(frame["outcome"]) <= {"ok", "error", "timeout", "crash"}
    # the random router got each seed; its recorded args rebuild it
    random_runs = [rs.run(r) for r in runs["run_id"] if r.endswith(".random")]
    assert sorted(
        (r["params"]["router"]["args"]["seed"], r["params"]["router"]["args"]["fix_budget"]) for r in random_runs
    ) == [
        (0, 1),
        (0, 2),
        (1, 1),
        (1, 2),
    ]
    assert {r["params"]["sweep"]["id"] for r in random_runs} == {sweep_id}
    # the summary table printed one row per cell
    assert all(f"c00{i}" in output for i in range(N_CELLS))


def test_mlflow_has_one_parent_and_a_finished_child_per_cell(swept):
    from mlflow import MlflowClient

    _, _, store, tracking, sweep_id, _ = swept
    client = MlflowClient(tracking)
    exp = client.get_experiment_by_name("routerlab/sweeps")
    parents = client.search_runs([exp.experiment_id], filter_string=f"tags.`routerlab.run_key` = '{sweep_id}'")
    assert len(parents) == 1
    parent = parents[0]
    assert parent.data.tags["routerlab.kind"] == "sweep" and parent.info.status == "FINISHED"
    children = client.search_runs(
        [exp.experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'"
    )
    assert len(children) == N_CELLS
    assert {c.info.status for c in children} == {"FINISHED"}
    assert {c.data.tags["routerlab.cell"] for c in children} == {f"c00{i}" for i in range(N_CELLS)}
    assert all(c.data.metrics for c in children)
    # the stored runs point at their MLflow children
    linked = set(ResultsStore(store).runs()["mlflow_run_id"])
    assert linked == {c.info.run_id for c in children}


def test_resume_reruns_only_the_missing_examples(swept):
    _, _, store, tracking, sweep_id, _ = swept
    rs = ResultsStore(store)
    before = sweep_results(rs, sweep_id)
    victim = f"{sweep_id}.c004.random"
    first = rs.query("SELECT min(example_id) AS e FROM examples WHERE run_id = ?", [victim])["e"][0]
    rs.query("DELETE FROM examples WHERE run_id = ? AND example_id = ?", [victim, first])
    rs.query("UPDATE runs SET status = 'KILLED' WHERE run_id = ?", [victim])
    spec = recorded_sweep(store, sweep_id)
    result = quiet_sweep(spec, LocalExecutor(), store, tracking_uri=tracking, resume=sweep_id)
    assert result.status == "FINISHED"
    assert list(result.outcomes) == ["c004"] and len(result.done_before) == N_CELLS - 1
    assert result.outcomes["c004"].resumed == N_EXAMPLES - 1
    after = sweep_results(rs, sweep_id)
    cols = ["cell", "example_id", "attempt", "outcome", "score_route", "score_success"]
    assert after[cols].equals(before[cols])
    # resuming a finished sweep runs nothing
    again = quiet_sweep(spec, LocalExecutor(), store, resume=sweep_id)
    assert again.outcomes == {} and again.status == "FINISHED"


def test_resume_refuses_another_grid(swept, sweep_file):
    _, _, store, _, sweep_id, _ = swept
    other = load_sweep(sweep_file(routers=["oracle"]))
    with pytest.raises(ConfigError, match="another grid"):
        quiet_sweep(other, LocalExecutor(), store, resume=sweep_id)
    # the recorded grid needs no file
    assert recorded_sweep(store, sweep_id).same_grid(load_sweep(swept[1]))
    assert (sweep_dir(store, sweep_id) / "sweep.json").is_file()


def test_merging_a_cell_twice_adds_no_row(swept, tmp_path):
    from routerlab.sweep.cell import CellOutcome
    from routerlab.sweep.driver import _load_datasets

    _, path, store, _, sweep_id, _ = swept
    rs = ResultsStore(store)
    cell = load_sweep(path).cells()[2]
    run_id = cell.run_id(sweep_id)
    outcome = CellOutcome(
        key=cell.key, run_id=run_id, status="FINISHED", results=rs.results(run_id), run=rs.run(run_id)
    )
    target = ResultsStore(tmp_path / "merged.duckdb")
    dataset = _load_datasets([cell])[cell.dataset.load_key]
    assert merge_outcome(target, outcome, dataset) == N_EXAMPLES
    assert merge_outcome(target, outcome, dataset) == N_EXAMPLES
    rows = target.query("SELECT run_id, example_id, attempt, count(*) AS n FROM examples GROUP BY ALL")
    assert len(rows) == N_EXAMPLES and set(rows["n"]) == {1}
    assert target.run(run_id)["status"] == "FINISHED"
    assert [r.to_dict() for r in target.results(run_id)] == [r.to_dict() for r in outcome.results]


@pytest.mark.server
def test_a_provider_cap_holds_across_a_cells_threads(sweep_file, tmp_path):
    with LatencyServer(0.05) as server:
        spec = load_sweep(
            sweep_file(
                limit=6,
                lms=[{"spec": "openai/stub-a", "api_base": server.url, "cache": False}],
                run={"concurrency": 4},
                providers={"openai": 1},
            )
        )
        result = quiet_sweep(spec, LocalExecutor(), tmp_path / "r.duckdb")
    assert result.status == "FINISHED"
    assert server.requests["stub-a"] >= 3
    assert server.max_in_flight["stub-a"] == 1
    stats = result.slot_stats["openai"]
    assert stats["cap"] == 1 and stats["max_in_flight"] == 1 and stats["granted"] >= server.requests["stub-a"]


def test_a_failing_cell_fails_alone_and_the_sweep_exits_1(sweep_file, tmp_path):
    # a model file that does not exist: that cell's LM never loads; the scripted cell is unaffected
    path = sweep_file(lms=["scripted:basic", f"local:{tmp_path}/missing.gguf"])
    store = tmp_path / "r.duckdb"
    out = CliRunner().invoke(cli.app, ["sweep", "--config", str(path), "--store", str(store), "--no-mlflow"])
    text = " ".join(out.output.split())
    assert out.exit_code == 1, text
    assert "GGUF file not found" in text and "routerlab sweep --resume sweep-" in text, text
    runs = ResultsStore(store).query("SELECT run_id, status FROM runs ORDER BY run_id")
    assert runs["status"].tolist() == ["FINISHED", "FAILED"]


def test_server_mlflow_refuses_a_taken_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        out = CliRunner().invoke(cli.app, ["server", "mlflow", "--port", str(port)])
    text = " ".join(out.output.split())
    assert out.exit_code == 2 and f"port {port}" in text and "fix:" in text, text


def test_ui_and_server_share_one_command_builder():
    from routerlab.sweep.mlflow_server import mlflow_command

    ui = mlflow_command("ui", backend_store_uri="sqlite:///m.db", host="127.0.0.1", port=5000)
    assert ui[1:] == [
        "-m",
        "mlflow",
        "ui",
        "--backend-store-uri",
        "sqlite:///m.db",
        "--host",
        "127.0.0.1",
        "--port",
        "5000",
    ]
    server = mlflow_command(
        "server", backend_store_uri="sqlite:///m.db", port=5001, artifacts_destination="/srv/a", workers=2
    )
    assert server[3] == "server" and "--serve-artifacts" in server
    assert server[server.index("--artifacts-destination") + 1] == "/srv/a"
    assert server[server.index("--workers") + 1] == "2"
    # the UI takes a worker count too (`routerlab ui` passes one: MLflow's default is 4)
    assert mlflow_command("ui", backend_store_uri="sqlite:///m.db", workers=1)[-2:] == ["--workers", "1"]


def test_mlflow_starts_without_its_job_runner_unless_the_user_asks_for_it():
    from routerlab.sweep.mlflow_server import JOB_EXECUTION_ENV, mlflow_env

    shell = {"PATH": "/usr/bin", "MLFLOW_TRACKING_URI": "sqlite:///m.db"}
    env = mlflow_env(shell)
    assert env == {**shell, JOB_EXECUTION_ENV: "false"} and JOB_EXECUTION_ENV not in shell  # a copy
    # a value the user set is kept, whichever it is
    assert mlflow_env({JOB_EXECUTION_ENV: "true"})[JOB_EXECUTION_ENV] == "true"
    assert mlflow_env({JOB_EXECUTION_ENV: "false"})[JOB_EXECUTION_ENV] == "false"


def test_the_server_start_up_wait_is_set_by_the_environment_and_ends_on_a_server_that_never_answers(monkeypatch):
    import socket
    import subprocess
    import sys
    import time

    from routerlab.agents.errors import RunError
    from routerlab.sweep.mlflow_server import READY_TIMEOUT_ENV, ready_timeout_s, wait_ready

    monkeypatch.delenv(READY_TIMEOUT_ENV, raising=False)
    assert ready_timeout_s() == 240.0
    monkeypatch.setenv(READY_TIMEOUT_ENV, "600")
    assert ready_timeout_s() == 600.0
    for bad in ("soon", "0", "-5", "nan", "inf"):
        monkeypatch.setenv(READY_TIMEOUT_ENV, bad)
        with pytest.raises(ConfigError) as err:
            ready_timeout_s()
        assert READY_TIMEOUT_ENV in err.value.what and repr(bad) == err.value.found and err.value.fix
    # a live process behind a port nobody answers on: the wait ends after the variable's seconds
    monkeypatch.setenv(READY_TIMEOUT_ENV, "1.5")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    silent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        t0 = time.monotonic()
        with pytest.raises(RunError) as err:
            wait_ready(f"http://127.0.0.1:{port}", silent)
        assert 1.5 <= time.monotonic() - t0 < 30
        assert "within 1.5 s" in err.value.expected
    finally:
        silent.kill()
        silent.wait()
