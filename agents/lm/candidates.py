"""N replies to one chat prompt from ONE call, when the LM's engine can decode them together.

Execution-guided selection needs several candidate queries for one prompt. An engine that
decodes several sequences in one batch over a shared prompt (the embedded engine:
:meth:`routerlab.agents.lm.local.LlamaEngine.sample_candidates`, see
:mod:`routerlab.agents.lm.batched`) offers them at far less than one call each; such an engine
implements :class:`CandidateSampler`, and :func:`candidate_sampler` finds it behind a DSPy LM.
Any other LM (a provider, a scripted test LM, an LM behind a fault injector) has none, and the
caller samples one call at a time as before.

:func:`sample_candidates` records the call's usage like any other LM call (tokens, seconds) and
keeps its replies in a response cache under the cache root (``$ROUTERLAB_CACHE/candidates.sqlite``)
keyed by the model, the messages, ``n``, the temperature, the seed and the token budget, so a
re-run of the same selection costs nothing, with the cold cost read back as DSPy's cache does.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from routerlab.agents.lm.usage import record_usage
from routerlab.agents.paths import cache_root, cache_writes_allowed
from routerlab.agents.sqlite_file import SharedSqliteFile
from routerlab.agents.trace import Usage

__all__ = [
    "BatchedReplies",
    "CandidateCache",
    "CandidateSampler",
    "candidate_cache",
    "candidate_key",
    "candidate_sampler",
    "sample_candidates",
]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS candidates (key TEXT PRIMARY KEY, texts TEXT NOT NULL, "
    "prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL)"
)
_KEY_VERSION = 1


@runtime_checkable
class CandidateSampler(Protocol):
    """An engine that decodes ``n`` replies to one chat prompt in one call (greedy reply first)."""

    def sample_candidates(
        self,
        messages: Sequence[dict[str, Any]],
        n: int,
        *,
        temperature: float = 0.7,
        max_tokens: int | None = None,
        seed: int | None = None,
        stop: Sequence[str] = (),
    ) -> Any:
        """The ``n`` replies, sequence 0 greedy, the others sampled at ``temperature`` from ``seed``.

        Returns an object with ``texts`` (one per sequence), ``prompt_tokens`` and
        ``completion_tokens`` (one count per sequence), like :class:`routerlab.agents.lm.batched.Candidates`.
        """
        ...


@dataclass(frozen=True)
class BatchedReplies:
    """The replies of one batched call and what it cost.

    Attributes:
        texts: One reply per sequence; ``texts[0]`` is the greedy one.
        usage: The call's usage as recorded (a cache hit: no tokens observed, the cold cost kept).
        cached: True when the response cache answered.
    """

    texts: tuple[str, ...]
    usage: Usage
    cached: bool = False


def candidate_sampler(lm: Any) -> CandidateSampler | None:
    """The engine behind a DSPy LM when it decodes several candidates in one call, else None."""
    engine = getattr(lm, "engine", None)
    return engine if isinstance(engine, CandidateSampler) else None


def candidate_key(
    model: str, messages: Sequence[dict[str, Any]], n: int, *, temperature: float, seed: int, max_tokens: int
) -> str:
    """The response-cache key of one batched call: everything its replies depend on."""
    material = {
        "v": _KEY_VERSION,
        "model": model,
        "messages": list(messages),
        "n": n,
        "temperature": temperature,
        "seed": seed,
        "max_tokens": max_tokens,
    }
    text = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class CandidateCache:
    """Batched replies and their cold cost, in a SQLite file shared by runs, threads and processes.

    Read and write failures are ignored (the call is then computed, or not kept).

    Args:
        path: The file (created with its directory on first use).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = SharedSqliteFile(path, _SCHEMA)
        # a process that may not write cache files (``routerlab serve``) keeps new entries here
        self._memory: dict[str, tuple[tuple[str, ...], Usage]] = {}

    def get(self, key: str) -> tuple[tuple[str, ...], Usage] | None:
        """The stored replies and their cold cost (``Usage.computed``), or None."""
        if key in self._memory:
            return self._memory[key]
        if not self.path.exists():
            return None
        try:
            row = self._file.read_one(
                "SELECT texts, prompt_tokens, completion_tokens, latency_s FROM candidates WHERE key = ?", (key,)
            )
        except (sqlite3.Error, OSError):
            return None
        if row is None:
            return None
        return tuple(json.loads(row[0])), Usage.computed(int(row[1]), int(row[2]), float(row[3]))

    def put(self, key: str, texts: Sequence[str], cost: Usage) -> None:
        """Keep one call's replies and cost, first record wins (in memory when cache files may not be written)."""
        if not cache_writes_allowed():
            self._memory[key] = (tuple(texts), cost)
            return
        try:
            self._file.write(
                "INSERT OR IGNORE INTO candidates VALUES (?, ?, ?, ?, ?)",
                (key, json.dumps(list(texts)), cost.prompt_tokens, cost.completion_tokens, cost.latency_s),
            )
        except (sqlite3.Error, OSError):
            return


_caches: dict[Path, CandidateCache] = {}
_caches_lock = threading.Lock()


def candidate_cache() -> CandidateCache:
    """The cache under the current cache root (``$ROUTERLAB_CACHE/candidates.sqlite``)."""
    path = cache_root() / "candidates.sqlite"
    with _caches_lock:
        if path not in _caches:
            _caches[path] = CandidateCache(path)
        return _caches[path]


def sample_candidates(
    lm: Any,
    messages: Sequence[dict[str, Any]],
    n: int,
    *,
    temperature: float,
    seed: int,
    max_tokens: int,
) -> BatchedReplies | None:
    """``n`` replies to ``messages`` from one batched call of ``lm``'s engine; None when it has none.

    The call is bounded by the turn's deadline like any other engine call (the engine's abort
    clock), recorded in every active usage scope, and answered from the response cache when the
    LM caches (``lm.cache``) and the same call was made before.

    Args:
        lm: A DSPy LM.
        messages: The chat messages (the greedy call's exact prompt).
        n: Replies wanted, the greedy one included.
        temperature: Sampling temperature of replies 1..n-1.
        seed: The call's seed (reply ``s`` draws from its own stream derived from it).
        max_tokens: Token budget per reply.

    Raises:
        CallDeadlineExceeded: The deadline passed before or during the call.
        LMError: The engine refused the request (too many sequences, prompt too long).
    """
    sampler = candidate_sampler(lm)
    if sampler is None:
        return None
    use_cache = bool(getattr(lm, "cache", False))
    key = candidate_key(
        str(getattr(lm, "model", "")), messages, n, temperature=temperature, seed=seed, max_tokens=max_tokens
    )
    t0 = time.perf_counter()
    if use_cache and (hit := candidate_cache().get(key)) is not None:
        texts, cold = hit
        usage = cold.as_cached()  # one call, answered from the cache, its cold cost kept
        usage.latency_s = time.perf_counter() - t0
        record_usage(usage)
        return BatchedReplies(texts, usage, cached=True)
    out = sampler.sample_candidates(messages, n, temperature=temperature, max_tokens=max_tokens, seed=seed)
    usage = Usage.computed(int(out.prompt_tokens), int(sum(out.completion_tokens)), time.perf_counter() - t0)
    record_usage(usage)
    if use_cache:
        candidate_cache().put(key, out.texts, usage)
    return BatchedReplies(tuple(out.texts), usage)
