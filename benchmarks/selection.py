"""Which examples a run replays, and in what order."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Protocol, TypeVar

from routerlab.benchmarks.example import Example

__all__ = ["Drawable", "of_intents", "schedule", "stratified_subset"]


class Drawable(Protocol):
    """What the selection reads of an example (a loader drawing while it reads has only these)."""

    # read-only properties: a frozen dataclass (Example) provides them
    @property
    def id(self) -> str:
        """Unique within the dataset; the order of the draw."""
        ...

    @property
    def intent(self) -> str:
        """The gold intent: the stratum."""
        ...

    @property
    def db_id(self) -> str:
        """The database: conversations are spread over databases."""
        ...

    @property
    def conversation(self) -> str | None:
        """The conversation the example is a turn of (None: a single request)."""
        ...

    @property
    def turn(self) -> int:
        """Its position in the conversation, from 1."""
        ...


_E = TypeVar("_E", bound=Drawable)


def of_intents(examples: Sequence[_E], intents: tuple[str, ...] | None) -> list[_E]:
    """The examples whose gold intent is one of ``intents`` (None: all), conversations whole.

    A conversation counts under the intent of its first turn, as in :func:`stratified_subset`,
    so a kept conversation keeps its follow-ups whatever their intents.
    """
    if intents is None:
        return list(examples)
    first: dict[str, _E] = {}
    for e in examples:
        if e.conversation and (e.conversation not in first or e.turn < first[e.conversation].turn):
            first[e.conversation] = e
    return [e for e in examples if (first[e.conversation] if e.conversation else e).intent in intents]


def stratified_subset(examples: Sequence[_E], limit: int | None, seed: int = 0) -> list[_E]:
    """The first ``limit`` examples taken round-robin over intents (ids sorted), deterministic.

    A small default subset therefore still covers every intent of the split. A conversation
    is taken whole (under the intent of its first turn) or not at all, so the subset can exceed
    ``limit`` by the rest of its last conversation; without conversations it is exactly the
    first ``limit`` of the round-robin.

    Conversations are also spread over databases: conversational files are often sorted by
    database, and the first N conversations of such a file can all come from one database, so a
    rate on them describes that database only. Each turn of the round-robin takes, from its
    intent's conversations, one of the database drawn least so far (ties: the databases in an
    order shuffled with ``seed``, then id order). Single requests keep their id order.

    Args:
        examples: The examples to choose from.
        limit: How many examples to take (None: all).
        seed: Orders the databases conversations are drawn from; the same seed, the same subset.
    """
    if limit is None or limit >= len(examples):
        return list(examples)
    units: dict[str, list[_E]] = {}
    for e in sorted(examples, key=lambda e: (e.conversation or e.id, e.turn)):
        units.setdefault(e.conversation or f"\0{e.id}", []).append(e)
    by_intent: dict[str, list[list[_E]]] = defaultdict(list)
    for unit in sorted(units.values(), key=lambda u: u[0].id):
        by_intent[unit[0].intent].append(unit)
    queues = [by_intent[k] for k in sorted(by_intent)]
    rank = _database_rank(list(units.values()), seed)
    taken: Counter[str] = Counter()
    out: list[_E] = []
    i = 0
    while len(out) < limit:
        q = queues[i % len(queues)]
        if q:
            unit = q.pop(_next_unit(q, rank, taken))
            taken[unit[0].db_id] += 1
            out.extend(unit)
        i += 1
        if not any(queues):
            break
    return out


def _database_rank(units: Sequence[Sequence[Drawable]], seed: int) -> dict[str, int] | None:
    """Each database's place in a seeded shuffle, or None when no unit is a conversation."""
    if not any(u[0].conversation for u in units):
        return None
    order = sorted({u[0].db_id for u in units})
    # a local generator: the subset depends on the seed alone, never on global random state
    random.Random(seed).shuffle(order)
    return {db: k for k, db in enumerate(order)}


def _next_unit(queue: Sequence[Sequence[Drawable]], rank: dict[str, int] | None, taken: Counter[str]) -> int:
    """Index of the unit to take next: the first, or for conversations the least-drawn database's."""
    if rank is None:
        return 0
    return min(range(len(queue)), key=lambda k: (taken[queue[k][0].db_id], rank[queue[k][0].db_id], k))


def schedule(examples: list[Example]) -> list[Example]:
    """Group by database, then by id, so consecutive prompts share a schema prefix.

    The local model reuses a shared prompt prefix from its KV cache (`routerlab lm check`
    measures the saving).
    """
    return sorted(examples, key=lambda e: (e.db_path, e.id))
