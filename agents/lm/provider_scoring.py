"""One-pass label scoring through a provider that returns token log probabilities.

OpenAI-compatible servers (OpenAI, vLLM, llama.cpp's server, recent Ollama) can return the top
log probabilities of each generated token. Asking for a single token at temperature 0 with
``top_logprobs`` gives the next-reply distribution the embedded engine reads from its logits, so a
router whose decision is one of a few labels pays for one forward pass on the provider too.

What differs from the embedded path, and why:

- The provider's tokenizer is unknown here, so a returned token counts for the one label its text
  starts (``"clar"`` → ``clarify``). A token that starts several labels (``"c"`` for ``chat`` and
  ``clarify``) cannot be split between them and is left out; the labels' coverage says how much
  probability was read.
- A label that is not among the top tokens gets a log probability just below the smallest one
  returned: the provider says only that it is lower.
- A provider cannot be made to start its reply with forced text, so a ``reply_prefix`` is not
  offered; a provider that returns no log probabilities is remembered as such. In both cases the
  scorer returns ``None`` and the router falls back to generation (its ``method`` says which path
  decided).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from routerlab.agents.lm.deadline import CallDeadlineExceeded, call_budget, run_within
from routerlab.agents.lm.scoring import ChoiceScores, normalise

__all__ = ["TOP_LOGPROBS", "LogprobScorer", "label_logprobs"]

#: how many alternatives to ask for (the most OpenAI's API returns)
TOP_LOGPROBS = 20
#: how far below the smallest returned log probability an absent label is put
_BELOW = 1.0


def label_logprobs(top: Mapping[str, float], choices: Sequence[str]) -> tuple[dict[str, float], float] | None:
    """Each label's log probability from a first token's top alternatives, and the mass read.

    Args:
        top: Token text → log probability, as the provider returned them.
        choices: The labels.

    Returns:
        Label → log probability and the probability mass the labels were read from, or ``None``
        when no returned token starts exactly one label.
    """
    mass: dict[str, float] = {}
    for token, logprob in top.items():
        text = token.strip().lower()
        owners = [c for c in choices if text and c.lower().startswith(text)]
        if len(owners) == 1:  # a token shared by several labels cannot be split between them
            mass[owners[0]] = mass.get(owners[0], 0.0) + math.exp(logprob)
    if not mass:
        return None
    floor = min(top.values()) - _BELOW
    return {c: math.log(mass[c]) if c in mass else floor for c in choices}, sum(mass.values())


class LogprobScorer:
    """Scores labels through a LiteLLM provider's ``logprobs``; ``None`` when it cannot.

    Args:
        model: The LiteLLM model string (``openai/NAME``).
        params: Keyword arguments of every request (``api_base``, ``api_key``).
    """

    def __init__(self, model: str, params: Mapping[str, Any] | None = None) -> None:
        # imported with the scorer, while the session is set up: a cold import of litellm takes
        # seconds (2.6 s at load 5, 60 s at load 12 with a cold disk) that no deadline can cut,
        # and it ran inside the first scoring call, whose run deadline then passed before any
        # request was made (issue 62: "label scoring stopped after 0.0 s" on a 6.6 s call)
        import litellm  # noqa: F401

        self.model = model
        self.params = dict(params or {})
        #: False once the provider answered without log probabilities (not asked again)
        self.supported: bool | None = None

    def score_choices(
        self,
        prefix: Sequence[dict[str, Any]],
        messages: Sequence[dict[str, Any]],
        choices: Sequence[str],
        *,
        reply_prefix: str = "",
    ) -> ChoiceScores | None:
        """Score ``choices`` as the reply to ``prefix + messages`` from one one-token completion.

        Returns ``None`` when the path is not available (a ``reply_prefix``, a provider without
        log probabilities, or no returned token that starts exactly one label).
        """
        if reply_prefix or self.supported is False:
            return None
        import litellm

        where = f"{self.model} label scoring"
        budget = call_budget(where)
        t0 = time.perf_counter()

        def _complete() -> Any:
            return litellm.completion(
                model=self.model,
                messages=[*prefix, *messages],
                max_tokens=1,
                temperature=0.0,
                logprobs=True,
                top_logprobs=TOP_LOGPROBS,
                # one request per call: the OpenAI client's own retries (2 by default) and
                # litellm's would each get a fresh timeout, and a hung call took three budgets
                timeout=budget.seconds,
                max_retries=0,
                num_retries=0,
                **self.params,
            )

        try:
            # the whole call, whatever the client does inside, ends within the budget
            response = run_within(budget, _complete, where)
        except CallDeadlineExceeded:
            raise
        except Exception:
            if budget.expired():
                raise budget.exceeded(where) from None
            raise
        seconds = time.perf_counter() - t0
        top = _first_token_top(response)
        self.supported = top is not None
        read = label_logprobs(top, choices) if top else None
        if read is None:
            return None
        logprobs, coverage = read
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0) or 0
        return ChoiceScores(
            probs=normalise(logprobs),
            coverage=min(1.0, coverage),
            prompt_tokens=prompt_tokens,
            prefix_tokens=int(cached),
            evaluated_tokens=prompt_tokens - int(cached),
            prefix_source="provider",
            seconds=seconds,
        )


def _first_token_top(response: Any) -> dict[str, float] | None:
    """Token → log probability of the first generated token's alternatives (None if absent)."""
    try:
        content = (
            response.choices[0].logprobs["content"]
            if isinstance(response.choices[0].logprobs, dict)
            else response.choices[0].logprobs.content
        )
    except (AttributeError, IndexError, KeyError, TypeError):
        return None
    if not content:
        return None
    first = content[0]
    alternatives = first["top_logprobs"] if isinstance(first, dict) else getattr(first, "top_logprobs", None)
    if not alternatives:
        return None
    out: dict[str, float] = {}
    for alt in alternatives:
        token = alt["token"] if isinstance(alt, dict) else alt.token
        logprob = alt["logprob"] if isinstance(alt, dict) else alt.logprob
        # the same text can come back twice (different token ids): their probabilities add up
        out[token] = math.log(math.exp(out[token]) + math.exp(logprob)) if token in out else float(logprob)
    return out
