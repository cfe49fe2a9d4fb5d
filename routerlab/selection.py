"""Which examples a run replays, and in what order."""

from __future__ import annotations

from collections import defaultdict

from routerlab.benchmarks.example import Example

__all__ = ["of_intents", "schedule", "stratified_subset"]


def of_intents(examples: list[Example], intents: tuple[str, ...] | None) -> list[Example]:
    """The examples whose gold intent is one of ``intents`` (None: all), conversations whole.

    A conversation counts under the intent of its first turn, as in :func:`stratified_subset`,
    so a kept conversation keeps its follow-ups whatever their intents.
    """
    if intents is None:
        return list(examples)
    first: dict[str, Example] = {}
    for e in examples:
        if e.conversation and (e.conversation not in first or e.turn < first[e.conversation].turn):
            first[e.conversation] = e
    return [e for e in examples if (first[e.conversation] if e.conversation else e).intent in intents]


def stratified_subset(examples: list[Example], limit: int | None) -> list[Example]:
    """The first ``limit`` examples taken round-robin over intents (ids sorted), deterministic.

    A small default subset therefore still covers every intent of the split. A conversation
    is taken whole (under the intent of its first turn) or not at all, so the subset can exceed
    ``limit`` by the rest of its last conversation; without conversations it is exactly the
    first ``limit`` of the round-robin.
    """
    if limit is None or limit >= len(examples):
        return list(examples)
    units: dict[str, list[Example]] = {}
    for e in sorted(examples, key=lambda e: (e.conversation or e.id, e.turn)):
        units.setdefault(e.conversation or f"\0{e.id}", []).append(e)
    by_intent: dict[str, list[list[Example]]] = defaultdict(list)
    for unit in sorted(units.values(), key=lambda u: u[0].id):
        by_intent[unit[0].intent].append(unit)
    queues = [by_intent[k] for k in sorted(by_intent)]
    out: list[Example] = []
    i = 0
    while len(out) < limit:
        q = queues[i % len(queues)]
        if q:
            out.extend(q.pop(0))
        i += 1
        if not any(queues):
            break
    return out


def schedule(examples: list[Example]) -> list[Example]:
    """Group by database, then by id, so consecutive prompts share a schema prefix.

    The local model reuses a shared prompt prefix from its KV cache (`routerlab lm check`
    measures the saving).
    """
    return sorted(examples, key=lambda e: (e.db_path, e.id))
