"""llama.cpp mechanics of one-pass label scoring: a reused prefix state and label log probabilities.

The prompt is rendered with the model's own chat template. Its stable prefix (instructions and
few-shot demos) is evaluated once; afterwards a request starts from that prefix's KV state, found
either still live in the context (the previous request shared it: the context is truncated back
to it) or in a small store of saved prefix states (another prompt ran in between: the state is
restored). Only the request's tokens are then evaluated, and the labels are read from the logits
of the last position.

Tokenizing costs too: the prompt is 500-1,000 tokens and each label is tokenized after it. The
prompt's head (the prefix and the request turn's opening) is tokenized once per prefix; a
tokenizer splits text at control tokens before anything else, so only the text after the head's
last control token is tokenized per request.

Saved prefix states here hold the KV cache and token ids only. ``Llama.save_state`` also copies
the whole logits buffer (``n_batch x n_vocab`` floats, about 310 MB for Qwen2.5), which scoring
never needs; without it a 600-token prefix of the 1.5B model is about 17 MB.

A prefix evaluated here is also written to disk (:mod:`routerlab.agents.lm.prefix_disk`), and a
prefix missing from memory is looked up there before it is evaluated: the next process, or
another router with the same prefix, restores it (``prefix_source == "disk"``).
"""

from __future__ import annotations

import ctypes
import math
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from routerlab.agents.lm.prefix_disk import configured_prefix_disk, prefix_key
from routerlab.agents.lm.scoring import ChoiceScores, normalise

__all__ = [
    "Continuation",
    "PrefixStore",
    "continue_reply",
    "label_tokens",
    "render",
    "score_labels",
    "shared_prefix",
    "tokenize",
]

_HEADS = 16  # tokenized heads kept per model: one per routing prompt in use


@dataclass(frozen=True)
class _Saved:
    tokens: tuple[int, ...]
    kv: bytes


class PrefixStore:
    """Saved prefix states of one model: the ``max_states`` most recently used in memory, all on disk.

    The disk store is the one the environment names at the time of each save or lookup
    (:func:`~routerlab.agents.lm.prefix_disk.configured_prefix_disk`), so it can be redirected or
    turned off without reloading the model. ``max_states=0`` turns the memory copies off only.
    """

    def __init__(self, max_states: int) -> None:
        self.max_states = max_states
        self._states: OrderedDict[tuple[int, ...], _Saved] = OrderedDict()

    def __len__(self) -> int:
        return len(self._states)

    def clear(self) -> None:
        """Forget every state saved in memory (the disk store is left alone)."""
        self._states.clear()

    def save(self, llm: Any) -> None:
        """Save the live context (exactly its ``n_tokens`` tokens) as a prefix state, in memory and on disk."""
        disk = configured_prefix_disk()
        if self.max_states <= 0 and disk is None:
            return
        import llama_cpp

        size = llama_cpp.llama_state_get_size(llm._ctx.ctx)
        buf = (ctypes.c_uint8 * int(size))()
        n = llama_cpp.llama_state_get_data(llm._ctx.ctx, buf, size)
        key = tuple(int(t) for t in llm.input_ids[: llm.n_tokens])
        data = bytes(buf)[: int(n)]
        self._remember(key, data)
        if disk is not None:
            disk.save(prefix_key(llm, key, disk), data)

    def _remember(self, key: tuple[int, ...], data: bytes) -> None:
        if self.max_states <= 0:
            return
        self._states[key] = _Saved(key, data)
        self._states.move_to_end(key)
        while len(self._states) > self.max_states:
            self._states.popitem(last=False)

    def restore(self, llm: Any, tokens: tuple[int, ...]) -> str | None:
        """Load the saved state of exactly ``tokens`` into the context.

        Returns:
            ``"saved"`` (from memory), ``"disk"`` (from the disk store, now also in memory) or
            None when neither has it (or llama.cpp refused a file's state: the file is removed).
        """
        saved = self._states.get(tokens)
        if saved is not None:
            self._states.move_to_end(tokens)
            return "saved" if _set_state(llm, saved.kv, tokens) else None
        disk = configured_prefix_disk()
        if disk is None:
            return None
        key = prefix_key(llm, tokens, disk)
        data = disk.load(key)
        if data is None:
            return None
        if not _set_state(llm, data, tokens):
            disk.reject(key, "llama.cpp did not accept the state")
            return None
        self._remember(tokens, data)
        return "disk"


