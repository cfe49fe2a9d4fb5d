"""Concurrency caps per LM provider: at most N calls of one provider in flight, across all workers.

A slot is held per LM call, not per cell: :class:`ProviderSlotCallback`, a DSPy callback added to
a cell's LM, takes a slot when a call starts and gives it back when the call ends, so the worker
threads of a cell (``run.concurrency``) and the cells running side by side all count against the
provider's one rate limit.

Two implementations of :class:`Slots`, over the same :class:`SlotTable`:

* :class:`LocalSlots`: a condition variable in this process (the local executor).
* :class:`RaySlots`: a client of one Ray actor per sweep (:func:`start_slot_actor`). Its slots
  are *leases*: the process holding one renews it from a heartbeat thread, and a process that
  dies (a lost worker) stops renewing, so its slots come back after ``lease_ttl_s`` instead of
  being lost for the rest of the sweep.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from dspy.utils.callback import BaseCallback

__all__ = [
    "DEFAULT_LEASE_TTL_S",
    "LocalSlots",
    "ProviderSlotCallback",
    "RaySlots",
    "SlotTable",
    "Slots",
    "start_slot_actor",
]

_log = logging.getLogger(__name__)

#: how long a lease outlives its last heartbeat (a dead worker's slots come back after this)
DEFAULT_LEASE_TTL_S = 30.0


class SlotTable:
    """Leases per provider, with caps and expiry: the bookkeeping both implementations share.

    Args:
        caps: Calls in flight allowed per provider; a provider without a cap is never limited.
        lease_ttl_s: Seconds a lease lives without being renewed (``inf``: forever).
        clock: Monotonic seconds (injectable for tests).
    """

    def __init__(
        self, caps: Mapping[str, int], lease_ttl_s: float = math.inf, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.caps = dict(caps)
        self.lease_ttl_s = lease_ttl_s
        self._clock = clock
        self._leases: dict[str, tuple[str, str, float]] = {}  # id -> provider, owner, expiry
        self._ids = itertools.count()
        self._max = dict.fromkeys(self.caps, 0)
        self._granted = dict.fromkeys(self.caps, 0)
        self._expired = dict.fromkeys(self.caps, 0)

    def in_flight(self, provider: str) -> int:
        """Leases of ``provider`` currently held."""
        return sum(1 for p, _, _ in self._leases.values() if p == provider)

    def expire(self) -> int:
        """Drop leases not renewed in time; returns how many."""
        now = self._clock()
        dead = [k for k, (_, _, expiry) in self._leases.items() if expiry < now]
        for k in dead:
            self._expired[self._leases.pop(k)[0]] += 1
        return len(dead)

    def try_acquire(self, provider: str, owner: str) -> str | None:
        """A lease id if ``provider`` has a free slot (or no cap), else None."""
        if provider not in self.caps:
            return ""
        self.expire()
        if self.in_flight(provider) >= self.caps[provider]:
            return None
        lease = f"{provider}#{next(self._ids)}"
        self._leases[lease] = (provider, owner, self._clock() + self.lease_ttl_s)
        self._granted[provider] += 1
        self._max[provider] = max(self._max[provider], self.in_flight(provider))
        return lease

    def release(self, lease: str) -> bool:
        """Give a lease back; False when it had already expired (or was never granted)."""
        return self._leases.pop(lease, None) is not None

    def renew(self, owner: str) -> int:
        """Extend every lease of ``owner`` by the TTL; returns how many."""
        expiry = self._clock() + self.lease_ttl_s
        mine = [k for k, (_, o, _) in self._leases.items() if o == owner]
        for k in mine:
            provider, _, _ = self._leases[k]
            self._leases[k] = (provider, owner, expiry)
        return len(mine)

    def stats(self) -> dict[str, dict[str, int]]:
        """Per capped provider: ``cap``, ``in_flight``, ``max_in_flight``, ``granted``, ``expired``."""
        return {
            p: {
                "cap": cap,
                "in_flight": self.in_flight(p),
                "max_in_flight": self._max[p],
                "granted": self._granted[p],
                "expired": self._expired[p],
            }
            for p, cap in self.caps.items()
        }


class Slots(Protocol):
    """Where an LM call takes its provider's slot."""

    def acquire(self, provider: str) -> str | None:
        """Block until ``provider`` has a free slot; returns the lease (None: nothing to release)."""
        ...

    def release(self, lease: str | None) -> None:
        """Give back a lease returned by :meth:`acquire`."""
        ...


