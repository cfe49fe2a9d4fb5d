"""`routerlab ui` starts the MLflow UI on loopback and serves the runs of a real store."""

from __future__ import annotations

import socket
import time
import urllib.request
from pathlib import Path

import pytest

from tests.servers import routerlab_ui

pytestmark = pytest.mark.server


def _descendants(pid: int) -> list[str]:
    """Command lines of every live process below ``pid`` (read from /proc)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited while the table was read
        parent[int(stat.parent.name)] = int(fields[1])
    below, todo = [], [pid]
    while todo:
        p = todo.pop()
        children = [c for c, pp in parent.items() if pp == p]
        below += children
        todo += children
    lines = []
    for c in below:
        try:
            lines.append((Path("/proc") / str(c) / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return lines


def test_ui_starts_and_lists_the_experiments_of_the_store(tmp_path: Path):
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("routerlab/ui-check")
    with mlflow.start_run(run_name="rules | scripted"):
        mlflow.log_metric("route", 0.5)
    mlflow.set_tracking_uri(None)

    with routerlab_ui(uri, tmp_path) as ui:
        port, proc = ui.port, ui.proc
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/2.0/mlflow/experiments/search",
            data=b'{"max_results": 10}',
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read().decode()
        assert "routerlab/ui-check" in body
        # the MLflow server runs without its job runner (routerlab uses none of its jobs)
        below = _descendants(proc.pid)
        assert any("mlflow ui" in c for c in below), below
        assert not any("huey" in c or "_job_runner" in c for c in below), below
        # one server worker, in the uvicorn process itself: MLflow's default of 4 spawned worker
        # processes that each import MLflow, which tripled the start-up on 2 cores
        assert any("uvicorn" in c and "--workers 1 " in c for c in below), below
        assert not any("multiprocessing" in c for c in below), below
        # it says where it is, and its server stops with it (SIGTERM to routerlab alone)
        assert f"MLflow UI: http://127.0.0.1:{port}" in (tmp_path / "ui.out").read_text()
        proc.send_signal(15)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    pass
            except OSError:
                break  # nothing listens on the port any more
            assert time.monotonic() < deadline, "the MLflow server outlived routerlab ui"
            time.sleep(0.25)
