r"""Apply the history-window rule of docs/results/2026-11-28-history-windows.md to `route --out` files.

One ``routerlab route --out`` CSV per window, all over the same turns; prints the table to stderr
and the chosen window to stdout:

    python scripts/choose_history_window.py --router llm \
        none=hw_none.csv last=hw_last.csv last_k=hw_last_k.csv rewrite=hw_rewrite.csv

The rule, written before the study: the default stays ``last_k`` unless a window is at least
0.03 above it in accuracy and wins more turns than it loses against it (paired); among those the
most accurate wins, a tie within 0.01 going to the cheaper window (none, last, last_k, rewrite).
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

#: cheapest first: the rule's tie order
ORDER = ("none", "last", "last_k", "rewrite")
BASELINE = "last_k"
MARGIN = 0.03
TIE = 0.01


def _decisions(path: str, router: str) -> pd.DataFrame:
    frame = pd.read_csv(path)
    mine = frame[frame["router"].str.split().str[0] == router]
    if mine.empty:
        sys.exit(f"error: {path} holds no decision of router {router!r} (found: {sorted(set(frame['router']))})")
    return mine.set_index("example_id")


def choose(frames: dict[str, pd.DataFrame]) -> tuple[str, pd.DataFrame]:
    """The window the rule chooses, and the table it read."""
    base = frames[BASELINE]
    rows = []
    for window in sorted(frames, key=ORDER.index):
        d = frames[window]
        common = base.index.intersection(d.index)
        a, b = d.loc[common, "correct"].astype(bool), base.loc[common, "correct"].astype(bool)
        rows.append(
            {
                "window": window,
                "n": len(d),
                "accuracy": d["correct"].mean(),
                "follow-ups": d[d["turn"] > 1]["correct"].mean(),
                "won": int((a & ~b).sum()),
                "lost": int((~a & b).sum()),
                "LM calls": d["lm_calls"].mean(),
            }
        )
    table = pd.DataFrame(rows)
    floor = table.set_index("window").loc[BASELINE, "accuracy"] + MARGIN
    passing = table[(table["window"] != BASELINE) & (table["accuracy"] >= floor) & (table["won"] > table["lost"])]
    if passing.empty:
        return BASELINE, table
    tied = passing[passing["accuracy"] >= passing["accuracy"].max() - TIE]
    return min(tied["window"], key=ORDER.index), table


def main() -> None:
    """Read the WINDOW=PATH arguments, print the table to stderr and the chosen window."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--router", required=True, help="the router whose rows to read (llm, hybrid, dspy)")
    parser.add_argument("runs", nargs="+", help="WINDOW=PATH, one per window; last_k is required")
    args = parser.parse_args()
    frames = {}
    for item in args.runs:
        window, sep, path = item.partition("=")
        if not sep or window not in ORDER:
            sys.exit(f"error: expected WINDOW=PATH with WINDOW one of {', '.join(ORDER)}; found {item!r}")
        frames[window] = _decisions(path, args.router)
    if BASELINE not in frames:
        sys.exit(f"error: the rule compares against {BASELINE}: pass {BASELINE}=PATH too")
    chosen, table = choose(frames)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"), file=sys.stderr)
    print(chosen)


if __name__ == "__main__":
    main()
