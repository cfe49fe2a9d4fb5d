"""The comparison in a terminal: ``routerlab compare`` and the closing table of ``routerlab run``.

Renders :class:`~routerlab.eval.analysis.model.SessionComparison` and computes nothing. Every
line fits the width it is given and no cell is cut: a table too wide for the terminal is printed
stacked (one block per router), long names are abbreviated with a legend, and a part too small
to tell routers apart says "too few to compare" once instead of printing its tests.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence

from routerlab.eval.analysis.measures import PART_NAMES, measure
from routerlab.eval.analysis.model import Part, SessionComparison
from routerlab.eval.analysis.words import (
    conversation_figures,
    count_text,
    figure_text,
    interval_text,
    num,
    p_text,
    part_title,
    verdict_sentences,
)

__all__ = ["render_console", "terminal_width"]

#: disagreements and failures listed per part before "... and N more"
_SHOWN = 5


def terminal_width(width: int | None = None) -> int:
    """The width to render at: ``width``, else the terminal's (``$COLUMNS``), else 100."""
    return width or shutil.get_terminal_size((100, 24)).columns


def _wrap(text: str, width: int, indent: str = "", hang: str = "    ") -> list[str]:
    return textwrap.wrap(
        text, width=width, initial_indent=indent, subsequent_indent=indent + hang, break_on_hyphens=False
    ) or [""]


def table(header: Sequence[str], rows: Sequence[Sequence[str]], width: int, *, right: int = 1) -> list[str]:
    """An aligned table, or, when it would not fit ``width``, one block per row (never a cut cell).

    Args:
        header: Column names.
        rows: Cells (text).
        width: The widest line allowed.
        right: Columns from this index on are right-aligned.
    """
    full = [r for r in rows if len(r) == len(header)]
    widths = [max(len(str(c)) for c in col) for col in zip(header, *full, strict=True)]
    # a one-note row (``= always_sql``) spans the columns after the first
    for r in rows:
        if len(r) < len(header):
            widths[0] = max(widths[0], len(r[0]))
    if sum(widths) + 2 * (len(widths) - 1) <= width:

        def line(cells: Sequence[str]) -> str:
            return "  ".join(
                c.rjust(w) if i >= right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            ).rstrip()

        def any_line(cells: Sequence[str]) -> str:
            if len(cells) == len(header):
                return line(cells)
            return (cells[0].ljust(widths[0]) + "  " + "  ".join(cells[1:])).rstrip()

        return [line(header), *(any_line(r) for r in rows)]
    out = []
    for r in rows:
        if len(r) == 2 and len(header) > 2:  # a row that is one note (``= always_sql``)
            out += _wrap(f"{r[0]}: {r[1]}", width)
            continue
        out += _wrap(str(r[0]), width)
        for name, cell in zip(header[1:], r[1:], strict=True):
            out += _wrap(f"{name}: {cell}", width, indent="  ")
    return out


def _rates_table(p: Part, width: int) -> list[str]:
    # intervals where they say something: the verdict's measures of a part large enough to compare
    with_ci = set() if p.smoke else set(p.verdict_measures)
    header = ["router", *(measure(m).name for m in p.measures)]
    rows = []
    for r in p.routers:
        name = r.router + (" *" if r.baseline else "")
        if r.same_as is not None:
            rows.append([name, f"= {r.same_as}"])
            continue
        rows.append(
            [
                name,
                *(
                    "-" if m not in r.rates else interval_text(r.rates[m]) if m in with_ci else count_text(r.rates[m])
                    for m in p.measures
                ),
            ]
        )
    legend = (
        ("rates with 95% intervals" if with_ci else "rates")
        + (" (others: rate (count/n))" if with_ci and len(with_ci) < len(p.measures) else " (count/n)")
        + "."
        + (" * baseline (a reference, never chosen)." if any(r.baseline for r in p.routers) else "")
        + (" = X: decided and scored exactly as X, shown once." if any(r.same_as for r in p.routers) else "")
    )
    return table(header, rows, width) + _wrap(legend, width)


