"""Figures of a router comparison, drawn from the frames of :mod:`routerlab.eval.analysis`.

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot, so nothing is
left in pyplot's global figure list (notebooks display a returned figure once; scripts call
``fig.savefig``). Axes carry labels with units and every figure has a title.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from routerlab.eval.analysis import ATTRIBUTION_CLASSES, COST_COLUMNS, RATE_METRICS, cost_basis, pareto_front
from routerlab.eval.risk import format_aurc

__all__ = [
    "plot_attribution",
    "plot_confusion",
    "plot_cost_quality",
    "plot_latency",
    "plot_rates",
    "plot_risk_coverage",
    "plot_success_per_intent",
]

#: colours of the failure classes, stable across figures
_CLASS_COLOURS: dict[str, str] = {"router": "#d62728", "sql": "#1f77b4", "chain": "#ff7f0e", "other": "#7f7f7f"}
#: below this many seconds the latency axis is linear: a log axis cannot show the 0 s visits
_LINEAR_BELOW_S = 1e-3


def _colours(n: int) -> list[str]:
    return [f"C{i % 10}" for i in range(n)]


def _grouped_bars(
    ax: Axes, frame: pd.DataFrame, category: str, categories: Sequence[str], routers: Sequence[str]
) -> None:
    """Bars of ``value`` per category, one bar per router, with asymmetric CI error bars."""
    x = np.arange(len(categories))
    width = 0.8 / max(len(routers), 1)
    for i, (router, colour) in enumerate(zip(routers, _colours(len(routers)), strict=True)):
        sub = frame[frame["router"] == router].set_index(category).reindex(list(categories))
        values = sub["value"].to_numpy(dtype=float)
        low = np.nan_to_num(values - sub["ci_low"].to_numpy(dtype=float))
        high = np.nan_to_num(sub["ci_high"].to_numpy(dtype=float) - values)
        pos = x - 0.4 + width * (i + 0.5)
        bars = ax.bar(pos, np.nan_to_num(values), width, label=router, color=colour, yerr=[low, high], capsize=3)
        ax.bar_label(bars, labels=["" if math.isnan(v) else f"{v:.2f}" for v in values], fontsize=7, padding=2)
        for p, v in zip(pos, values, strict=True):
            if math.isnan(v):
                # a rate no example applies to is not a 0: say so on the axis
                ax.text(p, 0.02, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_xticks(x, list(categories))
    ax.set_ylim(0, 1.12)
    ax.legend(title="router", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(axis="y", alpha=0.3)


def plot_rates(rates: pd.DataFrame) -> Figure:
    """Per-router bars of the four rates with 95 % bootstrap CI error bars.

    Args:
        rates: :func:`routerlab.eval.analysis.rates_table` output.
    """
    fig = Figure(figsize=(9, 4.5), layout="constrained")
    ax = fig.add_subplot()
    metrics = [m for m in RATE_METRICS if m in set(rates["metric"])] or list(dict.fromkeys(rates["metric"]))
    _grouped_bars(ax, rates, "metric", metrics, list(dict.fromkeys(rates["router"])))
    ax.set_xticks(range(len(metrics)), [RATE_METRICS.get(m, m) for m in metrics])
    ax.set_xlabel("metric")
    ax.set_ylabel("rate (fraction of applicable examples)")
    ax.set_title("Rates per router (error bars: 95 % bootstrap CI)")
    return fig


def plot_success_per_intent(per_intent: pd.DataFrame) -> Figure:
    """End-to-end success per gold intent, grouped by intent, one bar per router, with CIs.

    Args:
        per_intent: :func:`routerlab.eval.analysis.success_per_intent` output.
    """
    fig = Figure(figsize=(9, 4.5), layout="constrained")
    ax = fig.add_subplot()
    intents = list(dict.fromkeys(per_intent["intent"]))
    _grouped_bars(ax, per_intent, "intent", intents, list(dict.fromkeys(per_intent["router"])))
    ax.set_xlabel("gold intent")
    ax.set_ylabel("end-to-end success (fraction of examples)")
    ax.set_title("Success per intent (error bars: 95 % bootstrap CI)")
    return fig


def _boxes(ax: Axes, groups: Sequence[Sequence[float]], positions: Sequence[float], colour: str, width: float) -> None:
    kept = [(list(g), p) for g, p in zip(groups, positions, strict=True) if len(g)]
    if not kept:
        return
    parts = ax.boxplot(
        [g for g, _ in kept],
        positions=[p for _, p in kept],
        widths=width,
        patch_artist=True,
        manage_ticks=False,
    )
    for box in parts["boxes"]:
        box.set_facecolor(colour)
        box.set_alpha(0.6)


def plot_latency(latency: pd.DataFrame) -> Figure:
    """Latency distributions: end to end per router, and per graph node, as box plots (seconds).

    Args:
        latency: :func:`routerlab.eval.analysis.latency_frame` output.
    """
    fig = Figure(figsize=(12, 4.5), layout="constrained")
    ax_e2e, ax_node = fig.subplots(1, 2, width_ratios=[1, 2])
    routers = list(dict.fromkeys(latency["router"]))
    colours = _colours(len(routers))
    e2e = latency[latency["stage"] == "end_to_end"]
    for i, (router, colour) in enumerate(zip(routers, colours, strict=True)):
        _boxes(ax_e2e, [e2e.loc[e2e["router"] == router, "seconds"].tolist()], [i], colour, 0.6)
    ax_e2e.set_xticks(range(len(routers)), routers, rotation=20)
    ax_e2e.set_xlabel("router")
    ax_e2e.set_ylabel("end-to-end latency (s)")
    ax_e2e.set_title(f"End to end, {cost_basis().split(':')[0]}")

    nodes = latency[latency["stage"].str.startswith("node.")]
    names = sorted({s.removeprefix("node.") for s in nodes["stage"]})
    width = 0.8 / max(len(routers), 1)
    for i, (router, colour) in enumerate(zip(routers, colours, strict=True)):
        mine = nodes[nodes["router"] == router]
        groups = [mine.loc[mine["stage"] == f"node.{n}", "seconds"].tolist() for n in names]
        _boxes(ax_node, groups, [j - 0.4 + width * (i + 0.5) for j in range(len(names))], colour, width * 0.9)
    ax_node.set_xticks(range(len(names)), names)
    # node times span milliseconds to many seconds: log above 1 ms, linear below it for 0 s visits
    ax_node.set_yscale("symlog", linthresh=_LINEAR_BELOW_S)
    # symlog autoscaling puts the slowest visit on the frame: leave it some room
    slowest = float(nodes["seconds"].max()) if len(nodes) else 1.0
    ax_node.set_ylim(0, max(slowest, _LINEAR_BELOW_S) * 3)
    ax_node.set_xlabel("graph node")
    ax_node.set_ylabel("time in node per example (s, symlog)")
    # a node's time is not kept per LM call, so it cannot be made cold: say what it is
    ax_node.set_title("Per node, observed cost (cached LM calls count as free)")
    ax_node.legend(handles=[Patch(color=c, alpha=0.6, label=r) for r, c in zip(routers, colours, strict=True)])
    if not names:
        ax_node.text(0.5, 0.5, "no per-node timings\n(MLflow tables do not keep them)", ha="center", va="center")
    for ax in (ax_e2e, ax_node):
        ax.grid(axis="y", alpha=0.3)
    # wall time is a cost too: a router replaying cached LM calls looks faster than it would be
    fig.suptitle("Latency distributions")
    return fig


def plot_cost_quality(costs: pd.DataFrame, cost: str = "router_tokens_per_ex", quality: str = "success") -> Figure:
    """The router's own cost against its accuracy, with the Pareto front (cheaper and better wins).

    Baselines (rows whose ``baseline`` column is True) are drawn as grey references, a cross and
    a dotted line at their quality, and are never on the front. The title says which cost
    (:func:`routerlab.eval.analysis.cost_basis`) the figure shows.

    Args:
        costs: :func:`routerlab.eval.analysis.router_cost` output (one row per router).
        cost: The cost column (a key of :data:`routerlab.eval.analysis.COST_COLUMNS`).
        quality: The rate column.
    """
    fig = Figure(figsize=(7, 5), layout="constrained")
    ax = fig.add_subplot()
    is_ref = costs["baseline"].astype(bool) if "baseline" in costs else pd.Series(False, index=costs.index)
    routers = [r for r in costs.index if not is_ref[r]]
    for i, (router, colour) in enumerate(zip(routers, _colours(len(routers)), strict=True)):
        x, y = costs.loc[router, cost], costs.loc[router, quality]
        ax.scatter([x], [y], s=60, color=colour, label=router, zorder=3)
        # routers often share a cost (0 tokens for rule routers): stagger the names
        ax.annotate(str(router), (x, y), xytext=(6, 6 + 11 * i), textcoords="offset points", fontsize=8)
    for j, ref in enumerate(r for r in costs.index if is_ref[r]):
        x, y = costs.loc[ref, cost], costs.loc[ref, quality]
        if math.isnan(float(y)):
            continue
        grey = ("0.35", "0.6", "0.45", "0.7")[j % 4]
        ax.axhline(float(y), color=grey, linestyle=":", linewidth=1.2, zorder=1)
        ax.scatter([x], [y], s=50, marker="x", color=grey, label=f"{ref}: reference", zorder=3)
        ax.annotate(f"{ref} (reference)", (x, y), xytext=(6, -12 - 11 * j), textcoords="offset points", fontsize=8)
    front = pareto_front(costs, cost, quality)
    if front:
        xs, ys = costs.loc[front, cost], costs.loc[front, quality]
        # a ring marks the front even when it is a single point (all routers at the same cost)
        ax.scatter(xs, ys, s=200, facecolors="none", edgecolors="black", label="Pareto front (routers)", zorder=4)
        ax.plot(xs, ys, drawstyle="steps-post", color="black", linestyle="--", zorder=2)
    largest = float(np.nanmax(costs[cost].to_numpy(dtype=float), initial=0.0))
    span = largest if largest > 0 else 1.0
    ax.set_xlim(-0.05 * span, largest + 0.25 * span)
    ax.set_xlabel(f"{COST_COLUMNS.get(cost, cost)}, {cost_basis().split(':')[0]}")
    ax.set_ylabel(f"{RATE_METRICS.get(quality, quality)} (fraction of examples)")
    ax.set_ylim(-0.05, 1.1)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(alpha=0.3)
    ax.set_title(f"Router cost vs quality\n({cost_basis()})", fontsize=10)
    return fig


def plot_confusion(matrices: Mapping[str, pd.DataFrame]) -> Figure:
    """Routing confusion heatmaps, one per router: gold intent x predicted intent counts.

    Args:
        matrices: :func:`routerlab.eval.analysis.confusion_matrices` output.
    """
    n = max(len(matrices), 1)
    fig = Figure(figsize=(4.2 * n + 1, 4.2), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, n, squeeze=False)[0])
    vmax = max([int(m.to_numpy().max()) for m in matrices.values()] + [1])
    image = None
    for ax, (router, m) in zip(axes, matrices.items(), strict=False):
        image = ax.imshow(m.to_numpy(), cmap="Blues", vmin=0, vmax=vmax)
        for (i, j), v in np.ndenumerate(m.to_numpy()):
            if v:
                ax.text(j, i, str(v), ha="center", va="center", color="white" if v > vmax / 2 else "black")
        ax.set_xticks(range(m.shape[1]), list(m.columns), rotation=45, ha="right")
        ax.set_yticks(range(m.shape[0]), list(m.index))
        ax.set_xlabel("predicted intent")
        ax.set_ylabel("gold intent")
        ax.set_title(str(router))
    if image is not None:
        fig.colorbar(image, ax=list(axes), shrink=0.8, label="results (count)", ticks=MaxNLocator(integer=True))
    else:
        axes[0].set_xlabel("predicted intent")
        axes[0].set_ylabel("gold intent")
        axes[0].text(0.5, 0.5, "no results", ha="center", va="center")
    fig.suptitle("Routing confusion (gold x predicted intent)")
    return fig


def plot_attribution(counts: pd.DataFrame) -> Figure:
    """Failures per router as stacked bars by class (router, sql, chain, other).

    Args:
        counts: :func:`routerlab.eval.analysis.attribution_counts` output.
    """
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    routers = [str(r) for r in counts.index]
    bottom = np.zeros(len(routers))
    for cls in ATTRIBUTION_CLASSES:
        values = counts[cls].to_numpy(dtype=float) if cls in counts else np.zeros(len(routers))
        ax.bar(routers, values, bottom=bottom, label=cls, color=_CLASS_COLOURS[cls])
        bottom += values
    ax.set_xlabel("router")
    ax.set_ylabel("failed results (count)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(title="failure class", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Failure attribution per router")
    return fig


def plot_risk_coverage(curves: pd.DataFrame) -> Figure:
    """Risk (share of answers that are wrong) against coverage, one step curve per router.

    A router that answers only above a confidence threshold moves left along its curve; lower
    is better at every coverage. A router whose confidence is constant is one point. The legend
    gives each router's AURC (docs/metrics.md section 8).

    Args:
        curves: :func:`routerlab.eval.analysis.risk_coverage_frame` output.
    """
    fig = Figure(figsize=(7, 5), layout="constrained")
    ax = fig.add_subplot()
    routers = list(dict.fromkeys(curves["router"])) if not curves.empty else []
    for router, colour in zip(routers, _colours(len(routers)), strict=True):
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
    return fig
