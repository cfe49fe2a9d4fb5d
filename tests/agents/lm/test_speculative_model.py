"""Speculative greedy decoding on the real embedded model (0.5B: mechanics, not quality)."""

from __future__ import annotations

import time

import pytest
from dspy import lm15 as L

from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.deadline import CallDeadlineExceeded, deadline_scope
from routerlab.agents.lm.onepass import render
from routerlab.agents.lm.speculative import NEAR_TIE, OFF, Decoded, PromptLookup, speculative_greedy

pytestmark = pytest.mark.model

SCHEMA = (
    "CREATE TABLE singer (singer_id INTEGER, name TEXT, country TEXT, age INTEGER);\n"
    "CREATE TABLE concert (concert_id INTEGER, concert_name TEXT, theme TEXT, year TEXT);\n"
    "CREATE TABLE singer_in_concert (concert_id INTEGER, singer_id INTEGER);"
)
PREVIOUS = "SELECT name, country FROM singer WHERE age > 30 ORDER BY age DESC"
QUESTIONS = [
    "How many singers are from France?",
    f"The previous query was: {PREVIOUS}\nNow also show each singer's age, same filter and order.",
    "List every concert name with the names of its singers.",
]


def _messages(question: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You are an expert SQLite programmer. Reply with one SQL query only."},
        {"role": "user", "content": f"{SCHEMA}\n\nQuestion: {question}"},
    ]


@pytest.fixture(scope="module")
def llm():
    return resolve_lm("local:0.5b", cache=False, max_tokens=64, speculative=OFF)._engine_spec.llama()


def _prompt(llm, messages) -> list[int]:
    text = render(llm, messages, generation_prompt=True)
    return [int(t) for t in llm.tokenize(text.encode(), add_bos=False, special=True)]


def _plain(llm, messages, **kwargs) -> dict:
    llm.reset()  # both ways evaluate the whole prompt in one batch: only the decoding differs
    return llm.create_chat_completion(messages=messages, temperature=0.0, **kwargs)["choices"][0]


def _speculative(llm, messages, k: int = 8, **kwargs) -> Decoded:
    llm.reset()
    return speculative_greedy(llm, _prompt(llm, messages), PromptLookup(k=k), **kwargs)


def _same_or_near_tie(llm, plain: str, got: Decoded) -> None:
    """The texts are equal, or the first token where they part was a near-tie for the model."""
    if got.text == plain:
        return
    for j in range(len(got.tokens)):
        if not plain.startswith(llm.detokenize(got.tokens[: j + 1]).decode(errors="ignore")):
            break
    assert got.margins[j] < NEAR_TIE, (plain, got.text, j, got.margins[j])


def test_speculative_greedy_writes_what_plain_greedy_writes(llm):
    kept = 0
    for q in QUESTIONS:
        m = _messages(q)
        plain = _plain(llm, m, max_tokens=64)
        got = _speculative(llm, m, max_tokens=64)
        assert got.text and got.finish == plain["finish_reason"]
        _same_or_near_tie(llm, plain["message"]["content"], got)
        assert got.passes + (got.finish == "stop") + got.accepted >= len(got.tokens)
        kept += got.accepted
    # the follow-up copies most of the previous query from its prompt: some drafts are kept
    assert kept > 0


def test_stop_strings_and_the_token_budget_end_it_as_they_end_plain_decoding(llm):
    m = _messages(QUESTIONS[1])
    plain = _plain(llm, m, max_tokens=64, stop=["WHERE"])
    got = _speculative(llm, m, max_tokens=64, stop=["WHERE"])
    assert "WHERE" not in got.text and got.finish == "stop" == plain["finish_reason"]
    _same_or_near_tie(llm, plain["message"]["content"], got)
    plain = _plain(llm, m, max_tokens=5)
    got = _speculative(llm, m, max_tokens=5)
    assert got.finish == "length" == plain["finish_reason"] and len(got.tokens) == 5
    _same_or_near_tie(llm, plain["message"]["content"], got)


def test_the_context_is_left_as_a_plain_call_leaves_it(llm):
    m = _messages(QUESTIONS[1])
    got = _speculative(llm, m, max_tokens=64)
    prompt = _prompt(llm, m)
    # every token but the one that ended the reply is in the context, nothing after it
    assert llm.n_tokens == len(prompt) + len(got.tokens) - (got.finish == "length")
    assert list(llm.input_ids[: llm.n_tokens]) == (prompt + got.tokens)[: llm.n_tokens]
    # so the next call reuses the prompt and evaluates only its own tail
    again = speculative_greedy(llm, prompt, PromptLookup(), max_tokens=64)
    assert again.evaluated_prompt_tokens == 1
    _same_or_near_tie(llm, got.text, again)


def test_the_engine_decodes_greedy_text_speculatively_and_samples_plainly():
    lm = resolve_lm("local:0.5b", cache=False, max_tokens=48, speculative="prompt_lookup")
    engine = lm._engine_spec
    request = L.Request(
        model=lm.model,
        messages=(L.Message.user(f"{SCHEMA}\n\nOne SQLite query: how many singers?"),),
        config=L.Config(temperature=0.0, max_tokens=48),
    )
    reply = engine.complete(request)
    assert engine.last_decoded is not None and reply.message.parts[0].text == engine.last_decoded.text
    assert reply.usage.output_tokens == len(engine.last_decoded.tokens)
    engine.last_decoded = None
    sampled = L.Request(
        model=lm.model, messages=request.messages, config=L.Config(temperature=0.8, max_tokens=16, seed=3)
    )
    assert engine.complete(sampled).message.parts[0].text
    assert engine.last_decoded is None  # a sampled reply never takes the speculative path


def test_the_deadline_ends_a_speculative_call():
    lm = resolve_lm("local:0.5b", cache=False, max_tokens=2000, speculative="prompt_lookup")
    lm("Say hi.")  # load the model outside the clock
    t0 = time.monotonic()
    with deadline_scope(time.monotonic() + 3.0, "turn", cap_s=60), pytest.raises(CallDeadlineExceeded):
        lm("Write 300 different SQL queries over a table t(a, b, c), one per line.")
    assert time.monotonic() - t0 < 6.0
    # the aborted context is reset: the next call answers normally
    assert lm("Reply with the word ok.")
