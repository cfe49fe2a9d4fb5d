"""Tracking and results stores are checked before a run starts: each bad store gets its own message,
exit code 2, and no run is left behind."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from routerlab.agents.errors import ConfigError
from routerlab.cli import app
from routerlab.eval.store import ResultsStore
from routerlab.eval.tracking import check_tracking_store


def _run(tmp: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app,
        ["run", "--lm", "scripted:basic", "--router", "rules", "--limit", "2", "--store", str(tmp / "r.duckdb"), *args],
    )
    # the error console wraps long lines: compare with single spaces
    return result.exit_code, " ".join(result.output.split())


def _runs_left(tmp: Path) -> int:
    path = tmp / "r.duckdb"
    return len(ResultsStore(str(path)).runs()) if path.exists() else 0


@pytest.mark.parametrize(
    ("make_uri", "message"),
    [
        (lambda tmp: "bogus://x", "unknown scheme 'bogus'"),
        (lambda tmp: str(tmp / "mlflow.db"), "not a URI"),
        (lambda tmp: f"sqlite:///{tmp}/nope/mlflow.db", "its folder does not exist"),
        (lambda tmp: f"sqlite:///{tmp}", "is a folder"),
        (lambda tmp: f"sqlite:///{tmp}/notes.txt", "not a SQLite database"),
    ],
)
def test_bad_tracking_store_exits_2_before_any_run(tmp_path: Path, make_uri, message: str) -> None:
    (tmp_path / "notes.txt").write_text("not a database\n")
    code, out = _run(tmp_path, "--tracking-uri", make_uri(tmp_path))
    assert code == 2, out
    assert message in out
    assert "Traceback" not in out
    assert _runs_left(tmp_path) == 0


def test_silent_tracking_server_fails_within_the_timeout() -> None:
    # a socket that accepts connections (the kernel's backlog) but never answers
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        t0 = time.monotonic()
        with pytest.raises(ConfigError) as err:
            check_tracking_store(f"http://127.0.0.1:{port}", timeout_s=1.0)
        assert time.monotonic() - t0 < 10
    assert "does not answer" in str(err.value)


def test_refused_tracking_server_is_reported(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused
        code, out = _run(tmp_path, "--tracking-uri", f"http://127.0.0.1:{port}")
    assert code == 2, out
    assert "does not answer" in out
    assert _runs_left(tmp_path) == 0


def test_good_sqlite_tracking_store_passes(tmp_path: Path) -> None:
    check_tracking_store(f"sqlite:///{tmp_path}/new.db")
    code, out = _run(tmp_path, "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db")
    assert code == 0, out
    check_tracking_store(f"sqlite:///{tmp_path}/mlflow.db")  # an existing MLflow store


def _store_case(tmp: Path, kind: str) -> Path:
    if kind == "folder":
        return tmp
    path = tmp / f"{kind}.duckdb"
    if kind == "sqlite":
        import sqlite3

        with sqlite3.connect(path) as con:
            con.execute("CREATE TABLE t (x)")
    elif kind == "text":
        path.write_text("this is a plain text file, not a database\n")
    return path


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("folder", "is a folder"),
        ("sqlite", "is a SQLite database, not a DuckDB results store"),
        ("text", "not a DuckDB file"),
    ],
)
def test_each_results_store_open_error_says_what_it_is(tmp_path: Path, kind: str, message: str) -> None:
    path = _store_case(tmp_path, kind)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = CliRunner().invoke(
        app, ["run", "--lm", "scripted:basic", "--router", "rules", "--limit", "1", "--no-mlflow", "--store", str(path)]
    )
    out = " ".join(result.output.split())
    assert result.exit_code == 2, out
    assert message in out
    assert "another process" not in out
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written, no extension fetched


def test_compare_on_a_missing_store_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "missing" / "r.duckdb"
    result = CliRunner().invoke(app, ["compare", "x", "--store", str(store)])
    assert result.exit_code == 2
    assert "no such store" in " ".join(result.output.split())
    assert not (tmp_path / "missing").exists()


def test_compare_reads_a_read_only_store(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "--no-mlflow")
    assert code == 0, out
    session = re.search(r"session id: (\S+)", out).group(1)  # type: ignore[union-attr]
    store = tmp_path / "r.duckdb"
    before = store.read_bytes()
    store.chmod(0o444)
    try:
        result = CliRunner().invoke(app, ["compare", session, "--store", str(store), "--format", "json"])
    finally:
        store.chmod(0o644)
    assert result.exit_code == 0, result.output
    assert f"{session}.rules" in result.output
    assert store.read_bytes() == before


def test_bad_input_leaves_no_store_behind(tmp_path: Path) -> None:
    store = tmp_path / "new" / "r.duckdb"
    for args in (["--router", "nosuch"], ["--router", "hybrid", "--router-arg", "hybrid.threshold=abc"]):
        result = CliRunner().invoke(
            app, ["run", "--lm", "scripted:basic", "--limit", "1", "--no-mlflow", "--store", str(store), *args]
        )
        assert result.exit_code == 2, result.output
    assert not (tmp_path / "new").exists()
