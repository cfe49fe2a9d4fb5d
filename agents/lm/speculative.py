"""Speculative greedy decoding in the project's own loop: tokens drafted from the context, verified in one batch.

A CPU forward pass reads every weight once whatever the number of tokens in the batch, so a pass
over a handful of tokens costs little more than over one. Generated SQL mostly copies its prompt
(table and column names, values, in a follow-up most of the previous query), so the tokens after
the last generated n-gram's latest earlier occurrence are a good guess of what comes next
(:func:`prompt_lookup`). Each step evaluates the last generated token and the drafted ones in one
``llama_batch``, with logits asked for at those positions only (the per-token ``logits`` flags:
prompt tokens get none, unlike llama-cpp-python's draft-model hook, which needs logits for every
token and ran at 0.53x). A drafted token is kept while it equals the model's own greedy choice
at its position; the first that does not is replaced by that choice, and the drafted positions
after it are removed from the KV cache (``llama_memory_seq_rm``).

Greedy output is the plain decoder's token for token, except that a batch of another shape sums
floats in another order: where the top two logits are nearly tied, the choice can flip
(:attr:`Decoded.margins` records each token's top-2 margin so such a difference can be shown).
Sampled replies (temperature > 0) stay on plain decoding: verifying a draft against samples
needs rejection sampling to keep the distribution, and candidates are decoded together anyway
(:mod:`routerlab.agents.lm.batched`).

Everything else follows llama-cpp-python's ``create_completion`` exactly, so the two are
interchangeable per call: the same prompt-state reuse (the model's saved states, then the live
context's shared prefix), the same end-of-generation, stop-string, multi-byte and ``max_tokens``
rules, the same state saved afterwards. The model's abort callback binds every forward pass, so
the call deadline and a held stop signal end it as they end a plain call.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol, runtime_checkable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from routerlab.agents.errors import ConfigError
from routerlab.agents.registry import Range, Registry

__all__ = [
    "DEFAULT_SPECULATIVE",
    "NEAR_TIE",
    "OFF",
    "CompletionRules",
    "Decoded",
    "Drafter",
    "PromptLookup",
    "configured_speculative",
    "drafter",
    "evaluate_batch",
    "prompt_lookup",
    "speculative_greedy",
    "top2_margin",
    "truncate_context",
]


def prompt_lookup(context: Sequence[int], k: int, max_ngram: int = 3, min_ngram: int = 1) -> list[int]:
    """Up to ``k`` tokens that followed the latest earlier occurrence of the context's last n-gram.

    The longest n (``max_ngram`` down to ``min_ngram``) whose last ``n`` tokens occur earlier in
    ``context`` wins; among its occurrences the latest (a follow-up's previous query, the output
    so far) is taken. The draft is what followed it, cut at ``k`` tokens and at the end of the
    context.

    Args:
        context: Prompt and generated tokens so far.
        k: The most tokens to draft (0 or less: none).
        max_ngram: The longest suffix looked up.
        min_ngram: The shortest suffix worth a draft (a single common token predicts little).

    Returns:
        The drafted tokens; empty when not even the last ``min_ngram`` tokens occur earlier.
    """
    size = len(context)
    if k <= 0 or size < 2:
        return []
    arr = np.asarray(context, dtype=np.int64)
    for n in range(min(max_ngram, size - 1), max(min_ngram, 1) - 1, -1):
        # windows starting at 0..size-n-1: each ends before the suffix's own last token, so
        # at least one token follows every match
        windows = sliding_window_view(arr[: size - 1], n)
        hits = np.flatnonzero((windows == arr[size - n :]).all(axis=1))
        if hits.size:
            start = int(hits[-1]) + n
            return [int(t) for t in arr[start : start + k]]
    return []


@runtime_checkable
class Drafter(Protocol):
    """Proposes the tokens that may come next; the model verifies them (see the module docstring)."""

    def __call__(self, context: Sequence[int], limit: int) -> list[int]:
        """At most ``limit`` drafted tokens after ``context`` (prompt and generated tokens)."""
        ...


#: what drafts the tokens speculative decoding verifies, by name (``ROUTERLAB_SPECULATIVE``)
drafter: Registry[Drafter] = Registry("drafter", returns=Drafter)


@drafter("prompt_lookup")
@dataclass(frozen=True)
class PromptLookup:
    """Drafts by :func:`prompt_lookup`: the continuation of the last n-gram's latest earlier occurrence.

    The defaults were chosen by replaying the 1.5B model's greedy SQL (built-in dev questions
    7-18 and SParC follow-ups on its tune databases) under the measured cost of a wider pass: on 2
    cores each extra token in a batch costs 0.35-0.7 of a one-token pass, so only a draft the
    model keeps more often than that pays, and one drafted token after a 2-gram match was kept
    61 % of the time (longer drafts and 1-gram matches were kept far less).

    Attributes:
        k: The most tokens drafted per step.
        max_ngram: The longest suffix looked up.
        min_ngram: The shortest suffix worth a draft.
    """

    k: Annotated[int, Range(1, 64)] = 1
    max_ngram: Annotated[int, Range(1, 16)] = 3
    min_ngram: Annotated[int, Range(1, 16)] = 2

    def __call__(self, context: Sequence[int], limit: int) -> list[int]:
        """The draft after ``context``, at most ``limit`` tokens."""
        return prompt_lookup(context, min(self.k, limit), self.max_ngram, self.min_ngram)


#: a top-2 logit margin under which a batch of another shape may flip the greedy choice: a reply
#: that parts from the plain decoder's at a token with a smaller margin parts at a near-tie
NEAR_TIE = 0.25

#: the setting that turns speculative decoding off (llama-cpp-python decodes token by token)
OFF = "off"

#: how a local model decodes greedy text when nothing says otherwise: off, because on the
#: reference machine (2 cores) a forward pass costs nearly as much more per token in the batch as
#: a pass of its own, and prompt lookup's drafts of single-question SQL are rarely kept
#: (docs/results/2026-12-06-speculative-decoding.md)
DEFAULT_SPECULATIVE = OFF


def configured_speculative(choice: str | None = None) -> str:
    """The drafter a local model uses: ``choice``, else ``$ROUTERLAB_SPECULATIVE``, else the default.

    Raises:
        ConfigError: A value that is neither ``off`` nor a registered drafter.
    """
    value = (choice if choice is not None else os.environ.get("ROUTERLAB_SPECULATIVE", "")).strip()
    value = value or DEFAULT_SPECULATIVE
    if value != OFF and value not in drafter:
        raise ConfigError(
            f"unknown speculative decoding setting {value!r}",
            expected=f"{OFF} or a drafter: {', '.join(drafter.names())}",
            found=repr(value) + (" (from ROUTERLAB_SPECULATIVE)" if choice is None else ""),
            fix=f"set ROUTERLAB_SPECULATIVE to {OFF} or one of the drafters",
        )
    return value


@dataclass
class Decoded:
    """One greedy completion and what its decoding did.

    Attributes:
        text: The completion, cut before a stop string.
        tokens: The completion's tokens (an end-of-generation token is not one of them).
        finish: ``stop`` (end of generation or a stop string) or ``length`` (``max_tokens``).
        prompt_tokens: Tokens of the prompt.
        evaluated_prompt_tokens: Prompt tokens evaluated by this call (a reused prefix is not).
        drafted: Tokens drafted over all steps.
        accepted: Drafted tokens kept (the model chose them too).
        passes: Forward passes after the prompt (one per step).
        margins: Per token the model chose, in order, its top-1 minus top-2 logit (a near-tie is
            a small margin); one more than ``tokens`` when an end-of-generation token ended it.
    """

    text: str
    tokens: list[int]
    finish: str
    prompt_tokens: int
    evaluated_prompt_tokens: int
    drafted: int = 0
    accepted: int = 0
    passes: int = 0
    margins: list[float] = field(default_factory=list)


def top2_margin(logits: np.ndarray) -> float:
    """The top-1 minus the top-2 logit: how near the greedy choice was to a tie."""
    top2 = np.partition(logits, -2)[-2:]
    return float(top2[1] - top2[0])


class CompletionRules:
    """llama-cpp-python's per-token completion rules (``Llama._create_completion``), one token at a time."""

    def __init__(self, llm: Any, prompt: list[int], max_tokens: int, stop: Sequence[str]) -> None:
        import llama_cpp

        self._llm = llm
        self._vocab = llm._model.vocab
        self._is_eog = llama_cpp.llama_vocab_is_eog
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.stops = [s.encode("utf-8") for s in stop]
        self.tokens: list[int] = []
        self.text = b""
        self.finish: str | None = None
        self._multibyte = 0

    def push(self, token: int) -> bool:
        """Take the next token; True when the completion has ended (``finish`` is set)."""
        llm = self._llm
        if self._is_eog(self._vocab, token):
            self.text = llm.detokenize(self.tokens, prev_tokens=self.prompt)
            self.finish = "stop"
            return True
        self.tokens.append(token)
        text = llm.detokenize(self.tokens, prev_tokens=self.prompt)
        # an incomplete UTF-8 character at the end: no stop or length check until it is whole
        for k, char in enumerate(text[-3:]):
            k = 3 - k
            for num, pattern in ((2, 192), (3, 224), (4, 240)):
                if num > k and pattern & char == pattern:
                    self._multibyte = num - k
        if self._multibyte > 0:
            self._multibyte -= 1
            return False
        found = [s for s in self.stops if s in text]
        if found:
            self.text = text[: text.index(found[0])]
            self.finish = "stop"
            return True
        if len(self.tokens) >= self.max_tokens:
            self.text = text
            self.finish = "length"
            return True
        return False


