"""The turns-per-hour perf section's fixed sample and its intervals (the timing itself needs the model)."""

from __future__ import annotations

import numpy as np
import pytest

from routerlab.perf.turns_per_hour import _interval, _ratio_interval, conversation_sample, turns_per_hour
from tests.conftest import SPIDER_DEV_A

TUNE = {"battle_death", "concert_singer", "dog_kennels", "tvshow"}  # sorted-alternate over the 8 databases


@pytest.mark.skipif(
    not (SPIDER_DEV_A.parent / "sparc-dev-a" / "dev.json").is_file(), reason="shared conversation data not found"
)
def test_the_sample_is_whole_conversations_on_tune_databases_alternating_sparc_and_cosql():
    sample = conversation_sample(SPIDER_DEV_A, 6)
    assert len(sample) == 6
    assert [c[0].dataset for c in sample] == ["sparc", "cosql"] * 3
    for conversation in sample:
        assert {e.db_id for e in conversation} <= TUNE
        assert [e.turn for e in conversation] == list(range(1, conversation[0].turns + 1))
        assert len({e.conversation for e in conversation}) == 1
    # fixed: the same call gives the same turns
    assert [e.id for c in conversation_sample(SPIDER_DEV_A, 6) for e in c] == [e.id for c in sample for e in c]


def test_without_databases_the_sample_is_the_built_in_conversations():
    sample = conversation_sample(None, 3)
    assert len(sample) == 3 and all(c[0].conversation and c[0].db_id == "service_areas" for c in sample)
    assert all([e.turn for e in c] == sorted(e.turn for e in c) for c in sample)


def test_the_intervals_hold_the_estimate():
    turns = np.array([9.0, 11, 10, 8])
    slow, fast = np.array([80.0, 95, 90, 70]), np.array([50.0, 62, 55, 47])
    low, high = _interval(turns, slow)
    assert low <= 3600 * turns.sum() / slow.sum() <= high
    low, high = _ratio_interval(slow, fast)
    assert low <= slow.sum() / fast.sum() <= high and low > 1


def test_without_the_embedded_engine_the_section_says_it_skipped():
    (figure,) = turns_per_hour("scripted:basic", None, conversations=2, per_block=1)
    assert figure.name.startswith("skipped")
