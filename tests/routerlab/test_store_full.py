"""Issue 50 item 7: a full disk under the results or MLflow store, and a truncated ``mlflow.db``.

Each exits 2 with what failed and how to recover (and the resume command), no traceback, and no
run left RUNNING; the recovery works as printed. The full disk is a real tmpfs (mounted here:
the test needs root and ``mount``, else it is skipped); the truncated store is a real MLflow
SQLite file cut in half.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from routerlab.eval.store import ResultsStore

ROUTERLAB = str(Path(sys.executable).with_name("routerlab"))
_RESUME = re.compile(r"resume with\s+(routerlab run --resume \S+.*)$", re.M)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    return env | {"PYTHONUNBUFFERED": "1", "COLUMNS": "250"}


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ROUTERLAB, "run", *args], capture_output=True, text=True, env=_env(), cwd=cwd, timeout=600)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[tuple[Path, callable]]:
    """A real tmpfs of 1 MiB, and a function that grows it (freeing space, as a user would)."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")

    def grow(size: str) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(where)], check=True)

    try:
        yield where, grow
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _no_running(store: Path) -> set[str]:
    return set(ResultsStore(store, read_only=True).runs()["status"])


def test_a_full_disk_under_the_results_store_exits_2_and_resumes(tmp_path, small_disk):
    disk, grow = small_disk
    store = disk / "results.duckdb"
    args = ["--lm", "scripted:basic", "--router", "rules", "--limit", "20", "--store", str(store), "--no-mlflow"]
    full = _run(args, tmp_path)
    assert full.returncode == 2, full.stderr[-3000:]
    assert "Traceback" not in full.stderr
    text = " ".join(full.stderr.split())
    assert f"results store {store}: a write failed because its disk is full" in text
    assert "No space left on device" in text and "free space there" in text
    resume = _RESUME.search(full.stdout + full.stderr)
    assert resume is not None, full.stdout[-2000:]
    assert _no_running(store) == {"FAILED"}
    saved = len(ResultsStore(store, read_only=True).query("SELECT * FROM examples"))
    assert 0 < saved < 20
    grow("16m")  # the recovery, as printed: free space, then resume
    again = _run(shlex.split(resume.group(1))[2:], tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _no_running(store) == {"FINISHED"}
    assert len(ResultsStore(store, read_only=True).query("SELECT * FROM examples")) == 20
    print(f"\nresults store full: exit {full.returncode}, {saved} of 20 saved; resume exit {again.returncode}")


def _mlflow_statuses(uri: str) -> set[str]:
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    exps = [e.experiment_id for e in client.search_experiments()]
    return {r.info.status for r in client.search_runs(exps)}


def test_a_full_disk_under_the_mlflow_store_exits_2_and_resumes(tmp_path, small_disk):
    disk, grow = small_disk
    grow("1400k")  # room for MLflow's empty schema (about 1.1 MB), not for the session's logging
    store = tmp_path / "results.duckdb"
    uri = f"sqlite:///{disk}/mlflow.db"
    args = ["--lm", "scripted:basic", "--router", "rules", "--limit", "20", "--store", str(store)]
    full = _run([*args, "--tracking-uri", uri], tmp_path)
    assert full.returncode == 2, full.stderr[-3000:]
    assert "Traceback" not in full.stderr
    text = " ".join(full.stderr.split())
    assert f"tracking store '{uri}': a write failed because its disk is full" in text, text[-3000:]
    resume = _RESUME.search(full.stdout + full.stderr)
    assert resume is not None
    assert "RUNNING" not in _no_running(store)
    grow("64m")
    again = _run(shlex.split(resume.group(1))[2:], tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _no_running(store) == {"FINISHED"}
    assert "RUNNING" not in _mlflow_statuses(uri)
    print(f"\nMLflow store full: exit {full.returncode}; resume exit {again.returncode}")


def test_a_truncated_mlflow_db_exits_2_before_anything_is_written(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    store = tmp_path / "results.duckdb"
    args = ["--lm", "scripted:basic", "--router", "rules", "--limit", "2", "--store", str(store), "--tracking-uri", uri]
    first = _run(args, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    db = tmp_path / "mlflow.db"
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    before = len(ResultsStore(store, read_only=True).runs())
    cut = _run(args, tmp_path)
    assert cut.returncode == 2, cut.stderr[-3000:]
    assert "Traceback" not in cut.stderr
    text = " ".join(cut.stderr.split())
    assert f"tracking store '{uri}': the file is damaged (truncated or overwritten)" in text, text[-3000:]
    assert f"mv {db} {db}.damaged" in text
    assert len(ResultsStore(store, read_only=True).runs()) == before  # nothing was started
    db.rename(tmp_path / "mlflow.db.damaged")  # the recovery, as printed
    again = _run(args, tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    print(f"\ntruncated mlflow.db: exit {cut.returncode}; after the printed recovery exit {again.returncode}")