def _reuse_prefix(llm: Any, prompt: list[int]) -> int:
    """Bring the context to the longest reusable start of ``prompt``; return how many tokens it holds.

    As ``create_completion`` does: a saved state of the model's prompt cache that shares more of
    the prompt than the live context is loaded; then the live tokens shared with the prompt are
    kept (all but the last when the whole prompt is live: its logits must be computed again).
    """
    if llm.cache:
        try:
            item = llm.cache[prompt]
            if llm.longest_token_prefix(item.input_ids.tolist(), prompt) > llm.longest_token_prefix(
                llm._input_ids.tolist(), prompt
            ):
                llm.load_state(item)
        except KeyError:
            pass
    shared = llm.longest_token_prefix(llm._input_ids.tolist(), prompt) if llm.n_tokens > 0 else 0
    keep = shared - 1 if shared == len(prompt) else shared
    if keep > 0 and llm._ctx.kv_cache_seq_rm(-1, keep, -1):
        llm.n_tokens = keep
    else:
        llm.reset()
    llm._requires_eval = True
    return llm.n_tokens


def evaluate_batch(llm: Any, tokens: list[int]) -> list[np.ndarray]:
    """Evaluate ``tokens`` after the live context in one batch; the logits of each position."""
    b = llm._batch.batch
    pos = llm.n_tokens
    b.n_tokens = len(tokens)
    for i, tok in enumerate(tokens):
        b.token[i] = tok
        b.pos[i] = pos + i
        b.n_seq_id[i] = 1
        b.seq_id[i][0] = 0
        b.logits[i] = True
    llm._ctx.decode(llm._batch)
    llm.input_ids[pos : pos + len(tokens)] = tokens
    llm.n_tokens = pos + len(tokens)
    n_vocab = llm.n_vocab()
    return [np.ctypeslib.as_array(llm._ctx.get_logits_ith(i), shape=(n_vocab,)) for i in range(len(tokens))]


