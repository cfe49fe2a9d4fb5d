r"""The LM routers with and without the schema gate, on the requests where the schema check finds a gap.

The gate (``abstain_check``, routers/support/schema_outline.py) can only change a first decision on a
request in which the schema check finds a gap; on every other request the LM routers decide as
they did without it (same prompt, same pass). So the gate's whole effect on a dataset is measured
on that subset alone: this script selects it, runs ``llm`` and ``dspy`` with ``abstain_check``
false and true, and prints, per router and setting, the requests decided right and the
(gold intent, decided intent) counts. Add the subset's changes to a whole-set run without the
gate to get the whole-set figures.

Usage (the real model: under the shared lock)::

    flock /tmp/routerlab-model.lock .venv/bin/python scripts/schema_gate.py --split dev
    flock /tmp/routerlab-model.lock .venv/bin/python scripts/schema_gate.py --config mixed.yaml
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

from routerlab._routing_eval.decisions import first_decisions
from routerlab._runs.config import load_run_config
from routerlab._runs.session import load_dataset, select
from routerlab.agents.db import open_database
from routerlab.agents.lm import resolve_lm
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import initial_state
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.benchmarks.selection import schedule
from routerlab.routers.support.schema_outline import schema_finding


def main() -> None:
    """Parse the arguments, select the subset, run both routers both ways and print the counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=None, help="A run config (dataset, dataset_args).")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--lm", default="local")
    parser.add_argument("--routers", default="llm,dspy")
    args = parser.parse_args()
    config = load_run_config(args.config, split=args.split, limit=0)
    examples = schedule(select(load_dataset(config), config))
    env = RouterEnv(tools=DEFAULT_TOOLS, lm=None, open_db=open_database)
    subset = [e for e in examples if schema_finding(env, initial_state(e.question, e.db_path))]
    counts = dict(collections.Counter(e.intent for e in subset))
    print(f"{len(examples)} requests, {len(subset)} with a schema finding: {counts}", flush=True)
    lm = resolve_lm(args.lm)
    for name in args.routers.split(","):
        for gate in (False, True):
            t0 = time.perf_counter()
            ds = first_decisions(name, {"abstain_check": gate}, subset, lm)
            table = dict(sorted(collections.Counter((d.gold, str(d.predicted)) for d in ds).items()))
            right = sum(d.correct for d in ds)
            took = time.perf_counter() - t0
            print(f"{name} abstain_check={gate}: right {right}/{len(ds)} {table} ({took:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
