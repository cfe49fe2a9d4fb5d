r"""Write an independent answer-or-abstain set: hand-written unanswerable questions plus Spider's own.

The unanswerable half is ``tests/data/unanswerable_spider_dev_a.jsonl`` (20 questions written from
five spider-dev-a schemas only, see ``tests/data/README.md``). The answerable half is Spider's own
dev questions on the same databases, ``--per-db`` of each, drawn with ``--seed``. Spider's text is
read from the data folder, never copied into the repository. Database paths are absolute.

Usage::

    .venv/bin/python scripts/abstain_check_set.py --dataset-path ../shared/data/spider-dev-a \
        --out /tmp/abstain_check.jsonl
    .venv/bin/routerlab route --dataset jsonl --dataset-path /tmp/abstain_check.jsonl --router rules,hybrid,llm
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from routerlab.benchmarks.loaders.spider import load_spider

HAND_WRITTEN = Path(__file__).resolve().parents[1] / "tests" / "data" / "unanswerable_spider_dev_a.jsonl"


def build(spider: Path, per_db: int = 4, seed: int = 0) -> list[dict]:
    """The hand-written unanswerable records and ``per_db`` Spider questions per database, as dicts."""
    rows = [json.loads(line) for line in HAND_WRITTEN.read_text(encoding="utf-8").splitlines() if line.strip()]
    dbs = sorted({r["db_id"] for r in rows})
    out = []
    for r in rows:
        path = spider / "database" / r["db_id"] / f"{r['db_id']}.sqlite"
        out.append({**r, "db_path": str(path.resolve())})
    examples = [e for e in load_spider(str(spider)).examples if e.db_id in dbs]
    rng = random.Random(seed)
    for db in dbs:
        of_db = [e for e in examples if e.db_id == db]
        for e in sorted(rng.sample(of_db, min(per_db, len(of_db))), key=lambda e: e.id):
            out.append(
                {
                    "id": e.id,
                    "db_id": e.db_id,
                    "question": e.question,
                    "intent": "sql",
                    "gold_sql": e.gold_sql,
                    "db_path": str(Path(e.db_path).resolve()),
                }
            )
    return out


def main() -> None:
    """Write the set, one JSON object per line, and say how many of each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset-path", dest="spider", type=Path, help="the spider-dev-a folder")
    # the former name still works; every other routerlab command calls a dataset's location --dataset-path
    parser.add_argument("--spider", dest="spider", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--per-db", type=int, default=4, help="Spider questions per database")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.spider is None:
        parser.error("--dataset-path is required (the spider-dev-a folder, e.g. ../shared/data/spider-dev-a)")
    rows = build(args.spider, args.per_db, args.seed)
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    n_un = sum(r["intent"] == "unanswerable" for r in rows)
    print(f"wrote {args.out}: {n_un} unanswerable (hand-written), {len(rows) - n_un} answerable (Spider)")


if __name__ == "__main__":
    main()
