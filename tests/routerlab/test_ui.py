"""`routerlab ui` starts the MLflow UI on loopback and serves the runs of a real store."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ui_starts_and_lists_the_experiments_of_the_store(tmp_path: Path):
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("routerlab/ui-check")
    with mlflow.start_run(run_name="rules | scripted"):
        mlflow.log_metric("route", 0.5)
    mlflow.set_tracking_uri(None)

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}  # as a user's shell
    cli = [sys.executable, "-m", "routerlab.cli", "ui", "--tracking-uri", uri, "--port", str(port)]
    log = (tmp_path / "ui.out").open("w")
    proc = subprocess.Popen(cli, env=env, stdout=log, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240  # start-up imports take tens of seconds on a loaded 2-core machine
        while True:
            assert proc.poll() is None, "routerlab ui exited"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the UI did not answer /health (start-up deadlock?)"
            time.sleep(1)
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/2.0/mlflow/experiments/search",
            data=b'{"max_results": 10}',
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read().decode()
        assert "routerlab/ui-check" in body
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
            time.sleep(1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=30)
        log.close()
