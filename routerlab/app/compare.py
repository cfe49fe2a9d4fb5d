"""Comparing stored runs: session ids expanded to their runs, the comparison, unfinished-run notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from routerlab.app.defaults import DEFAULT_STORE_PATH, DEFAULT_TRACKING_URI
from routerlab.resume import resume_command

if TYPE_CHECKING:
    from routerlab.eval.compare import Comparison

__all__ = ["ComparedRuns", "compare", "expand_run_ids", "status_notes"]


def expand_run_ids(known: Sequence[str], ids: Sequence[str]) -> list[str]:
    """Run ids as given, with each session id replaced by its runs (``<session>.<router>``)."""
    expanded: list[str] = []
    for rid in ids:
        expanded += [rid] if rid in known else [k for k in known if k.startswith(f"{rid}.")] or [rid]
    return expanded


def status_notes(store: Any, run_ids: Sequence[str]) -> list[str]:
    """One warning per compared run that did not finish: its figures are partial or not a result."""
    runs = store.runs()
    status = dict(zip(runs["run_id"], runs["status"], strict=True))
    notes = []
    for rid in run_ids:
        st = status.get(rid)
        session = rid.rsplit(".", 1)[0]
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
    """A comparison and what to say about it.

    Attributes:
        comparison: Rates with 95 % CIs, latency, tokens and paired tests per run.
        notes: One warning per run that did not finish.
    """

    comparison: Comparison
    notes: list[str]


def compare(ids: str | Sequence[str], *, store: str = DEFAULT_STORE_PATH, cost: str = "cold") -> ComparedRuns:
    """Compare stored runs (``routerlab compare`` in Python); only reads the store.

    Args:
        ids: Run ids (``SESSION.ROUTER``) or session ids (every run of the session).
        store: The DuckDB results store; a missing one is an error, never created.
        cost: Latency and token columns: ``cold`` (as first computed) or ``observed`` (as paid).

    Returns:
        The comparison and the notes on unfinished runs.

    Raises:
        ConfigError: No such store or run.
    """
    from routerlab.eval.compare import compare_runs
    from routerlab.eval.store import ResultsStore

    rs = ResultsStore(store, read_only=True)
    expanded = expand_run_ids(rs.runs()["run_id"].tolist(), [ids] if isinstance(ids, str) else list(ids))
    return ComparedRuns(compare_runs(rs, expanded, cost=cost), status_notes(rs, expanded))