def _set_state(llm: Any, data: bytes, tokens: tuple[int, ...]) -> bool:
    """Put a saved state into ``llm``'s context; False when llama.cpp does not take all of it."""
    import llama_cpp

    arr = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    if llama_cpp.llama_state_set_data(llm._ctx.ctx, arr, len(data)) != len(data):
        return False
    llm.input_ids[: len(tokens)] = tokens
    llm.n_tokens = len(tokens)
    return True


def _formatter(llm: Any) -> Any:
    fmt = getattr(llm, "_routerlab_formatter", None)
    if fmt is None:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ValueError("the model has no chat template in its GGUF metadata")

        def text(tid: int) -> str:
            return llm._model.token_get_text(tid) if tid != -1 else ""

        fmt = Jinja2ChatFormatter(template, eos_token=text(llm.token_eos()), bos_token=text(llm.token_bos()))
        llm._routerlab_formatter = fmt
    return fmt


def render(llm: Any, messages: Sequence[dict[str, Any]], *, generation_prompt: bool) -> str:
    """``messages`` as the model's chat template writes them."""
    fmt = _formatter(llm)
    fmt.add_generation_prompt = generation_prompt
    return fmt(messages=list(messages)).prompt


def label_tokens(
    llm: Any, text: str, choices: Sequence[str], head: _Head | None = None
) -> tuple[list[int], dict[str, list[int]]]:
    """The prompt's tokens and each label's tokens, tokenized together as the model would read them.

    Each label is tokenized after the prompt, so a merge across the boundary (``"`` + ``data``
    into one token, say) is the model's own; the prompt tokens are those all labels share with the
    prompt alone. ``head`` (see :func:`tokenize`) saves re-tokenizing the prompt's stable head.

    Raises:
        ValueError: A label's tokens are a prefix of another's (one pass cannot tell them apart).
    """
    alone = tokenize(llm, text, head)
    joint = {c: tokenize(llm, text + c, head) for c in choices}
    n = min([len(alone), *(shared_prefix(alone, toks) for toks in joint.values())])
    labels = {c: toks[n:] for c, toks in joint.items()}
    for a, ta in labels.items():
        if not ta:
            raise ValueError(f"label {a!r} adds no token to the prompt")
        for b, tb in labels.items():
            if a != b and tb[: len(ta)] == ta:
                raise ValueError(f"label {a!r} is a token prefix of {b!r}: one pass cannot tell them apart")
    return alone[:n], labels


@dataclass(frozen=True)
class _Head:
    """A prompt head's text and tokens, and where its control tokens end (char end, tokens up to it).

    ``checked`` remembers which split points were found to reproduce the head's own tokenization.
    """

    text: str
    tokens: list[int]
    controls: tuple[tuple[int, int], ...]
    checked: dict[int, bool]


def _piece(llm: Any, text: str) -> list[int]:
    return [int(t) for t in llm.tokenize(text.encode(), add_bos=False, special=True)] if text else []


def _head(llm: Any, text: str) -> _Head:
    """The tokenized head ``text``, cached per model (least recently used dropped)."""
    cache = getattr(llm, "_routerlab_heads", None)
    if cache is None:
        cache = llm._routerlab_heads = OrderedDict()
    head = cache.get(text)
    if head is None:
        head = cache[text] = _split_head(llm, text)
        while len(cache) > _HEADS:
            cache.popitem(last=False)
    cache.move_to_end(text)
    return head


