"""Sweeps on a local Ray cluster: a lost worker is retried and resumed, results merge exactly once,
every worker logs to one MLflow tracking server, and a provider's cap holds across workers."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from routerlab._runs.runner import RunConfig
from routerlab._runs.session import load_dataset, select
from routerlab.eval.store import ResultsStore
from routerlab.stub_lm import LatencyServer
from routerlab.sweep import LocalExecutor, RayExecutor, SweepResult, SweepSpec, load_sweep, sweep_results
from routerlab.sweep.mlflow_server import READY_TIMEOUT_ENV
from tests.routerlab.sweep.conftest import KILL_SCRIPT, quiet_sweep, slack, sweep_writer, warm_workers

# The pyproject's 900 s per test (setup included) is sized for an idle machine; the killed-worker
# sweep's setup alone (a local sweep, an MLflow server start, a Ray sweep with a kill and MLflow
# logging) took about two minutes in CI, so five times slower it came near that limit.
pytestmark = pytest.mark.timeout(slack(300))

#: what must agree between two sweeps of one grid (timings and ids differ)
COMPARED = [
    "cell",
    "router",
    "lm",
    "dataset",
    "example_id",
    "attempt",
    "intent",
    "predicted_intent",
    "outcome",
    "error_class",
    "score_ex",
    "score_chain_valid",
    "score_trajectory",
    "score_chain_f1",
    "score_route",
    "score_success",
]
LIMIT = 6


def _arm_kill(trigger: Path, needle: str) -> None:
    """The next worker whose LM prompt holds ``needle`` dies (once)."""
    (trigger / "fired").unlink(missing_ok=True)
    (trigger / "armed").write_text(needle)


def _disarm(trigger: Path) -> int | None:
    """Disarm; the pid of the worker that killed itself, if one did."""
    (trigger / "armed").unlink(missing_ok=True)
    fired = trigger / "fired"
    return int(fired.read_text()) if fired.exists() else None


def _target() -> tuple[str, int]:
    """The question to die on (the last SQL request of a cell) and how many examples precede it."""
    config = RunConfig(limit=LIMIT, split="dev")
    examples = select(load_dataset(config), config)
    index = max(i for i, e in enumerate(examples) if e.intent == "sql")
    assert index >= 1
    return examples[index].question, index


def _grid(sweep_file, **extra):
    return load_sweep(
        sweep_file(limit=LIMIT, routers=["rules", "oracle"], lms=[f"scripted:{KILL_SCRIPT}"], seeds=[0, 1], **extra)
    )


def test_a_cell_out_of_retries_keeps_its_results_and_resume_finishes_it(ray_cluster, sweep_file, tmp_path):
    spec = load_sweep(
        sweep_file(
            limit=LIMIT, routers=["rules"], lms=[f"scripted:{KILL_SCRIPT}"], seeds=[0, 1], ray={"max_retries": 0}
        )
    )
    question, preceding = _target()
    store = tmp_path / "r.duckdb"
    _arm_kill(ray_cluster, question)
    try:
        first = quiet_sweep(spec, RayExecutor(), store)
    finally:
        killed = _disarm(ray_cluster)
    assert killed is not None and first.status == "FAILED"
    (lost,) = [o for o in first.outcomes.values() if o.status == "FAILED"]
    assert "WorkerCrashedError" in lost.error or "died" in lost.error, lost.error
    # what the dead worker had stored is merged, and its run says FAILED
    rs = ResultsStore(store)
    assert len(rs.results(lost.run_id)) == preceding and rs.run(lost.run_id)["status"] == "FAILED"

    again = quiet_sweep(spec, RayExecutor(), store, resume=first.sweep_id)
    assert again.status == "FINISHED" and list(again.outcomes) == [lost.key]
    assert again.outcomes[lost.key].resumed == preceding  # from the worker's kept store file
    frame = sweep_results(rs, first.sweep_id)
    assert len(frame) == 2 * LIMIT and not frame.duplicated(["run_id", "example_id", "attempt"]).any()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """``routerlab server mlflow`` on loopback, SQLite in a module tmp folder; yields its printed URI."""
    tmp_path = tmp_path_factory.mktemp("mlflow-server")
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "routerlab.cli",
        "server",
        "mlflow",
        "--port",
        str(port),
        "--backend-store-uri",
        f"sqlite:///{tmp_path}/server.db",
        "--artifacts-destination",
        str(tmp_path / "artifacts"),
        "--workers",
        "1",
    ]
    log = tmp_path / "server.log"
    # the server's own wait for /health (240 s by default) is scaled like the tests' limits
    env = {**os.environ, READY_TIMEOUT_ENV: str(slack(60))}
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    try:
        # the CLI's imports, then the server's (MLflow, its database migrations): tens of seconds
        # on a loaded machine; the CLI gives up first (and exits, which the loop reports)
        deadline = time.monotonic() + slack(90)
        while not (m := re.search(r"MLflow tracking server ready: (\S+)", log.read_text())):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the server did not print its URI"
            time.sleep(0.5)
        yield m.group(1)
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=slack(30))  # the CLI stops its server within 30 s (then kills it)


@dataclass(frozen=True)
class KilledSweep:
    """A grid swept locally, then on Ray with one worker killed mid-cell, logging to a tracking server."""

    spec: SweepSpec
    local: SweepResult
    local_store: Path
    remote: SweepResult
    store: Path
    killed: int | None
    preceding: int


@pytest.fixture(scope="module")
def killed_sweep(ray_cluster, mlflow_server, tmp_path_factory) -> KilledSweep:
    """The one killed-worker Ray sweep both tests below check: the store's side and MLflow's side.

    Each test used to run this same grid with the same kill on its own (about two minutes each in
    CI); one sweep serves both. Logging to the tracking server touches none of the stored columns
    the store test compares with the local sweep (which runs without MLflow, as before).

    Its tests come after the out-of-retries test in this file, so the sweep runs on a cluster
    whose worker processes have started before (as the MLflow test always did): on a cold,
    loaded cluster the surviving worker could finish the whole grid while the replacement of the
    killed one was still importing, and "two workers shared the grid" then failed.
    """
    tmp_path = tmp_path_factory.mktemp("killed-sweep")
    spec = _grid(sweep_writer(tmp_path), experiment="routerlab/sweep-test", ray={"num_cpus": 1, "max_retries": 2})
    local_store = tmp_path / "local.duckdb"
    local = quiet_sweep(spec, LocalExecutor(), local_store)

    question, preceding = _target()
    # both CPUs' workers and a spare, started and idle: the killed worker's replacement is the
    # spare, not a cold start that the surviving worker could outrun through the whole grid
    warm_workers(3, tmp_path / "warm")
    # the kill also checks MLflow's side: a retried cell must reopen its child run, not add one
    _arm_kill(ray_cluster, question)
    store = tmp_path / "ray.duckdb"
    try:
        remote = quiet_sweep(spec, RayExecutor(), store, tracking_uri=mlflow_server)
    finally:
        killed = _disarm(ray_cluster)
    return KilledSweep(spec, local, local_store, remote, store, killed, preceding)


@pytest.mark.server
def test_a_killed_worker_is_retried_resumes_and_the_merge_equals_a_local_sweep(killed_sweep):
    spec, local, remote, store = killed_sweep.spec, killed_sweep.local, killed_sweep.remote, killed_sweep.store
    preceding, killed = killed_sweep.preceding, killed_sweep.killed
    assert local.status == "FINISHED"
    assert killed is not None, "no worker died: the test proved nothing"
    assert remote.status == "FINISHED"
    # the cell whose worker died was rerun by Ray and picked up after the examples it had stored
    resumed = {k: o.resumed for k, o in remote.outcomes.items() if o.resumed}
    assert list(resumed.values()) == [preceding], resumed
    assert all(o.worker and not o.worker.endswith(f":{killed}") for o in remote.outcomes.values())
    assert len({o.worker for o in remote.outcomes.values()}) >= 2  # two workers shared the grid

    merged = sweep_results(ResultsStore(store), remote.sweep_id)
    expected = sweep_results(ResultsStore(killed_sweep.local_store), local.sweep_id)
    assert len(merged) == len(spec.cells()) * LIMIT
    assert not merged.duplicated(["run_id", "example_id", "attempt"]).any()
    assert merged[COMPARED].equals(expected[COMPARED])
    runs = ResultsStore(store).runs()
    assert len(runs) == len(spec.cells()) and set(runs["status"]) == {"FINISHED"}
    # merged workers' files are gone once the sweep finished; the recorded grid stays
    assert not (store.parent / "sweeps" / remote.sweep_id / "shards").exists()


@pytest.mark.server
def test_workers_log_to_one_tracking_server_one_parent_every_child_finished(killed_sweep, mlflow_server):
    from mlflow import MlflowClient

    assert mlflow_server == f"http://127.0.0.1:{mlflow_server.rsplit(':', 1)[1]}"
    spec, result, killed = killed_sweep.spec, killed_sweep.remote, killed_sweep.killed
    # a worker died mid-cell: its retried cell must reopen its child run, not add one
    assert killed is not None and result.status == "FINISHED"

    client = MlflowClient(mlflow_server)
    exp = client.get_experiment_by_name("routerlab/sweep-test")
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if r.data.tags.get("routerlab.kind") == "sweep"]
    assert len(parents) == 1
    parent = parents[0]
    assert parent.info.status == "FINISHED" and parent.data.tags["routerlab.run_key"] == result.sweep_id
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == len(runs) - 1 == len(spec.cells())
    assert {c.info.status for c in children} == {"FINISHED"}
    assert sorted(c.data.tags["routerlab.cell"] for c in children) == [c.key for c in spec.cells()]
    # two worker processes logged (neither of them the one that died)
    workers = {c.data.tags["routerlab.worker"] for c in children}
    assert len(workers) >= 2 and not any(w.endswith(f":{killed}") for w in workers)
    # each child is rebuildable from its params and carries its metrics and per-example table
    for child in children:
        assert child.data.params["router.name"] in ("rules", "oracle")
        assert child.data.params["sweep.id"] == result.sweep_id
        assert child.data.params["lm.spec"] == f"scripted:{KILL_SCRIPT}"
        assert "success" in " ".join(child.data.metrics)
        # one per-example table (a retried cell must not duplicate it), and the risk-coverage
        # curve when the cell answered data questions
        paths = [a.path for a in client.list_artifacts(child.info.run_id)]
        assert paths.count("examples.json") == 1
        assert set(paths) <= {"examples.json", "risk_coverage.json", "risk_coverage.png"}
    # the stored runs link to the children the workers logged
    linked = set(ResultsStore(killed_sweep.store).runs()["mlflow_run_id"])
    assert linked == {c.info.run_id for c in children}


@pytest.mark.server
def test_a_provider_cap_holds_across_workers(ray_cluster, sweep_file, tmp_path):
    caps = {"openai": 1, "hosted_vllm": 2}
    with LatencyServer(0.05) as server:
        spec = load_sweep(
            sweep_file(
                limit=LIMIT,
                routers=["rules", "oracle"],
                lms=[
                    {"spec": "openai/stub-a", "api_base": server.url, "cache": False},
                    {"spec": "hosted_vllm/stub-b", "api_base": server.url, "cache": False},
                ],
                run={"concurrency": 3},
                providers=caps,
            )
        )
        # a lease not renewed (every TTL/3, from a thread of the worker) within its TTL (30 s) is
        # given to another call while its own is still in flight: the cap would then break
        # because the machine was slow, not because the slots leak
        result = quiet_sweep(spec, RayExecutor(lease_ttl_s=slack(30)), tmp_path / "r.duckdb")
    assert result.status == "FINISHED"
    # seen from the provider's side: never more calls in flight than the cap, over every worker
    assert server.requests["stub-a"] >= 4 and server.requests["stub-b"] >= 4
    assert server.max_in_flight["stub-a"] <= caps["openai"]
    assert server.max_in_flight["stub-b"] <= caps["hosted_vllm"]
    for provider, cap in caps.items():
        assert result.slot_stats[provider]["cap"] == cap
        assert 1 <= result.slot_stats[provider]["max_in_flight"] <= cap
    assert result.slot_stats["openai"]["granted"] >= server.requests["stub-a"]
