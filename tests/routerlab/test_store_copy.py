"""A session's MLflow store folder copied elsewhere keeps its artifacts: read back, and served by `routerlab ui`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import mlflow
import pytest

from routerlab.eval.tracking import load_examples, store_client
from tests.servers import routerlab_ui

pytestmark = pytest.mark.server


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
    client = store_client(uri)  # how a reader opens a store: it resolves artifacts beside it
    parent, children = _runs(uri)
    assert {"comparison.md", "verdict.md", "end_to_end_rates.png"} <= {
        a.path for a in client.list_artifacts(parent.info.run_id)
    }
    verdict = Path(client.download_artifacts(parent.info.run_id, "verdict.md", str(tmp_path))).read_text()
    assert verdict.startswith("**End to end** (whole turns, n=3):\n\n- too few to compare")
    for child in children:
        frame = load_examples(child.info.run_id, uri)
        assert len(frame) == 3 and frame["score_success"].notna().all()
    # and what is logged now lands in the copy
    client.log_text(parent.info.run_id, "written after the move", "after.txt")
    assert (moved / "mlartifacts" / "routerlab_builtin" / parent.info.run_id / "artifacts" / "after.txt").is_file()


def test_routerlab_ui_serves_the_artifacts_of_a_copied_store(moved, tmp_path):
    uri = f"sqlite:///{moved / 'mlflow.db'}"
    parent, children = _runs(uri)
    # started from another folder: nothing may depend on the working directory
    with routerlab_ui(uri, tmp_path) as ui:
        base = ui.base
        # what the run page's artifact panel asks for: the list, then a file
        listing = json.loads(_get(f"{base}/ajax-api/2.0/mlflow/artifacts/list?run_id={parent.info.run_id}"))
        assert {"comparison.md", "verdict.md", "end_to_end_rates.png"} <= {f["path"] for f in listing["files"]}
        verdict = _get(f"{base}/get-artifact?path=verdict.md&run_uuid={parent.info.run_id}").decode()
        assert verdict.startswith("**End to end** (whole turns, n=3):\n\n- too few to compare")
        png = _get(f"{base}/get-artifact?path=end_to_end_rates.png&run_uuid={parent.info.run_id}")
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        child = children[0].info.run_id
        table = json.loads(_get(f"{base}/get-artifact?path=examples.json&run_uuid={child}"))
        assert len(table["data"]) == 3
        assert not (tmp_path / "mlartifacts").exists()  # nothing served from (or created in) the cwd