def _split_head(llm: Any, text: str) -> _Head:
    import llama_cpp

    tokens = [int(t) for t in llm.tokenize(text.encode(), special=True)]
    controls, at = [], 0
    for i, t in enumerate(tokens):
        if llm._model.token_get_attr(t) & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL:
            piece = llm._model.token_get_text(t)
            at = text.find(piece, at)
            if at < 0:
                break
            at += len(piece)
            controls.append((at, i + 1))
    return _Head(text, tokens, tuple(controls), {})


def tokenize(llm: Any, text: str, head: _Head | None = None) -> list[int]:
    """``text``'s tokens (special tokens parsed), reusing ``head``'s as far as ``text`` shares them.

    Equal to tokenizing ``text`` whole: the tokenizer splits at control tokens first, so the text
    after the last control token it shares with the head is tokenized on its own either way (each
    split point is also checked once against the head's own tokenization).
    """
    if head is not None:
        for end, n in reversed(head.controls):
            if not text.startswith(head.text[:end]):
                continue
            if end not in head.checked:
                head.checked[end] = head.tokens[:n] + _piece(llm, head.text[end:]) == head.tokens
            if head.checked[end]:
                return head.tokens[:n] + _piece(llm, text[end:])
            break
    return [int(t) for t in llm.tokenize(text.encode(), special=True)]


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _head_of(llm: Any, prefix: Sequence[dict[str, Any]], messages: Sequence[dict[str, Any]]) -> _Head:
    r"""The head every request after ``prefix`` shares: the prefix and the request turn's opening.

    When the request begins with a turn of a fixed role, that turn's opening tokens
    (``<|im_start|>user\n`` for Qwen) do not depend on the request, so they are evaluated once with
    the prefix instead of once per decision. The head is the same turn rendered with empty
    content, so it holds for any chat template.
    """
    probe = [*prefix, {"role": messages[0]["role"], "content": ""}] if messages else list(prefix)
    return _head(llm, render(llm, probe, generation_prompt=False))


def _stable_length(head: _Head, prompt: list[int]) -> int:
    """How many leading tokens of ``prompt`` every request sharing ``head`` shares."""
    return min(shared_prefix(prompt, head.tokens), len(prompt) - 1)


def _start(llm: Any, store: PrefixStore, prompt: list[int], stable: int) -> tuple[str, int]:
    """Bring the context to exactly the first ``stable`` tokens of ``prompt``; return its source.

    The live context is truncated back to the stable prefix when it holds it; else the prefix's
    saved state is restored (from memory, else from disk), or it is evaluated now and saved.
    Never further: tokens past the prefix that a previous request happened to share were
    evaluated in batches of another shape, and reusing them would make a request's scores (in the
    last digits, sometimes in the decision) depend on what ran before it. Returns the source and
    the tokens evaluated to get there.
    """
    live = shared_prefix([int(t) for t in llm.input_ids[: llm.n_tokens]], prompt[:stable])
    if live == stable and stable > 0:
        llm.n_tokens = stable  # the next eval drops the KV entries past the prefix
        return "live", 0
    restored = store.restore(llm, tuple(prompt[:stable])) if stable else None
    if restored is not None:
        return restored, 0
    llm.reset()
    if not stable:
        return "computed", 0
    llm.eval(prompt[:stable])
    store.save(llm)
    return "computed", stable


def _last_logprobs(llm: Any) -> np.ndarray:
    logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).astype(np.float64)
    top = logits.max()
    return logits - top - math.log(np.exp(logits - top).sum())


def _walk(
    llm: Any, labels: dict[str, list[int]], depth: int, base: float, out: dict[str, float], evals: list[int]
) -> float:
    """Log probability of each label, descending only where labels share a token; returns coverage.

    Every token evaluated to descend is appended to ``evals``.
    """
    logp = _last_logprobs(llm)
    groups: dict[int, list[str]] = {}
    for name, toks in labels.items():
        groups.setdefault(toks[depth], []).append(name)
    coverage = 0.0
    for tok, names in groups.items():
        coverage += math.exp(logp[tok])
        if len(names) == 1:
            out[names[0]] = base + float(logp[tok])
            continue
        n0 = llm.n_tokens
        llm.eval([tok])
        evals.append(tok)
        _walk(llm, {k: labels[k] for k in names}, depth + 1, base + float(logp[tok]), out, evals)
        llm.n_tokens = n0
    return coverage


