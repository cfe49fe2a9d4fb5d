"""Leave one database out: the word routers' checks on databases they were not chosen on (issue 59).

The shared CoSQL and SParC conversations (``/work/shared/data/{cosql,sparc}-dev-a``) cover eight
databases. For each database D (a fold), every choice is made on the other seven only, by the rule
fixed before the run (docs/results/2026-12-06-loo-schema-check.md):

* candidates: the router's rule table as shipped, the table without each single rule that sent
  a data question of the seven tune databases away from SQL, and the table without all of them;
* eligible: a candidate whose accuracy on the built-in benchmark's dev split (every intent, a
  database outside the eight) is at least the shipped table's minus ``GUARD`` (0.01), so a rule
  that only these data-question sets never need is not dropped for that reason alone;
* chosen: the eligible candidate with the highest routing accuracy on the tune databases' turns;
  ties go to fewer rules left out, then to the shipped table.

The chosen table is then scored on D's turns: routing accuracy, the share of data questions sent
away from SQL (``routerlab.eval.robustness.diversion``) and always_sql's accuracy on the same
turns. Every turn is decided with its gold history (``routerlab._routing_eval.decisions.first_decisions``, as
``routerlab route`` decides it). Output: one row per router and fold, then the averages over folds,
as a Markdown table (``--out`` writes it, with the command, commit and load average, to a file).

    python scripts/loo_schema_check.py --routers rules,semantic
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routerlab._routing_eval.decisions import FirstDecision, first_decisions
from routerlab.agents.lm import resolve_lm
from routerlab.benchmarks.builtin import load_builtin
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.example import Example
from routerlab.eval.robustness import diversion

#: the shared conversation sets (both on the eight databases of spider-dev-a)
SHARED = Path(os.environ.get("ROUTERLAB_SHARED_DATA", "/work/shared/data"))
#: how far below the shipped table a candidate may fall on the built-in dev split
GUARD = 0.01
#: the constructor argument that leaves rules out, per router
WITHOUT_ARG = {"rules": "without", "semantic": "rules_without"}


@dataclass(frozen=True)
class Fold:
    """One held-out database's figures for one router.

    Attributes:
        router: The router.
        database: The held-out database.
        without: The rules the tune databases chose to leave out.
        n: Turns of the held-out database.
        n_data: Its data questions (gold ``sql``).
        accuracy: The chosen table's routing accuracy on them.
        diverted: Its share of data questions sent away from SQL.
        always_sql: always_sql's routing accuracy on the same turns.
        tune_accuracy: The chosen table's accuracy on the seven tune databases.
        shipped_accuracy: The shipped table's routing accuracy on the held-out turns (no choice made).
        shipped_diverted: The shipped table's share of held-out data questions sent away from SQL.
    """

    router: str
    database: str
    without: tuple[str, ...]
    n: int
    n_data: int
    accuracy: float
    diverted: float
    always_sql: float
    tune_accuracy: float
    shipped_accuracy: float
    shipped_diverted: float


def load_turns() -> list[Example]:
    """Every turn of the shared CoSQL and SParC dev parts."""
    import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)

    out: list[Example] = []
    for name in ("cosql", "sparc"):
        out += dataset.build(name, path=str(SHARED / f"{name}-dev-a")).examples
    return out


def accuracy(decisions: Sequence[FirstDecision]) -> float:
    """Share of right first decisions (NaN when there are none)."""
    return sum(d.correct for d in decisions) / len(decisions) if decisions else float("nan")


def diverted(decisions: Sequence[FirstDecision]) -> float:
    """Share of data questions sent away from SQL."""
    return diversion((d.gold, d.predicted, d.correct) for d in decisions).share


class Decider:
    """First decisions of one router per rule table, computed once and kept."""

    def __init__(self, router: str, turns: list[Example], guard_set: list[Example]) -> None:
        self.router = router
        self.turns = turns
        self.guard_set = guard_set
        self.lm = resolve_lm("scripted:basic")
        self._turns: dict[frozenset[str], dict[str, FirstDecision]] = {}
        self._guard: dict[frozenset[str], float] = {}

    def _args(self, without: frozenset[str]) -> dict[str, Any]:
        return {WITHOUT_ARG[self.router]: sorted(without)} if without else {}

    def decisions(self, without: frozenset[str]) -> dict[str, FirstDecision]:
        """Example id -> first decision with ``without`` left out of the table."""
        if without not in self._turns:
            got = first_decisions(self.router, self._args(without), self.turns, self.lm)
            self._turns[without] = {d.example_id: d for d in got}
        return self._turns[without]

    def guard(self, without: frozenset[str]) -> float:
        """Accuracy on the built-in dev split with ``without`` left out."""
        if without not in self._guard:
            self._guard[without] = accuracy(first_decisions(self.router, self._args(without), self.guard_set, self.lm))
        return self._guard[without]


def choose(decider: Decider, tune_ids: set[str]) -> tuple[frozenset[str], float]:
    """The rules to leave out, chosen on the tune turns by the fixed rule, and its tune accuracy."""
    shipped: frozenset[str] = frozenset()
    full = decider.decisions(shipped)
    diverting = sorted(
        {
            rule
            for i, d in full.items()
            if i in tune_ids and d.gold == "sql" and not d.correct and (rule := rule_of(d.method)) is not None
        }
    )
    candidates = [shipped, *(frozenset([r]) for r in diverting)]
    if len(diverting) > 1:
        candidates.append(frozenset(diverting))
    floor = decider.guard(shipped) - GUARD
    scored = []
    for cand in candidates:
        if cand and not _known(decider, cand):
            continue
        if cand and decider.guard(cand) < floor:
            continue
        got = decider.decisions(cand)
        scored.append((accuracy([got[i] for i in tune_ids]), -len(cand), cand == shipped, cand))
    best = max(scored, key=lambda s: s[:3])
    return best[3], best[0]


def rule_of(method: str) -> str | None:
    """The rule a decision's method names (``rule:schema_gap``, ``semantic:turn-check:greeting``), or None."""
    parts = method.split(":")
    if parts[0] == "rule" and len(parts) > 1:
        return parts[1]
    if parts[0] == "semantic" and len(parts) > 2 and parts[1] in ("turn-check", "ambiguity-check"):
        return parts[2]
    return None


