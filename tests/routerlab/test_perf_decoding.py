"""The SQL-decoding perf section's statistics, and its refusal of an engine it cannot measure."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from routerlab.perf.decode_bound import decode_bound, memory_bandwidth
from routerlab.perf.sql_decoding import median_interval, sql_decoding


@given(st.lists(st.floats(min_value=0, max_value=100), min_size=1, max_size=40))
def test_the_median_interval_holds_the_median_and_is_made_of_observed_values(values):
    low, high = median_interval(values)
    assert low <= float(np.median(values)) <= high
    assert low in values and high in values


def test_the_median_interval_narrows_as_values_accumulate():
    rng = np.random.default_rng(1)
    small = rng.normal(10, 1, 8).tolist()
    large = rng.normal(10, 1, 200).tolist()
    # eight values: the 2nd and 7th cover the median with 93 %, so the range (99.2 %) is taken
    assert median_interval(small) == (min(small), max(small))
    low, high = median_interval(large)
    assert high - low < 0.5 and low < 10 < high
    assert all(math.isnan(x) for x in median_interval([]))


def test_without_the_embedded_engine_the_section_says_it_skipped():
    (figure,) = sql_decoding("scripted:basic", 1)
    assert figure.name.startswith("skipped")


def test_the_bound_section_measures_bandwidth_and_skips_model_figures_without_the_embedded_engine():
    figures = decode_bound("scripted:basic", rounds=1, mb=32)
    bandwidth = [f for f in figures if f.name.startswith("memory bandwidth")]
    assert len(bandwidth) == 4 and all(f.value > 0 and f.unit == "GB/s" for f in bandwidth)
    assert figures[-1].name.startswith("model figures skipped")


def test_memory_bandwidth_reports_read_and_copy():
    got = memory_bandwidth(mb=16, repeats=2, threads=2)
    assert set(got) == {"read", "copy"} and all(v > 0 for v in got.values())
