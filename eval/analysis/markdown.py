"""The comparison as Markdown: the report's sections and MLflow's ``comparison.md`` and description.

Renders :class:`~routerlab.eval.analysis.model.SessionComparison` part by part, verdict first,
and computes nothing. A section that does not apply to a part is left out (no empty tables, no
"n/a" cells): a router that repeats another is one line (``= always_sql``), a part too small to
compare says so once.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from routerlab.eval.analysis.measures import PART_NAMES, measure
from routerlab.eval.analysis.model import Decision, Part, SessionComparison
from routerlab.eval.analysis.words import (
    conversation_figures,
    figure_text,
    interval_text,
    num,
    p_text,
    part_title,
    verdict_sentences,
)
from routerlab.eval.store import ROUTING

__all__ = [
    "conversations_md",
    "cost_md",
    "disagreements_md",
    "document",
    "failures_md",
    "pairs_md",
    "part_heading",
    "per_intent_md",
    "rates_md",
    "verdict_md",
]

#: examples listed per router or section before "and N more"
SHOWN = 5


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], *, text: int = 1) -> str:
    """A Markdown table: the first ``text`` columns (words) left-aligned, the rest (figures) right-aligned."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"

    align = "| " + " | ".join("---" if i < text else "---:" for i in range(len(header))) + " |"
    return "\n".join([line(header), align, *(line(r) for r in rows)])


def _text(text: str) -> str:
    """A request's words as they were typed: no Markdown or HTML read into them (``COUNT(*)`` is no emphasis)."""
    return html.escape(re.sub(r"([\\`*_\[\]#~])", r"\\\1", text), quote=False)


def _n(p: Part) -> int:
    return max((r.n for r in p.routers), default=0)


def part_heading(p: Part) -> str:
    """``## Routing: first decisions on 111 requests``."""
    title = part_title(p, _n(p))
    return f"## {title[0].upper()}{title[1:]}"


def verdict_md(model: SessionComparison) -> str:
    """The verdict of every part, as the console prints it (one bullet per measure)."""
    lines = []
    for p in model.parts:
        lines.append(f"**{PART_NAMES.get(p.key, p.key).capitalize()}** ({p.unit}, n={_n(p)}):")
        lines.append("")
        if p.smoke:
            v = p.verdicts[0]
            detect = "no difference at all" if v.mdd > 1 else f"only differences of {v.mdd:.2f} or more"
            lines.append(
                f"- too few to compare: n={v.n} detects {detect} (80% power, paired); a smoke check that "
                "every path runs, not a finding."
            )
        elif p.verdicts:
            lines += [f"- {' '.join(verdict_sentences(p, v))}" for v in p.verdicts]
        else:
            lines.append("- no router to judge: every router here is a baseline (a reference, never chosen).")
        lines.append("")
    return "\n".join(lines)


def rates_md(p: Part) -> str:
    """Each router's rates with 95 % intervals and its cost (median and p95)."""
    short = "ms" if p.routers and p.routers[0].cost.unit.startswith("ms") else "s"
    header = ["router", *(measure(m).name for m in p.measures), f"p50 {short}", f"p95 {short}"]
    rows = []
    for r in p.routers:
        name = f"{r.router} (baseline)" if r.baseline else r.router
        if r.same_as is not None:
            rows.append([name, f"= {r.same_as} (same decisions and scores)", *[""] * (len(header) - 2)])
            continue
        rows.append(
            [
                name,
                *(interval_text(r.rates[m]) if m in r.rates else "" for m in p.measures),
                num(r.cost.p50, 1),
                num(r.cost.p95, 1),
            ]
        )
    legend = "; ".join(f"**{measure(m).name}**: {measure(m).meaning}" for m in p.measures)
    return f"{_table(header, rows)}\n\n{legend}.\n"


def pairs_md(p: Part) -> str:
    """The paired tests: the significant pairs first; empty when the part is a smoke check or has none."""
    if p.smoke or not p.pairs:
        return ""
    out = []
    for m in p.verdict_measures:
        tests = sorted((t for t in p.pairs if t.measure == m), key=lambda t: (not t.significant, t.p))
        if not tests:
            continue
        rows = [
            [
                f"{t.a} vs {t.b}",
                f"{t.diff:+.2f} [{t.low:+.2f}, {t.high:+.2f}]",
                p_text(t.p),
                t.test,
                f"{t.a_only} / {t.b_only}",
                "yes" if t.significant else "no",
            ]
            for t in tests
        ]
        header = ["pair (higher first)", "difference [95% CI]", "p", "test", "right alone", "significant"]
        out.append(f"**{measure(m).name}**, n={tests[0].n} paired examples:\n\n{_table(header, rows)}\n")
    return "\n".join(out)


def _decision(d: Decision) -> str:
    reason = ", ".join(x for x in (d.method, "" if d.confidence is None else f"{d.confidence:.2f}") if x)
    return f"{d.intent or 'none'}" + (f" ({reason})" if reason else "") + (" ✓" if d.correct else " ✗")


