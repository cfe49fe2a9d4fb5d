r"""Write the built-in benchmark's examples of some intents as a ``jsonl`` dataset.

``routerlab run`` replays a whole split; to compare SQL quality on the requests that have a gold
query (sql, fix, clarify) without paying for the others, write them out and run the ``jsonl``
loader on the file. Every field the runner and the scorers read is kept (gold SQL, the scripted
clarification reply, the SQL and error of fix requests), and the database path is absolute.

Usage::

    .venv/bin/python scripts/builtin_subset.py --split dev --intents sql,fix,clarify --out /tmp/sfc.jsonl
    .venv/bin/routerlab run --dataset jsonl --dataset-path /tmp/sfc.jsonl --router single_call,oracle --limit 0
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from routerlab.benchmarks.builtin import load_builtin

_FIELDS = ("id", "question", "db_id", "intent", "gold_sql", "user_reply", "hint", "input_sql", "error_text", "split")


def main() -> None:
    """Write the selected examples, one JSON object per line, and say how many."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev")
    parser.add_argument("--intents", default="sql,fix,clarify", help="comma-separated gold intents to keep")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    wanted = {i.strip() for i in args.intents.split(",") if i.strip()}
    examples = [e for e in load_builtin().split(args.split) if e.intent in wanted]
    with args.out.open("w", encoding="utf-8") as f:
        for e in examples:
            record = {k: getattr(e, k) for k in _FIELDS if getattr(e, k) not in (None, "")}
            record["db_path"] = str(Path(e.db_path).resolve())
            record["alt_intents"] = list(e.alt_intents)
            f.write(json.dumps(record) + "\n")
    print(f"{len(examples)} examples ({', '.join(sorted(wanted))}) of split {args.split} -> {args.out}")


if __name__ == "__main__":
    main()