def _known(decider: Decider, cand: frozenset[str]) -> bool:
    """Whether every name in ``cand`` is a rule of the table (a method names a rule or a check)."""
    from routerlab.routers.rules import DEFAULT_RULES

    return cand <= {r.name for r in DEFAULT_RULES if r.name != "default"}


def run(routers: Sequence[str]) -> list[Fold]:
    """Every router's folds."""
    turns = load_turns()
    guard_set = [e for e in load_builtin().examples if e.split == "dev"]
    always = {d.example_id: d for d in first_decisions("always_sql", {}, turns, resolve_lm("scripted:basic"))}
    databases = sorted({e.db_id for e in turns})
    folds: list[Fold] = []
    for router in routers:
        decider = Decider(router, turns, guard_set)
        for db in databases:
            held = [e.id for e in turns if e.db_id == db]
            tune = {e.id for e in turns if e.db_id != db}
            without, tune_acc = choose(decider, tune)
            got = decider.decisions(without)
            mine = [got[i] for i in held]
            shipped = [decider.decisions(frozenset())[i] for i in held]
            folds.append(
                Fold(
                    router,
                    db,
                    tuple(sorted(without)),
                    len(mine),
                    sum(d.gold == "sql" for d in mine),
                    accuracy(mine),
                    diverted(mine),
                    accuracy([always[i] for i in held]),
                    tune_acc,
                    accuracy(shipped),
                    diverted(shipped),
                )
            )
            print(folds[-1], file=sys.stderr, flush=True)
    return folds


def table(folds: Sequence[Fold]) -> str:
    """The per-fold table and the averages over folds, in Markdown."""
    lines = [
        "| router | held-out database | turns | data q. | left out (chosen on the other 7) | tune acc. "
        "| accuracy | always_sql | diverted | shipped table: accuracy | shipped table: diverted |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for f in folds:
        lines.append(
            f"| {f.router} | {f.database} | {f.n} | {f.n_data} | {', '.join(f.without) or '(none)'} "
            f"| {f.tune_accuracy:.3f} | {f.accuracy:.3f} | {f.always_sql:.3f} | {f.diverted:.3f} "
            f"| {f.shipped_accuracy:.3f} | {f.shipped_diverted:.3f} |"
        )
    for router in dict.fromkeys(f.router for f in folds):
        mine = [f for f in folds if f.router == router]
        k = len(mine)
        acc = sum(f.accuracy for f in mine) / k
        alw = sum(f.always_sql for f in mine) / k
        div = sum(f.diverted for f in mine) / k
        done = div <= 0.02 and acc >= alw - 0.02
        s_acc = sum(f.shipped_accuracy for f in mine) / k
        s_div = sum(f.shipped_diverted for f in mine) / k
        lines.append(
            f"| **{router}: mean of {k} folds** | | {sum(f.n for f in mine)} | {sum(f.n_data for f in mine)} | "
            f"| | **{acc:.3f}** | **{alw:.3f}** | **{div:.3f}** | {s_acc:.3f} | {s_div:.3f} |"
        )
        lines.append(f"<!-- {router}: diverted <= 0.02 and accuracy >= always_sql - 0.02: {done} -->")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the folds and print (or write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--routers", default="rules,semantic", help="comma-separated: rules, semantic")
    parser.add_argument("--out", help="also write the table, command, commit and load average to this file")
    args = parser.parse_args(argv)
    routers = [r.strip() for r in args.routers.split(",") if r.strip()]
    unknown = [r for r in routers if r not in WITHOUT_ARG]
    if unknown:
        print(f"error: unknown router(s) {unknown}; expected some of {sorted(WITHOUT_ARG)}", file=sys.stderr)
        return 2
    if not (SHARED / "cosql-dev-a" / "dev.json").is_file():
        print(f"error: shared data not found under {SHARED}; set ROUTERLAB_SHARED_DATA", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    folds = run(routers)
    text = table(folds)
    print(text)
    if args.out:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        load = os.getloadavg()
        meta = (
            f"command: `python scripts/loo_schema_check.py --routers {','.join(routers)}`; commit {commit}; "
            f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {time.perf_counter() - t0:.0f} s"
        )
        Path(args.out).write_text(text + "\n\n" + meta + "\n", encoding="utf-8")
        print(meta)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
