"""Terminators: each condition, and the & / | algebra (property-tested)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routerlab.agents.errors import ConfigError
from routerlab.agents.swarm import (
    AllOf,
    AnyOf,
    MaxActivations,
    MaxTurns,
    RunStatus,
    Terminator,
    TextMatch,
    Timeout,
)


def test_max_turns():
    t = MaxTurns(3)
    assert not t.should_stop(RunStatus(turns=2))
    assert t.should_stop(RunStatus(turns=3)) and t.should_stop(RunStatus(turns=9))


def test_max_activations_lets_that_many_agents_run():
    t = MaxActivations(2)
    assert not t.should_stop(RunStatus(activations=1))
    assert not t.should_stop(RunStatus(activations=2))
    assert t.should_stop(RunStatus(activations=3))


def test_timeout():
    t = Timeout(1.5)
    assert not t.should_stop(RunStatus(elapsed_s=1.49))
    assert t.should_stop(RunStatus(elapsed_s=1.5))


def test_text_match_any_message_case_insensitive_by_default():
    t = TextMatch("DONE")
    assert not t.should_stop(RunStatus(texts=("working",)))
    assert t.should_stop(RunStatus(texts=("all done here", "more")))
    strict = TextMatch("DONE", case_sensitive=True)
    assert not strict.should_stop(RunStatus(texts=("done",)))
    assert strict.should_stop(RunStatus(texts=("DONE",)))


@pytest.mark.parametrize(
    "make", [lambda: MaxTurns(0), lambda: MaxActivations(-1), lambda: Timeout(0), lambda: TextMatch("")]
)
def test_bad_arguments_are_config_errors(make):
    with pytest.raises(ConfigError):
        make()


def test_combinations_flatten_and_describe_themselves():
    a, b, c = MaxTurns(5), Timeout(2), TextMatch("bye")
    both = a & b & c
    assert isinstance(both, AllOf) and both.parts == (a, b, c)
    either = a | b | c
    assert isinstance(either, AnyOf) and either.parts == (a, b, c)
    assert str(a | b & c) == "max_turns(5) | timeout(2s) & text('bye')"
    assert str((a | b) & c) == "(max_turns(5) | timeout(2s)) & text('bye')"


def test_only_terminators_combine():
    with pytest.raises(TypeError):
        MaxTurns(1) & 3  # type: ignore[operator]
    with pytest.raises(ConfigError):
        AnyOf(())


def test_equal_terminators_compare_equal():
    assert MaxTurns(2) | Timeout(1) == MaxTurns(2) | Timeout(1)
    assert hash(MaxTurns(2)) == hash(MaxTurns(2))


statuses = st.builds(
    RunStatus,
    turns=st.integers(0, 20),
    activations=st.integers(1, 6),
    elapsed_s=st.floats(0, 100, allow_nan=False),
    texts=st.lists(st.sampled_from(["ok", "DONE", "working", "stop now"]), max_size=3).map(tuple),
)
leaves = st.one_of(
    st.builds(MaxTurns, st.integers(1, 20)),
    st.builds(MaxActivations, st.integers(1, 6)),
    st.builds(Timeout, st.floats(0.1, 100, allow_nan=False)),
    st.builds(TextMatch, st.sampled_from(["done", "stop", "never"])),
)


def _combined(inner: st.SearchStrategy[Terminator]) -> st.SearchStrategy[Terminator]:
    pairs = st.tuples(inner, inner)
    return st.one_of(pairs.map(lambda p: p[0] & p[1]), pairs.map(lambda p: p[0] | p[1]))


terminators = st.recursive(leaves, _combined, max_leaves=6)


@given(terminators, terminators, statuses)
def test_and_stops_iff_both_stop_or_iff_either(a: Terminator, b: Terminator, s: RunStatus):
    assert (a & b).should_stop(s) == (a.should_stop(s) and b.should_stop(s))
    assert (a | b).should_stop(s) == (a.should_stop(s) or b.should_stop(s))


@given(terminators, terminators, terminators, statuses)
def test_algebra_laws(a: Terminator, b: Terminator, c: Terminator, s: RunStatus):
    stop = lambda t: t.should_stop(s)  # noqa: E731
    assert stop((a & b) & c) == stop(a & (b & c))
    assert stop(a | b) == stop(b | a)
    assert stop(a & (b | c)) == stop((a & b) | (a & c))
    assert stop(a | a) == stop(a) == stop(a & a)


@given(terminators, statuses, st.integers(0, 5), st.floats(0, 10, allow_nan=False))
def test_terminators_stay_stopped_as_a_run_goes_on(t: Terminator, s: RunStatus, more: int, later: float):
    # every condition is monotone, so a stopped run never looks runnable again
    grown = RunStatus(s.turns + more, s.activations + more, s.elapsed_s + later, (*s.texts, "x"))
    if t.should_stop(s):
        assert t.should_stop(grown)
