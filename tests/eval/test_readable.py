"""Tables for reading: one interval cell per figure, human names, rounded numbers."""

from __future__ import annotations

import math

import pandas as pd

from routerlab.eval.readable import human_name, readable_number, readable_table
from routerlab.eval.robustness import diversion_of_results


def test_flat_figures_become_one_cell_per_figure_with_human_names() -> None:
    frame = pd.DataFrame(
        {
            "diverted": [0.125, math.nan],
            "diverted_ci_low": [0.05, math.nan],
            "diverted_ci_high": [0.2, math.nan],
            "diverted_n": [8.0, 0.0],
            "risk.coverage": [0.0, 1.0],
            "cold_latency_p50_s": [0.00012345, 20.94],
        },
        index=["hybrid", "rules"],
    )
    table = readable_table(frame)
    assert list(table.columns) == ["diverted [95% CI]", "diverted n", "coverage", "cold latency p50 (s)"]
    assert table.loc["hybrid", "diverted [95% CI]"] == "0.12 [0.05, 0.20]"
    assert table.loc["rules", "diverted [95% CI]"] == "–" and table.loc["rules", "diverted n"] == "0"
    assert table.loc["hybrid", "diverted n"] == "8" and table.loc["hybrid", "coverage"] == "0"
    assert (
        table.loc["hybrid", "cold latency p50 (s)"] == "0.00012"
        and table.loc["rules", "cold latency p50 (s)"] == "20.94"
    )


def test_names_and_numbers() -> None:
    assert human_name("router_tokens_per_ex") == "router tokens per example"
    assert human_name("ex") == "EX" and human_name("diverted.to_chat") == "diverted to chat"
    assert [readable_number(v) for v in (1.0, 0.5, 1234.5, 0.004, None, "x")] == ["1", "0.50", "1234", "0.004", "", "x"]


def test_the_metrics_a_notebook_shows_lose_their_storage_names() -> None:
    from tests.eval.conftest import build_result

    results = [
        build_result(f"e{i}", "rules", {"ex": 1.0}, predicted_intent="chat" if i < 2 else None) for i in range(6)
    ]
    shown = readable_table(pd.DataFrame({"rules": diversion_of_results(results).metrics()}).T)
    assert not [c for c in shown.columns if "_" in c]
    assert any(c.endswith("[95% CI]") for c in shown.columns)
