"""Reading label probabilities from a provider's top log probabilities (no server needed here;
the real llama.cpp server is in test_lm_server.py, a provider without logprobs below)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routerlab.agents.lm.provider_scoring import LogprobScorer, label_logprobs
from routerlab.agents.lm.resolve import resolve_lm
from routerlab.agents.lm.scoring import choice_scorer, normalise, reply_continuer, score_choices
from routerlab.stub_lm import LatencyServer

LABELS = ("sql", "explain", "fix", "chat", "clarify", "refuse")


def test_a_token_counts_for_the_one_label_it_starts():
    read = label_logprobs({"sql": math.log(0.6), " explain": math.log(0.2), "clar": math.log(0.1)}, LABELS)
    assert read is not None
    logprobs, coverage = read
    assert coverage == pytest.approx(0.9)
    assert logprobs["sql"] == pytest.approx(math.log(0.6))
    assert logprobs["explain"] == pytest.approx(math.log(0.2))  # leading space stripped
    assert logprobs["clarify"] == pytest.approx(math.log(0.1))


def test_a_token_shared_by_two_labels_is_left_out():
    # "c" starts both chat and clarify: it cannot be split between them
    read = label_logprobs({"c": math.log(0.7), "sql": math.log(0.2)}, LABELS)
    assert read is not None
    logprobs, coverage = read
    assert coverage == pytest.approx(0.2)
    assert logprobs["chat"] == logprobs["clarify"] < logprobs["sql"]


def test_absent_labels_rank_below_every_returned_token():
    logprobs, _ = label_logprobs({"fix": -0.1, "x": -3.0}, LABELS)
    assert all(logprobs[c] < -3.0 for c in LABELS if c != "fix")


def test_no_label_read_is_none():
    assert label_logprobs({"{": -0.01, "The": -5.0}, LABELS) is None
    assert label_logprobs({}, LABELS) is None


@given(
    st.dictionaries(
        st.sampled_from(["sql", "ex", "fix", "ch", "clar", "ref", "c", "s", "?", " sql"]), st.floats(-20, 0), min_size=1
    )
)
def test_probabilities_are_a_distribution_led_by_the_largest_mass(top):
    read = label_logprobs(top, LABELS)
    if read is None:
        return
    logprobs, coverage = read
    probs = normalise(logprobs)
    assert sum(probs.values()) == pytest.approx(1.0)
    assert 0 < coverage <= sum(math.exp(v) for v in top.values()) + 1e-9
    best = max(probs, key=probs.get)
    assert logprobs[best] == max(logprobs.values())


def test_a_provider_lm_offers_scoring_but_not_forced_replies():
    lm = resolve_lm("openai/any-model", api_base="http://127.0.0.1:9/v1", cache=False)
    assert isinstance(choice_scorer(lm), LogprobScorer)
    assert reply_continuer(lm) is None
    # a forced reply prefix needs the embedded engine: no request is made
    assert choice_scorer(lm).score_choices([], [{"role": "user", "content": "hi"}], LABELS, reply_prefix='{"') is None


def test_a_provider_without_logprobs_falls_back_and_is_not_asked_again():
    with LatencyServer(delay_s=0.0) as server:
        lm = resolve_lm("openai/stub", api_base=server.url, cache=False)
        messages = [{"role": "user", "content": "How many rows?"}]
        assert score_choices(lm, [{"role": "system", "content": "Classify."}], messages, LABELS) is None
        assert choice_scorer(lm).supported is False
        assert score_choices(lm, [], messages, LABELS) is None
        assert server.requests == {"stub": 1}
