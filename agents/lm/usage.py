"""Per-call LM usage, collected into scopes (the router's cost apart from the sub-agents').

Every LM built by :func:`routerlab.agents.lm.resolve_lm` carries :class:`UsageCallback`, which records one
:class:`~routerlab.agents.trace.Usage` per call (DSPy module calls and :func:`routerlab.agents.lm.chat` alike) into
every scope active in the calling context. A call answered from DSPy's response cache is recorded
with ``cache_hits=1`` and its (near-zero) latency.

Each call also carries its *cold cost* (``Usage.cold_*``): tokens, latency and price of the call
as first computed. A computed call's cold cost is what it cost now, and it is stored in
:class:`ColdCostStore` (a SQLite file next to DSPy's cache, keyed by the request) the first time;
a cache hit reads it back. So a router's cold cost does not depend on which router, or which
earlier run, put the answer in the cache.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dspy.utils.callback import BaseCallback

from routerlab.agents.paths import cache_root
from routerlab.agents.sqlite_file import SharedSqliteFile
from routerlab.agents.trace import Usage

__all__ = [
    "ColdCostStore",
    "UsageCallback",
    "UsageLog",
    "cold_cost_store",
    "record_usage",
    "request_key",
    "usage_scope",
]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS cold (key TEXT PRIMARY KEY, prompt_tokens INTEGER, "
    "completion_tokens INTEGER, latency_s REAL, cost_usd REAL)"
)

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


class ColdCostStore:
    """The cost of each cached LM request when it was first computed, in a shared SQLite file.

    The first record of a key wins (``INSERT OR IGNORE``): that is the call as first computed.
    Read and write failures are ignored (the run carries on; the call's cold cost is then
    unknown or not kept).

    Args:
        path: The file (created with its directory on first use).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = SharedSqliteFile(path, _SCHEMA)

    def get(self, key: str) -> Usage | None:
        """The cold cost of one call, or None when it was never recorded."""
        try:
            row = self._file.read_one(
                "SELECT prompt_tokens, completion_tokens, latency_s, cost_usd FROM cold WHERE key = ?", (key,)
            )
        except (sqlite3.Error, OSError):
            return None
        return None if row is None else Usage.computed(int(row[0]), int(row[1]), float(row[2]), float(row[3]))

    def put(self, key: str, usage: Usage) -> None:
        """Record a computed call's cost unless the key already has one."""
        try:
            self._file.write(
                "INSERT OR IGNORE INTO cold VALUES (?, ?, ?, ?, ?)",
                (key, usage.prompt_tokens, usage.completion_tokens, usage.latency_s, usage.cost_usd),
            )
        except (sqlite3.Error, OSError):
            return


_stores: dict[Path, ColdCostStore] = {}
_stores_lock = threading.Lock()


def cold_cost_store() -> ColdCostStore:
    """The store under the current cache root (``$ROUTERLAB_CACHE/dspy-cold.sqlite``)."""
    path = cache_root() / "dspy-cold.sqlite"
    with _stores_lock:
        if path not in _stores:
            _stores[path] = ColdCostStore(path)
        return _stores[path]


def request_key(instance: Any, inputs: dict[str, Any]) -> str:
    """A key for one LM request: the model, its settings and everything the call was given.

    It is not DSPy's own cache key (which DSPy computes inside the call), but it is a function of
    the same things, so equal requests share a key and a cache hit finds its cold cost.
    """
    material = {
        "model": getattr(instance, "model", ""),
        "settings": getattr(instance, "kwargs", {}),
        "inputs": {k: v if isinstance(v, str | dict | list | None) else repr(v) for k, v in inputs.items()},
    }
    text = json.dumps(material, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


class UsageCallback(BaseCallback):
    """DSPy callback timing each LM call and reading its usage from the LM's history.

    It also keeps each call's cold cost: stored on a computed call of a caching LM, read back on a
    cache hit.
    """

    def __init__(self) -> None:
        self._pending: dict[str, tuple[Any, float, int, str | None]] = {}
        self._lock = threading.Lock()

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        """Remember when the call started and, for a caching LM, the request's key."""
        key = request_key(instance, inputs) if getattr(instance, "cache", False) else None
        with self._lock:
            self._pending[call_id] = (instance, time.perf_counter(), len(getattr(instance, "history", [])), key)

    def on_lm_end(self, call_id: str, outputs: Any, exception: Exception | None = None) -> None:
        """Record the call's tokens, latency and whether the cache answered it."""
        with self._lock:
            pending = self._pending.pop(call_id, None)
        if pending is None:
            return
        instance, t0, n_before, key = pending
        history = getattr(instance, "history", [])
        entry = history[-1] if len(history) > n_before else {}
        usage = entry.get("usage") or {}
        latency = time.perf_counter() - t0
        hit = not usage and exception is None
        if not hit:
            call = Usage.computed(
                int(usage.get("prompt_tokens") or 0),
                int(usage.get("completion_tokens") or 0),
                latency,
                float(entry.get("cost") or 0.0),
            )
            if key is not None and exception is None:
                cold_cost_store().put(key, call)
            record_usage(call)
            return
        cold = cold_cost_store().get(key) if key is not None else None
        record_usage(
            Usage(
                lm_calls=1,
                cache_hits=1,
                latency_s=latency,
                # DSPy keeps a cached response's cost metadata, so the history may still carry it
                cost_usd=float(entry.get("cost") or 0.0),
                cold_prompt_tokens=cold.prompt_tokens if cold else 0,
                cold_completion_tokens=cold.completion_tokens if cold else 0,
                cold_latency_s=cold.latency_s if cold else 0.0,
                cold_cost_usd=cold.cost_usd if cold else 0.0,
                cold_unknown=0 if cold else 1,
            )
        )
