"""Seed 004's ``retry_policy``: one reading of the dict for the pipeline's nodes and ``create_react_agent``.

The seed passes ``{"max_attempts", "backoff_factor", "jitter", "retry_on"}``; routerlab adds
``initial_interval``. :func:`merge_retry_policy` checks the keys and fills the rest from the
caller's defaults; :func:`langgraph_retry` turns the result into LangGraph's ``RetryPolicy`` for a
graph node. ``retry_on`` exception types also match an error the LM layer raised *because* of
one (DSPy wraps a provider's ``ConnectionError``): :func:`caused_by`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from langgraph.types import RetryPolicy as LangGraphRetryPolicy

from routerlab.agents.errors import ContractError, reject_unknown_keys

__all__ = [
    "RETRY_KEYS",
    "SEED_RETRY_POLICY",
    "RetryPolicy",
    "caused_by",
    "langgraph_retry",
    "merge_retry_policy",
    "pipeline_retry_policy",
    "should_retry",
]


class RetryPolicy(TypedDict, total=False):
    """Seed 004's retry policy: attempts, backoff, jitter and what is retried.

    ``retry_on`` is a tuple of exception types, or a predicate ``(exception) -> bool``.
    """

    initial_interval: float
    max_attempts: int
    backoff_factor: float
    jitter: bool
    retry_on: tuple[type[BaseException], ...] | Callable[[BaseException], bool]


RETRY_KEYS = frozenset(RetryPolicy.__annotations__)

#: seed 004's defaults: 3 attempts, waits of ``backoff_factor ** (attempt - 1)`` seconds (1 s, 2 s,
#: ...: an ``initial_interval`` of 1), jitter, every ``Exception`` retried. ``create_react_agent``
#: uses them; the pipeline's nodes keep ``PipelineConfig``'s (:func:`pipeline_retry_policy`)
SEED_RETRY_POLICY: RetryPolicy = {
    "initial_interval": 1.0,
    "max_attempts": 3,
    "backoff_factor": 2.0,
    "jitter": True,
    "retry_on": (Exception,),
}


def caused_by(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    """Whether ``exc`` or an exception it wraps (``__cause__``/``__context__``) is one of ``kinds``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kinds):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def merge_retry_policy(given: Mapping[str, Any] | None, defaults: RetryPolicy) -> RetryPolicy:
    """``defaults`` overridden by ``given``, checked.

    Raises:
        ContractError: For an unknown key, ``max_attempts`` below 1, a negative interval or a
            ``retry_on`` that is neither exception types nor a function.
    """
    given = dict(given or {})
    reject_unknown_keys("retry_policy", given, RETRY_KEYS)
    merged: dict[str, Any] = {**defaults, **given}
    if int(merged["max_attempts"]) < 1 or float(merged["initial_interval"]) < 0:
        raise ContractError(
            "retry_policy asks for no attempt or a negative wait",
            expected="max_attempts >= 1 and initial_interval >= 0",
            found=f"max_attempts={merged['max_attempts']!r}, initial_interval={merged['initial_interval']!r}",
            fix="pass max_attempts=1 for no retries",
        )
    retry_on = merged["retry_on"]
    if isinstance(retry_on, type):
        merged["retry_on"] = retry_on = (retry_on,)
    if not callable(retry_on) and not (
        isinstance(retry_on, tuple) and all(isinstance(t, type) and issubclass(t, BaseException) for t in retry_on)
    ):
        raise ContractError(
            "retry_policy retry_on is neither exception types nor a function",
            expected="a tuple of exception classes, or a function (exception) -> bool",
            found=repr(retry_on)[:80],
            fix="pass e.g. (TimeoutError, ConnectionError)",
        )
    return merged  # type: ignore[return-value]


def should_retry(policy: RetryPolicy, exc: BaseException) -> bool:
    """Whether ``policy`` retries ``exc``."""
    retry_on = policy["retry_on"]
    return bool(retry_on(exc)) if callable(retry_on) else caused_by(exc, retry_on)


def langgraph_retry(policy: RetryPolicy) -> LangGraphRetryPolicy:
    """LangGraph's ``RetryPolicy`` for a graph node."""
    return LangGraphRetryPolicy(
        initial_interval=float(policy["initial_interval"]),
        backoff_factor=float(policy["backoff_factor"]),
        max_attempts=int(policy["max_attempts"]),
        jitter=bool(policy["jitter"]),
        retry_on=lambda exc: should_retry(policy, exc),
    )


def pipeline_retry_policy(
    config: Any, given: Mapping[str, Any] | None, retry_on: Callable[[BaseException], bool]
) -> RetryPolicy:
    """The retry policy of the pipeline's model-calling nodes: ``PipelineConfig``'s, overridden by ``given``.

    Args:
        config: The ``PipelineConfig`` (``retry_initial_s``, ``retry_backoff``, ``retry_attempts``).
        given: The seed's ``retry_policy`` dict, or None.
        retry_on: What is retried by default (the pipeline's transient errors).
    """
    return merge_retry_policy(
        given,
        {
            "initial_interval": config.retry_initial_s,
            "backoff_factor": config.retry_backoff,
            "max_attempts": config.retry_attempts,
            "jitter": True,
            "retry_on": retry_on,
        },
    )
