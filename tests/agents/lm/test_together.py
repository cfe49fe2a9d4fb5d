"""Greedy calls decoded together: where a call starts in the shared cache, and when the mode is on.

The decoding itself runs on the real model (``test_together_model.py``, ``model`` marker); here
the pure choice of a sequence and its reused start, the process-wide setting, and the runner's
switch are checked with a scripted LM.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

import routerlab.benchmarks.builtin  # noqa: F401  (registers the built-in datasets)
from routerlab._runs.runner import RouterRun, RunConfig, build_scorers, run_router
from routerlab.agents.errors import ConfigError
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field
from routerlab.agents.lm.together import decode_together, start_from, together_slots, together_wanted
from routerlab.benchmarks.dataset import dataset

_tokens = st.lists(st.integers(0, 3), max_size=12)


def _shared(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@given(
    held=st.lists(_tokens, min_size=2, max_size=6),
    prompt=st.lists(st.integers(0, 3), min_size=1, max_size=12),
    data=st.data(),
)
def test_a_call_starts_from_the_longest_held_start_on_a_free_sequence(held, prompt, data):
    used = data.draw(st.lists(st.floats(0, 10), min_size=len(held), max_size=len(held)))
    busy = data.draw(st.sets(st.integers(0, len(held) - 1), max_size=len(held) - 1))
    seq, src, keep = start_from(held, used, busy, prompt)
    assert seq not in busy
    # the longest start any sequence holds, busy or not; never the whole prompt
    assert keep == max(_shared(h, prompt[:-1]) for h in held) < len(prompt)
    assert _shared(held[src], prompt[:-1]) == keep
    free = [s for s in range(len(held)) if s not in busy]
    best_free = max(_shared(held[s], prompt[:-1]) for s in free)
    # a free sequence holding the start itself is used as it is (nothing copied)
    assert (src == seq) == (best_free == keep)
    # among the free ones: the longest own start, then the least recently used
    assert _shared(held[seq], prompt[:-1]) == best_free
    assert used[seq] == min(used[s] for s in free if _shared(held[s], prompt[:-1]) == best_free)


def test_every_sequence_busy_is_refused():
    with pytest.raises(ValueError, match="every sequence"):
        start_from([[1], [2]], [0.0, 0.0], {0, 1}, [1, 2])


def test_the_setting_nests_and_is_restored():
    assert together_slots() == 1
    with decode_together(3):
        assert together_slots() == 3
        with decode_together(2):
            assert together_slots() == 3  # an inner block never lowers an outer one
        with decode_together(4):
            assert together_slots() == 4
        assert together_slots() == 3
    assert together_slots() == 1
    with decode_together(1):
        assert together_slots() == 1


def test_a_run_decodes_together_only_when_asked_and_with_more_than_one_worker(monkeypatch):
    seen: list[tuple[int, str]] = []
    lock = threading.Lock()

    def reply(request):
        with lock:
            seen.append((together_slots(), threading.current_thread().name))
        return answer_field(request, "SELECT 1")

    config = RunConfig(dataset="builtin", lm="scripted:reply")
    run = RouterRun("oracle", {}, scripted_lm(reply), config, build_scorers(config))
    examples = [e for e in dataset.build("builtin").split("dev") if e.intent == "sql"][:4]
    for setting, concurrency, slots in (("off", 2, 1), ("on", 1, 1), ("on", 2, 2)):
        monkeypatch.setenv("ROUTERLAB_DECODE_TOGETHER", setting)
        seen.clear()
        out: list = []
        assert run_router(run, examples, on_result=out.append, concurrency=concurrency) == 4
        assert seen and {s for s, _ in seen} == {slots}
        assert all(name.startswith("routerlab") for _, name in seen) == (concurrency > 1)
    assert together_slots() == 1  # the run's block is closed
    monkeypatch.delenv("ROUTERLAB_DECODE_TOGETHER")
    assert not together_wanted()  # off unless asked
    monkeypatch.setenv("ROUTERLAB_DECODE_TOGETHER", "sometimes")
    with pytest.raises(ConfigError, match="on or off"):
        run_router(run, examples, on_result=lambda _r: None, concurrency=2)