def _cost_table(p: Part, width: int) -> list[str]:
    shown = [r for r in p.routers if r.same_as is None]
    if not shown:
        return []
    unit = shown[0].cost.unit
    short = "ms" if unit.startswith("ms") else "s"
    header = ["router", f"p50 {short}", f"p95 {short}", "LM calls", f"router LM {short}"]
    rows = [
        [r.router, num(r.cost.p50, 1), num(r.cost.p95, 1), num(r.cost.lm_calls, 2), num(r.cost.router_lm, 2)]
        for r in shown
    ]
    cold = ", cold: each LM call as it cost when first computed" if short == "s" else ""
    legend = (
        f"latency {unit} (median, 95th percentile{cold}); LM calls per request and the time of the router's "
        "own LM calls."
    )
    return table(header, rows, width) + _wrap(legend, width)


def _pairs(p: Part, width: int) -> list[str]:
    out = []
    for m in p.verdict_measures:
        tests = [t for t in p.pairs if t.measure == m]
        if not tests:
            continue
        kinds = " / ".join(dict.fromkeys(t.test for t in tests))
        out.append(f"Paired tests on {measure(m).name} ({kinds}; one per pair, higher rate first):")
        rows = [
            [
                f"{t.a} vs {t.b}",
                f"{t.diff:+.2f} [{t.low:+.2f}, {t.high:+.2f}]",
                p_text(t.p),
                f"{t.a_only}/{t.b_only}",
                "yes" if t.significant else "no",
            ]
            for t in tests
        ]
        out += table(["pair", "difference [95% CI]", "p", "right alone", "signif."], rows, width)
        out += _wrap(
            f"n={tests[0].n} paired examples; right alone: examples only the first / only the second got right; "
            "significant: p < 0.05.",
            width,
        )
    return out


def _recall(p: Part, width: int) -> list[str]:
    shown = [r for r in p.routers if r.same_as is None]
    intents = sorted({i for r in shown for i in r.per_intent})
    if not intents:
        return []
    ns = {i: max(r.per_intent[i].n for r in shown if i in r.per_intent) for i in intents}
    header = ["router", *intents]
    rows = [[r.router, *(num(r.per_intent[i].value) if i in r.per_intent else "-" for i in intents)] for r in shown]
    rows.append(["(requests)", *(str(ns[i]) for i in intents)])
    head = measure(p.verdict_measures[0]).name if p.verdict_measures else ""
    title = f"{head} per gold intent (intervals in the report and the API):"
    return [*_wrap(title, width), *table(header, rows, width)]


def _decision(intent: str | None, method: str, confidence: float | None) -> str:
    """``chat (hybrid:rule:greeting, conf 0.90)``: a decision and how it was made."""
    reason = ", ".join(x for x in (method, "" if confidence is None else f"conf {confidence:.2f}") if x)
    return f"{intent or 'none'}" + (f" ({reason})" if reason else "")


def _quoted(text: str) -> str:
    return '"' + " ".join(text.split()) + '"'


def _disagreements(p: Part, width: int) -> list[str]:
    if not p.disagreements:
        return []
    routers, n = list(p.disagreements[0].decisions), len(p.disagreements)
    shown = "" if n <= _SHOWN else f"first {_SHOWN}; "
    out = _wrap(
        f"Where {', '.join(routers)} disagree: {n} request{'s' if n != 1 else ''} "
        f"({shown}each router's decision and how it decided; + right):",
        width,
    )
    for d in p.disagreements[:_SHOWN]:
        out += _wrap(f"{d.example_id} (gold {d.intent}): {_quoted(d.question)}", width, indent="  ")
        for name, dec in d.decisions.items():
            line = f"{name}: {_decision(dec.intent, dec.method, dec.confidence)}" + (" +" if dec.correct else "")
            out += _wrap(line, width, indent="    ")
    return out


def _failures(p: Part, width: int) -> list[str]:
    shown = [r for r in p.routers if r.same_as is None]
    if not any(r.failures for r in shown):
        return []
    head = measure(p.verdict_measures[0]).name if p.verdict_measures else "the verdict measure"
    out = [f"Failures on {head} (first {_SHOWN - 2} per router):"]
    for r in shown:
        if not r.failures:
            out += _wrap(f"{r.router}: none of {r.n}", width, indent="  ")
            continue
        out += _wrap(f"{r.router}: {len(r.failures)} of {r.n}", width, indent="  ")
        for f in r.failures[: _SHOWN - 2]:
            decided = _decision(f.decision, f.method, f.confidence)
            out += _wrap(f"{f.example_id} (gold {f.intent}, decided {decided}): {_quoted(f.question)}", width, "    ")
    return out