def truncate_context(llm: Any, n: int) -> None:
    """Drop every context position from ``n`` on (rejected drafts, tokens past the end)."""
    if llm.n_tokens > n:
        llm._ctx.kv_cache_seq_rm(-1, n, -1)
        llm.n_tokens = n


def speculative_greedy(
    llm: Any,
    prompt: list[int],
    draft: Drafter,
    *,
    max_tokens: int,
    stop: Sequence[str] = (),
) -> Decoded:
    """Greedy completion of ``prompt`` with drafts from ``draft`` verified in one batch per step.

    Args:
        llm: A loaded ``llama_cpp.Llama`` (its main context is used, as a plain call uses it).
        prompt: The prompt's tokens (chat template applied, generation prompt included).
        draft: The drafter; one returning nothing is plain greedy decoding in this loop.
        max_tokens: Completion budget (cut to what the context window leaves, as a plain call's).
        stop: Strings that end the completion (not included in its text).

    Raises:
        ValueError: The prompt does not fit the context window.
        RuntimeError: llama.cpp refused a batch; the abort callback (deadline, stop signal) makes
            it one too. The context is reset first, as it was left half evaluated.
    """
    n_ctx = llm.n_ctx()
    if len(prompt) >= n_ctx:
        raise ValueError(f"Requested tokens ({len(prompt)}) exceed context window of {n_ctx}")
    if max_tokens <= 0 or max_tokens + len(prompt) >= n_ctx:
        max_tokens = n_ctx - len(prompt)
    eos = llm._model.token_get_text(llm.token_eos()) if llm.token_eos() != -1 else ""
    done = CompletionRules(llm, prompt, max_tokens, [*stop, *([eos] if eos else [])])
    out = Decoded(text="", tokens=done.tokens, finish="length", prompt_tokens=len(prompt), evaluated_prompt_tokens=0)
    try:
        kept = _reuse_prefix(llm, prompt)
        llm.eval(prompt[kept:])
        out.evaluated_prompt_tokens = len(prompt) - kept
        n_vocab = llm.n_vocab()
        logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(n_vocab,))
        token = int(np.argmax(logits))
        out.margins.append(top2_margin(logits))
        while not done.push(token):
            # the token just chosen is evaluated with the drafts after it: a step never drafts
            # past the budget or the context window
            room = min(max_tokens - len(done.tokens), n_ctx - llm.n_tokens - 1)
            guess = draft([*prompt, *done.tokens], room) if room > 0 else []
            rows = evaluate_batch(llm, [token, *guess])
            out.passes += 1
            out.drafted += len(guess)
            base = llm.n_tokens - len(guess)  # the context up to and including ``token``
            ended = False
            for i, row in enumerate(rows):
                token = int(np.argmax(row))
                out.margins.append(top2_margin(row))
                if i == len(guess) or token != guess[i]:
                    truncate_context(llm, base + i)
                    break
                out.accepted += 1
                if done.push(token):
                    # as a plain call leaves it: every completion token but the last evaluated
                    truncate_context(llm, base + i)
                    ended = True
                    break
            if ended:
                break
    except RuntimeError:
        llm.reset()
        raise
    llm._requires_eval = True
    if llm.cache:
        llm.cache[prompt + done.tokens] = llm.save_state()
    out.text = done.text.decode("utf-8", errors="ignore")
    out.finish = done.finish or "length"
    return out
