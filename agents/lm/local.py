"""The embedded model as a DSPy 3.4 engine: llama-cpp-python, tool calls by constrained decoding.

llama-cpp-python returns a model's tool call as JSON text in ``content``. Here a request with
tools is decoded under a JSON-schema grammar: an ``anyOf`` over
``{"name": {"const": tool}, "arguments": <tool parameters>}`` (plus an ``answer`` alternative
when ``tool_choice`` is ``auto``), so the output is a valid call by construction; it becomes an
lm15 ``ToolCallPart`` with a deterministic id. Output that still fails to parse is reported as an
invalid tool call with the raw text (``provider_data[INVALID_MARKER]``), never dropped.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dspy import lm15 as L

from routerlab.agents.errors import LMError
from routerlab.agents.lm.batched import Candidates, decode_candidates
from routerlab.agents.lm.deadline import call_budget
from routerlab.agents.lm.messages import INVALID_MARKER, request_to_chat
from routerlab.agents.lm.onepass import Continuation, PrefixStore, continue_reply, render, score_labels, tokenize
from routerlab.agents.lm.scoring import ChoiceScores
from routerlab.agents.lm.speculative import OFF, Decoded, Drafter, drafter, speculative_greedy
from routerlab.agents.lm.together import CallEnded, together, together_slots
from routerlab.agents.signals import native_call, raise_held_stop, stop_requested

__all__ = [
    "ANSWER_TOOL",
    "LlamaEngine",
    "clear_models",
    "loaded_models",
    "tool_call_schema",
    "tools_prompt",
]

ANSWER_TOOL = "answer"
"""Pseudo-tool name under which the model answers in text when ``tool_choice`` is ``auto``."""

# llama.cpp's OpenMP threads wait for each other between the ops of every layer. Sleeping at once
# (OMP_WAIT_POLICY=PASSIVE) costs a wake-up each time: a 27-token routing decision took 0.61 s
# instead of 0.55 s (built-in dev split, 2 cores). Spinning without bound starves a second model
# process on the same cores (measured earlier: 82 s vs 14 s for 20 tokens). A short spin keeps
# the first gain and costs 3 % under that contention (1.04-1.08 s vs 1.01-1.04 s per decision).
# Set before llama.cpp starts OpenMP; a user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "1000"

_MODELS: dict[tuple[str, int, int], Any] = {}
_LOAD_LOCK = threading.Lock()
# one process-wide lock: a Llama object is not thread-safe, and two models would only fight
# over the same two cores
_CALL_LOCK = threading.Lock()


def loaded_models() -> list[str]:
    """Paths of the models loaded in this process."""
    return [key[0] for key in _MODELS]


def clear_models() -> None:
    """Unload every model (tests use this to measure a cold load)."""
    with _LOAD_LOCK:
        for llm in _MODELS.values():
            llm.close()
        _MODELS.clear()


# Close models while the interpreter is still whole: a Llama left to the final garbage collection
# runs its destructor after llama_cpp's module globals are gone and prints a TypeError per model.
atexit.register(clear_models)


# engine call counts are bumped outside the call lock by calls decoded together
_COUNT_LOCK = threading.Lock()


def _prompt_tokens(llm: Any, messages: Sequence[dict[str, Any]]) -> list[int]:
    """The prompt as llama-cpp-python's chat handler builds it.

    The GGUF's template, special tokens parsed, no BOS added (the template writes its own).
    """
    text = render(llm, messages, generation_prompt=True)
    return [int(t) for t in llm.tokenize(text.encode(), add_bos=False, special=True)]


@contextmanager
def _fits(llm: Any) -> Iterator[None]:
    """A prompt longer than the context window, said as an :class:`LMError` with what to do."""
    try:
        yield
    except ValueError as exc:
        raise LMError(
            "the prompt does not fit the local model's context window",
            expected=f"at most {llm.n_ctx() - 1} prompt tokens",
            found=str(exc)[:200],
            fix="shorten the prompt (a smaller schema view) or raise n_ctx",
        ) from None


@contextmanager
def _serialised() -> Iterator[None]:
    with _CALL_LOCK:
        yield


class _AbortClock:
    """When llama.cpp must abort the call in progress (a ``time.monotonic()`` value, None: never).

    llama.cpp asks its abort callback between the operations of every forward pass, so a call
    stops within one operation of its deadline, during the prompt as well as between generated
    tokens (a per-token stopping criterion would miss a long prompt, and llama-cpp-python's chat
    API takes none). The callback is one comparison, a few microseconds against the tens of
    milliseconds a token costs here.
    """

    def __init__(self) -> None:
        self.at: float | None = None

    def __call__(self, _data: Any) -> bool:
        at = self.at
        # a stop signal held during the call ends it too (see _bounded)
        return (at is not None and time.monotonic() >= at) or stop_requested()


def _install_abort(llm: Any) -> None:
    import llama_cpp

    clock = _AbortClock()
    callback = llama_cpp.ggml_abort_callback(clock)
    llama_cpp.llama_set_abort_callback(llm._ctx.ctx, callback, None)
    # the ctypes callback must outlive every call: keep it with the model
    llm._routerlab_abort = (clock, callback)


@contextmanager
def _bounded(llm: Any, where: str) -> Iterator[None]:
    """Run one call of ``llm`` under its deadline (see :mod:`routerlab.agents.lm.deadline`).

    The budget starts before the process-wide call lock, so time spent waiting for another
    call counts too. An aborted forward pass surfaces as llama-cpp-python's ``RuntimeError``
    (``llama_decode returned 2``); past the deadline it becomes ``CallDeadlineExceeded``, and
    the live context is reset (its last batch was left half evaluated).

    Raises:
        CallDeadlineExceeded: The deadline passed before or during the call.
    """
    budget = call_budget(where)
    # a model loaded elsewhere (a test's stand-in) has no abort hook: only the start is checked
    clock: _AbortClock = getattr(llm, "_routerlab_abort", (_AbortClock(),))[0]
    # a stop signal is held for the call (native_call), not raised inside it: the abort callback is
    # Python called from C, where ctypes prints a KeyboardInterrupt and swallows it; the call
    # went on and the turn ended as a tool crash. Held, it makes the callback abort the forward
    # pass, and the stop is raised here once llama.cpp has returned.
    with _serialised(), native_call():
        clock.at = budget.started + budget.seconds
        try:
            yield
        except RuntimeError:
            if stop_requested():
                llm.reset()  # the aborted batch was left half evaluated
                raise_held_stop()
            if budget.expired():
                llm.reset()
                raise budget.exceeded(where) from None
            raise
        finally:
            clock.at = None


def _prefix_cache(max_states: int) -> Any:
    """A KV-state cache keyed by token prefix, bounded by the number of states it keeps.

    llama.cpp reuses only the prefix shared with the *previous* prompt. A pipeline alternates
    between prompts (router -> generate_sql -> router ...), so every switch paid the full prefill
    again; restoring the saved state of the longest matching earlier prompt avoids that (measured
    here, 1.5B model: 20-29 s -> about 1 s for a 900-token prompt seen before). The cache is bounded
    by count, not by ``LlamaRAMCache``'s byte budget, because each saved state also copies the
    model's logits buffer (``n_batch x n_vocab`` floats, about 310 MB for Qwen2.5) which that
    budget does not count.
    """
    from llama_cpp import LlamaRAMCache

    class _CountBoundedCache(LlamaRAMCache):
        def __setitem__(self, key: Any, value: Any) -> None:
            super().__setitem__(key, value)
            while len(self.cache_state) > max_states:
                self.cache_state.popitem(last=False)

    return _CountBoundedCache(capacity_bytes=1 << 40)


def _load(path: str, n_ctx: int, n_threads: int, seed: int, prefix_states: int) -> tuple[Any, float]:
    key = (path, n_ctx, prefix_states)
    # the load logs through llama-cpp-python's log callback (Python called from C, some 1,700 times
    # for the 0.5B model): a Ctrl-C raised there is swallowed by ctypes and printed. It is held for
    # the load, as for a decode, and raised once the model is loaded and kept (found by the
    # real-model Ctrl-C test on CI, where the first model call of a run was the one stopped)
    with _LOAD_LOCK, native_call():
        if key in _MODELS:
            return _MODELS[key], 0.0
        from llama_cpp import Llama

        t0 = time.perf_counter()
        try:
            # use_mmap=False: the weights live in anonymous memory. Memory-mapped weights sit in the
            # page cache, which this VM's reclaimer (DAMON) evicts, and every evicted page is read
            # back from disk on the next token (measured: 25 s vs under 1 s for 10 tokens).
            llm = Llama(
                model_path=path,
                n_ctx=n_ctx,
                n_threads=n_threads,
                seed=seed,
                verbose=False,
                use_mmap=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise LMError(
                f"llama.cpp could not load {path}",
                expected="a GGUF model file llama.cpp can read",
                found=str(exc)[:200],
                fix="check the file (local:/path.gguf) or rerun scripts/setup.sh for the embedded models",
            ) from None
        _install_abort(llm)
        if prefix_states > 0:
            llm.set_cache(_prefix_cache(prefix_states))
        # one-pass scoring keeps its own light prefix states (KV only, no logits buffer)
        # the prefix store rides on the cached model object, which llama-cpp-python's class does not declare
        llm._routerlab_prefixes = PrefixStore(prefix_states)  # type: ignore[attr-defined]
        _MODELS[key] = llm
        return llm, time.perf_counter() - t0


def tool_call_schema(tools: tuple[L.FunctionTool, ...], *, allow_answer: bool) -> dict[str, Any]:
    """The JSON schema every valid output satisfies: one call of one of ``tools``."""
    options = [
        {
            "type": "object",
            "properties": {
                "name": {"const": t.name},
                "arguments": t.parameters or {"type": "object", "properties": {}},
            },
            "required": ["name", "arguments"],
        }
        for t in tools
    ]
    if allow_answer:
        options.append(
            {
                "type": "object",
                "properties": {
                    "name": {"const": ANSWER_TOOL},
                    "arguments": {
                        "type": "object",
                        "properties": {"text": {"type": "string"}},
                        "required": ["text"],
                    },
                },
                "required": ["name", "arguments"],
            }
        )
    return {"anyOf": options} if len(options) > 1 else options[0]


def tools_prompt(tools: tuple[L.FunctionTool, ...], allow_answer: bool) -> str:
    """The tools block added to the system prompt of a tool request (also the prefix of one-pass tool choice)."""
    lines = [
        "# Tools",
        "Call exactly one of these functions. Reply with one JSON object "
        '{"name": <function name>, "arguments": {...}} and nothing else.',
    ]
    for t in tools:
        lines.append(
            json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters}, ensure_ascii=False)
        )
    if allow_answer:
        lines.append(
            json.dumps(
                {
                    "name": ANSWER_TOOL,
                    "description": "Answer the user directly in text.",
                    "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
                }
            )
        )
    return "\n".join(lines)


def _response(
    rid: str | None,
    model: str,
    usage: L.Usage,
    part: L.TextPart | L.ToolCallPart,
    *,
    finish: str = "stop",
    invalid: list[dict[str, Any]] | None = None,
) -> L.Response:
    """The engine's one assistant reply holding ``part``.

    Args:
        rid: The completion's id.
        model: ``local/<file name>``.
        usage: The completion's token counts.
        part: The reply's text, or its one tool call.
        finish: Why generation stopped (``stop``, ``length``, ``tool_call``).
        invalid: Tool calls that could not be used; the adapter reads them from the provider data.
    """
    return L.Response(
        id=rid,
        model=model,
        message=L.Message(role="assistant", parts=(part,)),
        finish_reason=finish,
        usage=usage,
        provider_data={INVALID_MARKER: invalid} if invalid else None,
    )


class LlamaEngine:
    """A DSPy engine (``complete(Request) -> Response``) around a local GGUF model.

    Args:
        model_path: The GGUF file.
        n_ctx: Context window.
        n_threads: CPU threads (2 on the reference machine).
        seed: Sampling seed (temperature 0 is greedy anyway).
        max_tokens: Default completion budget.
        prefix_states: KV states of earlier prompts kept in RAM for prefix reuse (0 turns it off;
            each costs about 350 MB with the embedded models).
        speculative: The drafter (registry :data:`~routerlab.agents.lm.speculative.drafter`) whose
            drafts greedy text replies are verified against, or ``off`` for llama-cpp-python's own
            token-by-token decoding (see :mod:`routerlab.agents.lm.speculative`). Tool calls,
            response formats and sampled replies always decode plainly.
    """

    def __init__(
        self,
        model_path: str,
        *,
        n_ctx: int = 4096,
        n_threads: int = 2,
        seed: int = 0,
        max_tokens: int = 512,
        prefix_states: int = 6,
        speculative: str = "off",
    ) -> None:
        self.model_path = str(model_path)
        # an unknown drafter is said now, not at the first greedy call
        self._drafter = None if speculative == OFF else drafter.build(speculative)
        self.speculative = speculative
        #: the last speculative call's record (tokens, drafts kept, top-2 margins); None before one
        self.last_decoded: Decoded | None = None
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.seed = seed
        self.max_tokens = max_tokens
        self.prefix_states = prefix_states
        self.load_seconds = 0.0
        self.calls = 0  # engine calls actually made (cache hits never reach the engine)
        self.scored_tokens = 0  # tokens one-pass scoring evaluated (prefix reuse leaves most out)

    def dump_state(self) -> dict[str, Any]:
        """What DSPy saves to rebuild the engine."""
        return {
            "model_path": self.model_path,
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "prefix_states": self.prefix_states,
            "speculative": self.speculative,
        }

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> LlamaEngine:
        """Inverse of :meth:`dump_state`."""
        return cls(**state)

    def llama(self) -> Any:
        """The loaded Llama object (loaded on first use, once per process)."""
        llm, seconds = _load(self.model_path, self.n_ctx, self.n_threads, self.seed, self.prefix_states)
        if seconds:
            self.load_seconds = seconds
        return llm

    def forget_prefixes(self) -> None:
        """Drop every reusable prefix held in memory (the live KV cache and the saved states).

        The next call is cold unless the disk store of evaluated prefixes has its prefix
        (``ROUTERLAB_PREFIX_CACHE=off`` turns that store off; see ``agents/lm/prefix_disk.py``).
        """
        llm = self.llama()
        with _serialised():
            llm.reset()
            if llm.cache is not None:
                llm.cache.cache_state.clear()
            llm._routerlab_prefixes.clear()

    def score_choices(
        self,
        prefix: Sequence[dict[str, Any]],
        messages: Sequence[dict[str, Any]],
        choices: Sequence[str],
        *,
        reply_prefix: str = "",
    ) -> ChoiceScores:
        """Score ``choices`` as the reply to ``prefix + messages`` in one forward pass.

        The KV state of ``prefix`` (rendered with the model's chat template) is evaluated once and
        reused; only the tokens after it are evaluated. See :mod:`routerlab.agents.lm.onepass`.

        Args:
            prefix: Chat messages that never change between requests (instructions, demos).
            messages: The request's own messages.
            choices: Labels; none may be a token prefix of another.
            reply_prefix: Text the reply is forced to start with before the label.

        Raises:
            LMError: The model cannot render or score the prompt.
        """
        llm = self.llama()
        with _bounded(llm, "embedded model (label scoring)"):
            self.calls += 1
            try:
                scores = score_labels(llm, llm._routerlab_prefixes, prefix, messages, choices, reply_prefix)
            except (ValueError, RuntimeError) as exc:
                if getattr(llm, "_routerlab_abort", (_AbortClock(),))[0](None):
                    raise  # the deadline aborted it: _bounded says so
                raise LMError(
                    "one-pass label scoring failed",
                    expected="a chat model with a chat template and labels that are not prefixes of each other",
                    found=str(exc)[:200],
                    fix="use labels with distinct first tokens, or a router's generation path",
                ) from None
            self.scored_tokens += scores.evaluated_tokens
            return scores

    def continue_reply(
        self,
        prefix: Sequence[dict[str, Any]],
        messages: Sequence[dict[str, Any]],
        reply_prefix: str,
        *,
        stop: str,
        max_tokens: int = 64,
    ) -> Continuation:
        """Greedy text after a forced ``reply_prefix`` until ``stop``, reusing the prefix state.

        What one-pass scoring cannot decide (a free-text argument, say) is generated here without
        paying again for the prompt the scoring just evaluated.
        """
        llm = self.llama()
        with _bounded(llm, "embedded model (continuation)"):
            self.calls += 1
            out = continue_reply(
                llm, llm._routerlab_prefixes, prefix, messages, reply_prefix, stop=stop, max_tokens=max_tokens
            )
            self.scored_tokens += out.evaluated_tokens + out.completion_tokens
            return out

    def sample_candidates(
        self,
        messages: Sequence[dict[str, Any]],
        n: int,
        *,
        temperature: float = 0.7,
        max_tokens: int | None = None,
        seed: int | None = None,
        stop: Sequence[str] = (),
    ) -> Candidates:
        """``n`` replies to the chat ``messages`` decoded together: the greedy one first, then samples.

        One prefill serves every sequence, and each forward pass decodes one token of each (see
        :mod:`routerlab.agents.lm.batched`). The call is bounded by the same deadline as any other.

        Raises:
            CallDeadlineExceeded: The deadline passed before or during the call.
            LMError: The prompt cannot be rendered, or ``n`` or the budget do not fit.
        """
        llm = self.llama()
        with _bounded(llm, "embedded model (candidates)"):
            self.calls += 1
            try:
                prompt = tokenize(llm, render(llm, messages, generation_prompt=True))
                return decode_candidates(
                    llm,
                    prompt,
                    n,
                    max_tokens=max_tokens or self.max_tokens,
                    temperature=temperature,
                    seed=self.seed if seed is None else seed,
                    stop=tuple(stop),
                )
            except ValueError as exc:
                raise LMError(
                    "batched candidate decoding refused the request",
                    expected="1-8 sequences and a prompt plus budget within the context window",
                    found=str(exc)[:200],
                    fix="lower n or max_tokens, or shorten the prompt",
                ) from None

    def complete(self, request: L.Request) -> L.Response:
        """Run one request; tool requests are decoded under the tool-call grammar."""
        cfg = request.config
        messages = request_to_chat(request)
        kwargs: dict[str, Any] = {
            "temperature": 0.0 if cfg.temperature is None else cfg.temperature,
            "max_tokens": cfg.max_tokens or self.max_tokens,
            # a request's own seed (a sampled candidate) wins over the engine's
            "seed": self.seed if cfg.seed is None else cfg.seed,
        }
        if cfg.stop:
            kwargs["stop"] = list(cfg.stop)
        tools = request.tools
        choice = cfg.tool_choice
        use_tools = bool(tools) and (choice is None or choice.mode != "none")
        if use_tools:
            if choice is not None and choice.allowed:
                tools = tuple(t for t in tools if t.name in choice.allowed)
            allow_answer = choice is None or choice.mode == "auto"
            prompt = tools_prompt(tools, allow_answer)
            if messages and messages[0]["role"] == "system":
                messages[0] = {"role": "system", "content": messages[0]["content"] + "\n\n" + prompt}
            else:
                messages.insert(0, {"role": "system", "content": prompt})
            kwargs["response_format"] = {
                "type": "json_object",
                "schema": tool_call_schema(tools, allow_answer=allow_answer),
            }
        elif cfg.response_format:
            kwargs["response_format"] = dict(cfg.response_format)
        llm = self.llama()
        model = f"local/{Path(self.model_path).name}"
        greedy_text = kwargs["temperature"] == 0 and "response_format" not in kwargs
        if greedy_text and (slots := together_slots()) > 1:
            return self._together(llm, messages, kwargs, model, slots)
        if greedy_text and (drafts := self._drafter) is not None:
            return self._speculative(llm, messages, kwargs, model, drafts)
        with _bounded(llm, "embedded model call"):
            self.calls += 1
            out = llm.create_chat_completion(messages=messages, **kwargs)
        text = out["choices"][0]["message"].get("content") or ""
        usage = L.Usage(
            input_tokens=out["usage"]["prompt_tokens"],
            output_tokens=out["usage"]["completion_tokens"],
            total_tokens=out["usage"]["total_tokens"],
        )
        if not use_tools:
            finish = "length" if out["choices"][0].get("finish_reason") == "length" else "stop"
            return _response(out.get("id"), model, usage, L.TextPart(text=text), finish=finish)
        return self._tool_response(text, tools, request, model, usage, out.get("id"))

    def _together(
        self, llm: Any, messages: list[dict[str, Any]], kwargs: dict[str, Any], model: str, slots: int
    ) -> L.Response:
        """A greedy text reply decoded beside the other threads' (:mod:`routerlab.agents.lm.together`).

        The call is not serialised: it waits for its reply while the shared context's thread runs
        every running call's next token in one pass. Its deadline binds it as it binds a plain call.
        """
        where = "embedded model call"
        prompt = _prompt_tokens(llm, messages)
        budget = call_budget(where)
        with _COUNT_LOCK:
            self.calls += 1
        try:
            with _fits(llm):
                out = together(llm, slots, _CALL_LOCK).decode(
                    prompt,
                    max_tokens=kwargs["max_tokens"],
                    stop=kwargs.get("stop", ()),
                    at=budget.started + budget.seconds,
                )
        except CallEnded as ended:
            if ended.why == "stop":
                raise_held_stop()
            raise budget.exceeded(where) from None
        return self._text_response(prompt, out, model)

    def _speculative(
        self, llm: Any, messages: list[dict[str, Any]], kwargs: dict[str, Any], model: str, drafts: Drafter
    ) -> L.Response:
        """A greedy text reply decoded speculatively: the same prompt, rules and bounds as a plain call."""
        prompt = _prompt_tokens(llm, messages)
        with _bounded(llm, "embedded model call"), _fits(llm):
            self.calls += 1
            out = speculative_greedy(llm, prompt, drafts, max_tokens=kwargs["max_tokens"], stop=kwargs.get("stop", ()))
        self.last_decoded = out
        return self._text_response(prompt, out, model)

    def _text_response(self, prompt: list[int], out: Decoded, model: str) -> L.Response:
        """The reply of a greedy text call decoded in the project's own loop."""
        n_out = len(out.tokens)
        usage = L.Usage(input_tokens=len(prompt), output_tokens=n_out, total_tokens=len(prompt) + n_out)
        rid = "cmpl-" + hashlib.sha256(repr((prompt, out.tokens)).encode()).hexdigest()[:24]
        return _response(rid, model, usage, L.TextPart(text=out.text), finish=out.finish)

    def _tool_response(
        self,
        text: str,
        tools: tuple[L.FunctionTool, ...],
        request: L.Request,
        model: str,
        usage: L.Usage,
        rid: str | None,
    ) -> L.Response:
        call_id = (
            "call_" + hashlib.sha256((repr(request.messages) + repr(request.system) + text).encode()).hexdigest()[:12]
        )
        names = {t.name for t in tools}
        try:
            obj = json.loads(text)
            name, args = obj["name"], obj["arguments"]
            if not isinstance(args, dict):
                raise TypeError("arguments is not an object")
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            invalid = [{"id": call_id, "name": None, "args": text, "error": f"unparsable tool call: {exc}"}]
            return _response(rid, model, usage, L.TextPart(text=text), invalid=invalid)
        if name == ANSWER_TOOL:
            return _response(rid, model, usage, L.TextPart(text=str(args.get("text", ""))))
        if name not in names:
            invalid = [{"id": call_id, "name": name, "args": json.dumps(args), "error": f"unknown tool {name!r}"}]
            return _response(rid, model, usage, L.TextPart(text=text), invalid=invalid)
        return _response(rid, model, usage, L.ToolCallPart(id=call_id, name=name, input=args), finish="tool_call")