def _conversations(p: Part, width: int) -> list[str]:
    caption, shown, figures = conversation_figures(p)
    if not shown:
        return []
    rows = [[r.router, *(figure_text(r.figures, k) if k in r.figures else "-" for k, _ in figures)] for r in shown]
    return [*_wrap(f"Conversations ({caption}):", width), *table(["router", *(n for _, n in figures)], rows, width)]


def _notes(p: Part) -> list[str]:
    """What a reader must know to trust the rates: examples not run, gold SQL that cannot run, pass^k."""
    out = []
    not_run = [f"{r.router} {r.not_run}" for r in p.routers if r.not_run]
    if not_run:
        out.append(f"not run (never started, in no rate or test; --resume runs them): {', '.join(not_run)}.")
    gold = [f"{r.router} {int(r.figures['gold_failed'])}" for r in p.routers if "gold_failed" in r.figures]
    if gold:
        out.append(
            f"examples whose gold SQL cannot run (EX counts them wrong, docs/metrics.md 2.1): {', '.join(gold)}."
        )
    passes = [r for r in p.routers if "pass_hat_k" in r.figures and r.same_as is None]
    if passes:
        k = int(passes[0].figures["attempts_k"])
        shown = ", ".join(
            f"{r.router} pass^{k} {r.figures['pass_hat_k']:.2f}, pass@{k} {r.figures['pass_at_k']:.2f}" for r in passes
        )
        out.append(f"with {k} attempts (success every time / at least once): {shown}.")
    return out


def _part(p: Part, width: int, detail: bool) -> list[str]:
    n = max((r.n for r in p.routers), default=0)
    title = part_title(p, n)
    out = ["", f"== {title} ==", ""]
    out.append("Verdict:")
    if p.smoke:
        v = p.verdicts[0]
        detect = "no difference at all" if v.mdd > 1 else f"only differences of {v.mdd:.2f} or more"
        out += _wrap(
            f"too few to compare: n={v.n} detects {detect} (80% power, paired); a smoke check that every "
            "path runs, not a finding. No paired tests are shown.",
            width,
            indent="  ",
        )
    for v in [] if p.smoke else p.verdicts:
        out += _wrap(" ".join(verdict_sentences(p, v)), width, indent="  ")
    if not p.verdicts:
        out += _wrap("no router to judge: every router here is a baseline (a reference, never chosen).", width, "  ")
    out.append("")
    out += _rates_table(p, width)
    out.append("")
    out += _cost_table(p, width)
    if conversations := _conversations(p, width):
        out += ["", *conversations]
    for note in _notes(p):
        out += _wrap(note, width)
    if not detail:
        return out
    if not p.smoke:
        pairs = _pairs(p, width)
        out += ["", *pairs] if pairs else []
    for section in (_recall(p, width), _disagreements(p, width), _failures(p, width)):
        if section:
            out += ["", *section]
    return out


def render_console(model: SessionComparison, *, width: int | None = None, detail: bool = True) -> str:
    """The comparison as plain text no wider than ``width`` (default: the terminal's).

    Args:
        model: The comparison.
        width: The widest line (default :func:`terminal_width`).
        detail: Also the paired tests, per-intent rates, disagreements and failures
            (``routerlab compare``); without, the verdict and rates of each part (the run's closing table).
    """
    w = terminal_width(width)
    out = _wrap(
        f"session {model.session}: {model.dataset}/{model.split}, lm {model.lm}; "
        f"parts: {', '.join(PART_NAMES.get(p.key, p.key) for p in model.parts)}",
        w,
    )
    for note in model.notes:
        out += _wrap(f"note: {note}", w)
    for p in model.parts:
        out += _part(p, w, detail)
    return "\n".join(line.rstrip() for line in out) + "\n"
