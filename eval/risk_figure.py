"""The risk-coverage figure of a router comparison (docs/metrics.md section 8).

Apart from the report's figures (:mod:`routerlab.eval.analysis`) because the MLflow writer draws
it for every run with a risk curve (:mod:`routerlab.eval.tracking`), and the analysis package
reads the tracking package: this one reads neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
from matplotlib.figure import Figure

from routerlab.eval.plot_layout import fit_texts_to_canvas
from routerlab.eval.risk import format_aurc, risk_coverage, risk_summary
from routerlab.eval.scoring import ExampleResult

__all__ = ["plot_risk_coverage", "risk_coverage_frame", "router_colours"]


def risk_coverage_frame(results: Mapping[str, Sequence[ExampleResult]]) -> pd.DataFrame:
    """Each router's risk-coverage curve (:func:`routerlab.eval.risk.risk_coverage`) in long form.

    Args:
        results: ``router -> its results``.

    Returns:
        One row per point: ``router, threshold, coverage, risk, aurc`` (``aurc`` repeated per
        router, the figure :func:`routerlab.eval.risk.risk_summary` reports). Routers without
        answered data questions have no rows.
    """
    rows = []
    for label, rs in results.items():
        aurc = risk_summary(list(rs)).aurc
        rows += [
            {"router": label, "threshold": t, "coverage": c, "risk": k, "aurc": aurc}
            for t, c, k in risk_coverage(list(rs))
        ]
    return pd.DataFrame(rows, columns=["router", "threshold", "coverage", "risk", "aurc"])


def router_colours(n: int) -> list[str]:
    """One colour per router, in the order every figure gives them."""
    return [f"C{i % 10}" for i in range(n)]


def plot_risk_coverage(curves: pd.DataFrame) -> Figure:
    """Risk (share of answers that are wrong) against coverage, one step curve per router.

    A router that answers only above a confidence threshold moves left along its curve; lower
    is better at every coverage. A router whose confidence is constant is one point. The legend
    gives each router's AURC (docs/metrics.md section 8).

    Args:
        curves: :func:`risk_coverage_frame` output.
    """
    fig = Figure(figsize=(7, 5), layout="constrained")
    ax = fig.add_subplot()
    routers = list(dict.fromkeys(curves["router"])) if not curves.empty else []
    for router, colour in zip(routers, router_colours(len(routers)), strict=True):
        points = curves[curves["router"] == router].sort_values("coverage")
        label = f"{router} (AURC {format_aurc(float(points['aurc'].iloc[0]))})"
        if len(points) == 1:
            ax.scatter(points["coverage"], points["risk"], color=colour, s=50, label=label + ", one confidence")
        else:
            ax.plot(points["coverage"], points["risk"], drawstyle="steps-post", marker="o", markersize=3,
                    color=colour, label=label)  # fmt: skip
    if not routers:
        ax.text(0.5, 0.5, "no answered data questions", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("coverage (fraction of data questions answered)")
    ax.set_ylabel("risk (fraction of answers that are wrong)")
    ax.grid(alpha=0.3)
    if routers:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title("Risk-coverage: answering only above a confidence threshold", fontsize=10)
    return fit_texts_to_canvas(fig)
