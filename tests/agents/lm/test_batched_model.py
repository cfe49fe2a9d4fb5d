"""Batched candidate decoding on the real embedded model (0.5B: mechanics, not quality)."""

from __future__ import annotations

import time

import pytest

from routerlab.agents.errors import LMError
from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.deadline import CallDeadlineExceeded, deadline_scope

pytestmark = pytest.mark.model

SYSTEM = {"role": "system", "content": "You are an expert SQLite programmer."}
SCHEMA = "CREATE TABLE singer (singer_id INTEGER, name TEXT, country TEXT, age INTEGER);"


def _ask(question: str) -> list[dict[str, str]]:
    user = (
        f"{SCHEMA}\n\nAnswer the question with one SQLite query. Reply with the SQL query only.\nQuestion: {question}"
    )
    return [SYSTEM, {"role": "user", "content": user}]


@pytest.fixture(scope="module")
def engine():
    lm = resolve_lm("local:0.5b", cache=False, max_tokens=48)
    return lm._engine_spec


def test_sequence_zero_is_the_greedy_call_and_samples_are_reproducible(engine):
    messages = _ask("How many singers are from France?")
    got = engine.sample_candidates(messages, 4, temperature=0.9, max_tokens=48, seed=7)
    assert len(got.texts) == 4 and len(got.completion_tokens) == 4
    assert all(t > 0 for t in got.completion_tokens)
    plain = engine.llama().create_chat_completion(messages=messages, max_tokens=48, temperature=0.0)
    assert got.texts[0].strip() == (plain["choices"][0]["message"]["content"] or "").strip()
    again = engine.sample_candidates(messages, 4, temperature=0.9, max_tokens=48, seed=7)
    assert again.texts == got.texts
    # the second call shares the whole prompt but its last token: only that is evaluated again
    assert again.evaluated_prompt_tokens == 1 and again.prompt_tokens == got.prompt_tokens


def test_a_question_on_the_same_schema_evaluates_only_its_own_tokens(engine):
    first = engine.sample_candidates(_ask("List all singer names."), 2, max_tokens=32)
    second = engine.sample_candidates(_ask("What is the average age?"), 2, max_tokens=32)
    assert 0 < second.evaluated_prompt_tokens < first.prompt_tokens / 2
    assert second.texts[0]


def test_stop_strings_cut_the_text(engine):
    got = engine.sample_candidates(_ask("List all singer names."), 2, max_tokens=48, stop=("FROM",))
    assert all("FROM" not in t for t in got.texts)
    assert all(got.stopped)


def test_out_of_range_sizes_are_refused_with_a_fix(engine):
    with pytest.raises(LMError, match="lower n"):
        engine.sample_candidates(_ask("How many singers?"), 9)
    with pytest.raises(LMError, match="context"):
        engine.sample_candidates(_ask("How many singers?"), 2, max_tokens=100_000)


def test_the_deadline_binds_a_batched_call_and_the_next_call_works(engine):
    messages = [SYSTEM, {"role": "user", "content": "Write 300 different SQL queries over t(a, b), one per line."}]
    t0 = time.monotonic()
    with deadline_scope(time.monotonic() + 2.0, "turn", cap_s=60), pytest.raises(CallDeadlineExceeded):
        engine.sample_candidates(messages, 4, max_tokens=2000)
    assert time.monotonic() - t0 < 5.0
    assert engine.sample_candidates(_ask("How many singers?"), 2, max_tokens=32).texts[0]
