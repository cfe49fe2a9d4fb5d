"""Which failures the graph's retry policy retries: only those that may pass."""

from __future__ import annotations

from dspy.utils.exceptions import is_retryable_lm_error

from routerlab.agents.errors import ToolError

__all__ = ["is_transient"]


def is_transient(exc: BaseException) -> bool:
    """Retry only errors that may pass: connection trouble, timeouts and rate limits."""
    name = type(exc).__name__.lower()
    if isinstance(exc, ToolError):
        return False
    # DSPy re-raises a provider's 5xx or dropped connection as LMServerError / LMTransportError,
    # whose names match none of the keywords below
    if isinstance(exc, Exception) and is_retryable_lm_error(exc):
        return True
    return isinstance(exc, ConnectionError | TimeoutError) or any(
        k in name for k in ("ratelimit", "timeout", "serviceunavailable", "apiconnection", "overloaded")
    )
