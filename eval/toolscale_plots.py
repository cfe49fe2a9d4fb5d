"""Figures of ``routerlab toolscale``: routing accuracy, prompt size and latency as the toolset grows.

Like :mod:`routerlab.eval.risk_figure`, every function returns a :class:`matplotlib.figure.Figure`
built without pyplot; axes carry labels with units and the figure has a title.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

__all__ = ["load_toolscale", "plot_toolscale"]

#: the embedded model's context window, drawn on the prompt-size panel
DEFAULT_CONTEXT_WINDOW = 4096


def load_toolscale(source: str | Path | Mapping[str, Any]) -> pd.DataFrame:
    """The table of a ``routerlab toolscale`` JSON file (or of its parsed document).

    Args:
        source: The JSON file written by ``routerlab toolscale`` or its loaded dict.
    """
    doc = source if isinstance(source, Mapping) else json.loads(Path(source).read_text())
    # null in JSON stands for "not measured": NaN keeps it off the axes
    return pd.DataFrame(doc["table"]).astype({"size": int}).fillna(value=np.nan)


def _size_axis(ax: Axes, sizes: list[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel("tools in the set (log scale)")
    ax.grid(alpha=0.3)


def _values(frame: pd.DataFrame, column: str) -> np.ndarray:
    return frame[column].to_numpy(dtype=float) if column in frame else np.full(len(frame), math.nan)


def plot_toolscale(table: pd.DataFrame, *, context_window: int | None = DEFAULT_CONTEXT_WINDOW) -> Figure:
    """Three panels against toolset size, one line per router.

    Left: first-decision accuracy with its 95 % CI band, and (dashed) the retrieval router's
    recall@k; an ``x`` at 0 marks sizes where every decision overflowed the model's context.
    Middle: the router's mean prompt tokens per decision (log), hollow markers for the prompt
    sizes the engine refused, and the context window. Right: median seconds per decision.

    Args:
        table: :func:`routerlab.toolscale.toolscale_table` output or :func:`load_toolscale`.
        context_window: Drawn as a horizontal line on the prompt panel (None: not drawn).
    """
    fig = Figure(figsize=(14, 4.5), layout="constrained")
    ax_acc, ax_tok, ax_lat = fig.subplots(1, 3)
    sizes = sorted({int(s) for s in table["size"]}) if len(table) else [8]
    routers = list(dict.fromkeys(table["router"])) if len(table) else []
    for i, router in enumerate(routers):
        colour = f"C{i % 10}"
        mine = table[table["router"] == router].sort_values("size")
        x = mine["size"].to_numpy(dtype=float)
        acc = _values(mine, "accuracy")
        ax_acc.plot(x, acc, marker="o", color=colour, label=f"{router}: accuracy")
        ax_acc.fill_between(x, _values(mine, "ci_low"), _values(mine, "ci_high"), color=colour, alpha=0.15)
        recall = _values(mine, "recall_at_k")
        if not np.all(np.isnan(recall)):
            ax_acc.plot(x, recall, marker="s", linestyle="--", color=colour, label=f"{router}: recall@k")
        overflow = _values(mine, "context_overflow") >= _values(mine, "n")
        if overflow.any():
            ax_acc.scatter(x[overflow], np.zeros(overflow.sum()), marker="x", s=80, color=colour, zorder=4)
            for xi in x[overflow]:
                ax_acc.annotate("context\noverflow", (xi, 0), xytext=(0, 8), textcoords="offset points",
                                ha="center", fontsize=7, color=colour)  # fmt: skip
        ax_tok.plot(x, _values(mine, "prompt_tokens"), marker="o", color=colour, label=f"{router}: processed")
        refused = _values(mine, "overflow_prompt_tokens")
        if not np.all(np.isnan(refused)):
            ax_tok.scatter(x, refused, marker="o", s=60, facecolors="none", edgecolors=colour, zorder=4,
                           label=f"{router}: refused (too long)")  # fmt: skip
        ax_lat.plot(x, _values(mine, "p50_s"), marker="o", color=colour, label=router)
    if context_window:
        ax_tok.axhline(context_window, color="black", linestyle=":", label=f"context window ({context_window})")
    for ax in (ax_acc, ax_tok, ax_lat):
        _size_axis(ax, sizes)
    ax_acc.set_ylim(-0.05, 1.1)
    ax_acc.set_ylabel("fraction of examples")
    ax_acc.set_title("First-decision accuracy (band: 95 % CI)")
    ax_tok.set_yscale("log")
    ax_tok.set_ylabel("router prompt tokens per decision (log)")
    ax_tok.set_title("Prompt size")
    ax_lat.set_ylabel("median seconds per decision")
    ax_lat.set_title("Router latency")
    for ax in (ax_acc, ax_tok, ax_lat):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
    if not routers:
        ax_acc.text(0.5, 0.5, "no results", ha="center", va="center", transform=ax_acc.transAxes)
    fig.suptitle("Routing as the toolset grows (real sub-agents + distractors)")
    return fig
