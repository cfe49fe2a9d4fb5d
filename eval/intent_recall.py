"""Per-intent recall of stored runs: each gold intent's share of right decisions, with its interval.

A router that sends every data question to SQL scores well on a SQL-heavy set while never asking
back or refusing; recall per gold intent shows that, next to the overall rate. Intents absent
from the set get no column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from routerlab.agents.state import INTENTS
from routerlab.eval.rate import rate
from routerlab.eval.scoring import ExampleResult, did_run

__all__ = ["intent_recall", "render_intent_recall"]


def intent_recall(results: Mapping[str, Sequence[ExampleResult]], scorer: str) -> pd.DataFrame:
    """Recall per gold intent of each run: ``router, intent, value, ci_low, ci_high, n``.

    Args:
        results: ``router label -> results``.
        scorer: The 0/1 score of a right decision (``first_decision``, ``route``).

    Returns:
        One row per router and gold intent present in its results (intents in :data:`INTENTS`
        order); the interval resamples conversations whole (:func:`routerlab.eval.rate.rate`).
    """
    rows = []
    for label, rs in results.items():
        ran = [r for r in rs if did_run(r)]
        present = [i for i in INTENTS if any(r.intent == i for r in ran)]
        for intent in present:
            r = rate([x for x in ran if x.intent == intent], scorer)
            rows.append(
                {
                    "router": label,
                    "intent": intent,
                    "value": r.value,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                    "n": r.n,
                }
            )
    return pd.DataFrame(rows, columns=["router", "intent", "value", "ci_low", "ci_high", "n"])


def render_intent_recall(recall: pd.DataFrame, fmt: str = "table") -> str:
    """Routers (rows) by gold intent (columns), each cell ``0.80 [0.55, 1.00]``; ``n`` in the header.

    Args:
        recall: From :func:`intent_recall`.
        fmt: ``table`` (plain text) or ``markdown``.
    """
    if recall.empty:
        return ""
    intents = list(dict.fromkeys(recall["intent"]))
    ns = recall.groupby("intent")["n"].max()
    cells = recall.assign(
        cell=[
            f"{v:.2f} [{lo:.2f}, {hi:.2f}]"
            for v, lo, hi in zip(recall["value"], recall["ci_low"], recall["ci_high"], strict=True)
        ]
    )
    wide = cells.pivot(index="router", columns="intent", values="cell").reindex(
        index=list(dict.fromkeys(recall["router"])), columns=intents
    )
    wide = wide.fillna("-")
    wide.columns = [f"{i} (n={int(ns[i])})" for i in intents]
    wide = wide.reset_index()
    title = "Recall per gold intent (share of that intent's requests routed right, 95% CI)"
    if fmt == "markdown":
        header = "| " + " | ".join(wide.columns) + " |"
        align = "| " + " | ".join("---" if i == 0 else "---:" for i in range(len(wide.columns))) + " |"
        body = ["| " + " | ".join(str(v) for v in row) + " |" for row in wide.itertuples(index=False)]
        return "\n".join([f"**{title}**", "", header, align, *body]) + "\n"
    return title + "\n" + wide.to_string(index=False) + "\n"
