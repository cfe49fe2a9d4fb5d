"""How every view words the model's figures: numbers, intervals, p-values and the verdict's sentences.

Formatting only: each function turns a figure of :mod:`routerlab.eval.analysis.model` into text
and computes nothing, so the console, the report and MLflow say the same thing the same way.
"""

from __future__ import annotations

from routerlab.eval.analysis.measures import PART_NAMES, measure
from routerlab.eval.analysis.model import Cost, Interval, Part, RouterFigures, Verdict
from routerlab.eval.store import END_TO_END, ROUTING

__all__ = [
    "CONVERSATION_FIGURES",
    "conversation_figures",
    "cost_text",
    "count_text",
    "figure_text",
    "interval_text",
    "num",
    "p_text",
    "part_title",
    "verdict_sentences",
]


def num(x: float, digits: int = 2) -> str:
    """``0.93``."""
    return f"{x:.{digits}f}"


def interval_text(r: Interval) -> str:
    """``0.93 [0.88, 0.97]``; a degenerate interval (every outcome alike) is not printed as one."""
    empty = f" ({r.empty} empty)" if r.empty else ""
    if r.degenerate:
        return count_text(r) + empty
    return f"{r.value:.2f} [{r.low:.2f}, {r.high:.2f}]" + empty


def count_text(r: Interval) -> str:
    """``0.80 (4/5)``: the rate with what it counts, where an interval would say nothing."""
    return f"{r.value:.2f} ({r.count}/{r.n})" + (f" ({r.empty} empty)" if r.empty else "")


#: the conversation figures every view shows, per part, in its words (docs/metrics.md §10, §11)
CONVERSATION_FIGURES: dict[str, tuple[tuple[str, str], ...]] = {
    ROUTING: (
        ("turn.1.routing_accuracy", "turn 1"),
        ("turn.2.routing_accuracy", "turn 2"),
        ("turn.3.routing_accuracy", "turn 3"),
        ("turn.4plus.routing_accuracy", "turn 4+"),
        ("conversation.routing_accuracy", "whole conversation"),
        ("conversation.n", "conversations"),
    ),
    END_TO_END: (
        ("question.ex", "question EX"),
        ("conversation.ex", "interaction EX"),
        ("turn.1.ex", "turn 1 EX"),
        ("turn.2.ex", "turn 2 EX"),
        ("turn.3.ex", "turn 3 EX"),
        ("turn.4plus.ex", "turn 4+ EX"),
        ("conversation.n", "conversations"),
        ("asking.asked_expected", "asked when expected"),
        ("asking.clarify_turns", "turns expecting a question"),
        ("asks_per_served", "asks per served turn"),
    ),
}

#: what the conversation table of each part shows, in one sentence
_CONVERSATION_CAPTIONS = {
    ROUTING: "routing accuracy per turn position, and over whole conversations (every turn routed right)",
    END_TO_END: "question EX: every turn; interaction EX: every turn of a conversation right",
}


def conversation_figures(p: Part) -> tuple[str, list[RouterFigures], list[tuple[str, str]]]:
    """The conversation table of a part: its caption, the routers with figures and the figures shown.

    Empty (``""``, no router) when no router of the part ran over conversations.
    """
    shown = [r for r in p.routers if r.same_as is None and "conversation.n" in r.figures]
    figures = [(k, name) for k, name in CONVERSATION_FIGURES.get(p.key, ()) if any(k in r.figures for r in shown)]
    if not shown or not figures:
        return "", [], []
    return _CONVERSATION_CAPTIONS[p.key] + " (95% intervals over conversations)", shown, figures


def figure_text(figures: dict[str, float], key: str) -> str:
    """One further figure as shown: a count as an integer, a rate with its interval when it has one."""
    value = figures[key]
    if key.endswith(".n") or (key.startswith("asking.") and not key.endswith("_rate")):
        return str(int(value))
    low, high = figures.get(f"{key}_ci_low"), figures.get(f"{key}_ci_high")
    if low is None or high is None or low == high:
        return f"{value:.2f}"
    return f"{value:.2f} [{low:.2f}, {high:.2f}]"


def p_text(p: float) -> str:
    """``p=0.003``, ``p<0.001``."""
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def cost_text(c: Cost) -> str:
    """``0.9 ms per decision (p50; p95 2.1)``."""
    digits = 1 if c.p50 < 100 else 0
    return f"{c.p50:.{digits}f} {c.unit} (p50; p95 {c.p95:.{digits}f})"


def part_title(p: Part, n: int) -> str:
    """``routing: first decisions on 111 requests``."""
    return f"{PART_NAMES.get(p.key, p.key)}: {p.unit} on {n} requests"


def verdict_sentences(p: Part, v: Verdict) -> list[str]:
    """The verdict on one measure as short sentences, the same in every view."""
    name = measure(v.measure).name
    head = f"{name} (n={v.n})"
    refs = ", ".join(f"{r} {x:.2f}" for r, x in v.references.items())
    if v.smoke:
        detect = "no difference at all" if v.mdd > 1 else f"only differences of {v.mdd:.2f} or more"
        rates = ", ".join(
            f"{r.router} {r.rates[v.measure].value:.2f}"
            for r in p.routers
            if r.same_as is None and v.measure in r.rates
        )
        return [
            f"{head}: too few to compare: n={v.n} detects {detect}; a smoke check, not a finding.",
            f"rates: {rates}.",
        ]
    best = p.router(v.best)
    out = [f"{head}: best {v.best} {interval_text(best.rates[v.measure])}."]
    if v.better_than:
        out.append(
            "Significantly better than " + ", ".join(f"{r} ({p_text(x)})" for r, x in v.better_than.items()) + "."
        )
    if v.not_told_apart:
        out.append(
            "Not told apart from "
            + ", ".join(v.not_told_apart)
            + f" (this n detects differences of {v.mdd:.2f} or more)."
        )
    if v.cheapest != v.best:
        out.append(f"Cheapest within its interval: {v.cheapest}, {cost_text(p.router(v.cheapest).cost)}.")
    else:
        out.append(f"Also the cheapest within its interval: {cost_text(best.cost)}.")
    if refs:
        out.append(f"Reference: {refs}.")
    return out
