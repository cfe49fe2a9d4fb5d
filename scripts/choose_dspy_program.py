r"""Choose the ``dspy`` router's default program on real data (routerlab/fit/dspy_choice.py).

Compiles every candidate of the choice file on the fit part of the blend's tune databases,
scores the default and the candidates on the selection part, applies the replacement rule
written in the choice file (and in docs/results/2026-11-26-dspy-real-data.md, before the search),
writes the chosen program to ``routers/programs/`` only when the rule says replace, then routes
the report databases and the built-in dev split once with the program the rule left in place
and prints those figures. Everything it measured is in ``<work dir>/choice.json``.

Usage (the search needs the model alone on the machine)::

    .venv/bin/python scripts/choose_dspy_program.py --config docs/configs/dspy_real_choice.yaml
    .venv/bin/python scripts/choose_dspy_program.py --lm scripted:basic --work-dir /tmp/c \
        --programs-dir /tmp/c/programs     # control flow only: the scripted LM says sql to everything
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from routerlab.agents.errors import RunError
from routerlab.agents.lm import resolve_lm
from routerlab.fit.dspy_choice import load_choice_config, run_choice
from routerlab.routers.dspy_router import PROGRAM_DIR


def _print_report(report: dict[str, dict[str, float]]) -> None:
    """One line per report source: n, accuracy [CI], diverted, clarify recall, macro recall."""
    for source, row in report.items():
        print(
            f"  {source:<12} n={int(row['n']):<4} accuracy {row['accuracy']:.2f}"
            f" [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
            f"  diverted {row['diverted']:.2f}  clarify recall {row.get('recall_clarify', float('nan')):.2f}"
            f"  macro recall {row['macro_recall']:.2f}"
        )


def main() -> int:
    """Run the choice; exit 0 when it completed (replace or keep), 2 on a bad choice or blend file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="docs/configs/dspy_real_choice.yaml", help="the choice file")
    parser.add_argument("--lm", default="local", help="LM spec (default: the embedded model)")
    parser.add_argument("--work-dir", default=".routerlab/dspy-choice", help="candidates and choice.json")
    parser.add_argument("--programs-dir", default=str(PROGRAM_DIR), help="where a winner is written")
    parser.add_argument("--no-report", action="store_true", help="stop after the decision")
    args = parser.parse_args()
    try:
        cfg = load_choice_config(args.config)
        lm = resolve_lm(args.lm)
        result = run_choice(
            cfg,
            lm,
            lm_spec=args.lm,
            work_dir=Path(args.work_dir),
            programs_dir=Path(args.programs_dir),
            report=not args.no_report,
        )
    except RunError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    print(json.dumps({k: result[k] for k in ("sizes", "decision")}, indent=2, default=str))
    if "report" in result:
        print(f"report (once, after the choice; program {result['report_program']}):")
        _print_report(result["report"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
