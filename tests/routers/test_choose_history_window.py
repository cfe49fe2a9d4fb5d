"""``scripts/choose_history_window.py``: the history-window rule applied case by case."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "choose_history_window.py"
_spec = importlib.util.spec_from_file_location("choose_history_window", SCRIPT)
chooser = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(chooser)  # type: ignore[union-attr]


def _frame(correct: list[bool]) -> pd.DataFrame:
    """Decisions on the same 20 turns (the first 5 are first turns), right where ``correct`` says."""
    return pd.DataFrame(
        {"example_id": [f"t{i}" for i in range(20)], "correct": correct, "turn": [1] * 5 + [2] * 15, "lm_calls": 1}
    ).set_index("example_id")


BASE = [True] * 10 + [False] * 10  # last_k: 0.50


def test_a_window_above_the_margin_that_wins_more_than_it_loses_is_chosen():
    better = [True] * 12 + [False] * 8  # 0.60: wins 2, loses 0
    chosen, table = chooser.choose({"last_k": _frame(BASE), "none": _frame(better)})
    assert chosen == "none"
    row = table.set_index("window").loc["none"]
    assert (row["won"], row["lost"]) == (2, 0) and row["accuracy"] == pytest.approx(0.60)


def test_a_window_below_the_margin_keeps_last_k():
    # on the same turns the accuracy difference is (won - lost) / n, so below +0.03 decides
    same = [True] * 10 + [False] * 10  # +0.00
    worse = [False, False] + [True] * 8 + [False] * 10  # -0.10
    for frame in (same, worse):
        assert chooser.choose({"last_k": _frame(BASE), "none": _frame(frame)})[0] == "last_k"


def test_a_tie_within_a_hundredth_goes_to_the_cheaper_window():
    a = [True] * 14 + [False] * 6  # 0.70
    assert chooser.choose({"last_k": _frame(BASE), "rewrite": _frame(a), "last": _frame(a)})[0] == "last"


def test_the_command_names_what_is_missing(tmp_path):
    path = tmp_path / "d.csv"
    _frame(BASE).reset_index().assign(router="llm").to_csv(path, index=False)
    run = [sys.executable, str(SCRIPT), "--router", "llm"]
    no_base = subprocess.run([*run, f"none={path}"], capture_output=True, text=True)
    assert no_base.returncode != 0 and "pass last_k=PATH" in no_base.stderr
    bad = subprocess.run([*run, f"nine={path}"], capture_output=True, text=True)
    assert bad.returncode != 0 and "WINDOW one of none, last, last_k, rewrite" in bad.stderr
    other = subprocess.run([*run.copy()[:-1], "dspy", f"last_k={path}"], capture_output=True, text=True)
    assert other.returncode != 0 and "no decision of router 'dspy'" in other.stderr
    ok = subprocess.run([*run, f"last_k={path}"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.strip() == "last_k"
