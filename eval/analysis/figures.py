"""The comparison's figures: rates with intervals and confusion matrices a person can read.

Drawn from :class:`~routerlab.eval.analysis.model.Part` only. Confusion matrices are small
multiples, two to a row, each 320 px wide at the figures' resolution (a row of 640 px fits a
900 px page unscaled), with every count written in its cell.
"""

from __future__ import annotations

from typing import Any

from routerlab.eval.analysis.measures import PART_NAMES, measure
from routerlab.eval.analysis.model import Part

__all__ = ["PANEL_IN", "confusion_figure", "rates_figure"]

#: each panel's side in inches; at the figures' 100 dpi a panel is 320 px
PANEL_IN = 3.2
_DPI = 100
_PER_ROW = 2


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def rates_figure(p: Part) -> Any:
    """One panel per measure of the part: each router's rate with its 95 % interval, best at the top."""
    plt = _plt()
    shown = [r for r in p.routers if r.same_as is None]
    measures = [m for m in p.measures if any(m in r.rates for r in shown)]
    fig, axes = plt.subplots(
        1,
        len(measures),
        figsize=(max(3.0 * len(measures), 6.0), 0.45 * len(shown) + 1.4),
        dpi=_DPI,
        sharey=True,
        squeeze=False,
    )
    names = [r.router for r in shown][::-1]
    for ax, m in zip(axes[0], measures, strict=True):
        for y, r in enumerate(shown[::-1]):
            x = r.rates.get(m)
            if x is None:
                continue
            color = "0.6" if r.baseline else "C0"
            ax.errorbar(x.value, y, xerr=[[x.value - x.low], [x.high - x.value]], fmt="o", color=color, capsize=3)
        ax.set_xlim(-0.02, 1.02)
        ax.set_title(measure(m).name, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(range(len(names)), names)
    fig.suptitle(f"{PART_NAMES.get(p.key, p.key)}: rates with 95% intervals (grey: baselines)", fontsize=10)
    fig.tight_layout()
    return fig


def confusion_figure(p: Part) -> Any | None:
    """Gold intent (rows) against decided intent (columns), one panel per router; None without decisions."""
    plt = _plt()
    shown = [r for r in p.routers if r.same_as is None and r.confusion]
    if not shown:
        return None
    golds = sorted({g for r in shown for g in r.confusion})
    decided = sorted({d for r in shown for row in r.confusion.values() for d in row} | set(golds))
    rows = -(-len(shown) // _PER_ROW)
    cols = min(_PER_ROW, len(shown))
    fig, axes = plt.subplots(rows, cols, figsize=(PANEL_IN * cols, PANEL_IN * rows + 0.3), dpi=_DPI, squeeze=False)
    for ax in axes.flat[len(shown) :]:
        ax.set_visible(False)
    for ax, r in zip(axes.flat, shown, strict=False):
        grid = [[r.confusion.get(g, {}).get(d, 0) for d in decided] for g in golds]
        ax.imshow(grid, cmap="Blues", aspect="auto")
        top = max((v for row in grid for v in row), default=0) or 1
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                if v:
                    ax.text(
                        j, i, str(v), ha="center", va="center", fontsize=8, color="white" if v > top / 2 else "black"
                    )
        ax.set_xticks(range(len(decided)), decided, rotation=60, fontsize=7, ha="right")
        ax.set_yticks(range(len(golds)), golds, fontsize=7)
        ax.set_title(r.router, fontsize=9)
        ax.set_xlabel("decided", fontsize=7)
        ax.set_ylabel("gold", fontsize=7)
    fig.tight_layout()
    return fig
