"""What ``hybrid``'s LM path can do on the leave-one-database-out turns, without a model (issue 59).

The turns and the way they are decided are those of ``scripts/loo_schema_check.py``: every turn of
the shared CoSQL and SParC dev parts (887 on eight databases), each decided with its gold history
(``first_decisions``), first decision only. ``hybrid`` runs with its shipped arguments (no choice
made on any fold).

Two things are counted:

* **The LM path**: the turns on which ``hybrid`` asks its LM (the rules' confidence is below
  ``threshold``), per database: what a held-out run on the embedded model would pay for.
* **Any LM's bound**: ``hybrid`` is run once per intent with a scripted LM that answers every
  request with that intent's tool. With gold history each turn's decision depends only on the LM's
  answer to that turn, and with ``lm_threshold`` 0 every answer the LM gives passes the threshold,
  so a turn is right under *every* LM when it is right under all of these runs, and diverted under
  *some* LM when one of them diverts it. Per held-out database: the worst accuracy and the worst
  diversion any LM could give ``hybrid``, and the best accuracy, beside ``always_sql``'s; and the
  turns on which the LM's answer changes the decision at all (the runs disagree): the only turns
  a model run can move.

``--threshold 1.01`` asks the LM on every turn: the turns a per-fold fit of ``hybrid``'s
``(threshold, lm_threshold)`` pair (``routerlab.fit.hybrid_fit``) would need the model's answer on.
``--unbacked`` turns ``lm_backed`` off (the LM's answer stands without the rules' evidence).

    python scripts/hybrid_lm_path.py [--threshold 1.01] [--unbacked]      # prints a Markdown table
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from dspy import lm15 as L

from routerlab._routing_eval.decisions import FirstDecision, first_decisions
from routerlab.agents.lm import resolve_lm, scripted_lm
from routerlab.agents.plan import TOOL_INTENT
from routerlab.eval.robustness import diversion

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loo_schema_check import SHARED, load_turns  # the same turns, loaded the same way

#: one tool per intent: what a scripted LM answers to hybrid's generation path
_TOOL = {intent: tool for tool, intent in reversed(list(TOOL_INTENT.items()))}


#: a value of each JSON-schema type, for the arguments a tool requires
_VALUE = {"string": "x", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}


def answering(intent: str) -> object:
    """A scripted LM whose every tool call names ``intent``'s tool, with the arguments it requires."""
    name = _TOOL[intent]

    def reply(request: L.Request) -> dict[str, object]:
        schema = next((t.parameters for t in request.tools or () if t.name == name), {}) or {}
        props = schema.get("properties", {})
        args = {k: _VALUE.get(props.get(k, {}).get("type", "string"), "x") for k in schema.get("required", ())}
        return {"name": name, "args": args}

    return scripted_lm(reply, name=f"always-{intent}")


def _diverted(gold: str, predicted: str | None, correct: bool) -> bool:
    return diversion([(gold, predicted, correct)]).share > 0


def main(argv: Sequence[str] | None = None) -> int:
    """Count the LM path and the bound, print the per-database table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threshold", type=float, default=None, help="hybrid's threshold (default: as shipped)")
    parser.add_argument("--unbacked", action="store_true", help="lm_backed off: the LM's answer stands unbacked")
    args = parser.parse_args(argv)
    hybrid_args: dict[str, object] = {} if args.threshold is None else {"threshold": args.threshold}
    if args.unbacked:
        hybrid_args["lm_backed"] = False
    if not (SHARED / "cosql-dev-a" / "dev.json").is_file():
        print(f"error: shared data not found under {SHARED}; set ROUTERLAB_SHARED_DATA", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    turns = load_turns()
    db_of = {e.id: e.db_id for e in turns}
    rules = {d.example_id: d for d in first_decisions("rules", {}, turns, resolve_lm("scripted:basic"))}
    always = {d.example_id: d for d in first_decisions("always_sql", {}, turns, resolve_lm("scripted:basic"))}
    runs: dict[str, dict[str, FirstDecision]] = {}
    for intent in _TOOL:
        runs[intent] = {d.example_id: d for d in first_decisions("hybrid", hybrid_args, turns, answering(intent))}
    one = next(iter(runs.values()))
    lm_path = {i for i, d in one.items() if d.lm_calls > 0}
    rows = [
        "| held-out database | turns | data q. | LM path | always_sql | hybrid, worst LM | hybrid, best LM "
        "| diverted, worst LM | LM changes the decision |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    means = []
    for db in sorted(set(db_of.values())):
        ids = [i for i in rules if db_of[i] == db]
        worst = sum(all(r[i].correct for r in runs.values()) for i in ids) / len(ids)
        best = sum(any(r[i].correct for r in runs.values()) for i in ids) / len(ids)
        data = [i for i in ids if rules[i].gold == "sql"]
        div = sum(any(_diverted(r[i].gold, r[i].predicted, r[i].correct) for r in runs.values()) for i in data)
        alw = sum(always[i].correct for i in ids) / len(ids)
        moved = sum(len({r[i].predicted for r in runs.values()}) > 1 for i in ids)
        means.append((worst, best, div / len(data), alw, moved))
        rows.append(
            f"| {db} | {len(ids)} | {len(data)} | {sum(i in lm_path for i in ids)} | {alw:.3f} | {worst:.3f} "
            f"| {best:.3f} | {div / len(data):.3f} | {moved} |"
        )
    k = len(means)
    mw, mb, md, ma = (sum(m[j] for m in means) / k for j in range(4))
    moved_all = sum(m[4] for m in means)
    rows.append(
        f"| **mean of {k} folds** | {len(rules)} | {sum(d.gold == 'sql' for d in rules.values())} | "
        f"{len(lm_path)} | **{ma:.3f}** | **{mw:.3f}** | {mb:.3f} | **{md:.3f}** | {moved_all} |"
    )
    lm_calls = {intent: sum(d.lm_calls for d in r.values()) for intent, r in runs.items()}
    load = os.getloadavg()
    print("\n".join(rows))
    print(
        f"\nLM calls per run (one per LM-path turn): {lm_calls}; rules' confidence on the LM path: "
        f"{sorted({round(rules[i].confidence, 3) for i in lm_path})}; {time.perf_counter() - t0:.0f} s; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
