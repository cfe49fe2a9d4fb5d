"""The dispatch pipeline's bounds and knobs (:class:`PipelineConfig`, recorded with every run)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from routerlab.agents.tools import ToolSettings

__all__ = ["RECOVERABLE_ERRORS", "PipelineConfig", "config_dict"]

#: tool error classes fed back to the router instead of ending the turn (it may repair them)
RECOVERABLE_ERRORS: tuple[str, ...] = (
    "sql_error",
    "invalid_tool_args",
    # seed 004: output that does not fit the caller's schema, a store write past its bounds
    "invalid_structured_response",
    "store_full",
    "store_invalid",
)


@dataclass(frozen=True)
class PipelineConfig:
    """Bounds and knobs of the dispatch pipeline (recorded with every run).

    Attributes:
        max_steps: Router decisions allowed per turn (``remaining_steps``).
        timeout_s: Wall-clock deadline of a turn; it binds every model call too.
        call_timeout_s: Cap of one model call (a call also stops when the turn or run deadline passes).
        recoverable_errors: Tool error classes the router gets to react to.
        retry_attempts / retry_initial_s / retry_backoff: Retry policy of LM-calling nodes
            (jittered exponential backoff, transient errors only).
        tools: Tool settings (example values, timeouts, row caps...).
        replay: Reuse and store sub-agent outcomes across runs (see :mod:`routerlab.agents.replay`): True
            for the cache at its default path, a path for that file, False for none.
    """

    max_steps: int = 8
    # the embedded model needs one to two minutes per call on a 2-core CPU (measured: about 11
    # prompt tokens/s and 1 completion token/s); the deadline is checked between nodes
    timeout_s: float = 900.0
    # one model call may take at most this long, and never longer than the turn has left (see
    # routerlab.agents.lm.deadline); a silent server or a runaway generation ends here
    call_timeout_s: float = 600.0
    recoverable_errors: tuple[str, ...] = RECOVERABLE_ERRORS
    retry_attempts: int = 3
    retry_initial_s: float = 0.5
    retry_backoff: float = 2.0
    tools: ToolSettings = field(default_factory=ToolSettings)
    replay: bool | str = False


def config_dict(config: PipelineConfig) -> dict[str, Any]:
    """The config as plain data (for MLflow params)."""
    return asdict(config)
