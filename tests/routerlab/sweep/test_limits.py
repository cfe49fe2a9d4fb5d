"""Provider slots: caps, leases that expire when their holder stops renewing, and the LM callback."""

from __future__ import annotations

import threading
import time

from routerlab.sweep.limits import LocalSlots, ProviderSlotCallback, SlotTable


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_cap_is_enforced_and_uncapped_providers_are_free():
    table = SlotTable({"openai": 2})
    a, b = table.try_acquire("openai", "w1"), table.try_acquire("openai", "w2")
    assert a and b and a != b
    assert table.try_acquire("openai", "w3") is None
    assert table.try_acquire("local", "w3") == ""  # no cap: never waits, nothing to release
    assert table.release(a)
    assert table.try_acquire("openai", "w3") is not None
    stats = table.stats()["openai"]
    assert stats == {"cap": 2, "in_flight": 2, "max_in_flight": 2, "granted": 3, "expired": 0}


def test_a_dead_holders_lease_expires_and_a_live_one_is_renewed():
    clock = _Clock()
    table = SlotTable({"openai": 1}, lease_ttl_s=30, clock=clock)
    dead = table.try_acquire("openai", "lost-worker")
    assert dead
    clock.now = 29
    assert table.try_acquire("openai", "retry") is None
    clock.now = 31  # the lost worker never renewed: its slot comes back
    live = table.try_acquire("openai", "retry")
    assert live and table.stats()["openai"]["expired"] == 1
    assert not table.release(dead)  # releasing an expired lease is harmless
    clock.now = 55
    assert table.renew("retry") == 1  # a heartbeat keeps a long call's slot
    clock.now = 80
    assert table.try_acquire("openai", "other") is None
    assert table.release(live)


def test_local_slots_block_threads_beyond_the_cap():
    slots = LocalSlots({"openai": 2})
    in_flight, peak, lock = 0, 0, threading.Lock()

    def call() -> None:
        nonlocal in_flight, peak
        lease = slots.acquire("openai")
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.02)
        with lock:
            in_flight -= 1
        slots.release(lease)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert peak <= 2
    assert slots.stats()["openai"]["granted"] == 8 and slots.stats()["openai"]["in_flight"] == 0


def test_the_callback_holds_a_slot_for_the_length_of_each_lm_call():
    slots = LocalSlots({"openai": 1})
    cb = ProviderSlotCallback(slots, "openai")
    cb.on_lm_start("call-1", None, {})
    assert slots.stats()["openai"]["in_flight"] == 1
    cb.on_lm_end("call-1", None)
    assert slots.stats()["openai"]["in_flight"] == 0
    cb.on_lm_end("never-started", None)  # an unknown call releases nothing
    assert slots.stats()["openai"]["granted"] == 1
