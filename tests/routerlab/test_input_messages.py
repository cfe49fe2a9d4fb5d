"""Config and option messages name what the user typed, and say where a syntax error is."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from routerlab.cli import app

ROUTERLAB = str(Path(sys.executable).with_name("routerlab"))


def _run(tmp: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app,
        ["run", "--lm", "scripted:basic", "--router", "rules", "--no-mlflow", "--store", str(tmp / "r.duckdb"), *args],
    )
    return result.exit_code, " ".join(result.output.split())


def test_yaml_syntax_error_gives_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("limit: 3\nsplit: [dev\n")
    code, out = _run(tmp_path, "--config", str(tmp_path / "bad.yaml"))
    assert code == 2
    assert "does not parse at line 3, column 1" in out


def test_json_syntax_error_gives_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"limit": 3,\n "split": }\n')
    code, out = _run(tmp_path, "--config", str(tmp_path / "bad.json"))
    assert code == 2
    assert "at line 2, column 11" in out


def test_routers_in_a_run_config_says_how_to_name_routers(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("routers: [rules]\nlimit: 2\n")
    code, out = _run(tmp_path, "--config", str(tmp_path / "run.yaml"))
    assert code == 2
    assert "--router rules,llm" in out and "sweep" in out


def test_missing_dataset_file_names_the_option(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "--dataset", "csv", "--dataset-path", str(tmp_path / "none.csv"))
    assert code == 2
    assert "--dataset-path" in out


def test_serve_does_not_announce_an_address_it_cannot_bind() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [ROUTERLAB, "serve", "--lm", "scripted:basic", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 2, proc.stderr
    assert "open http" not in proc.stdout
    assert f"cannot listen on 127.0.0.1:{port}" in " ".join(proc.stderr.split())
