"""Calibration of router confidence: expected calibration error (ECE) and reliability-diagram data.

A router's confidence is calibrated when, among decisions made with confidence about p, a
fraction about p is correct. Decisions are put in ``bins`` equal-width confidence bins; a bin's
gap is ``|accuracy - mean confidence|`` and the ECE is the mean gap weighted by the bin's share
of decisions (0: perfectly calibrated; a router that always says 1.0 and is right 70 % of the
time has ECE 0.30). The event is "the first decision's intent is the gold intent".

Used by ``routerlab route`` (per router, from first decisions), ``compare --format json`` and
MLflow (per run, from the first route decision in each trace) and the notebook
(:func:`calibration_table`, :func:`plot_reliability`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from routerlab.eval.scoring import ExampleResult

__all__ = [
    "Bin",
    "calibration_metrics",
    "calibration_summary",
    "calibration_table",
    "expected_calibration_error",
    "first_confidence",
    "plot_reliability",
    "reliability",
    "run_calibration",
]

DEFAULT_BINS = 10


@dataclass(frozen=True)
class Bin:
    """One confidence bin of a reliability diagram.

    Attributes:
        low / high: Bin edges (the last bin includes 1.0).
        n: Decisions in the bin.
        confidence: Their mean confidence (NaN when empty).
        accuracy: Their fraction correct (NaN when empty).
    """

    low: float
    high: float
    n: int
    confidence: float
    accuracy: float


def _check(confidences: Sequence[float], correct: Sequence[bool | float]) -> None:
    if len(confidences) != len(correct):
        raise ValueError(f"{len(confidences)} confidences but {len(correct)} outcomes: pass one outcome per decision")
    bad = [c for c in confidences if not (0.0 <= c <= 1.0)]
    if bad:
        raise ValueError(f"confidences must lie in [0, 1]; found {bad[:3]}")


def reliability(confidences: Sequence[float], correct: Sequence[bool | float], bins: int = DEFAULT_BINS) -> list[Bin]:
    """Reliability-diagram data: per equal-width confidence bin, count, mean confidence and accuracy.

    Raises:
        ValueError: Lengths differ or a confidence is outside [0, 1].
    """
    _check(confidences, correct)
    members: list[list[int]] = [[] for _ in range(bins)]
    for i, c in enumerate(confidences):
        members[min(int(c * bins), bins - 1)].append(i)
    out = []
    for b, idx in enumerate(members):
        n = len(idx)
        conf = sum(confidences[i] for i in idx) / n if n else math.nan
        acc = sum(float(correct[i]) for i in idx) / n if n else math.nan
        out.append(Bin(b / bins, (b + 1) / bins, n, conf, acc))
    return out


def expected_calibration_error(
    confidences: Sequence[float], correct: Sequence[bool | float], bins: int = DEFAULT_BINS
) -> float:
    """ECE: the decision-weighted mean of ``|accuracy - confidence|`` over bins (NaN with no decisions)."""
    table = reliability(confidences, correct, bins)
    total = sum(b.n for b in table)
    if total == 0:
        return math.nan
    return sum(b.n * abs(b.accuracy - b.confidence) for b in table if b.n) / total


def calibration_summary(
    confidences: Sequence[float], correct: Sequence[bool | float], bins: int = DEFAULT_BINS
) -> dict[str, Any]:
    """``n``, ``ece``, ``mean_confidence``, ``accuracy`` and ``bins`` (reliability data, JSON-able)."""
    n = len(confidences)
    return {
        "n": n,
        "ece": expected_calibration_error(confidences, correct, bins),
        "mean_confidence": sum(confidences) / n if n else math.nan,
        "accuracy": sum(float(c) for c in correct) / n if n else math.nan,
        "bins": [asdict(b) for b in reliability(confidences, correct, bins)],
    }


def first_confidence(result: ExampleResult) -> float | None:
    """The confidence of a run result's first route decision (None without a trace or decision)."""
    trace = result.trace
    if trace is None or not trace.route_decisions:
        return None
    value = trace.route_decisions[0].get("confidence")
    return float(value) if isinstance(value, (int, float)) and 0.0 <= value <= 1.0 else None


def _pairs(results: Sequence[ExampleResult]) -> tuple[list[float], list[bool]]:
    confs, hits = [], []
    for r in results:
        c = first_confidence(r)
        if c is not None and r.outcome == "ok":  # a crash is not a routing decision to calibrate
            confs.append(c)
            hits.append(r.predicted_intent == r.intent)
    return confs, hits


def calibration_metrics(results: Sequence[ExampleResult], bins: int = DEFAULT_BINS) -> dict[str, float]:
    """Flat metrics for MLflow: ``calibration_ece``, ``mean_confidence``, ``calibration_n``."""
    confs, hits = _pairs(results)
    if not confs:
        return {}
    s = calibration_summary(confs, hits, bins)
    return {"calibration_ece": s["ece"], "mean_confidence": s["mean_confidence"], "calibration_n": float(s["n"])}


def run_calibration(results: Sequence[ExampleResult], bins: int = DEFAULT_BINS) -> dict[str, Any]:
    """:func:`calibration_summary` of a run's first route decisions (intent correct vs confidence)."""
    confs, hits = _pairs(results)
    return calibration_summary(confs, hits, bins)


def calibration_table(
    frame: pd.DataFrame,
    *,
    by: str = "router",
    confidence: str = "confidence",
    correct: str = "correct",
    bins: int = DEFAULT_BINS,
) -> pd.DataFrame:
    """Per group of ``frame`` (one row per decision): ``n, ece, mean_confidence, accuracy``.

    For the notebook: works on ``routerlab route --out`` CSVs and on per-example tables that carry
    a confidence column. Rows with a missing confidence are left out.
    """
    import pandas as pd

    rows = []
    for key, g in frame.dropna(subset=[confidence]).groupby(by, sort=False):
        s = calibration_summary(g[confidence].astype(float).tolist(), g[correct].astype(bool).tolist(), bins)
        rows.append({by: key, **{k: v for k, v in s.items() if k != "bins"}})
    return pd.DataFrame(rows, columns=[by, "n", "ece", "mean_confidence", "accuracy"])


def plot_reliability(summaries: dict[str, dict[str, Any]], ax: Any = None) -> Any:
    """Reliability diagram: accuracy against mean confidence per bin, one line per router.

    Args:
        summaries: Router label -> :func:`calibration_summary` output.
        ax: A matplotlib Axes (default: a new figure's).

    Returns:
        The Axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], linestyle=":", color="grey", label="calibrated")
    for label, s in summaries.items():
        pts = [(b["confidence"], b["accuracy"]) for b in s["bins"] if b["n"]]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, marker="o", label=f"{label} (ECE {s['ece']:.2f})")
    ax.set_xlabel("confidence")
    ax.set_ylabel("accuracy")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    return ax
