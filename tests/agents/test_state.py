"""Reducers of PipelineState: properties checked with hypothesis."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routerlab.agents.state import append_list, initial_state, merge_records, sum_dict

ids = st.sampled_from(["a", "b", "c", "d"])
fields = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["data_discovery", "generate_sql"]),
        "status": st.sampled_from(["pending", "success", "error"]),
        "output": st.integers(),
        "step": st.integers(0, 5),
    },
)
records = st.dictionaries(ids, fields, max_size=4)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records, records, records)
def test_merge_records_is_associative(a, b, c):
    assert merge_records(merge_records(a, b), c) == merge_records(a, merge_records(b, c))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records)
def test_merge_records_is_idempotent(a):
    assert merge_records(a, a) == merge_records(a, None) == merge_records(None, a)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records, records)
def test_later_update_wins_per_field_and_keeps_other_fields(a, b):
    m = merge_records(a, b)
    assert set(m) == set(a) | set(b)
    for k, rec in b.items():
        for f, v in rec.items():
            assert m[k][f] == v
    for k, rec in a.items():
        for f, v in rec.items():
            if f not in b.get(k, {}):
                assert m[k][f] == v


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records, records)
def test_merge_does_not_mutate_inputs(a, b):
    before_a, before_b = repr(a), repr(b)
    merge_records(a, b)
    assert (repr(a), repr(b)) == (before_a, before_b)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers()), st.lists(st.integers()))
def test_append_list_concatenates(a, b):
    assert append_list(a, b) == a + b
    assert append_list(None, b) == b


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(ids, st.floats(0, 10)), st.dictionaries(ids, st.floats(0, 10)))
def test_sum_dict_adds_per_key(a, b):
    s = sum_dict(a, b)
    for k in set(a) | set(b):
        assert abs(s[k] - (a.get(k, 0.0) + b.get(k, 0.0))) < 1e-9


def test_initial_state_has_every_bound():
    s = initial_state("q", "db.duckdb", max_steps=5, timeout_s=10)
    assert s["remaining_steps"] == 5
    assert s["deadline"] > 0
    assert s["messages"][0].content == "q"
    assert s["tool_calls"] == {} and s["executed"] is False