class LocalSlots:
    """Provider caps inside one process (every cell and worker thread of the local executor).

    Args:
        caps: Calls in flight allowed per provider.
    """

    def __init__(self, caps: Mapping[str, int]) -> None:
        self.table = SlotTable(caps)
        self._cond = threading.Condition()
        self._owner = f"{socket.gethostname()}:{os.getpid()}"

    def acquire(self, provider: str) -> str | None:
        """See :class:`Slots`."""
        with self._cond:
            while (lease := self.table.try_acquire(provider, self._owner)) is None:
                self._cond.wait()
        return lease or None

    def release(self, lease: str | None) -> None:
        """See :class:`Slots`."""
        if lease:
            with self._cond:
                self.table.release(lease)
                self._cond.notify_all()

    def stats(self) -> dict[str, dict[str, int]]:
        """See :meth:`SlotTable.stats`."""
        with self._cond:
            return self.table.stats()


class _SlotActor:
    """The Ray actor behind :class:`RaySlots` (async: waiting callers do not block each other)."""

    def __init__(self, caps: Mapping[str, int], lease_ttl_s: float) -> None:
        self.table = SlotTable(caps, lease_ttl_s)
        # wake waiters now and then even without a release: a dead owner's lease expires silently
        self._poll_s = min(1.0, lease_ttl_s / 4)
        self._cond: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        # created on first use, inside the actor's event loop
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    async def acquire(self, provider: str, owner: str) -> str:
        cond = self._condition()
        async with cond:
            while (lease := self.table.try_acquire(provider, owner)) is None:
                try:
                    await asyncio.wait_for(cond.wait(), timeout=self._poll_s)
                except TimeoutError:
                    pass
            return lease

    async def release(self, lease: str) -> bool:
        cond = self._condition()
        async with cond:
            released = self.table.release(lease)
            cond.notify_all()
            return released

    async def renew(self, owner: str) -> int:
        return self.table.renew(owner)

    async def stats(self) -> dict[str, dict[str, int]]:
        return self.table.stats()


def start_slot_actor(caps: Mapping[str, int], *, name: str, lease_ttl_s: float = DEFAULT_LEASE_TTL_S) -> Any:
    """Start the sweep's slot actor on the connected Ray cluster; returns its handle.

    Args:
        caps: Calls in flight allowed per provider.
        name: Actor name (one per sweep; a resumed driver of the same sweep gets the same one).
        lease_ttl_s: See :class:`SlotTable`.
    """
    import ray

    # no CPU: it only counts, and must not take a slot a cell could use
    actor_cls = ray.remote(num_cpus=0, max_restarts=-1)(_SlotActor)
    return actor_cls.options(name=name, get_if_exists=True).remote(dict(caps), lease_ttl_s)


class RaySlots:
    """Provider caps shared by every worker of a Ray sweep, through the sweep's slot actor.

    Args:
        actor: The handle from :func:`start_slot_actor`.
        caps: The same caps (providers without one never call the actor).
        lease_ttl_s: The actor's lease TTL; this process renews its leases three times per TTL.
    """

    def __init__(self, actor: Any, caps: Mapping[str, int], lease_ttl_s: float = DEFAULT_LEASE_TTL_S) -> None:
        self._actor = actor
        self._caps = dict(caps)
        self._heartbeat_s = lease_ttl_s / 3
        # one owner per task, so a retried cell never renews the leases of its dead first attempt
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def acquire(self, provider: str) -> str | None:
        """See :class:`Slots`."""
        if provider not in self._caps:
            return None
        import ray

        self._ensure_heartbeat()
        return ray.get(self._actor.acquire.remote(provider, self._owner))

    def release(self, lease: str | None) -> None:
        """See :class:`Slots` (does not wait for the actor)."""
        if lease:
            self._actor.release.remote(lease)

    def close(self) -> None:
        """Stop renewing (leases still held then expire)."""
        self._stop.set()

    def _ensure_heartbeat(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._beat, name="routerlab-slot-heartbeat", daemon=True)
                self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self._heartbeat_s):
            try:
                self._actor.renew.remote(self._owner)
            except Exception as exc:  # the actor restarting: the next beat tries again
                _log.warning("could not renew provider slots: %s", exc)


class ProviderSlotCallback(BaseCallback):
    """DSPy callback holding a provider slot for the duration of each LM call.

    Args:
        slots: Where slots come from.
        provider: The LM's provider.
    """

    def __init__(self, slots: Slots, provider: str) -> None:
        self.slots = slots
        self.provider = provider
        self._leases: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        """Wait for a slot."""
        lease = self.slots.acquire(self.provider)
        with self._lock:
            self._leases[call_id] = lease

    def on_lm_end(self, call_id: str, outputs: Any, exception: Exception | None = None) -> None:
        """Give the slot back."""
        with self._lock:
            lease = self._leases.pop(call_id, None)
        self.slots.release(lease)
