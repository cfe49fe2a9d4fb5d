"""What ``answer_first`` would have decided had it asked back when its drafted candidates disagree.

The rule and its study: docs/results/2026-11-28-ask-on-disagreement.md (issue 49). Reads one stored
run of ``answer_first`` with several candidates (``pipeline.tools.candidates`` > 1) and, for each
threshold d, turns every drafted ``sql`` decision whose candidates returned d or more distinct
results into ``clarify``. Prints routing accuracy, the share of data questions diverted and the
clarification turns asked, beside ``always_sql``'s accuracy on the same turns, and the rule's
verdict.

    python scripts/ask_on_disagreement.py SESSION.answer_first --store runs.duckdb
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from routerlab.agents.errors import ConfigError
from routerlab.eval.scoring import ExampleResult
from routerlab.eval.store import ResultsStore
from routerlab.routers.support.attempt import distinct_results

#: the thresholds the rule compares (distinct results among 4 candidates)
THRESHOLDS: tuple[int, ...] = (2, 3, 4)
#: the issue's bound on data questions sent away from SQL
MAX_DIVERTED = 0.02


@dataclass(frozen=True)
class Turn:
    """One turn of the run: its gold intent, the recorded decision and the draft's disagreement.

    Attributes:
        example_id: The turn's example id.
        gold: Gold intent.
        predicted: The intent the router decided.
        route_correct: The run's routing score for the recorded decision (alternates counted).
        distinct: Distinct results among the candidates of the draft's latest selection, as
            ``answer_first`` records them (0: no selection ran, e.g. the draft declined).
    """

    example_id: str
    gold: str
    predicted: str
    route_correct: bool
    distinct: int


@dataclass(frozen=True)
class Reading:
    """The scores of one threshold (``d`` None: the run as recorded)."""

    d: int | None
    turns: int
    accuracy: float
    data_questions: int
    diverted: int
    clarify_turns: int
    clarify_asked: int

    @property
    def diverted_share(self) -> float:
        """Share of the data questions sent away from SQL."""
        return self.diverted / self.data_questions if self.data_questions else 0.0


def stored_distinct(result: ExampleResult) -> int:
    """Distinct results of the latest candidate selection among a stored result's tool calls."""
    calls = result.trace.tool_calls if result.trace is not None else []
    return distinct_results(sorted(calls, key=lambda c: c.get("step", 0)))[1]


def decide(turn: Turn, d: int | None) -> str:
    """The intent under "ask when d or more distinct results" (None: as recorded)."""
    if d is not None and turn.predicted == "sql" and turn.distinct >= d:
        return "clarify"
    return turn.predicted


def read(turns: Sequence[Turn], d: int | None) -> Reading:
    """Score the decisions of threshold ``d`` against the turns' gold intents."""
    correct = diverted = asked = 0
    for t in turns:
        intent = decide(t, d)
        # a changed decision is right only when it is the gold intent; an unchanged one keeps its score
        correct += (intent == t.gold) if intent != t.predicted else t.route_correct
        diverted += t.gold == "sql" and intent != "sql"
        asked += t.gold == "clarify" and intent == "clarify"
    data = sum(t.gold == "sql" for t in turns)
    clarify = sum(t.gold == "clarify" for t in turns)
    return Reading(d, len(turns), correct / len(turns) if turns else 0.0, data, diverted, clarify, asked)


def verdict(turns: Sequence[Turn], thresholds: Iterable[int] = THRESHOLDS) -> tuple[int | None, list[str]]:
    """The rule: the threshold to keep (None: the setting stays off) and why, per threshold."""
    base = read(turns, None)
    always_sql = base.data_questions / base.turns if base.turns else 0.0
    passing: list[Reading] = []
    reasons: list[str] = []
    for d in thresholds:
        r = read(turns, d)
        fails = []
        if r.diverted_share > MAX_DIVERTED:
            fails.append(f"diverts {r.diverted_share:.3f} > {MAX_DIVERTED}")
        if r.accuracy < always_sql:
            fails.append(f"accuracy {r.accuracy:.3f} < always_sql's {always_sql:.3f}")
        if r.clarify_asked < base.clarify_asked + 1:
            fails.append(f"asks {r.clarify_asked} clarification turns, not more than {base.clarify_asked}")
        reasons.append(f"d={d}: " + ("passes" if not fails else "; ".join(fails)))
        if not fails:
            passing.append(r)
    # highest accuracy wins; a tie goes to the larger d (fewer questions asked)
    best = max(passing, key=lambda r: (round(r.accuracy, 9), r.d or 0), default=None)
    return (best.d if best else None), reasons


def load_turns(run_id: str, store: str) -> list[Turn]:
    """The turns of one stored run (``SESSION.router``), read-only.

    Raises:
        SystemExit: The store cannot be read (the store's own diagnosis), or it holds no result
            of the run.
    """
    try:
        results = ResultsStore(store, read_only=True).results(run_id)
    except ConfigError as exc:
        raise SystemExit(str(exc)) from None
    if not results:
        raise SystemExit(
            f"no results for run {run_id!r} in {store}: expected SESSION.router as `routerlab run` prints it"
        )
    return [
        Turn(
            r.example_id,
            r.intent or "",
            r.predicted_intent or "",
            bool(r.scores["route"].value) if "route" in r.scores else False,
            stored_distinct(r),
        )
        for r in results
    ]


def _table(turns: Sequence[Turn]) -> str:
    base = read(turns, None)
    lines = [
        "| decision | routing accuracy | data questions diverted | clarification turns asked |",
        "|---|---|---|---|",
        f"| `always_sql` (same turns) | {base.data_questions / base.turns:.3f} | 0 | 0 of {base.clarify_turns} |",
    ]
    for d in (None, *THRESHOLDS):
        r = read(turns, d)
        name = "`answer_first` as run" if d is None else f"ask when >= {d} distinct results"
        lines.append(
            f"| {name} | {r.accuracy:.3f} | {r.diverted_share:.3f} ({r.diverted}/{r.data_questions}) "
            f"| {r.clarify_asked} of {r.clarify_turns} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the thresholds' table and the rule's verdict for one stored run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_id", help="SESSION.answer_first, as `routerlab run` prints it")
    parser.add_argument("--store", required=True, help="the DuckDB results store of the run")
    args = parser.parse_args(argv)
    turns = load_turns(args.run_id, args.store)
    spread: dict[int, int] = {}
    for t in turns:
        spread[t.distinct] = spread.get(t.distinct, 0) + 1
    print(f"{len(turns)} turns; distinct results per turn (0: no selection ran): {dict(sorted(spread.items()))}")
    print(_table(turns))
    chosen, reasons = verdict(turns)
    print("\n".join(reasons))
    print(f"rule: {'keep d = ' + str(chosen) if chosen else 'the setting stays off'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
