r"""Conversation runs side by side, turn by turn: the table of a follow-up study (issue 51).

Each argument is ``LABEL=RUN_ID`` (a stored run, ``<session>.<router>``); the first one is the
reference every other run is paired against, on the turns both ran. Printed per run, as a
Markdown table: question EX, interaction EX (every turn of a conversation right), EX on turn 1,
2, 3 and 4+, EX on follow-ups (turn >= 2) with its 95 % interval from a bootstrap over whole
conversations, and the follow-ups it won and lost against the reference with the paired
sign-flip p-value over conversations (docs/metrics.md §10); then p50 and p95 seconds per turn.

    python scripts/turn_study.py --store study.duckdb \
        parenthesis=SESSION_A.oracle edit=SESSION_B.oracle rewrite=SESSION_C.oracle

A turn the ``ex`` scorer did not score (a crash or a cut-off) is left out of every rate and
counted in the ``not scored`` column, never scored as wrong; a query that failed is scored 0,
as everywhere in the project.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from routerlab.eval.scoring import ExampleResult
from routerlab.eval.stats import cluster_bootstrap_ci, paired_sign_flip_p
from routerlab.eval.store import ResultsStore

__all__ = ["main"]


@dataclass(frozen=True)
class _Turn:
    example: str
    conversation: str
    turn: int
    ex: float | None
    latency_s: float


def _turns(results: list[ExampleResult]) -> dict[str, _Turn]:
    out: dict[str, _Turn] = {}
    for r in results:
        score = r.scores.get("ex")
        # a query that failed is scored 0 by the ex scorer; a crash or a cut-off has no score
        ex = score.value if score is not None else None
        out[r.example_id] = _Turn(r.example_id, r.conversation or r.example_id, r.turn, ex, r.latency_s)
    return out


def _rate(turns: list[_Turn]) -> str:
    scored = [t for t in turns if t.ex is not None]
    if not scored:
        return "-"
    return f"{np.mean([t.ex for t in scored]):.2f} ({len(scored)})"


def _interaction(turns: list[_Turn]) -> str:
    by_conv: dict[str, list[float | None]] = defaultdict(list)
    for t in turns:
        by_conv[t.conversation].append(t.ex)
    whole = [all(v == 1.0 for v in vs) for vs in by_conv.values() if all(v is not None for v in vs)]
    return f"{np.mean(whole):.2f} ({len(whole)})" if whole else "-"


def _followups(turns: list[_Turn]) -> str:
    scored = [t for t in turns if t.turn >= 2 and t.ex is not None]
    if not scored:
        return "-"
    values = [float(t.ex) for t in scored]
    low, high = cluster_bootstrap_ci(values, [t.conversation for t in scored])
    return f"{np.mean(values):.2f} [{low:.2f}, {high:.2f}] ({len(values)})"


def _paired(ref: dict[str, _Turn], run: dict[str, _Turn]) -> str:
    shared = [k for k in ref if k in run and ref[k].turn >= 2 and ref[k].ex is not None and run[k].ex is not None]
    if not shared:
        return "-"
    a = [float(ref[k].ex) for k in shared]
    b = [float(run[k].ex) for k in shared]
    won = sum(1 for x, y in zip(a, b, strict=True) if y > x)
    lost = sum(1 for x, y in zip(a, b, strict=True) if y < x)
    p = paired_sign_flip_p(a, b, [ref[k].conversation for k in shared])
    return f"{won} / {lost}, p = {p:.3f}"


def main(argv: list[str] | None = None) -> int:
    """Print the turn-by-turn table of the runs named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default=".routerlab/results.duckdb", help="DuckDB results store")
    parser.add_argument("runs", nargs="+", help="LABEL=RUN_ID, the reference first")
    args = parser.parse_args(argv)
    pairs = []
    for item in args.runs:
        label, sep, run_id = item.partition("=")
        if not sep or not run_id:
            print(f"bad run {item!r}: expected LABEL=RUN_ID (e.g. edit=20261128-...oracle)", file=sys.stderr)
            return 2
        pairs.append((label, run_id))
    store = ResultsStore(args.store, read_only=True)  # a mistyped path is an error, never a new store
    known = set(store.runs()["run_id"])
    missing = [r for _, r in pairs if r not in known]
    if missing:
        print(f"runs not in {args.store}: {missing}; `routerlab runs --store ...` lists them", file=sys.stderr)
        return 2
    by_id = {r: store.results(r) for _, r in pairs}
    runs = [(label, _turns(by_id[r])) for label, r in pairs]
    ref = runs[0][1]
    print(
        "| run | question EX | interaction EX | turn 1 | turn 2 | turn 3 | turn 4+ | follow-ups [95 % CI] "
        "| follow-ups won / lost vs first | not scored | p50 s | p95 s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, turns in runs:
        ts = list(turns.values())
        buckets = [[t for t in ts if t.turn == k] for k in (1, 2, 3)] + [[t for t in ts if t.turn >= 4]]
        seconds = [t.latency_s for t in ts] or [float("nan")]  # a run with no stored turn yet
        paired = "(reference)" if turns is ref else _paired(ref, turns)
        print(
            f"| {label} | {_rate(ts)} | {_interaction(ts)} | "
            + " | ".join(_rate(b) for b in buckets)
            + f" | {_followups(ts)} | {paired} | {sum(t.ex is None for t in ts)} | "
            f"{np.percentile(seconds, 50):.1f} | {np.percentile(seconds, 95):.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
