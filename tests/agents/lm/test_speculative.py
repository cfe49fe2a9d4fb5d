"""Speculative decoding without a model: the prompt-lookup draft and the setting that picks a drafter."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routerlab.agents.errors import ConfigError
from routerlab.agents.lm.speculative import (
    DEFAULT_SPECULATIVE,
    OFF,
    Drafter,
    PromptLookup,
    configured_speculative,
    drafter,
    prompt_lookup,
)

# a small alphabet, so n-grams repeat often
_contexts = st.lists(st.integers(min_value=0, max_value=5), min_size=0, max_size=60)


def _continues(context: list[int], draft: list[int], n: int) -> list[int]:
    """Starts ``j`` of earlier occurrences of the last ``n`` tokens that ``draft`` continues."""
    size = len(context)
    return [
        j
        for j in range(size - n)
        if context[j : j + n] == context[size - n :] and context[j + n : j + n + len(draft)] == draft
    ]


@given(
    _contexts,
    st.integers(min_value=0, max_value=10),
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=1, max_value=3),
)
def test_a_draft_is_a_continuation_found_in_the_context(context, k, max_ngram, min_ngram):
    draft = prompt_lookup(context, k, max_ngram, min_ngram)
    assert len(draft) <= max(k, 0)
    sizes = range(min_ngram, min(max_ngram, len(context) - 1) + 1)
    if not draft:
        # nothing drafted only when there is no room or no suffix long enough occurred before
        assert k <= 0 or not any(_continues(context, [], m) for m in sizes)
        return
    # the longest suffix (min_ngram to max_ngram) that occurs earlier is the one looked up, and
    # the draft continues its latest occurrence
    n = max(m for m in sizes if _continues(context, [], m))
    starts = _continues(context, [], n)
    j = starts[-1]
    assert draft == context[j + n : j + n + k]
    assert _continues(context, draft, n)


def test_the_latest_longest_match_wins():
    # "a b" occurs twice before the end: the later one's continuation is drafted
    a, b = 1, 2
    context = [a, b, 7, 7, 9, a, b, 8, 8, 5, a, b]
    assert prompt_lookup(context, 3) == [8, 8, 5]
    # a longer suffix ("5 a b") that occurred earlier beats the latest shorter match
    context = [5, a, b, 6, 6, 0, a, b, 8, 5, a, b]
    assert prompt_lookup(context, 2) == [6, 6]
    assert prompt_lookup(context, 2, max_ngram=2) == [8, 5]


def test_a_draft_stops_at_the_end_of_the_context_and_at_k():
    assert prompt_lookup([3, 4, 3], 5) == [4, 3]
    assert prompt_lookup([3, 4, 4, 4, 3], 1) == [4]
    assert prompt_lookup([3, 4], 5) == []
    assert prompt_lookup([], 5) == []


def test_the_drafter_honours_its_limit_and_is_registered():
    built = drafter.build("prompt_lookup", k=4, min_ngram=1)
    assert isinstance(built, Drafter) and built == PromptLookup(k=4, min_ngram=1)
    context = [1, 2, 3, 4, 5, 6, 7, 1]
    assert built(context, 10) == [2, 3, 4, 5]
    assert built(context, 2) == [2, 3]
    # by default one token is drafted, and only after a match of two
    assert PromptLookup()(context, 10) == [] and PromptLookup()([*context, 2], 10) == [3]
    with pytest.raises(ConfigError):
        drafter.build("prompt_lookup", k=0)


def test_the_setting_comes_from_the_argument_the_environment_or_the_default(monkeypatch):
    monkeypatch.delenv("ROUTERLAB_SPECULATIVE", raising=False)
    assert configured_speculative() == DEFAULT_SPECULATIVE
    monkeypatch.setenv("ROUTERLAB_SPECULATIVE", "prompt_lookup")
    assert configured_speculative() == "prompt_lookup"
    assert configured_speculative(OFF) == OFF
    assert configured_speculative("prompt_lookup") == "prompt_lookup"
    monkeypatch.setenv("ROUTERLAB_SPECULATIVE", "prompt_lookp")
    with pytest.raises(ConfigError) as err:
        configured_speculative()
    assert "ROUTERLAB_SPECULATIVE" in str(err.value.found) and "prompt_lookup" in err.value.expected
