"""Calibration: ECE and reliability bins, on hand-checkable numbers and on real run results."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from routerlab.eval.confidence_calibration import (
    calibration_summary,
    calibration_table,
    expected_calibration_error,
    plot_reliability,
    reliability,
)


def test_always_sure_and_right_70_percent_has_ece_030():
    confs = [1.0] * 10
    hits = [True] * 7 + [False] * 3
    assert expected_calibration_error(confs, hits) == pytest.approx(0.3)
    top = reliability(confs, hits)[-1]
    assert top.n == 10 and top.confidence == 1.0 and top.accuracy == pytest.approx(0.7)


def test_ece_weights_each_bin_by_its_share_of_decisions():
    # bin [0.2, 0.3): 2 decisions at 0.25, 1 right -> gap 0.25; bin [0.9, 1.0]: 2 at 0.95, both right -> gap 0.05
    confs, hits = [0.25, 0.25, 0.95, 0.95], [True, False, True, True]
    assert expected_calibration_error(confs, hits) == pytest.approx((2 * 0.25 + 2 * 0.05) / 4)
    bins = reliability(confs, hits)
    assert [b.n for b in bins] == [0, 0, 2, 0, 0, 0, 0, 0, 0, 2]
    assert math.isnan(bins[0].accuracy) and math.isnan(bins[0].confidence)


def test_a_calibrated_router_has_zero_ece():
    confs = [0.5, 0.5, 0.8, 0.8, 0.8, 0.8, 0.8]
    hits = [True, False, True, True, True, True, False]
    assert expected_calibration_error(confs, hits) == pytest.approx(0.0)


def test_bad_input_says_what_was_expected():
    with pytest.raises(ValueError, match="one outcome per decision"):
        reliability([0.5, 0.5], [True])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        reliability([1.5], [True])
    assert math.isnan(expected_calibration_error([], []))


def test_table_per_router_and_plot(tmp_path):
    frame = pd.DataFrame(
        {
            "router": ["a"] * 4 + ["b"] * 2,
            "confidence": [1.0, 1.0, 1.0, 1.0, 0.6, None],
            "correct": [True, True, False, False, True, False],
        }
    )
    table = calibration_table(frame)
    assert table["router"].tolist() == ["a", "b"]
    a, b = table.to_dict("records")
    assert a["n"] == 4 and a["ece"] == pytest.approx(0.5) and a["accuracy"] == 0.5
    assert b["n"] == 1 and b["ece"] == pytest.approx(0.4)  # the row without a confidence is left out
    summaries = {"a": calibration_summary([1.0] * 4, [True, True, False, False])}
    ax = plot_reliability(summaries)
    ax.figure.savefig(tmp_path / "rel.png")
    assert (tmp_path / "rel.png").stat().st_size > 0
    assert "ECE 0.50" in ax.get_legend().get_texts()[1].get_text()
