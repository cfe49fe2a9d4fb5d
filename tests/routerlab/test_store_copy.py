"""A session's MLflow store folder copied elsewhere keeps its artifacts: read back, and served by `routerlab ui`."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import mlflow
import pytest

from routerlab.eval.tracking import load_examples

pytestmark = pytest.mark.server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as r:
        assert r.status == 200, url
        return r.read()


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    """A scripted session logged by `routerlab run` in one folder, the folder copied and the original deleted."""
    first = tmp_path_factory.mktemp("first")
    cli = [sys.executable, "-m", "routerlab.cli", "run", "--router", "rules,oracle", "--limit", "3"]
    cli += ["--lm", "scripted:basic", "--tracking-uri", f"sqlite:///{first / 'mlflow.db'}"]
    cli += ["--store", str(first / "results.duckdb")]
    proc = subprocess.run(cli, cwd=first, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    second = tmp_path_factory.mktemp("copied") / "store"
    shutil.copytree(first, second)
    shutil.rmtree(first)
    return second


def _runs(uri: str) -> tuple[mlflow.entities.Run, list[mlflow.entities.Run]]:
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("routerlab/builtin")
    runs = client.search_runs([experiment.experiment_id])
    parent = next(r for r in runs if r.data.tags.get("routerlab.kind") == "comparison")
    return parent, [r for r in runs if r is not parent]


def test_artifact_locations_are_relative_to_the_store(moved):
    uri = f"sqlite:///{moved / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    # nothing in the store names the folder it was written in
    assert client.get_experiment_by_name("routerlab/builtin").artifact_location == "mlflow-artifacts:/routerlab_builtin"
    parent, children = _runs(uri)
    for run in [parent, *children]:
        assert run.info.artifact_uri.startswith("mlflow-artifacts:/routerlab_builtin/"), run.info.artifact_uri
    # the files sit under mlartifacts/ beside the database
    assert (moved / "mlartifacts" / "routerlab_builtin" / parent.info.run_id / "artifacts" / "verdict.md").is_file()


def test_a_copied_store_reads_its_artifacts_after_the_original_is_gone(moved, tmp_path):
    uri = f"sqlite:///{moved / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    parent, children = _runs(uri)
    assert {"comparison.md", "verdict.md", "rates.png"} <= {a.path for a in client.list_artifacts(parent.info.run_id)}
    verdict = Path(client.download_artifacts(parent.info.run_id, "verdict.md", str(tmp_path))).read_text()
    assert verdict.startswith("- **end-to-end success (n=3)**: best ")
    for child in children:
        frame = load_examples(child.info.run_id, uri)
        assert len(frame) == 3 and frame["score_success"].notna().all()
    # and what is logged now lands in the copy
    client.log_text(parent.info.run_id, "written after the move", "after.txt")
    assert (moved / "mlartifacts" / "routerlab_builtin" / parent.info.run_id / "artifacts" / "after.txt").is_file()


def test_routerlab_ui_serves_the_artifacts_of_a_copied_store(moved, tmp_path):
    uri = f"sqlite:///{moved / 'mlflow.db'}"
    parent, children = _runs(uri)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    cli = [sys.executable, "-m", "routerlab.cli", "ui", "--tracking-uri", uri, "--port", str(port)]
    log = (tmp_path / "ui.out").open("w")
    # started from another folder: nothing may depend on the working directory
    proc = subprocess.Popen(cli, env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240  # start-up imports take tens of seconds on a loaded 2-core machine
        while True:
            assert proc.poll() is None, (tmp_path / "ui.out").read_text()
            try:
                if _get(f"{base}/health"):
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the UI did not answer /health"
            time.sleep(1)
        # what the run page's artifact panel asks for: the list, then a file
        listing = json.loads(_get(f"{base}/ajax-api/2.0/mlflow/artifacts/list?run_id={parent.info.run_id}"))
        assert {"comparison.md", "verdict.md", "rates.png"} <= {f["path"] for f in listing["files"]}
        verdict = _get(f"{base}/get-artifact?path=verdict.md&run_uuid={parent.info.run_id}").decode()
        assert verdict.startswith("- **end-to-end success (n=3)**: best ")
        png = _get(f"{base}/get-artifact?path=rates.png&run_uuid={parent.info.run_id}")
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        child = children[0].info.run_id
        table = json.loads(_get(f"{base}/get-artifact?path=examples.json&run_uuid={child}"))
        assert len(table["data"]) == 3
        assert not (tmp_path / "mlartifacts").exists()  # nothing served from (or created in) the cwd
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=60)
        log.close()
