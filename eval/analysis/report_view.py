"""The report's sections: what each cell of ``notebooks/router_comparison.ipynb`` displays.

The notebook's cells only call these; each displays Markdown (from
:mod:`routerlab.eval.analysis.markdown`) and figures (from :mod:`routerlab.eval.analysis.figures`)
of the session's :class:`~routerlab.eval.analysis.model.SessionComparison`, part by part, verdict
first. A section that does not apply to a part (no disagreement, a smoke part's tests) is left
out, never shown empty.
"""

from __future__ import annotations

from typing import Any

from routerlab.eval.analysis.figures import confusion_figure, rates_figure
from routerlab.eval.analysis.markdown import (
    conversations_md,
    cost_md,
    disagreements_md,
    failures_md,
    pairs_md,
    part_heading,
    per_intent_md,
    rates_md,
    verdict_md,
)
from routerlab.eval.analysis.model import Part, SessionComparison

__all__ = ["show_part", "show_parts", "show_runs", "show_verdict"]


def _show(*items: Any) -> None:
    from IPython.display import Markdown, display

    for item in items:
        if isinstance(item, str):
            if item.strip():
                display(Markdown(item))
        elif item is not None:
            display(item)
            _close(item)


def _close(figure: Any) -> None:
    import matplotlib.pyplot as plt

    if hasattr(figure, "savefig"):
        plt.close(figure)


def show_verdict(model: SessionComparison) -> None:
    """The verdict of each part, as ``routerlab compare`` words it, and the notes on unfinished runs."""
    notes = "".join(f"> note: {n}\n\n" for n in model.notes)
    _show(
        f"{notes}Session `{model.session}` on {model.dataset}/{model.split}, lm `{model.lm}`.\n\n" + verdict_md(model)
    )


def show_part(p: Part) -> None:
    """One part: rates with intervals, then each section that applies to it, then its cost.

    The sections: paired tests (not for a part too small to compare), per-intent rates, confusion
    matrices, failures with their questions, disagreements with each router's reason.
    """
    _show(part_heading(p), "### Rates with 95% intervals", rates_md(p), rates_figure(p))
    pairs = pairs_md(p)
    if pairs:
        _show("### Paired tests", pairs)
    intents = per_intent_md(p)
    if intents:
        _show("### Per gold intent", intents)
    confusion = confusion_figure(p)
    if confusion is not None:
        _show("### Confusion matrices (gold intent by decided intent)", confusion)
    failures = failures_md(p)
    if failures:
        _show("### Failures", failures)
    disagreements = disagreements_md(p)
    if disagreements:
        _show("### Where the routers disagree", disagreements)
    conversations = conversations_md(p)
    if conversations:
        _show("### Conversations", conversations)
    _show("### Cost", cost_md(p))


def show_parts(model: SessionComparison) -> None:
    """Every part of the session, routing first."""
    for p in model.parts:
        show_part(p)


def show_runs(model: SessionComparison) -> None:
    """The stored runs behind the figures: part, router, run id, status, results (and any not run)."""
    routers = [(p.key, r) for p in model.parts for r in p.routers]
    not_run = any(r.not_run for _, r in routers)
    header = "| part | router | run id | status | results |" + (" not run |" if not_run else "")
    align = "|---|---|---|---|---:|" + ("---:|" if not_run else "")
    rows = [
        f"| {part} | {r.router} | `{r.run_id}` | {r.status} | {r.n} |" + (f" {r.not_run} |" if not_run else "")
        for part, r in routers
    ]
    _show("\n".join([header, align, *rows]))
