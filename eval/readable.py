"""Tables for reading: human column names, intervals as one cell, numbers rounded.

Figures are stored flat for machines (``diverted``, ``diverted_ci_low``, ``diverted_ci_high``,
``diverted_n``, ``risk.coverage_ci_low``...). A report's reader needs ``diverted [95% CI]`` with
``0.12 [0.05, 0.20]`` in it, a count written as ``12`` rather than ``12.0`` and a latency rounded to
what can be read, so :func:`readable_table` turns the first into the second for display only.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["human_name", "readable_number", "readable_table"]

#: suffixes of the interval and count columns that belong to a figure column
_LOW, _HIGH, _N = "_ci_low", "_ci_high", "_n"
#: words of stored names spelled out (whole words between ``_`` / ``.``)
_WORDS = {"ex": "EX", "ece": "ECE", "aurc": "AURC", "lm": "LM", "p50": "p50", "p95": "p95", "per": "per", "to": "to"}
#: stored name endings and how a reader says them
_UNITS = (("_per_ex", " per example"), ("_s", " (s)"), ("_ms", " (ms)"))


def human_name(column: str) -> str:
    """``cold_latency_p50_s`` -> ``cold latency p50 (s)``; ``risk.coverage`` -> ``coverage``."""
    name = column.removeprefix("risk.")
    unit = ""
    for suffix, said in _UNITS:
        if name.endswith(suffix):
            name, unit = name[: -len(suffix)], said + unit
    words = name.replace(".", " ").replace("_", " ").split()
    return " ".join(_WORDS.get(w, w) for w in words) + unit


def readable_number(value: Any) -> str:
    """A number rounded for reading: whole numbers as such, 2 decimals, small values to 2 significant."""
    if value is None or isinstance(value, bool):
        return "" if value is None else str(value)
    if not isinstance(value, int | float):
        return str(value)
    x = float(value)
    if math.isnan(x):
        return "–"
    if x == int(x) and abs(x) >= 1:
        return f"{int(x)}"
    if x == 0:
        return "0"
    if abs(x) < 0.01:
        return f"{x:.2g}"
    return f"{x:.2f}" if abs(x) < 100 else f"{x:.0f}"


def readable_table(frame: Any) -> Any:
    """``frame`` for display: ``X``, ``X_ci_low``, ``X_ci_high`` as one ``X [95% CI]`` cell, human names.

    A column ``X_n`` next to ``X`` becomes ``X n``; every number is a string rounded by
    :func:`readable_number` (so ``diverted_n 1.0`` reads ``1``, ``0.0000`` reads ``0``). The
    index is kept.

    Args:
        frame: A pandas DataFrame of flat figures (one row per router).

    Returns:
        A new DataFrame of strings.
    """
    import pandas as pd

    columns = [str(c) for c in frame.columns]
    out: dict[str, list[str]] = {}
    for c in columns:
        if c.endswith((_LOW, _HIGH)) and (c.removesuffix(_LOW).removesuffix(_HIGH) in columns):
            continue  # shown inside its figure's cell
        if c.endswith(_N) and c.removesuffix(_N) in columns:
            out[human_name(c.removesuffix(_N)) + " n"] = [readable_number(v) for v in frame[c]]
            continue
        if c + _LOW in columns and c + _HIGH in columns:
            cells = []
            for v, lo, hi in zip(frame[c], frame[c + _LOW], frame[c + _HIGH], strict=True):
                shown = readable_number(v)
                finite = all(isinstance(x, int | float) and not math.isnan(float(x)) for x in (lo, hi))
                cells.append(f"{shown} [{float(lo):.2f}, {float(hi):.2f}]" if finite else shown)
            out[human_name(c) + " [95% CI]"] = cells
            continue
        out[human_name(c)] = [readable_number(v) for v in frame[c]]
    return pd.DataFrame(out, index=frame.index)