def failures_md(p: Part) -> str:
    """Per router: how many it got wrong on the verdict measure, and the first few with their questions."""
    shown = [r for r in p.routers if r.same_as is None]
    if not shown or not p.verdict_measures:
        return ""
    head = measure(p.verdict_measures[0]).name
    out = []
    for r in shown:
        wrong = len(r.failures)
        rate = r.rates.get(p.verdict_measures[0])
        summary = (
            f"**{r.router}**: {wrong} of {r.n} wrong on {head}"
            if wrong
            else f"**{r.router}**: none of {r.n} wrong on {head}"
        )
        if rate is not None and wrong:
            summary += f" ({head} {num(rate.value)})"
        out.append(summary)
        if wrong:
            # a first decision's reason is the decision itself, already in the row
            reason = p.key != ROUTING
            rows = [
                [f.example_id, f.intent, f.decision or "none", f.method, _text(f.question)]
                + ([f.reason] if reason else [])
                for f in r.failures[:SHOWN]
            ]
            header = ["example", "gold", "decided", "how", "question", *(["reason"] if reason else [])]
            out.append("")
            out.append(_table(header, rows, text=len(header)))
            if wrong > SHOWN:
                out.append(f"\n… and {wrong - SHOWN} more (`routerlab.load(id).failures(part)`).")
        out.append("")
    return "\n".join(out)


def disagreements_md(p: Part) -> str:
    """The requests the part's routers decided differently, each router's decision and reason."""
    if not p.disagreements:
        return ""
    routers = list(p.disagreements[0].decisions)
    rows = [
        [d.example_id, d.intent, _text(d.question), *(_decision(x) for x in d.decisions.values())]
        for d in p.disagreements[: 3 * SHOWN]
    ]
    more = len(p.disagreements) - len(rows)
    tail = f"\n\n… and {more} more (`routerlab.load(id).disagreements(part)`)." if more > 0 else ""
    return (
        f"{len(p.disagreements)} requests on which {', '.join(routers)} decided differently "
        f"(decision, how it decided and its confidence; ✓ right):\n\n"
        + _table(["example", "gold", "question", *routers], rows, text=3 + len(routers))
        + tail
        + "\n"
    )


def per_intent_md(p: Part) -> str:
    """The verdict measure per gold intent, with intervals (the recall of each intent for routing)."""
    shown = [r for r in p.routers if r.same_as is None]
    intents = sorted({i for r in shown for i in r.per_intent})
    if not intents or not p.verdict_measures:
        return ""
    ns = {i: max(r.per_intent[i].n for r in shown if i in r.per_intent) for i in intents}
    rows = [[r.router, *(interval_text(r.per_intent[i]) if i in r.per_intent else "" for i in intents)] for r in shown]
    head = measure(p.verdict_measures[0]).name
    return (
        f"{head} per gold intent (n per intent in brackets):\n\n"
        + _table(["router", *(f"{i} ({ns[i]})" for i in intents)], rows)
        + "\n"
    )


def conversations_md(p: Part) -> str:
    """A part's figures over conversations (per turn, whole conversations, the asking account); empty without."""
    caption, shown, figures = conversation_figures(p)
    if not shown:
        return ""
    rows = [[r.router, *(figure_text(r.figures, k) if k in r.figures else "" for k, _ in figures)] for r in shown]
    return caption[0].upper() + caption[1:] + ".\n\n" + _table(["router", *(n for _, n in figures)], rows) + "\n"


def cost_md(p: Part) -> str:
    """A short cost table: latency median and p95, LM calls, the router's LM seconds, tokens."""
    rows = [
        [
            r.router,
            num(r.cost.p50, 1),
            num(r.cost.p95, 1),
            num(r.cost.lm_calls, 2),
            num(r.cost.router_lm, 2),
            num(r.cost.tokens, 0),
        ]
        for r in p.routers
        if r.same_as is None
    ]
    unit = p.routers[0].cost.unit if p.routers else ""
    header = ["router", f"p50 ({unit})", "p95", "LM calls", "router LM", "tokens"]
    cold = " at cold cost (each LM call as it cost when first computed)" if unit.startswith("s ") else ""
    return (
        f"Latency{cold}: median and 95th percentile per request; LM calls, the time of the router's own LM "
        f"calls (same unit) and tokens per request.\n\n{_table(header, rows)}\n"
    )


def document(model: SessionComparison) -> str:
    """The whole comparison as one Markdown page (MLflow's ``comparison.md``)."""
    out = [f"# Session {model.session}", "", f"{model.dataset}/{model.split}, lm {model.lm}", ""]
    out += [f"> note: {n}" for n in model.notes]
    out += ["## Verdict", "", verdict_md(model)]
    for p in model.parts:
        out += [part_heading(p), "", rates_md(p)]
        for title, body in (
            ("Paired tests", pairs_md(p)),
            ("Per gold intent", per_intent_md(p)),
            ("Failures", failures_md(p)),
            ("Where the routers disagree", disagreements_md(p)),
            ("Conversations", conversations_md(p)),
            ("Cost", cost_md(p)),
        ):
            if body:
                out += [f"### {title}", "", body]
    return "\n".join(out)
