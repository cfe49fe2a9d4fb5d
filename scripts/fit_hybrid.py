r"""Fit the ``hybrid`` router's ``threshold`` and ``lm_threshold`` on one split (see routerlab/fit/hybrid_fit.py).

Runs the rules router and the hybrid router with the LM asked on every example (two ``route``
passes, first decisions only) on ``--split`` (less the examples that are demos in the hybrid
prompt: the LM has seen their answers), scores every threshold pair and prints the best
ones. The LM pass has ``lm_backed`` as ``--lm-backed`` / ``--no-lm-backed`` say (on, the router's
default): the pair is fitted for the router with that setting. With ``--report`` it then runs the
same two passes on that split and prints the chosen pair's figures there once (never used for
choosing).

Usage::

    .venv/bin/python scripts/fit_hybrid.py --split train --report dev
"""

from __future__ import annotations

import argparse
import json

from routerlab._routing_eval.decisions import first_decisions
from routerlab._runs.config import load_run_config
from routerlab._runs.session import load_dataset, select
from routerlab.agents.lm import resolve_lm
from routerlab.fit.hybrid_fit import fit_hybrid, hybrid_decisions, hybrid_grid
from routerlab.fit.objective import routing_score
from routerlab.routers.dspy_router import load_program


def _parts(
    split: str, lm_spec: str, skip_demos: bool, lm_backed: bool
) -> tuple[list, list, dict[str, tuple[str, ...]]]:
    config = load_run_config(None, split=split, limit=0, lm=lm_spec)
    examples = select(load_dataset(config), config)
    if skip_demos:
        # the LM sees the program's demos in its prompt: its answers on them would flatter it
        demos = {d["request"] for d in load_program("builtin")[0].route.demos}
        examples = [e for e in examples if e.question not in demos]
    model = resolve_lm(config.lm, api_base=config.lm_api_base)
    rules = first_decisions("rules", {}, examples, model)
    # the LM pass has the lm_backed setting the fitted router will have: the grid models it
    lm = first_decisions("hybrid", {"threshold": 1.01, "lm_threshold": 0.0, "lm_backed": lm_backed}, examples, model)
    return rules, lm, {e.id: e.accepted_intents for e in examples}


def main() -> None:
    """Fit on --split, print the best pairs, and report the chosen pair on --report once."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="train", help="split to fit on (default: train)")
    parser.add_argument("--report", default="", help="split to report the chosen pair on once (e.g. dev)")
    parser.add_argument("--lm", default="local", help="LM spec (default: the embedded model)")
    parser.add_argument(
        "--lm-backed",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fit hybrid with lm_backed on (the router's default) or off",
    )
    args = parser.parse_args()
    rules, lm, accepted = _parts(args.split, args.lm, skip_demos=True, lm_backed=args.lm_backed)
    grid = hybrid_grid(rules, lm, accepted)
    print(grid.sort_values(["score", "accuracy"], ascending=False).head(10).to_string(index=False))
    fit = fit_hybrid(rules, lm, accepted)
    print(json.dumps({"fitted_on": args.split, "lm_backed": args.lm_backed, **fit.__dict__}))
    if args.report:
        rules, lm, accepted = _parts(args.report, args.lm, skip_demos=False, lm_backed=args.lm_backed)
        for label, (t, u) in {"default": (0.8, 0.0), "fitted": (fit.threshold, fit.lm_threshold)}.items():
            picked = hybrid_decisions(rules, lm, t, u)
            correct = [p in accepted[r.example_id] for p, r in zip(picked, rules, strict=True)]
            print(
                json.dumps(
                    {
                        "report": args.report,
                        "pair": label,
                        "threshold": t,
                        "lm_threshold": u,
                        "accuracy": sum(correct) / len(correct),
                        "score": routing_score([r.gold for r in rules], correct),
                        "asked": sum(r.confidence < t for r in rules) / len(rules),
                    }
                )
            )


if __name__ == "__main__":
    main()
