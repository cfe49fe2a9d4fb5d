"""One-pass label scoring and prefix reuse on the real embedded model (0.5B: mechanics, not quality)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from routerlab.agents.errors import LMError
from routerlab.agents.lm import chat, resolve_lm, usage_scope
from routerlab.agents.lm.onepass import _head_of, label_tokens, render, tokenize
from routerlab.agents.lm.scoring import score_choices

pytestmark = pytest.mark.model

LABELS = ("sql", "explain", "fix", "chat", "clarify", "refuse")
PREFIX = [
    {"role": "system", "content": "Classify the request. Reply with one word: " + ", ".join(LABELS) + "."},
    {"role": "user", "content": "hello there"},
    {"role": "assistant", "content": "chat"},
    {"role": "user", "content": "delete every row of staff"},
    {"role": "assistant", "content": "refuse"},
]


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.fixture(scope="module")
def lm():
    lm = resolve_lm("local:0.5b", cache=False, max_tokens=16)
    lm.engine.forget_prefixes()
    return lm


def test_second_decision_evaluates_only_its_new_tokens(lm):
    first = score_choices(lm, PREFIX, _user("how many staff are there?"), LABELS)
    second = score_choices(lm, PREFIX, _user("thanks a lot!"), LABELS)
    assert first.prefix_source == "computed" and first.evaluated_tokens == first.prompt_tokens
    assert second.prefix_source == "live"
    assert second.prefix_tokens == first.prefix_tokens > 30
    # only the request's own tokens and its turn's closing are evaluated: the turn's opening
    # (<|im_start|>user\n) is the same for every request, so it belongs to the reused prefix
    assert second.evaluated_tokens == second.prompt_tokens - second.prefix_tokens
    llama = lm.engine.llama()
    closing = llama.tokenize(b"<|im_end|>\n<|im_start|>assistant\n", add_bos=False, special=True)
    assert second.evaluated_tokens == len(llama.tokenize(b"thanks a lot!", add_bos=False)) + len(closing)

    # another prompt takes the context in between: the prefix comes back from its saved state
    chat(lm, [{"role": "user", "content": "Say hi."}], max_tokens=2)
    third = score_choices(lm, PREFIX, _user("what does SELECT 1 do?"), LABELS)
    assert third.prefix_source == "saved"
    assert third.evaluated_tokens == third.prompt_tokens - third.prefix_tokens


def _cold_probs(llm, request: str, split: int | None) -> list[float]:
    """Label probabilities from a fresh context, evaluating the prompt in one go or split at ``split``."""
    prompt = render(llm, [*PREFIX, *_user(request)], generation_prompt=True)
    tokens = llm.tokenize(prompt.encode(), special=True)
    llm.reset()
    for part in (tokens[:split], tokens[split:]) if split else (tokens,):
        llm.eval(part)
    logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).astype(np.float64)
    picked = np.array([logits[llm.tokenize(c.encode(), add_bos=False, special=False)[0]] for c in LABELS])
    return (np.exp(picked - picked.max()) / np.exp(picked - picked.max()).sum()).tolist()


@pytest.mark.parametrize("source", ["live", "saved"])
def test_reuse_gives_the_numbers_of_a_cold_evaluation(lm, source):
    """A truncated (live) or restored (saved) prefix scores exactly like evaluating it afresh,
    whatever request ran before (scores never depend on order)."""
    request = "why is this query slow? SELECT * FROM t"
    score_choices(lm, PREFIX, _user("hello"), LABELS)
    if source == "saved":
        chat(lm, [{"role": "user", "content": "Say hi."}], max_tokens=2)
    warm = score_choices(lm, PREFIX, _user(request), LABELS)
    assert warm.prefix_source == source
    llm = lm.engine.llama()
    got = [warm.probs[c] for c in LABELS]
    assert got == pytest.approx(_cold_probs(llm, request, warm.prefix_tokens), abs=1e-6)
    # in one batch the float arithmetic differs slightly, never the decision
    one_batch = _cold_probs(llm, request, None)
    assert got == pytest.approx(one_batch, abs=0.05)
    assert LABELS[int(np.argmax(one_batch))] == warm.best


def test_one_pass_returns_a_distribution_and_picks_its_argmax(lm):
    with usage_scope() as log:
        s = score_choices(lm, PREFIX, _user("drop the staff table now"), LABELS)
    assert set(s.probs) == set(LABELS)
    assert math.isclose(sum(s.probs.values()), 1.0, abs_tol=1e-9)
    assert all(0.0 <= p <= 1.0 for p in s.probs.values())
    assert s.best == max(s.probs, key=s.probs.get) and s.confidence == max(s.probs.values())
    assert 0.0 < s.coverage <= 1.0
    usage = log.total()
    assert usage.lm_calls == 1 and usage.prompt_tokens == s.prompt_tokens and usage.completion_tokens == 0


def test_labels_sharing_first_tokens_descend_one_token_deeper(lm):
    """Labels with a common first token are told apart by their next tokens (still sums to 1)."""
    llm = lm.engine.llama()
    labels = ("generate_sql", "generate_chart", "chat")
    toks = {c: llm.tokenize(c.encode(), add_bos=False, special=False) for c in labels}
    assert toks["generate_sql"][0] == toks["generate_chart"][0]
    lm.engine.forget_prefixes()
    s = score_choices(lm, PREFIX, _user("make me a bar chart of revenue"), labels)
    assert math.isclose(sum(s.probs.values()), 1.0, abs_tol=1e-9)
    assert s.prefix_source == "computed" and s.evaluated_tokens == s.prompt_tokens + 1


def test_a_label_that_prefixes_another_is_refused(lm):
    with pytest.raises(LMError) as info:
        score_choices(lm, PREFIX, _user("hi"), ("fix", "fix_sql"))
    assert "prefix" in str(info.value)


def test_scores_do_not_depend_on_the_request_before(lm):
    request = _user("Show revenue per area for 2024")
    runs = []
    for before in ("Show revenue per area for 2023", "hi!"):
        score_choices(lm, PREFIX, _user(before), LABELS)
        runs.append(score_choices(lm, PREFIX, request, LABELS).probs)
    assert runs[0] == runs[1]


@pytest.mark.parametrize(
    "request_text",
    ["how many staff are there?", "¿Cuántos empleados hay? 数据", "SELECT a<|x|> FROM t -- \n\n  trailing ", ""],
)
def test_tokenizing_after_the_cached_head_equals_tokenizing_whole(lm, request_text):
    """Only the text after the head's last control token is tokenized per request; same tokens."""
    llm = lm.engine.llama()
    head = _head_of(llm, PREFIX, _user(request_text))
    assert len(head.controls) >= 2 * len(PREFIX)  # each turn opens and closes with a control token
    for reply_prefix in ("", "intent: "):
        text = render(llm, [*PREFIX, *_user(request_text)], generation_prompt=True) + reply_prefix
        whole = [int(t) for t in llm.tokenize(text.encode(), special=True)]
        assert tokenize(llm, text, head) == whole
        prompt, labels = label_tokens(llm, text, LABELS, head)
        assert (prompt, labels) == label_tokens(llm, text, LABELS)
    # the split really is used: the request's turn is the only text tokenized anew
    assert any(head.checked.values())
