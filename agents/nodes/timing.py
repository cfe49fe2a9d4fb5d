"""Node timing: a node's visit appended to the path and its latency summed per node."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from langgraph.types import Command

__all__ = ["GraphNode", "timed"]


class GraphNode(Protocol):
    """A node as LangGraph calls it: the state in (by name or position), an update or a Command out."""

    def __call__(self, state: Any) -> Any:
        """The node's update for ``state``."""
        ...


def timed(name: str, fn: Callable[[Any], Any]) -> GraphNode:
    """``fn`` as the graph node ``name``: its update also records the visit and its latency."""

    def node(state: Any) -> Any:
        t0 = time.perf_counter()
        out = fn(state)
        extra = {"path": [name], "node_latency": {name: time.perf_counter() - t0}}
        if isinstance(out, Command):
            return Command(goto=out.goto, update={**(out.update or {}), **extra})
        return {**(out or {}), **extra}

    node.__name__ = name
    return node
