"""Labelled requests near a new one, as evidence for the ``dspy`` program (its ``neighbours`` check).

A program compiled with the ``neighbours`` check keeps a pool of labelled requests (the train
examples it was fitted on) and, for each request it routes, reads the intents of the ``k`` most
similar ones in the packaged MiniLM embedding space (the one the ``semantic`` router uses):
``Similar requests: sql, sql, clarify.`` The LM decides with that line after the request, the way
kNN few-shot prompting shows a model its nearest labelled examples, but as a few label tokens
instead of whole demos, so the cached prompt prefix stays the same for every request.

A request identical to one in the pool is never its own neighbour: a program's demos and the
train examples its calibration is fitted on read their evidence as an unseen request would.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from routerlab.agents.errors import ConfigError
from routerlab.agents.state import INTENTS
from routerlab.agents.tools.index import load_embedder
from routerlab.routers.support.embedding_cache import embed_cached

__all__ = ["Neighbours"]


class Neighbours:
    """A pool of labelled requests and the intents of the ones nearest a new request.

    Args:
        requests: The pool's requests.
        intents: Their intents, one per request.
        k: Neighbours read per request.

    Raises:
        ConfigError: ``k`` is below 1, the lists differ in length, the pool has fewer than ``k``
            requests, or an intent is not one of the router's.
    """

    def __init__(self, requests: Sequence[str], intents: Sequence[str], k: int = 3) -> None:
        unknown = sorted(set(intents) - set(INTENTS))
        if k < 1 or len(requests) != len(intents) or len(requests) <= k or unknown:
            raise ConfigError(
                "cannot build the neighbours pool",
                expected=f"k >= 1 and more than k labelled requests with intents among {list(INTENTS)}",
                found=f"k={k}, {len(requests)} requests, {len(intents)} intents, unknown intents {unknown}",
                fix="compile with more train examples, or a smaller k",
            )
        self.requests = [str(r) for r in requests]
        self.intents = [str(i) for i in intents]
        self.k = k

    @cached_property
    def _vectors(self) -> np.ndarray:
        return embed_cached(load_embedder(), self.requests)

    def nearest(self, request: str) -> list[tuple[str, float]]:
        """The ``k`` nearest pool requests' ``(intent, cosine similarity)``, most similar first.

        A pool request equal to ``request`` is left out (leave-one-out for the pool's own requests).
        """
        query = np.asarray(load_embedder().embed([request]), dtype=np.float32)[0]
        sims = self._vectors @ query / (np.linalg.norm(self._vectors, axis=1) * np.linalg.norm(query) + 1e-12)
        order = [i for i in np.argsort(-sims, kind="stable") if self.requests[i] != request][: self.k]
        return [(self.intents[i], float(sims[i])) for i in order]

    def finding(self, request: str) -> str:
        """The evidence line: ``Similar requests: sql, sql, clarify.`` (nearest first)."""
        return "Similar requests: " + ", ".join(intent for intent, _ in self.nearest(request)) + "."

    def to_state(self) -> dict:
        """What a saved program keeps of the pool."""
        return {"k": self.k, "requests": list(self.requests), "intents": list(self.intents)}

    @classmethod
    def from_state(cls, state: dict) -> Neighbours:
        """The pool a saved program kept."""
        return cls(state["requests"], state["intents"], int(state.get("k", 3)))
