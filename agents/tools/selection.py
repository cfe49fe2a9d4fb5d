"""Execution-guided selection: several candidate queries, executed, the one most of them agree with.

Sampling a few queries and keeping the answer most of them return is self-consistency
(Wang et al., 2023) with execution results as the answers: MBR-exec (Shi et al., 2022) and C3's
execution-based self-consistency (Dong et al., 2023) showed on Spider that voting over result sets
beats the greedy query alone. Here the greedy query is candidate 0, the others are samples at
``candidate_temperature`` (seeds 1, 2, ...), each passes the read-only guard and the deterministic
repairs and is executed with a timeout; errors are dropped; the candidates are grouped by result
set (rows as a multiset, values normalised) and the biggest group wins, ties going to the group
that holds the greedy query, then to the earliest candidate. Sampling stops when the time budget
``selection_budget_s`` is spent, so a slow model never turns one question into k full calls.
When the LM decodes several sequences in one call, the candidates come from that one call
instead (:func:`vote` is then given them directly; see ``agents/tools/subagents.py``).

Corrective self-consistency (SLM-SQL, 2025): a candidate whose query fails on execution is
repaired once (``repair``: fix_sql's path) and run again before the vote; a repair that does not
run leaves the candidate out. The record says how many candidates errored, how many were
repaired, the size of each result group and whether the greedy query's group won.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from routerlab.agents.errors import ToolError

__all__ = ["Candidate", "Repair", "Selection", "choose", "result_key", "select", "vote"]

#: float values agreeing to this many digits are the same answer (SUM vs a rounded AVG differ)
_DIGITS = 6


@dataclass
class Candidate:
    """One candidate query and what running it showed.

    Attributes:
        sql: The query (after the guard and the deterministic repairs).
        seed: Its sampling seed (None: the greedy query).
        error: Why it was dropped (a guard refusal, the engine's error), or None when it ran.
        key: Its result set, normalised (None when it did not run).
        rows: Rows it returned.
        output: The generate_sql output dict for it (repairs and all).
        failed: The engine's error of its first query when that failed on execution (None: it
            ran, or it never got to run); with a successful repair, ``sql`` is the repaired query.
        repaired: True when a repair of a failed query ran and replaced it.
    """

    sql: str
    seed: int | None = None
    error: str | None = None
    key: tuple[Any, ...] | None = None
    rows: int = 0
    output: dict[str, Any] = field(default_factory=dict)
    failed: str | None = None
    repaired: bool = False


Repair = Callable[[str, str], dict[str, Any]]
"""Repairs a query given the engine's error: ``(sql, error) -> output dict with "sql"``; raises ``ToolError``."""


@dataclass
class Selection:
    """The candidates, the one chosen, and the time the selection took.

    Attributes:
        candidates: In generation order (0 is the greedy query).
        chosen: Index of the chosen one.
        seconds: Wall time of sampling and execution.
        stopped: True when the time budget stopped sampling before ``k`` candidates.
        sampling: How the candidates were produced: ``one_by_one`` (one call per sample) or
            ``batched`` (one call decoding all of them together).
        extra: More facts for the record (the batched call's, say).
    """

    candidates: list[Candidate]
    chosen: int
    seconds: float
    stopped: bool = False
    sampling: str = "one_by_one"
    extra: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The JSON-able summary kept in generate_sql's output."""
        votes = [sum(1 for o in self.candidates if c.key is not None and o.key == c.key) for c in self.candidates]
        groups: dict[tuple[Any, ...], int] = {}
        for c in self.candidates:
            if c.key is not None:
                groups[c.key] = groups.get(c.key, 0) + 1
        record: dict[str, Any] = {
            "candidates": [
                {
                    "sql": c.sql,
                    "seed": c.seed,
                    "error": c.error,
                    "rows": c.rows,
                    "votes": v,
                    **({"failed": c.failed, "repaired": c.repaired} if c.failed is not None else {}),
                }
                for c, v in zip(self.candidates, votes, strict=True)
            ],
            "chosen": self.chosen,
            "seconds": round(self.seconds, 3),
            "stopped": self.stopped,
            "sampling": self.sampling,
            "errored": sum(1 for c in self.candidates if c.failed is not None),
            "repaired": sum(1 for c in self.candidates if c.repaired),
            # the size of each result group, largest first: how clear the majority was
            "vote_counts": sorted(groups.values(), reverse=True),
            # choose() returns a group's first member, so 0 means the greedy query's group won
            "greedy_chosen": self.chosen == 0,
        }
        return {**record, **self.extra}


