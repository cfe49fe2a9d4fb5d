"""Greedy text calls of concurrent examples decoded together: continuous batching over one loaded model.

``routerlab run --concurrency K`` runs K examples at once on worker threads. A remote LM answers
their calls side by side; the embedded model used to take them one at a time behind its call lock,
so K workers ran no faster than one. Inside a :func:`decode_together` block a greedy text call of
the embedded model (a sub-agent's SQL, a reply) is instead one sequence of a shared llama.cpp
context: each forward pass evaluates the next token of every sequence that is generating plus
prompt tokens of sequences that are starting, and a sequence that finishes leaves the batch at
once, so the next call starts without waiting for the others (continuous batching). On a CPU a
pass over two tokens costs well under two passes over one, which is the whole gain.

Prefixes are reused across calls: the context's unified KV cache holds the tokens of up to
``slots + HELD`` sequences, a finished one's kept until its sequence is needed again, and a call
starts from the longest start of its prompt that any sequence holds (``llama_memory_seq_cp`` only
tags the cells with one more sequence, nothing is copied). Calls on one database thus share its
schema's evaluated prefix, as the main context's saved states do for calls one after another.

Each call keeps its own deadline (its :func:`~routerlab.agents.lm.deadline.call_budget`). Between
passes, a call past it ends; during a pass, the context's abort callback ends the pass at the
earliest deadline of the calls in it (or at a held stop signal), the pass's positions are
removed from every sequence and the calls still running evaluate them again in the next pass.

Greedy replies follow llama-cpp-python's completion rules (:class:`CompletionRules`) and are the
plain call's token for token, except where a batch of another shape sums floats in another order
at a near-tie: every token's top-2 margin is recorded (:attr:`Decoded.margins`) so a reply that
parts from the plain call's can be shown to part there.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from routerlab.agents.errors import ConfigError, RouterlabError
from routerlab.agents.lm.onepass import shared_prefix
from routerlab.agents.lm.speculative import CompletionRules, Decoded, top2_margin
from routerlab.agents.signals import stop_requested

__all__ = [
    "HELD",
    "LOGGED",
    "WAIT_FOR",
    "CallEnded",
    "Together",
    "decode_together",
    "start_from",
    "together",
    "together_slots",
    "together_wanted",
]

#: sequences beyond the running ones whose tokens stay in the cache for later calls to start from
HELD = 2

#: shared prompt tokens that make a call wait for another call's prompt rather than evaluate them too
WAIT_FOR = 64

#: calls whose prompt and record :attr:`Together.log` keeps (to show where replies part at a near-tie)
LOGGED = 256

# seconds the decoding thread waits for a call before it ends (the next call starts it again)
_IDLE_S = 0.5

_SLOTS = 1
_SLOTS_LOCK = threading.Lock()


@contextmanager
def decode_together(slots: int) -> Iterator[None]:
    """Decode the embedded model's greedy text calls made inside together, up to ``slots`` at once.

    Process-wide (the calls come from a run's worker threads); ``slots`` <= 1 changes nothing.
    """
    global _SLOTS
    with _SLOTS_LOCK:
        before, _SLOTS = _SLOTS, max(_SLOTS, slots)
    try:
        yield
    finally:
        with _SLOTS_LOCK:
            _SLOTS = before


def together_wanted() -> bool:
    """Whether a run with several workers decodes the embedded model's calls together.

    Off unless ``ROUTERLAB_DECODE_TOGETHER=on``: measured on the reference machine (2 cores), two
    examples decoded together ran at 0.76x the turns per hour of one at a time on the 0.5B model
    (docs/results/2026-12-06-decoded-together.md), so the workers' calls stay serialised.

    Raises:
        ConfigError: A value other than ``on`` or ``off``.
    """
    value = os.environ.get("ROUTERLAB_DECODE_TOGETHER", "off").strip().lower() or "off"
    if value not in ("on", "off"):
        raise ConfigError(
            f"unknown ROUTERLAB_DECODE_TOGETHER setting {value!r}",
            expected="on or off",
            found=repr(value),
            fix="set ROUTERLAB_DECODE_TOGETHER to on or off",
        )
    return value == "on"


def together_slots() -> int:
    """How many greedy calls may decode together now (1: each call decodes on its own)."""
    return _SLOTS


class CallEnded(RouterlabError):
    """A call ended before its reply: ``why`` is ``deadline`` or ``stop``.

    Never seen outside the engine: the calling thread turns it into its own error (the deadline
    exception of its budget, or the held stop), as a plain call's ``_bounded`` block does.
    """

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass
class _Call:
    """One greedy call: its prompt, its rules, its deadline and where it is."""

    prompt: list[int]
    rules: CompletionRules
    at: float
    record: Decoded
    seq: int = -1
    pending: list[int] = field(default_factory=list)  # tokens to evaluate next, the last one with logits
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class _Clock:
    """The abort callback of the shared context: the earliest deadline of the pass, or a held stop."""

    def __init__(self) -> None:
        self.at = float("inf")

    def __call__(self, _data: Any) -> bool:
        return time.monotonic() >= self.at or stop_requested()


def start_from(
    held: Sequence[Sequence[int]], used: Sequence[float], busy: set[int], prompt: Sequence[int]
) -> tuple[int, int, int]:
    """Where a call with ``prompt`` starts: ``(its sequence, the sequence it copies from, tokens kept)``.

    Its sequence is a free one (not in ``busy``): the one already holding the longest start of the
    prompt, else the least recently used (``used``: when each last ended a call), so the prefixes
    other calls may still need stay. The start is the longest one any sequence holds, busy ones
    included (their cells are only tagged with one more sequence). The prompt's last token is
    never kept: its logits choose the first token.

    Raises:
        ValueError: Every sequence is busy.
    """
    free = [s for s in range(len(held)) if s not in busy]
    if not free:
        raise ValueError("every sequence is running a call")
    want = prompt[:-1]
    seq = max(free, key=lambda s: (shared_prefix(held[s], want), -used[s]))
    src = max(range(len(held)), key=lambda s: (shared_prefix(held[s], want), s == seq))
    keep = shared_prefix(held[src], want)
    return seq, (src if keep > shared_prefix(held[seq], want) else seq), keep


class Together:
    """The shared context of one loaded model and the thread that decodes its calls.

    Args:
        llm: A loaded ``llama_cpp.Llama`` (its weights are shared; the context is a second one).
        slots: Calls decoded at once; the KV cache holds ``slots`` full context windows.
        lock: Held for each forward pass, so a pass never runs beside a call on the main context
            (two on 2 cores only slow each other down).
    """

    def __init__(self, llm: Any, slots: int, lock: AbstractContextManager[Any]) -> None:
        import llama_cpp
        from llama_cpp import _internals

        self.llm = llm
        self.slots = slots
        self._lock = lock
        n_seq = slots + HELD
        params = llama_cpp.llama_context_default_params()
        self.window = int(llm.context_params.n_ctx)  # what one call may use, as on the main context
        params.n_ctx = self.window * slots
        params.n_batch = llm.context_params.n_batch
        params.n_ubatch = llm.context_params.n_ubatch
        params.n_threads = llm.context_params.n_threads
        params.n_threads_batch = llm.context_params.n_threads_batch
        params.n_seq_max = n_seq
        params.kv_unified = True  # one cache: sequences share the cells of a common prefix
        self.ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
        self.n_batch = int(params.n_batch)
        self.batch = _internals.LlamaBatch(n_tokens=self.n_batch, embd=0, n_seq_max=n_seq, verbose=False)
        self._clock = _Clock()
        self._abort = llama_cpp.ggml_abort_callback(self._clock)  # kept: the callback must outlive the context
        llama_cpp.llama_set_abort_callback(self.ctx.ctx, self._abort, None)
        self.n_vocab = llm.n_vocab()
        self.held: list[list[int]] = [[] for _ in range(n_seq)]  # tokens in the cache, per sequence
        self._used = [0.0] * n_seq  # when each sequence last ended a call (the least recent is reused)
        self._cond = threading.Condition()
        self._queue: list[_Call] = []
        self._running: list[_Call] = []
        self._thread: threading.Thread | None = None
        #: the latest calls' prompts and records (top-2 margins included), newest last
        self.log: deque[tuple[list[int], Decoded]] = deque(maxlen=LOGGED)

    # ---- the callers' side -------------------------------------------------------------------

    def decode(self, prompt: list[int], *, max_tokens: int, stop: Sequence[str], at: float) -> Decoded:
        """The greedy completion of ``prompt``, decoded beside the other calls; blocks until it ends.

        Args:
            prompt: The prompt's tokens (chat template applied, generation prompt included).
            max_tokens: Completion budget (cut to what the context window leaves, as a plain call's).
            stop: Strings that end the completion (not included in its text).
            at: The call's deadline, a ``time.monotonic()`` value.

        Raises:
            ValueError: The prompt does not fit the context window.
            CallEnded: The deadline passed, or a stop signal arrived, before the reply ended.
            RuntimeError: llama.cpp refused a pass for another reason.
        """
        llm = self.llm
        if len(prompt) >= self.window:
            raise ValueError(f"Requested tokens ({len(prompt)}) exceed context window of {self.window}")
        if max_tokens <= 0 or max_tokens + len(prompt) >= self.window:
            max_tokens = self.window - len(prompt)
        eos = llm._model.token_get_text(llm.token_eos()) if llm.token_eos() != -1 else ""
        rules = CompletionRules(llm, prompt, max_tokens, [*stop, *([eos] if eos else [])])
        record = Decoded(
            text="", tokens=rules.tokens, finish="length", prompt_tokens=len(prompt), evaluated_prompt_tokens=0
        )
        call = _Call(prompt=list(prompt), rules=rules, at=at, record=record)
        with self._cond:
            self._queue.append(call)
            if self._thread is None:
                self._thread = threading.Thread(target=self._drive, name="routerlab-decode-together", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        call.done.wait()
        if call.error is not None:
            raise call.error
        record.text = rules.text.decode("utf-8", errors="ignore")
        record.finish = rules.finish or "length"
        self.log.append((call.prompt, record))
        return record

    # ---- the decoding thread -----------------------------------------------------------------

    def _drive(self) -> None:
        try:
            while self._next_pass():
                pass
        except BaseException as exc:  # every waiting caller gets it: none may wait forever
            with self._cond:
                for call in [*self._running, *self._queue]:
                    self._end(call, exc)
                self._thread = None

    def _next_pass(self) -> bool:
        """Admit the waiting calls, end the expired ones, run one pass; False when idle (the thread ends)."""
        with self._cond:
            if not self._queue and not self._running:
                self._cond.wait(_IDLE_S)
                if not self._queue and not self._running:
                    self._thread = None
                    return False
            for call in list(self._queue):
                if len(self._running) < self.slots and not self._worth_waiting(call):
                    self._queue.remove(call)
                    self._admit(call)
            running = list(self._running)
        now = time.monotonic()
        for call in running:
            if stop_requested():
                self._end(call, CallEnded("stop"))
            elif now >= call.at:
                self._end(call, CallEnded("deadline"))
        running = [c for c in running if not c.done.is_set()]
        if running:
            self._pass(running)
        return True

    def _admit(self, call: _Call) -> None:
        """Give ``call`` a free sequence, starting from the longest held start of its prompt."""
        import llama_cpp

        busy = {c.seq for c in self._running}
        seq, src, keep = start_from(self.held, self._used, busy, call.prompt)
        mem = self.ctx.memory
        if src != seq:
            llama_cpp.llama_memory_seq_rm(mem, seq, -1, -1)
            llama_cpp.llama_memory_seq_cp(mem, src, seq, 0, keep)
        else:
            llama_cpp.llama_memory_seq_rm(mem, seq, keep, -1)
        self.held[seq] = call.prompt[:keep]
        call.seq, call.pending = seq, call.prompt[keep:]
        call.record.evaluated_prompt_tokens = len(call.pending)
        self._running.append(call)

    def _worth_waiting(self, call: _Call) -> bool:
        """Whether ``call`` should wait for a starting call's prompt to be evaluated and start from it.

        Calls of one run arrive together, often on one schema: starting both at once would
        evaluate the shared prefix twice. A call waits (at most as long as the other's prompt
        takes) when it shares at least :data:`WAIT_FOR` more tokens with a prompt being
        evaluated than with anything the cache holds.
        """
        want = call.prompt[:-1]
        held = max(shared_prefix(h, want) for h in self.held)
        starting = [c for c in self._running if len(c.pending) > 1]
        return any(shared_prefix(c.prompt, want) >= held + WAIT_FOR for c in starting)

    def _end(self, call: _Call, error: BaseException | None = None) -> None:
        with self._cond:
            if call in self._running:
                self._running.remove(call)
                self._used[call.seq] = time.monotonic()
            if call in self._queue:
                self._queue.remove(call)
        call.error = error
        call.done.set()

    def _fill(self, running: list[_Call]) -> list[tuple[_Call, int, int]]:
        """Put the next tokens of ``running`` in the batch: (call, tokens taken, its logits row or -1)."""
        b = self.batch.batch
        # generating calls first (one token each), then prompt tokens in what room is left
        order = sorted(running, key=lambda c: len(c.pending))
        taken: list[tuple[_Call, int, int]] = []
        n = 0
        for call in order:
            k = min(len(call.pending), self.n_batch - n)
            if k <= 0:
                break
            pos0 = len(self.held[call.seq])
            for i in range(k):
                b.token[n + i] = call.pending[i]
                b.pos[n + i] = pos0 + i
                b.n_seq_id[n + i] = 1
                b.seq_id[n + i][0] = call.seq
                b.logits[n + i] = False
            last = k == len(call.pending)
            if last:
                b.logits[n + k - 1] = True
            taken.append((call, k, n + k - 1 if last else -1))
            n += k
        b.n_tokens = n
        return taken

    def _pass(self, running: list[_Call]) -> None:
        """One forward pass over ``running``; choose the next token of each call whose turn it was."""
        import llama_cpp

        taken = self._fill(running)
        self._clock.at = min(c.at for c, _, _ in taken)
        with self._lock:
            try:
                code = llama_cpp.llama_decode(self.ctx.ctx, self.batch.batch)
            finally:
                self._clock.at = float("inf")
        if code != 0:
            # drop whatever part of the pass reached the cache; the calls still running redo it
            for call, _, _ in taken:
                llama_cpp.llama_memory_seq_rm(self.ctx.memory, call.seq, len(self.held[call.seq]), -1)
            if code == 2:
                return  # aborted: the next pass ends the expired calls (or all, at a stop)
            if code == 1 and self._evict():
                return  # the cache was full: a held sequence made room
            raise RuntimeError(f"llama_decode returned {code}")
        for call, k, row in taken:
            self.held[call.seq] += call.pending[:k]
            call.pending = call.pending[k:]
            if row < 0:
                continue
            logits = np.ctypeslib.as_array(self.ctx.get_logits_ith(row), shape=(self.n_vocab,))
            token = int(np.argmax(logits))
            call.record.margins.append(top2_margin(logits))
            call.record.passes += 1
            if call.rules.push(token):
                self._end(call)
            else:
                call.pending = [token]

    def _evict(self) -> bool:
        """Free the cells of the least recently used sequence no call is using; False when none holds any."""
        import llama_cpp

        busy = {c.seq for c in self._running}
        idle = [s for s in range(len(self.held)) if s not in busy and self.held[s]]
        if not idle:
            return False
        seq = min(idle, key=self._used.__getitem__)
        llama_cpp.llama_memory_seq_rm(self.ctx.memory, seq, -1, -1)
        self.held[seq] = []
        return True


_BUILD_LOCK = threading.Lock()


def together(llm: Any, slots: int, lock: AbstractContextManager[Any]) -> Together:
    """The shared context of ``llm`` for ``slots`` calls at once (made on first use, remade for more slots)."""
    with _BUILD_LOCK:
        current: Together | None = getattr(llm, "_routerlab_together", None)
        if current is None or current.slots < slots:
            # a smaller one is replaced only while no call uses it
            if current is not None and (current._running or current._queue):
                return current
            current = llm._routerlab_together = Together(llm, slots, lock)
        return current
