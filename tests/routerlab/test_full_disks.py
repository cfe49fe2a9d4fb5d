"""A full disk under the ask cache or a new MLflow store: a clear exit, then it works (issue 62).

The probes: the built-in database is built into the cache on first use, and on a full disk
DuckDB's ``IOException: No space left on device`` ended ``ask`` with a traceback (exit 1); a new
``mlflow.db`` on a full disk failed while MLflow created its tables (a SQLAlchemy traceback, exit
1). The full disk is a real tmpfs (mounted here: root only, else skipped).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROUTERLAB = str(Path(sys.executable).with_name("routerlab"))


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[tuple[Path, callable]]:
    """A real 64 KiB tmpfs filled to the last block, and a function that grows it."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    fd = os.open(where / "fill", os.O_CREAT | os.O_WRONLY)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:  # the disk is full: what the test needs
        pass
    finally:
        os.close(fd)

    def grow(size: str) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(where)], check=True)

    try:
        yield where, grow
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_ask_with_its_cache_on_a_full_disk_exits_2_then_works(tmp_path: Path, full_disk) -> None:
    disk, grow = full_disk
    env = {**os.environ, "ROUTERLAB_CACHE": str(disk / "cache"), "COLUMNS": "300"}
    cmd = [ROUTERLAB, "ask", "How many service areas are there?", "--lm", "scripted:basic"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    text = " ".join((first.stdout + first.stderr).split())
    assert first.returncode == 2, text[-2000:]
    assert "its disk is full" in text and "No space left on device" in text and "ROUTERLAB_CACHE" in text
    assert "Traceback" not in text
    grow("64m")  # free space, as the fix says
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert second.returncode == 0, (second.stdout + second.stderr)[-2000:]


def test_a_new_mlflow_store_on_a_full_disk_exits_2_and_writes_nothing(tmp_path: Path, full_disk) -> None:
    disk, grow = full_disk
    uri = f"sqlite:///{disk}/mlflow.db"
    store = tmp_path / "r.duckdb"
    cmd = [ROUTERLAB, "run", "--lm", "scripted:basic", "--router", "rules", "--limit", "2"]
    cmd += ["--store", str(store), "--tracking-uri", uri]
    env = {**os.environ, "COLUMNS": "300"}
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    text = " ".join((first.stdout + first.stderr).split())
    assert first.returncode == 2, text[-2000:]
    assert "a write failed because its disk is full" in text and "run the same command again" in text
    assert "Traceback" not in text
    from routerlab.eval.store import ResultsStore

    assert not store.exists() or ResultsStore(store, read_only=True).runs().empty
    grow("64m")
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert second.returncode == 0, (second.stdout + second.stderr)[-2000:]
