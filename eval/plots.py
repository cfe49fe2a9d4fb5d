"""Figures of a router comparison, drawn from the frames of :mod:`routerlab.eval.analysis`.

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot, so nothing is
left in pyplot's global figure list (notebooks display a returned figure once; scripts call
``fig.savefig``). Axes carry labels with units and every figure has a title. Each figure is
grown, when its texts need it, until every text is inside the canvas
(:func:`routerlab.eval.plot_layout.fit_texts_to_canvas`): the given size is a minimum.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator

from routerlab.eval.analysis import ATTRIBUTION_CLASSES, COST_COLUMNS, RATE_METRICS, cost_basis, pareto_front
from routerlab.eval.plot_layout import fit_texts_to_canvas, overlapping_pairs, place_point_labels, renderer_of
from routerlab.eval.risk_figure import plot_risk_coverage, router_colours

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
#: diameter of a router's marker in the cost-quality plot (points)
_MARKER_PT = 8.0
#: value labels are shrunk down to this size before they are left out (points)
_SMALLEST_LABEL_PT = 5.0
#: below this many seconds the latency axis is linear: a log axis cannot show the 0 s visits
_LINEAR_BELOW_S = 1e-3


def _grouped_bars(
    ax: Axes, frame: pd.DataFrame, category: str, categories: Sequence[str], routers: Sequence[str]
) -> str:
    """Bars of ``value`` per category, one bar per router, with asymmetric CI error bars.

    Returns:
        A note for the title: empty, or why the bars carry no value labels.
    """
    x = np.arange(len(categories))
    width = 0.8 / max(len(routers), 1)
    labels: list[Text] = []
    for i, (router, colour) in enumerate(zip(routers, router_colours(len(routers)), strict=True)):
        sub = frame[frame["router"] == router].set_index(category).reindex(list(categories))
        values = sub["value"].to_numpy(dtype=float)
        low = np.nan_to_num(values - sub["ci_low"].to_numpy(dtype=float))
        high = np.nan_to_num(sub["ci_high"].to_numpy(dtype=float) - values)
        pos = x - 0.4 + width * (i + 0.5)
        bars = ax.bar(pos, np.nan_to_num(values), width, label=router, color=colour, yerr=[low, high], capsize=3)
        labels += ax.bar_label(
            bars, labels=["" if math.isnan(v) else f"{v:.2f}" for v in values], fontsize=7, padding=2
        )
        for p, v in zip(pos, values, strict=True):
            if math.isnan(v):
                # a rate no example applies to is not a 0: say so on the axis
                labels.append(ax.text(p, 0.02, "n/a", ha="center", va="bottom", fontsize=7, rotation=90))
    ax.set_xticks(x, list(categories))
    ax.set_ylim(0, 1.12)
    ax.legend(title="router", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(axis="y", alpha=0.3)
    note = _fit_value_labels(ax, labels, width)
    _fit_tick_labels(ax)
    return note


def _fit_value_labels(ax: Axes, labels: Sequence[Text], bar_width: float) -> str:
    """Turn, then shrink, then drop bar value labels so that each stays within its bar's width.

    Bars get narrow as routers and categories multiply; a label wider than its bar runs into
    its neighbour's. Measured in pixels on the drawn figure (one draw), so the decision holds
    for any figure size.

    Args:
        ax: The axes of the bars.
        labels: The value labels (empty ones are ignored).
        bar_width: One bar's width, in data units.

    Returns:
        A note for the figure's title when the labels had to go, else an empty string.
    """
    shown = [t for t in labels if t.get_text()]
    if not shown:
        return ""
    renderer = renderer_of(ax.get_figure())  # type: ignore[arg-type]
    x0, _ = ax.transData.transform((0.0, 0.0))
    x1, _ = ax.transData.transform((bar_width, 0.0))
    room = abs(x1 - x0) - 1.0  # a pixel between neighbours
    widest = (
        max(t.get_window_extent(renderer).width for t in shown if t.get_rotation() == 0)
        if any(t.get_rotation() == 0 for t in shown)
        else 0.0
    )
    if widest <= room:
        return ""
    # matplotlib hints ArrayLike for points_to_pixels; a float in gives a float out
    scale = float(renderer.points_to_pixels(1.0))  # type: ignore[arg-type]
    size = float(shown[0].get_fontsize())
    # upright, a label needs its line height across the bar: about 1.2 times the font size
    while size * 1.2 * scale > room and size > _SMALLEST_LABEL_PT:
        size -= 1.0
    if size * 1.2 * scale > room:
        # too many bars for any legible number: the table above the figure has the values
        for t in shown:
            t.set_visible(False)
        return "\n(too many bars to print their values: see the table)"
    for t in shown:
        t.set_rotation(90)
        t.set_fontsize(size)
    return ""


def _fit_tick_labels(ax: Axes) -> None:
    """Stand the x tick labels upright when side by side they would run into each other."""
    fig = ax.get_figure()
    ticks = {id(t) for t in ax.get_xticklabels()}
    with warnings.catch_warnings():
        # an unfinished figure may be too small for its layout: the figure is grown at the end
        # (fit_texts_to_canvas), which warns if even the grown one is
        warnings.filterwarnings("ignore", message="constrained_layout not applied", category=UserWarning)
        pairs = overlapping_pairs(fig)  # type: ignore[arg-type]
    if any(id(a) in ticks and id(b) in ticks for a, b in pairs):
        for t in ax.get_xticklabels():
            t.set_rotation(90)
            t.set_horizontalalignment("center")


def plot_rates(rates: pd.DataFrame) -> Figure:
    """Per-router bars of the four rates with 95 % bootstrap CI error bars.

    Args:
        rates: :func:`routerlab.eval.analysis.rates_table` output.
    """
    fig = Figure(figsize=(9, 4.5), layout="constrained")
    ax = fig.add_subplot()
    metrics = [m for m in RATE_METRICS if m in set(rates["metric"])] or list(dict.fromkeys(rates["metric"]))
    note = _grouped_bars(ax, rates, "metric", metrics, list(dict.fromkeys(rates["router"])))
    ax.set_xticks(range(len(metrics)), [RATE_METRICS.get(m, m) for m in metrics])
    ax.set_xlabel("metric")
    ax.set_ylabel("rate (fraction of applicable examples)")
    smaller: dict[str, Any] = {"fontsize": 10} if note else {}
    ax.set_title("Rates per router (error bars: 95 % bootstrap CI)" + note, **smaller)
    return fit_texts_to_canvas(fig)


def plot_success_per_intent(per_intent: pd.DataFrame) -> Figure:
    """End-to-end success per gold intent, grouped by intent, one bar per router, with CIs.

    Args:
        per_intent: :func:`routerlab.eval.analysis.success_per_intent` output.
    """
    fig = Figure(figsize=(9, 4.5), layout="constrained")
    ax = fig.add_subplot()
    intents = list(dict.fromkeys(per_intent["intent"]))
    note = _grouped_bars(ax, per_intent, "intent", intents, list(dict.fromkeys(per_intent["router"])))
    ax.set_xlabel("gold intent")
    ax.set_ylabel("end-to-end success (fraction of examples)")
    smaller: dict[str, Any] = {"fontsize": 10} if note else {}
    ax.set_title("Success per intent (error bars: 95 % bootstrap CI)" + note, **smaller)
    return fit_texts_to_canvas(fig)


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
    colours = router_colours(len(routers))
    e2e = latency[latency["stage"] == "end_to_end"]
    for i, (router, colour) in enumerate(zip(routers, colours, strict=True)):
        _boxes(ax_e2e, [e2e.loc[e2e["router"] == router, "seconds"].tolist()], [i], colour, 0.6)
    ax_e2e.set_xticks(range(len(routers)), routers)
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
    # outside the axes: with many routers an inner legend would cover the boxes and the tick labels
    ax_node.legend(
        handles=[Patch(color=c, alpha=0.6, label=r) for r, c in zip(routers, colours, strict=True)],
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1),
    )
    if not names:
        ax_node.text(0.5, 0.5, "no per-node timings\n(MLflow tables do not keep them)", ha="center", va="center")
    for ax in (ax_e2e, ax_node):
        ax.grid(axis="y", alpha=0.3)
    # wall time is a cost too: a router replaying cached LM calls looks faster than it would be
    fig.suptitle("Latency distributions")
    for ax in (ax_e2e, ax_node):
        _fit_tick_labels(ax)
    return fit_texts_to_canvas(fig)


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
    refs = [r for r in costs.index if is_ref[r] and not math.isnan(float(costs.loc[r, quality]))]
    style: dict[str, dict[str, Any]] = {}
    for router, colour in zip(routers, router_colours(len(routers)), strict=True):
        style[router] = {"color": colour, "marker": "o", "label": router}
    for j, ref in enumerate(refs):
        grey = ("0.35", "0.6", "0.45", "0.7")[j % 4]
        ax.axhline(float(costs.loc[ref, quality]), color=grey, linestyle=":", linewidth=1.2, zorder=1)
        style[ref] = {"color": grey, "marker": "x", "label": f"{ref}: reference"}
    front = pareto_front(costs, cost, quality)
    if front:
        xs, ys = costs.loc[front, cost], costs.loc[front, quality]
        ax.plot(xs, ys, drawstyle="steps-post", color="black", linestyle="--", zorder=2)
    largest = float(np.nanmax(costs[cost].to_numpy(dtype=float), initial=0.0))
    span = largest if largest > 0 else 1.0
    ax.set_xlim(-0.05 * span, largest + 0.25 * span)
    # at most 5 ticks: seconds per example can be a few hundredths, whose default ticks
    # ("0.0025", "0.0050", ...) are too wide to fit side by side beside a long legend
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
    ax.set_ylim(-0.05, 1.1)
    ax.set_xlabel(f"{COST_COLUMNS.get(cost, cost)}, {cost_basis().split(':')[0]}")
    ax.set_ylabel(f"{RATE_METRICS.get(quality, quality)} (fraction of examples)")
    ax.set_title(f"Router cost vs quality\n({cost_basis()})", fontsize=10)
    # routers often share a point (0 tokens for every rule router, equal rates on small sets):
    # markers of one point are drawn as rings of decreasing size, so each colour shows, and
    # share one label; labels then go where they hide no marker and no other label
    named = [r for r in style if not math.isnan(float(costs.loc[r, quality]))]
    groups = _coincident(ax, [(float(costs.loc[r, cost]), float(costs.loc[r, quality])) for r in named], _MARKER_PT)
    biggest = _MARKER_PT
    for group in groups:
        for k, i in enumerate(group):
            name = named[i]
            size_pt = _MARKER_PT * (1 + 0.7 * (len(group) - 1 - k))
            biggest = max(biggest, size_pt)
            ax.scatter([costs.loc[name, cost]], [costs.loc[name, quality]], s=size_pt**2, zorder=3 + k,
                       **style[name])  # fmt: skip
    if front:
        # a ring marks the front even when it is a single point (all routers at the same cost)
        ax.scatter(xs, ys, s=(biggest + 6) ** 2, facecolors="none", edgecolors="black",
                   label="Pareto front (routers)", zorder=2)  # fmt: skip
    # the legend lists routers in the table's order, each with one marker size whatever its ring
    handles, texts = ax.get_legend_handles_labels()
    order = sorted(
        range(len(texts)),
        key=lambda i: next((k for k, n in enumerate(named) if style[n]["label"] == texts[i]), len(named)),
    )
    legend = ax.legend([handles[i] for i in order], [texts[i] for i in order], fontsize=8, loc="upper left",
                       bbox_to_anchor=(1.01, 1))  # fmt: skip
    for handle in legend.legend_handles:
        handle.set_sizes([_MARKER_PT**2])  # type: ignore[union-attr]
    points = [(float(costs.loc[named[g[0]], cost]), float(costs.loc[named[g[0]], quality])) for g in groups]
    place_point_labels(ax, points, ["\n".join(str(named[i]) for i in g) for g in groups],
                       marker_radius_pt=(biggest + 6) / 2)  # fmt: skip
    ax.grid(alpha=0.3)
    return fit_texts_to_canvas(fig)


def _coincident(ax: Axes, points: Sequence[tuple[float, float]], marker_pt: float) -> list[list[int]]:
    """Indices of ``points`` grouped where their markers would overlap on ``ax`` (first-seen order)."""
    fig = ax.get_figure()
    # the layout fixes the axes' size before pixels are read
    renderer_of(fig)  # type: ignore[arg-type]
    reach = marker_pt * fig.dpi / 72.0  # type: ignore[union-attr]
    pixels = [ax.transData.transform(p) for p in points]
    groups: list[list[int]] = []
    for i, p in enumerate(pixels):
        home = next((g for g in groups if float(np.hypot(*(pixels[g[0]] - p))) < reach), None)
        if home is None:
            groups.append([i])
        else:
            home.append(i)
    return groups


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
    return fit_texts_to_canvas(fig)


def plot_attribution(counts: pd.DataFrame) -> Figure:
    """Failures per router as horizontal stacked bars by class (router, sql, chain, other).

    One row per router, so router names never share a line however many there are; each
    class's count is printed inside its segment when it fits there, and each row's total at its end.

    Args:
        counts: :func:`routerlab.eval.analysis.attribution_counts` output.
    """
    routers = [str(r) for r in counts.index]
    fig = Figure(figsize=(7, max(2.6, 1.6 + 0.42 * len(routers))), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(routers))
    left = np.zeros(len(routers))
    segments: list[tuple[Text, float]] = []
    for cls in ATTRIBUTION_CLASSES:
        values = counts[cls].to_numpy(dtype=float) if cls in counts else np.zeros(len(routers))
        bars = ax.barh(y, values, left=left, label=cls, color=_CLASS_COLOURS[cls], height=0.6)
        for bar, v in zip(bars, values, strict=True):
            if v > 0:
                text = ax.text(bar.get_x() + v / 2, bar.get_y() + 0.3, f"{v:g}", ha="center", va="center",
                               fontsize=7, color="white")  # fmt: skip
                segments.append((text, v))
        left += values
    for yi, total in zip(y, left, strict=True):
        ax.text(total, float(yi), f" {total:g}", ha="left", va="center", fontsize=8)
    ax.set_yticks(y, routers)
    ax.invert_yaxis()  # first router on top, as in the tables
    ax.set_xlim(0, max(float(left.max(initial=0.0)), 1.0) * 1.15)
    ax.set_ylabel("router")
    ax.set_xlabel("failed results (count)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(title="failure class", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("Failure attribution per router")
    # a count wider than its segment would spill over the next one: the total still says it
    renderer = renderer_of(fig)
    for text, v in segments:
        box = text.get_window_extent(renderer)
        span = ax.transData.transform([(v, 0)])[0][0] - ax.transData.transform([(0, 0)])[0][0]
        text.set_visible(box.width + 2 <= span)
    return fit_texts_to_canvas(fig)
