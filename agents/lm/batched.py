"""Several completions of one prompt decoded together: one prefill, N sequences in each forward pass.

Sampling N SQL candidates one after another costs N prefills and N decodes. On a CPU a forward
pass over a handful of tokens costs little more than over one (the weights are read once per pass
either way), so here the prompt is evaluated once for every sequence at the same time (each prompt
token belongs to all N sequences of a unified KV cache) and each step then decodes one token of
every unfinished sequence in one batch.

The work happens in a second llama.cpp context of the same loaded model (the weights are shared;
the context adds a KV cache of ``n_ctx`` cells). The prompt tokens of the previous call stay in
that cache: a call whose prompt starts the same way (the same schema, another question) evaluates
only the tokens after the shared part, as the main context's prefix reuse does.

Sequence 0 is greedy (temperature 0), so its text is the plain call's answer; the others are
sampled with the given temperature, top-k and top-p from seeds derived from ``seed``, so a call is
reproducible. The abort clock of the model binds every forward pass (see ``agents/lm/local.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Candidates", "decode_candidates"]

#: the most sequences one call decodes together (the second context is sized for it)
MAX_SEQUENCES = 8


@dataclass(frozen=True)
class Candidates:
    """N completions of one prompt and what they cost.

    Attributes:
        texts: One completion per sequence; ``texts[0]`` is the greedy one.
        completion_tokens: Tokens generated per sequence.
        stopped: Per sequence, True when an end-of-generation token or a stop string ended it
            (False: the token budget did).
        prompt_tokens: Tokens of the prompt.
        evaluated_prompt_tokens: Prompt tokens evaluated by this call (a shared start is not).
        prefill_seconds: Time spent evaluating the prompt.
        decode_seconds: Time spent generating.
    """

    texts: tuple[str, ...]
    completion_tokens: tuple[int, ...]
    stopped: tuple[bool, ...]
    prompt_tokens: int
    evaluated_prompt_tokens: int
    prefill_seconds: float
    decode_seconds: float

    @property
    def generated_tokens(self) -> int:
        """Tokens generated over all sequences."""
        return sum(self.completion_tokens)


class _MultiContext:
    """The second context of one model: N sequences, a unified KV cache, the live prompt remembered."""

    def __init__(self, llm: Any) -> None:
        import llama_cpp
        from llama_cpp import _internals

        params = llama_cpp.llama_context_default_params()
        params.n_ctx = llm.context_params.n_ctx
        params.n_batch = llm.context_params.n_batch
        params.n_ubatch = llm.context_params.n_ubatch
        params.n_threads = llm.context_params.n_threads
        params.n_threads_batch = llm.context_params.n_threads_batch
        params.n_seq_max = MAX_SEQUENCES
        # the sequences share the whole prompt: one buffer, attention over the shared cells
        params.kv_unified = True
        self.ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
        self.n_ctx = int(params.n_ctx)
        self.n_batch = int(params.n_batch)
        self.batch = _internals.LlamaBatch(n_tokens=self.n_batch, embd=0, n_seq_max=MAX_SEQUENCES, verbose=False)
        abort = getattr(llm, "_routerlab_abort", None)
        if abort is not None:
            # the same clock as the main context: one deadline binds both
            llama_cpp.llama_set_abort_callback(self.ctx.ctx, abort[1], None)
        self.vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
        self.n_vocab = llm.n_vocab()
        self.live: list[int] = []  # prompt tokens held by every sequence 0..live_n-1
        self.live_n = 0

    def is_eog(self, token: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self.vocab, token))

    def logits(self, i: int) -> np.ndarray:
        return np.ctypeslib.as_array(self.ctx.get_logits_ith(i), shape=(self.n_vocab,))

    def forget(self) -> None:
        self.ctx.kv_cache_clear()
        self.live, self.live_n = [], 0

    def start(self, prompt: list[int], n: int) -> int:
        """Bring all ``n`` sequences to the end of ``prompt``; return the prompt tokens evaluated."""
        import llama_cpp

        mem = self.ctx.memory
        # keep what the live prompt shares with this one, but always evaluate the last token:
        # its logits start the generation
        keep = 0
        for a, b in zip(self.live, prompt[:-1], strict=False):
            if a != b:
                break
            keep += 1
        if keep == 0:
            self.forget()
        else:
            # drop every generated token and the unshared prompt tail, then give the kept cells
            # to every sequence this call uses (cells of unused sequences are dropped)
            llama_cpp.llama_memory_seq_rm(mem, -1, keep, -1)
            for s in range(1, MAX_SEQUENCES):
                llama_cpp.llama_memory_seq_rm(mem, s, -1, -1)
            for s in range(1, n):
                llama_cpp.llama_memory_seq_cp(mem, 0, s, 0, keep)
        rest = prompt[keep:]
        for at in range(0, len(rest), self.n_batch):
            chunk = rest[at : at + self.n_batch]
            self._fill(chunk, keep + at, n, last=at + self.n_batch >= len(rest))
            self.ctx.decode(self.batch)
        self.live, self.live_n = list(prompt), n
        return len(rest)

    def _fill(self, tokens: list[int], pos0: int, n: int, *, last: bool) -> None:
        b = self.batch.batch
        b.n_tokens = len(tokens)
        for i, tok in enumerate(tokens):
            b.token[i] = tok
            b.pos[i] = pos0 + i
            b.n_seq_id[i] = n
            for s in range(n):
                b.seq_id[i][s] = s
            b.logits[i] = False
        if last:
            b.logits[len(tokens) - 1] = True

    def step(self, tokens: dict[int, int], pos: int) -> dict[int, int]:
        """Decode one token per sequence at ``pos``; return each sequence's row in the logits."""
        b = self.batch.batch
        b.n_tokens = len(tokens)
        rows = {}
        for i, (s, tok) in enumerate(tokens.items()):
            b.token[i] = tok
            b.pos[i] = pos
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = s
            b.logits[i] = True
            rows[s] = i
        self.ctx.decode(self.batch)
        return rows


