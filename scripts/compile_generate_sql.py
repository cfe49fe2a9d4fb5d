r"""Compile a ``generate_sql`` program on the built-in benchmark's train split (routerlab/fit/sql_program_fit.py).

BootstrapFewShot with execution match as the metric; the demos are saved without their schema.
Writes the program and its provenance (``.meta.json``: optimizer and why, demos, train split
and size, metric, commit, date, train score). Select it with ``pipeline.tools: {sql_framing:
program, sql_program: builtin}`` (docs/configs/spider_dev_a_48_program.yaml).

Usage (the compile needs the model alone on the machine; about 5-10 minutes)::

    .venv/bin/python scripts/compile_generate_sql.py                 # routers/programs/generate_sql_builtin.json
    .venv/bin/python scripts/compile_generate_sql.py --lm scripted:basic --out /tmp/p.json   # control flow only

Exit codes: 0 compiled, 2 bad arguments (a message with expected / found / fix).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import asdict
from pathlib import Path

from routerlab._runs.config import load_run_config
from routerlab._runs.session import load_dataset
from routerlab.agents.errors import RunError
from routerlab.agents.lm import resolve_lm
from routerlab.fit.sql_program_fit import fit_sql_program


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lm", default="local", help="LM spec (default: the embedded model; scripted:NAME for tests)")
    parser.add_argument("--out", type=Path, default=None, help="program file (default: the committed builtin one)")
    parser.add_argument("--demos", type=int, default=2, help="bootstrapped demos; labelled ones fill up to twice (2)")
    parser.add_argument("--seed", type=int, default=0, help="order the optimizer walks the train questions in")
    parser.add_argument("--output", default="extract", help="how a reply is read: extract (default) or clean")
    parser.add_argument("--train-limit", type=int, default=None, help="use the first N train questions")
    parser.add_argument("--no-zero-shot", action="store_true", help="skip scoring the uncompiled program")
    return parser


def _check(args: argparse.Namespace) -> None:
    """Bad numbers and output paths fail before the model loads."""
    from routerlab.agents.errors import ConfigError

    if not 1 <= args.demos <= 4:
        raise ConfigError(
            f"--demos {args.demos} out of range",
            expected="1 to 4 bootstrapped demos (the program holds up to twice as many, without schema)",
            found=str(args.demos),
            fix="pass --demos 2 (the default)",
        )
    if args.train_limit is not None and args.train_limit < 1:
        raise ConfigError(
            f"--train-limit {args.train_limit} out of range",
            expected="a positive number of train questions",
            found=str(args.train_limit),
            fix="drop --train-limit to use the whole train split",
        )
    if args.out is not None and (args.out.suffix != ".json" or args.out.name.endswith(".meta.json")):
        raise ConfigError(
            f"--out {args.out} is not a program file name",
            expected="a path ending in .json (the provenance goes next to it as .meta.json)",
            found=str(args.out),
            fix="pass --out routers/programs/generate_sql_<name>.json",
        )


def main(argv: list[str] | None = None) -> int:
    """Compile and save; exit 0, or 2 with a message on bad arguments."""
    args = _parser().parse_args(argv)
    try:
        _check(args)
        ds = load_dataset(load_run_config(None, dataset="builtin", lm=args.lm))
        lm = resolve_lm(args.lm)
        # DSPy prints its bootstrap summary: stdout stays the provenance JSON alone
        with contextlib.redirect_stdout(sys.stderr):
            report = fit_sql_program(
                ds,
                lm,
                lm_spec=args.lm,
                demos=args.demos,
                seed=args.seed,
                output=args.output,
                train_limit=args.train_limit,
                out=args.out,
                zero_shot=not args.no_zero_shot,
            )
    except RunError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(asdict(report), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
