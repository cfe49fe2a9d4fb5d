"""The one lexicon: word lists, the stemmer and the word-set helper every check reads."""

from __future__ import annotations

import pytest

from routerlab.agents import answerability, lexicon
from routerlab.agents.lexicon import (
    FUNCTION_WORDS,
    LINKING_STOP_WORDS,
    plural_s,
    split_identifier,
    stem,
    word_stems,
    wordset,
)
from routerlab.agents.tools.text import stems


def test_wordset_splits_lines_into_one_set() -> None:
    assert wordset("a b", "b  c\n d") == frozenset({"a", "b", "c", "d"})


@pytest.mark.parametrize(
    ("word", "singular", "light"),
    [
        ("companies", "company", "companie"),
        ("boxes", "box", "boxe"),
        ("cars", "car", "car"),
        ("class", "class", "class"),
        ("bus", "bus", "bus"),  # three letters: kept
        ("area", "area", "area"),
    ],
)
def test_stem_builds_on_the_light_plural(word: str, singular: str, light: str) -> None:
    assert stem(word) == singular
    assert plural_s(word) == light


def test_identifiers_split_at_underscores_and_camel_case() -> None:
    assert split_identifier("BirthYear") == ["birth", "year"]
    assert split_identifier("birth_year") == ["birth", "year"]
    assert word_stems("Companies_HQ") == {"company", "hq"}


def test_linking_drops_only_its_narrow_stop_words() -> None:
    # "name" and "count" are function words for the schema check but column names for linking
    assert LINKING_STOP_WORDS <= FUNCTION_WORDS
    assert {"name", "count"} <= FUNCTION_WORDS - LINKING_STOP_WORDS
    assert stems("What is the name and count of areas?") == {"name", "count", "area"}


def test_answerability_reexports_the_lexicon_stemmer() -> None:
    """The check's public ``stem``/``word_stems`` are the lexicon's, not a second copy."""
    assert answerability.stem is lexicon.stem
    assert answerability.word_stems is lexicon.word_stems
    assert not hasattr(answerability, "_wordset")
