"""One-pass choice scoring: the probability of each of a few labels as the LM's next reply.

A router whose decision is one of a few labels (an intent, a tool name) does not need the LM to
generate text: the labels' first distinct tokens are read from the next-token distribution after
the prompt, in one forward pass over the request's own tokens. The renormalised probability of
the chosen label is the router's confidence.

An LM offers this path when its engine implements :class:`ChoiceScorer` (the embedded engine
does) or, for a LiteLLM provider, through the provider's token log probabilities
(:mod:`routerlab.agents.lm.provider_scoring`); :func:`score_choices` returns ``None`` otherwise,
and the caller falls back to generation and says so in its ``method``. Forcing the reply's first
characters and continuing it (:class:`ReplyContinuer`) needs the embedded engine.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from routerlab.agents.lm.usage import record_usage
from routerlab.agents.trace import Usage

__all__ = [
    "ChoiceScorer",
    "ChoiceScores",
    "ReplyContinuer",
    "choice_scorer",
    "continue_reply",
    "reply_continuer",
    "score_choices",
]


@dataclass(frozen=True)
class ChoiceScores:
    """The LM's next-reply distribution over a set of labels.

    Attributes:
        probs: Label -> probability, renormalised over the labels (sums to 1).
        coverage: Probability mass the labels' first tokens got out of the whole vocabulary
            (low coverage: the model wanted to say something else).
        prompt_tokens: Tokens of the whole prompt (stable prefix + request).
        prefix_tokens: Tokens of the stable prefix.
        evaluated_tokens: Tokens this call actually ran through the model.
        prefix_source: ``live`` (already in the KV cache), ``saved`` (restored from a state
            saved in memory), ``disk`` (restored from the disk store of evaluated prefixes) or
            ``computed`` (evaluated now and saved).
        seconds: Wall time of the call.
    """

    probs: dict[str, float]
    coverage: float
    prompt_tokens: int
    prefix_tokens: int
    evaluated_tokens: int
    prefix_source: str
    seconds: float

    @property
    def best(self) -> str:
        """The most probable label (ties: the first label given)."""
        return max(self.probs, key=lambda k: self.probs[k])

    @property
    def confidence(self) -> float:
        """Probability of :attr:`best`."""
        return self.probs[self.best]


@runtime_checkable
class ChoiceScorer(Protocol):
    """An engine that scores labels as the next reply in one pass."""

    def score_choices(
        self,
        prefix: Sequence[dict[str, Any]],
        messages: Sequence[dict[str, Any]],
        choices: Sequence[str],
        *,
        reply_prefix: str = "",
    ) -> ChoiceScores | None:
        """Score ``choices`` as the assistant's reply to ``prefix + messages``.

        ``prefix`` must not change between requests (its KV state is reused); ``reply_prefix``
        is text the reply is forced to start with before the label. ``None``: this call cannot be
        scored (the caller generates instead).
        """
        ...


@runtime_checkable
class ReplyContinuer(Protocol):
    """An engine that forces a reply's first characters and continues it, reusing the prefix."""

    def continue_reply(
        self,
        prefix: Sequence[dict[str, Any]],
        messages: Sequence[dict[str, Any]],
        reply_prefix: str,
        *,
        stop: str,
        max_tokens: int = 64,
    ) -> Any:
        """Greedy text after ``reply_prefix`` until ``stop``, reusing the prefix state.

        Returns an object with ``text``, ``prompt_tokens`` and ``completion_tokens``.
        """
        ...


def choice_scorer(lm: Any) -> ChoiceScorer | None:
    """The one-pass scorer behind a DSPy LM (its engine's, else its provider's), or None."""
    engine = getattr(lm, "engine", None)
    if isinstance(engine, ChoiceScorer):
        return engine
    provider = getattr(lm, "routerlab_scorer", None)
    return provider if isinstance(provider, ChoiceScorer) else None


def reply_continuer(lm: Any) -> ReplyContinuer | None:
    """The engine behind a DSPy LM that can score after a forced reply prefix and continue it."""
    engine = getattr(lm, "engine", None)
    return engine if isinstance(engine, ReplyContinuer) and isinstance(engine, ChoiceScorer) else None


def normalise(logprobs: dict[str, float]) -> dict[str, float]:
    """Softmax of per-label log probabilities (numerically stable)."""
    top = max(logprobs.values())
    exps = {k: math.exp(v - top) for k, v in logprobs.items()}
    total = sum(exps.values())
    return {k: v / total for k, v in exps.items()}


def score_choices(
    lm: Any,
    prefix: Sequence[dict[str, Any]],
    messages: Sequence[dict[str, Any]],
    choices: Sequence[str],
    *,
    reply_prefix: str = "",
) -> ChoiceScores | None:
    """Score ``choices`` on ``lm`` in one pass and record the call's usage; None when it cannot.

    The call never goes through DSPy's response cache: it is always computed, so its recorded
    latency is its cold cost given the reused prefix. ``prompt_tokens`` records the whole prompt;
    the tokens actually evaluated are in the returned :class:`ChoiceScores`.
    """
    scorer = choice_scorer(lm)
    if scorer is None:
        return None
    t0 = time.perf_counter()
    scores = scorer.score_choices(prefix, messages, choices, reply_prefix=reply_prefix)
    if scores is None:
        return None
    # never cached, so what it cost now is its cold cost too
    record_usage(Usage.computed(scores.prompt_tokens, 0, time.perf_counter() - t0))
    return scores


def continue_reply(
    lm: Any,
    prefix: Sequence[dict[str, Any]],
    messages: Sequence[dict[str, Any]],
    reply_prefix: str,
    *,
    stop: str,
    max_tokens: int = 64,
) -> str | None:
    """Generate greedily after ``reply_prefix`` on ``lm`` and record the usage; None without a continuer."""
    engine = reply_continuer(lm)
    if engine is None:
        return None
    t0 = time.perf_counter()
    out = engine.continue_reply(prefix, messages, reply_prefix, stop=stop, max_tokens=max_tokens)
    record_usage(Usage.computed(out.prompt_tokens, out.completion_tokens, time.perf_counter() - t0))
    return str(out.text)
