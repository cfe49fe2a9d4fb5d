"""Each CoSQL reply decided as the user's next turn after the question asked back, per router (issue 59).

For every clarification exchange of a CoSQL folder (``question | clarifying question | reply``),
the reply is decided as a turn of its own: its history is the conversation's earlier turns as
the dataset answered them (``gold_turn``), then the question with the assistant's clarifying
question left pending (``Turn.asked``, as a run or the application leaves it). ``--before`` also
decides it with the exchange settled (``Turn.replied``: no pending question), how every router
read such a turn before the pending question existed. Only the replies are decided (one router
decision each), so an LM router costs one model call per reply, not one per turn of the set.

    python scripts/reply_routing.py /work/shared/data/cosql-dev-a --router hybrid,llm --lm local \
        --before --out replies.csv
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from collections.abc import Sequence

from routerlab._routing_eval.decisions import gold_turn
from routerlab.agents.db import open_database
from routerlab.agents.lm import resolve_lm
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import initial_state
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.turn_history import Turn
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.example import Example
from routerlab.routers import router


def reply_cases(examples: Sequence[Example]) -> list[tuple[Example, list[Turn]]]:
    """Every clarification example with the history its reply is decided with (ending on the question)."""
    out = []
    for e in examples:
        if e.intent != "clarify" or not e.user_reply:
            continue
        earlier = [gold_turn(x) for x in examples if x.conversation == e.conversation and x.turn < e.turn]
        asked = str(e.meta.get("clarifying_question") or "")
        pending = Turn(question=e.question, answer=asked, intent="clarify", sql=None, tables=[], asked=asked)
        out.append((e, [*earlier, pending]))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Decide every reply with each router; print the counts, write one row per decision."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cosql_dir")
    parser.add_argument("--router", default="rules,semantic", help="comma-separated routers")
    parser.add_argument("--lm", default="scripted:basic", help="LM spec (local: the embedded model)")
    parser.add_argument("--before", action="store_true", help="also decide each reply with the exchange settled")
    parser.add_argument("--out", default="", help="CSV of every decision")
    args = parser.parse_args(argv)
    import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)

    cases = reply_cases(dataset.build("cosql", path=args.cosql_dir).examples)
    lm = resolve_lm(args.lm)
    rows: list[dict] = []
    fields = ["router", "reading", "example_id", "reply", "intent", "method", "lm_calls"]
    # each decision is written as it is made: a stopped model job keeps what it decided
    out = open(args.out, "w", newline="", encoding="utf-8") if args.out else None  # noqa: SIM115
    writer = csv.DictWriter(out, fieldnames=fields) if out else None
    if writer is not None:
        writer.writeheader()
    for name in args.router.split(","):
        r = router.build(name)
        r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
        for reading in ("pending", "settled") if args.before else ("pending",):
            for e, history in cases:
                if reading == "settled":
                    history = [*history[:-1], Turn(**{k: v for k, v in history[-1].items() if k != "asked"},
                                                   replied=str(e.user_reply))]  # fmt: skip
                d = r.decide(initial_state(str(e.user_reply), e.db_path, history=history))
                rows.append(dict(zip(fields, (name, reading, e.id, e.user_reply, d.intent, d.method, d.usage.lm_calls),
                                     strict=True)))  # fmt: skip
                if writer is not None and out is not None:
                    writer.writerow(rows[-1])
                    out.flush()
            got = Counter(x["intent"] for x in rows if x["router"] == name and x["reading"] == reading)
            print(f"{name} ({reading}): {got.get('sql', 0)}/{len(cases)} to sql; {dict(got)}", flush=True)
    if out is not None:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