def _multi(llm: Any) -> _MultiContext:
    multi = getattr(llm, "_routerlab_multi", None)
    if multi is None:
        multi = llm._routerlab_multi = _MultiContext(llm)
    return multi


def _sample(logits: np.ndarray, rng: np.random.Generator, temperature: float, top_k: int, top_p: float) -> int:
    """One token from ``logits``: greedy at temperature 0, else top-k, then top-p, then the draw."""
    if temperature <= 0:
        return int(np.argmax(logits))
    k = min(top_k, logits.shape[0]) if top_k > 0 else logits.shape[0]
    idx = np.argpartition(logits, -k)[-k:]
    z = logits[idx].astype(np.float64) / temperature
    z -= z.max()
    p = np.exp(z)
    p /= p.sum()
    order = np.argsort(-p)
    cum = np.cumsum(p[order])
    cut = int(np.searchsorted(cum, top_p)) + 1
    keep = order[:cut]
    q = p[keep] / p[keep].sum()
    return int(idx[keep[rng.choice(len(keep), p=q)]])


def decode_candidates(
    llm: Any,
    prompt: list[int],
    n: int,
    *,
    max_tokens: int,
    temperature: float = 0.7,
    top_k: int = 40,
    top_p: float = 0.95,
    seed: int = 0,
    stop: tuple[str, ...] = (),
) -> Candidates:
    """Decode ``n`` completions of ``prompt`` together (sequence 0 greedy, the rest sampled).

    Args:
        llm: A loaded ``llama_cpp.Llama``.
        prompt: The prompt's tokens (chat template applied, generation prompt included).
        n: Sequences, 1 to :data:`MAX_SEQUENCES`.
        max_tokens: Budget per sequence.
        temperature: Sampling temperature of sequences 1..n-1.
        top_k: Only the ``top_k`` likeliest tokens are drawn from (0: all).
        top_p: Then only the smallest set holding ``top_p`` of the probability.
        seed: Sequence ``s`` draws from ``numpy.random.default_rng([seed, s])``.
        stop: Strings that end a sequence's text (not included in it).

    Raises:
        ValueError: ``n`` out of range, or prompt and budget do not fit the context.
        RuntimeError: llama.cpp refused a batch (the abort clock makes it one too: the caller's
            deadline wrapper turns that into a deadline error).
    """
    if not 1 <= n <= MAX_SEQUENCES:
        raise ValueError(f"n must be between 1 and {MAX_SEQUENCES}, got {n}")
    multi = _multi(llm)
    if len(prompt) + max_tokens > multi.n_ctx:
        raise ValueError(
            f"prompt ({len(prompt)} tokens) + max_tokens ({max_tokens}) exceed the context ({multi.n_ctx})"
        )
    t0 = time.perf_counter()
    try:
        evaluated = multi.start(prompt, n)
    except RuntimeError:
        multi.forget()  # a half-evaluated batch: start clean next time
        raise
    t1 = time.perf_counter()
    rngs = [np.random.default_rng([seed, s]) for s in range(n)]
    temps = [0.0] + [temperature] * (n - 1)
    out: list[list[int]] = [[] for _ in range(n)]
    texts = [""] * n
    stopped = [False] * n
    rows = {s: -1 for s in range(n)}  # the prompt's last row holds every sequence's first logits
    pos = len(prompt)
    try:
        for _ in range(max_tokens):
            nxt: dict[int, int] = {}
            for s, row in rows.items():
                tok = _sample(multi.logits(row), rngs[s], temps[s], top_k, top_p)
                if multi.is_eog(tok):
                    stopped[s] = True
                    continue
                out[s].append(tok)
                texts[s] = llm.detokenize(out[s]).decode("utf-8", errors="ignore")
                if any(x in texts[s] for x in stop):
                    texts[s] = texts[s][: min(texts[s].find(x) for x in stop if x in texts[s])]
                    stopped[s] = True
                    continue
                nxt[s] = tok
            if not nxt:
                break
            rows = multi.step(nxt, pos)
            pos += 1
    except RuntimeError:
        multi.forget()
        raise
    # the generated tokens are not part of any later prompt: drop them now, keep the prompt
    import llama_cpp

    llama_cpp.llama_memory_seq_rm(multi.ctx.memory, -1, len(prompt), -1)
    return Candidates(
        texts=tuple(texts),
        completion_tokens=tuple(len(o) for o in out),
        stopped=tuple(stopped),
        prompt_tokens=len(prompt),
        evaluated_prompt_tokens=evaluated,
        prefill_seconds=t1 - t0,
        decode_seconds=time.perf_counter() - t1,
    )
