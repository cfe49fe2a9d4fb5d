"""CoSQL's clarification exchanges with the user's reply as a turn of its own, as a jsonl dataset (issue 59).

CoSQL writes an exchange as one turn, ``question | clarifying question | reply``. Real logs write
the reply as the user's next turn: the question (gold ``clarify``, the reply scripted as its
``user_reply``), then the reply itself (gold ``sql``, the SQL run after it). This writes every
conversation of a CoSQL folder that has an exchange in that form, every other turn unchanged, for
``routerlab route --dataset jsonl`` (each reply decided with the gold history, its question pending):

    python scripts/cosql_reply_turns.py /work/shared/data/cosql-dev-a replies.jsonl
    routerlab route --dataset jsonl --dataset-path replies.jsonl --router rules,semantic --lm scripted:basic

It is a routing set. ``routerlab run`` plays the reply itself when a turn asks back (the example's
``user_reply`` comes back as the next user turn): run it on the CoSQL folder (``--dataset cosql``),
where the exchange is one example, not on this file, where the reply would come twice.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.example import Example


def split_turns(examples: Sequence[Example]) -> list[dict]:
    """The records of every conversation holding an exchange, each exchange written as two turns."""
    out: list[dict] = []
    convs = [c for c in dict.fromkeys(e.conversation for e in examples) if c is not None]
    for conv in convs:
        turns = sorted((e for e in examples if e.conversation == conv), key=lambda e: e.turn)
        if not any(e.intent == "clarify" for e in turns):
            continue
        rows: list[dict] = []
        for e in turns:
            common = {"db_id": e.db_id, "db_path": e.db_path, "conversation": conv, "gold_sql": e.gold_sql}
            if e.intent == "clarify":
                meta = {"clarifying_question": e.meta.get("clarifying_question")}
                rows.append(
                    {**common, "question": e.question, "intent": "clarify", "user_reply": e.user_reply, "meta": meta}
                )
                rows.append({**common, "question": e.user_reply, "intent": "sql", "meta": {"reply_to": e.question}})
            else:
                rows.append({**common, "question": e.question, "intent": e.intent})
        for k, row in enumerate(rows, start=1):
            out.append({"id": f"{conv}-t{k}", **row, "turn": k, "turns": len(rows)})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Read a CoSQL folder, write the jsonl."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python scripts/cosql_reply_turns.py COSQL_DIR OUT.jsonl", file=sys.stderr)
        return 2
    import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)

    records = split_turns(dataset.build("cosql", path=args[0]).examples)
    Path(args[1]).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    replies = sum(1 for r in records if "reply_to" in r.get("meta", {}))
    print(f"{len(records)} turns of {len({r['conversation'] for r in records})} conversations, {replies} replies")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