def score_labels(
    llm: Any,
    store: PrefixStore,
    prefix: Sequence[dict[str, Any]],
    messages: Sequence[dict[str, Any]],
    choices: Sequence[str],
    reply_prefix: str = "",
) -> ChoiceScores:
    """Score ``choices`` as the reply to ``prefix + messages`` (see the module docstring)."""
    t0 = time.perf_counter()
    head = _head_of(llm, prefix, messages)
    text = render(llm, [*prefix, *messages], generation_prompt=True) + reply_prefix
    prompt, labels = label_tokens(llm, text, choices, head)
    stable = _stable_length(head, prompt)
    source, evaluated = _start(llm, store, prompt, stable)
    rest = prompt[llm.n_tokens :]
    llm.eval(rest)
    evaluated += len(rest)
    logprobs: dict[str, float] = {}
    descended: list[int] = []
    coverage = _walk(llm, labels, 0, 0.0, logprobs, descended)
    evaluated += len(descended)
    return ChoiceScores(
        probs=normalise(logprobs),
        coverage=coverage,
        prompt_tokens=len(prompt),
        prefix_tokens=stable,
        evaluated_tokens=evaluated,
        prefix_source=source,
        seconds=time.perf_counter() - t0,
    )


@dataclass(frozen=True)
class Continuation:
    """Text greedily generated after a forced reply start, with its token accounting.

    Attributes:
        text: The generated text, up to (not including) the stop string.
        prompt_tokens: Tokens of the prompt including the forced reply start.
        evaluated_tokens: Prompt tokens actually evaluated (a reused prefix is not).
        completion_tokens: Tokens generated.
        stopped: The stop string ended the text (False: the token budget did).
    """

    text: str
    prompt_tokens: int
    evaluated_tokens: int
    completion_tokens: int
    stopped: bool


def continue_reply(
    llm: Any,
    store: PrefixStore,
    prefix: Sequence[dict[str, Any]],
    messages: Sequence[dict[str, Any]],
    reply_prefix: str,
    *,
    stop: str,
    max_tokens: int,
) -> Continuation:
    """Greedy text after ``reply_prefix`` until ``stop``, reusing the prefix state as scoring does.

    A JSON string value is generated this way (``stop='"'``): an escaped quote does not stop it.
    """
    head = _head_of(llm, prefix, messages)
    text = render(llm, [*prefix, *messages], generation_prompt=True) + reply_prefix
    prompt = tokenize(llm, text, head)
    stable = _stable_length(head, prompt)
    _, evaluated = _start(llm, store, prompt, stable)
    rest = prompt[llm.n_tokens :]
    llm.eval(rest)
    evaluated += len(rest)
    out = b""
    eos = {llm.token_eos(), *(t for t in (getattr(llm, "_token_eot", None),) if t is not None)}
    for n in range(1, max_tokens + 1):
        tok = int(np.argmax(np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),))))
        if tok in eos:
            return Continuation(out.decode(errors="replace"), len(prompt), evaluated, n - 1, False)
        out += llm.detokenize([tok])
        decoded = out.decode(errors="ignore")
        end = _unescaped(decoded, stop)
        if end >= 0:
            return Continuation(decoded[:end], len(prompt), evaluated, n, True)
        llm.eval([tok])
    return Continuation(out.decode(errors="replace"), len(prompt), evaluated, max_tokens, False)


def _unescaped(text: str, stop: str) -> int:
    """Index of the first ``stop`` in ``text`` not preceded by a backslash escape, or -1."""
    i = text.find(stop)
    while i >= 0:
        backslashes = len(text[:i]) - len(text[:i].rstrip("\\"))
        if backslashes % 2 == 0:
            return i
        i = text.find(stop, i + 1)
    return -1