def _norm(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return round(value, _DIGITS) if value != int(value) else int(value)
    return value


def result_key(rows: list[list[Any]]) -> tuple[Any, ...]:
    """A result set as an order-free, comparable value: the sorted multiset of normalised rows.

    Order is ignored as Spider's execution accuracy ignores it for most questions, and column
    names are ignored because two right queries rarely alias alike.
    """
    return tuple(sorted((tuple(_norm(v) for v in row) for row in rows), key=repr))


def choose(candidates: list[Candidate]) -> int:
    """The index of the candidate to keep (0 when none of them ran).

    The biggest group of candidates with the same result set wins; a tie goes to the group
    holding candidate 0 (the greedy query), then to the group whose first member came first.
    The group's first member is returned.
    """
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, c in enumerate(candidates):
        if c.error is None and c.key is not None:
            groups.setdefault(c.key, []).append(i)
    if not groups:
        return 0
    best = max(groups.values(), key=lambda members: (len(members), members[0] == 0, -members[0]))
    return best[0]


def select(
    first: dict[str, Any],
    sample: Callable[[int], dict[str, Any]],
    run: Callable[[str], list[list[Any]]],
    *,
    k: int,
    budget_s: float,
    clock: Callable[[], float] = time.monotonic,
    repair: Repair | None = None,
) -> Selection:
    """Sample up to ``k - 1`` more candidates after ``first`` within ``budget_s``, run all, choose.

    Args:
        first: The greedy query's generate_sql output (``{"sql": ..., ...}``).
        sample: Writes candidate ``seed``'s output dict; raises ``ToolError`` for a query the guard
            refuses or that does not parse (that candidate is dropped).
        run: Executes a query and returns its rows; raises ``ToolError`` (dropped candidate).
        k: Candidates in all, the greedy one included.
        budget_s: Seconds sampling may take; no new sample starts after it is spent.
        clock: The monotonic clock (a test passes its own).
        repair: Corrective self-consistency: repairs a query that failed (None: failures are dropped).
    """
    start = clock()
    candidates = [Candidate(first["sql"], output=first)]
    stopped = False
    for seed in range(1, k):
        if clock() - start >= budget_s:
            stopped = True
            break
        try:
            out = sample(seed)
            candidates.append(Candidate(out["sql"], seed=seed, output=out))
        except ToolError as exc:
            candidates.append(Candidate("", seed=seed, error=f"{exc.error_class}: {exc}"))
    chosen = vote(candidates, run, repair=repair)
    return Selection(candidates, chosen, clock() - start, stopped)


def vote(candidates: list[Candidate], run: Callable[[str], list[list[Any]]], *, repair: Repair | None = None) -> int:
    """Run every candidate (repairing the failed ones once when ``repair`` is given) and choose.

    Candidates are updated in place (result key, rows, error, repair); the index of the chosen
    one is returned (:func:`choose`). Equal failed queries are repaired once and share the repair.
    """
    repairs: dict[tuple[str, str], dict[str, Any] | str] = {}
    for c in candidates:
        if c.error is not None:
            continue
        if not c.sql:
            c.error = "no SQL in the reply"
            continue
        try:
            rows = run(c.sql)
        except ToolError as exc:
            c.error = c.failed = str(exc)
            if repair is None:
                continue
            repaired = _repaired_rows(c, run, repair, repairs)
            if repaired is None:
                continue
            rows = repaired
        c.key, c.rows = result_key(rows), len(rows)
    return choose(candidates)


def _repaired_rows(
    c: Candidate,
    run: Callable[[str], list[list[Any]]],
    repair: Repair,
    repairs: dict[tuple[str, str], dict[str, Any] | str],
) -> list[list[Any]] | None:
    """The rows of ``c``'s repaired query (``c`` updated), or None when the repair does not run."""
    wanted = (c.sql, c.failed or "")
    if wanted not in repairs:
        try:
            repairs[wanted] = repair(*wanted)
        except ToolError as exc:
            repairs[wanted] = f"repair failed: {exc}"
    fixed = repairs[wanted]
    if isinstance(fixed, str) or not fixed.get("sql"):
        c.error = fixed if isinstance(fixed, str) else "repair failed: no SQL"
        return None
    try:
        rows = run(fixed["sql"])
    except ToolError as exc:
        c.error = f"repair failed: {exc}"
        return None
    # the output is the repair's, saying what it repaired
    c.output = {**fixed, "candidate_repair": {"sql": c.sql, "error": c.failed}}
    c.sql, c.error, c.repaired = fixed["sql"], None, True
    return rows
