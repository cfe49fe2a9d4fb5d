"""Results: what tools return, read as value, handoff and context updates."""

from __future__ import annotations

import pytest

from routerlab.agents.errors import ContractError
from routerlab.agents.swarm import Agent, ContextVariables, Result, as_result


def test_strings_agents_context_and_results():
    b = Agent("b")
    assert as_result("42 rows") == Result(value="42 rows")
    handoff = as_result(b)
    assert handoff.agent is b and handoff.carry_history and "'b'" in handoff.value
    update = as_result(ContextVariables(user="Ann"))
    assert update.context_variables == {"user": "Ann"} and update.agent is None
    r = Result(value="v", agent=b, context_variables={"k": 1}, carry_history=False)
    assert as_result(r) is r


def test_other_values_are_ignored_as_seed_003_says():
    # seed 003: any other return value is ignored (the tool ran for its side effects)
    for value in (None, {"n": 1}, [1, "x"], 42, 2.5):
        assert as_result(value) == Result()


def test_a_plain_dict_is_a_value_not_a_context_update():
    assert as_result({"user": "Ann"}).context_variables == {}


@pytest.mark.parametrize(("kwargs", "match"), [({"agent": "b"}, "not an Agent"), ({"context_variables": 3}, "mapping")])
def test_bad_results_are_contract_errors(kwargs, match):
    with pytest.raises(ContractError, match=match):
        Result(**kwargs)
