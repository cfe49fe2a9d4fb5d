"""Comparing stored runs: session ids expanded to their runs, the comparison, unfinished-run notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from routerlab._runs.resume import resume_command
from routerlab.app.defaults import DEFAULT_STORE_PATH, DEFAULT_TRACKING_URI

if TYPE_CHECKING:
    import pandas as pd

    from routerlab.eval.compare import Comparison
    from routerlab.eval.verdict import AxisVerdict

__all__ = ["PART_TITLES", "ComparedRuns", "compare", "expand_run_ids", "render_compared", "status_notes"]


def expand_run_ids(known: Sequence[str], ids: Sequence[str]) -> list[str]:
    """Run ids as given, with each session id replaced by its runs (``<session>.<router>``)."""
    expanded: list[str] = []
    for rid in ids:
        expanded += [rid] if rid in known else [k for k in known if k.startswith(f"{rid}.")] or [rid]
    return expanded


def status_notes(store: Any, run_ids: Sequence[str]) -> list[str]:
    """One warning per compared run that did not finish: its figures are partial or not a result."""
    from routerlab.eval.store import session_of

    runs = store.runs()
    status = dict(zip(runs["run_id"], runs["status"], strict=True))
    notes = []
    for rid in run_ids:
        st = status.get(rid)
        session = session_of(rid)
        if st in ("KILLED", "RUNNING"):
            how = "was interrupted or cut off" if st == "KILLED" else "is still running, or its process was killed"
            notes.append(
                f"note: run {rid} {how} ({st}): its figures cover only the examples it finished; "
                f"finish it with  {resume_command(session, DEFAULT_STORE_PATH, DEFAULT_TRACKING_URI)}"
            )
        elif st == "FAILED":
            notes.append(
                f"note: run {rid} FAILED (an error stopped it, or most of its examples crashed): "
                "its figures are not a measure of the router"
            )
    return notes


@dataclass(frozen=True)
class ComparedRuns:
    """A comparison and what to say about it, one comparison per part of the session.

    Attributes:
        comparison: The end-to-end part's comparison, or the routing part's when that is all
            there is (rates with 95 % CIs, latency, tokens and paired tests per run).
        notes: One warning per run that did not finish.
        parts: ``part -> comparison`` for every part compared (:data:`~routerlab.eval.store.PARTS`
            order: routing first, then end to end).
        recall: ``part -> recall per gold intent`` (:func:`routerlab.eval.intent_recall.intent_recall`).
        verdicts: The routing part's verdict (best router, McNemar against each other), when there is one.
    """

    comparison: Comparison
    notes: list[str]
    parts: dict[str, Comparison] = field(default_factory=dict)
    recall: dict[str, pd.DataFrame] = field(default_factory=dict)
    verdicts: list[AxisVerdict] = field(default_factory=list)

    def csv_tables(self) -> dict[str, str]:
        """``name -> CSV text``: the main part's tables keep their names, another part's are prefixed with it."""
        from routerlab.eval.compare import csv_tables

        tables = csv_tables(self.comparison)
        for part, comparison in self.parts.items():
            if comparison is not self.comparison:
                tables |= {f"{part}_{name}": text for name, text in csv_tables(comparison).items()}
        return tables


#: how each part is titled where a session has more than one
PART_TITLES: dict[str, str] = {
    "routing": "Routing part: each router's first decision (no sub-agent runs)",
    "end_to_end": "End-to-end part: every request through the whole pipeline",
}


def _by_part(store: Any, run_ids: Sequence[str]) -> dict[str, list[str]]:
    """The run ids grouped by their session part, parts in :data:`PARTS` order."""
    from routerlab.eval.store import END_TO_END, PARTS

    runs = store.runs()
    part = dict(zip(runs["run_id"], runs["part"], strict=True))
    grouped = {p: [r for r in run_ids if part.get(r, END_TO_END) == p] for p in PARTS}
    return {p: ids for p, ids in grouped.items() if ids}


def compare(ids: str | Sequence[str], *, store: str = DEFAULT_STORE_PATH, cost: str = "cold") -> ComparedRuns:
    """Compare stored runs (``routerlab compare`` in Python); only reads the store.

    A session with a routing part (``routerlab route``, the main job) is compared part by part:
    the routing runs on ``first_decision`` (McNemar on per-example correctness), with recall per
    gold intent and a verdict; the end-to-end runs on the headline rates.

    Args:
        ids: Run ids (``SESSION.ROUTER``) or session ids (every run of the session).
        store: The DuckDB results store; a missing one is an error, never created.
        cost: Latency and token columns: ``cold`` (as first computed) or ``observed`` (as paid).

    Returns:
        The comparison of each part and the notes on unfinished runs.

    Raises:
        ConfigError: No such store or run.
    """
    from routerlab._routing_eval.stored import FIRST_DECISION, routing_verdict
    from routerlab.eval.compare import compare_runs
    from routerlab.eval.intent_recall import intent_recall
    from routerlab.eval.store import END_TO_END, ROUTING, ResultsStore

    rs = ResultsStore(store, read_only=True)
    expanded = expand_run_ids(rs.runs()["run_id"].tolist(), [ids] if isinstance(ids, str) else list(ids))
    grouped = _by_part(rs, expanded) or {END_TO_END: expanded}  # unknown ids: compare_runs names them
    parts: dict[str, Comparison] = {}
    recall: dict[str, pd.DataFrame] = {}
    verdicts: list[AxisVerdict] = []
    for part, run_ids in grouped.items():
        if part == ROUTING:
            parts[part] = compare_runs(rs, run_ids, scorers=(FIRST_DECISION,), cost=cost)
            results = {r.label: rs.results(r.run_id) for r in parts[part].runs}
            recall[part] = intent_recall(results, FIRST_DECISION)
            verdict = routing_verdict(results, baselines=[r.label for r in parts[part].runs if r.baseline])
            verdicts += [verdict] if verdict is not None else []
        else:
            parts[part] = compare_runs(rs, run_ids, cost=cost)
    main = parts.get(END_TO_END) or next(iter(parts.values()))
    return ComparedRuns(main, status_notes(rs, expanded), parts, recall, verdicts)


def render_compared(compared: ComparedRuns, fmt: str = "table", *, width: int | None = None) -> str:
    """Every part of a comparison as ``routerlab compare`` prints it (``table``, ``markdown`` or ``json``).

    One part alone prints as :func:`routerlab.eval.compare.render` does, followed (routing part)
    by its recall per intent and verdict; several parts print one after the other, each under its
    title. JSON: the end-to-end comparison's keys, plus ``parts``, ``recall`` and ``verdict`` when
    there is a routing part.
    """
    import json

    from routerlab.eval.compare import render
    from routerlab.eval.intent_recall import render_intent_recall
    from routerlab.eval.verdict import render_verdict, render_verdict_markdown

    if fmt == "json" and list(compared.parts) in ([], ["end_to_end"]):
        return json.dumps(compared.comparison.to_dict(), indent=2)  # an end-to-end session: as it always was
    if fmt == "json":
        return json.dumps(
            {
                "parts": {p: c.to_dict() for p, c in compared.parts.items()},
                "recall": {p: r.to_dict("records") for p, r in compared.recall.items()},
                "verdict": [v.__dict__ for v in compared.verdicts],
                **compared.comparison.to_dict(),
            },
            indent=2,
            default=str,
        )
    out = []
    for part, comparison in compared.parts.items():
        if len(compared.parts) > 1:
            out.append(
                f"## {PART_TITLES.get(part, part)}\n" if fmt == "markdown" else f"== {PART_TITLES.get(part, part)} =="
            )
        out.append(render(comparison, fmt, width=width))
        if part in compared.recall:
            out.append(render_intent_recall(compared.recall[part], "markdown" if fmt == "markdown" else "table"))
            if compared.verdicts:
                out.append(
                    render_verdict_markdown(compared.verdicts) + "\n"
                    if fmt == "markdown"
                    else render_verdict(compared.verdicts, width=width or 118) + "\n"
                )
    return "\n".join(out)
