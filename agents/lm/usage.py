"""Per-call LM usage, collected into scopes (the router's cost apart from the sub-agents').

Every LM built by :func:`routerlab.agents.lm.resolve_lm` carries :class:`UsageCallback`, which records one
:class:`~routerlab.agents.trace.Usage` per call (DSPy module calls and :func:`routerlab.agents.lm.chat` alike) into
every scope active in the calling context. A call answered from DSPy's response cache is recorded
with ``cache_hits=1`` and its (near-zero) latency.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dspy.utils.callback import BaseCallback

from routerlab.agents.trace import Usage

__all__ = ["UsageCallback", "UsageLog", "record_usage", "usage_scope"]

_ACTIVE: contextvars.ContextVar[tuple[UsageLog, ...]] = contextvars.ContextVar("routerlab_usage", default=())


@dataclass
class UsageLog:
    """The calls recorded in one scope."""

    calls: list[Usage] = field(default_factory=list)

    def total(self) -> Usage:
        """Sum of every recorded call."""
        total = Usage()
        for u in self.calls:
            total = total.add(u)
        return total


@contextmanager
def usage_scope() -> Iterator[UsageLog]:
    """Collect the usage of LM calls made inside the block (nested scopes all see them)."""
    log = UsageLog()
    token = _ACTIVE.set((*_ACTIVE.get(), log))
    try:
        yield log
    finally:
        _ACTIVE.reset(token)


def record_usage(usage: Usage) -> None:
    """Add one call's usage to every active scope."""
    for log in _ACTIVE.get():
        log.calls.append(usage)


class UsageCallback(BaseCallback):
    """DSPy callback timing each LM call and reading its usage from the LM's history."""

    def __init__(self) -> None:
        self._pending: dict[str, tuple[Any, float, int]] = {}
        self._lock = threading.Lock()

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        """Remember when the call started."""
        with self._lock:
            self._pending[call_id] = (instance, time.perf_counter(), len(getattr(instance, "history", [])))

    def on_lm_end(self, call_id: str, outputs: Any, exception: Exception | None = None) -> None:
        """Record the call's tokens, latency and whether the cache answered it."""
        with self._lock:
            pending = self._pending.pop(call_id, None)
        if pending is None:
            return
        instance, t0, n_before = pending
        history = getattr(instance, "history", [])
        entry = history[-1] if len(history) > n_before else {}
        usage = entry.get("usage") or {}
        cost = entry.get("cost") or 0.0
        record_usage(
            Usage(
                lm_calls=1,
                cache_hits=0 if usage or exception is not None else 1,
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                latency_s=time.perf_counter() - t0,
                cost_usd=float(cost or 0.0),
            )
        )
