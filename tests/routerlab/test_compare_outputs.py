"""What a sweep and ``compare`` print: scores, variant labels, the compare hint, CSV tables."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from routerlab.cli import app

GRID = """datasets: [builtin]
limit: 2
routers:
  - {name: hybrid, grid: {threshold: [0.5, 0.9]}}
lms: [scripted:basic]
"""


def _sweep(tmp: Path) -> tuple[str, str]:
    (tmp / "sweep.yaml").write_text(GRID)
    store = str(tmp / "r.duckdb")
    result = CliRunner().invoke(app, ["sweep", "--config", str(tmp / "sweep.yaml"), "--no-mlflow", "--store", store])
    assert result.exit_code == 0, result.output
    return result.output, re.search(r"sweep id: (\S+)", result.output).group(1)  # type: ignore[union-attr]


def test_sweep_summary_hint_and_variant_labels(tmp_path: Path) -> None:
    out, sweep_id = _sweep(tmp_path)
    summary = [line for line in out.splitlines() if re.match(r"^c00\d ", line)]
    assert len(summary) == 2
    assert not any("NaN" in line or "nan" in line for line in summary), summary
    store = str(tmp_path / "r.duckdb")
    assert f"compare: routerlab compare {sweep_id} --store {store}" in " ".join(out.split()).replace(
        " --store", " --store"
    )
    result = CliRunner().invoke(app, ["compare", sweep_id, "--store", store, "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert "hybrid (threshold=0.5)" in result.output and "hybrid (threshold=0.9)" in result.output
    assert f"({sweep_id}" not in result.output  # no run ids where the arguments tell the runs apart


def test_compare_csv_is_one_table_per_file(tmp_path: Path) -> None:
    _, sweep_id = _sweep(tmp_path)
    store = str(tmp_path / "r.duckdb")
    out_dir = tmp_path / "csv"
    result = CliRunner().invoke(
        app, ["compare", sweep_id, "--store", store, "--format", "csv", "--out-dir", str(out_dir)]
    )
    assert result.exit_code == 0, result.output
    runs = pd.read_csv(out_dir / "end_to_end_rates.csv")
    pairs = pd.read_csv(out_dir / "end_to_end_pairs.csv")
    assert len(runs) == 2 and "run_id" in runs.columns and runs["n"].dtype.kind == "i"
    assert set(runs["router"]) == {"hybrid (threshold=0.5)", "hybrid (threshold=0.9)"}
    # one test per pair of distinct routers and verdict measure
    assert set(pairs["a"]) | set(pairs["b"]) <= set(runs["router"]) and "p" in pairs.columns
    # on stdout: every part's rates, one header, which pandas reads without a stray header row
    result = CliRunner().invoke(app, ["compare", sweep_id, "--store", store, "--format", "csv"])
    lines = [line for line in result.stdout.splitlines() if line]
    assert lines[0].startswith("router,") and len(lines) == 3
    assert "pass --out-dir DIR" in result.output
    # the former name of the folder option still works, with a note naming the new one
    old_dir = tmp_path / "old"
    result = CliRunner().invoke(app, ["compare", sweep_id, "--store", store, "--format", "csv", "--out", str(old_dir)])
    assert result.exit_code == 0, result.output
    assert (old_dir / "end_to_end_rates.csv").read_text() == (out_dir / "end_to_end_rates.csv").read_text()
    assert "--out is deprecated here; use --out-dir" in result.output
