"""An LM whose calls go through an engine that wraps another copy of it (deadline, faults).

``routerlab.agents.lm.deadline.bounded_lm`` and ``routerlab.agents.faults.faulty_lm`` both put an
engine between the caller and a ``dspy.LM``: the outer LM keeps the model string, settings and
callbacks, the engine decides something about each call and hands the rest to the inner copy.
The outer LM must then give up what only the inner copy may use: its connection settings
(a custom engine refuses them), its cache (the inner one answers repeats, and a wrapped reply
must never be cached outside the wrapper) and its retries (the engine's decision is per call).
"""

from __future__ import annotations

from typing import Any

import dspy

__all__ = ["CLIENT_KEYS", "behind_engine"]

#: connection settings a custom engine refuses (the wrapped LM keeps them)
CLIENT_KEYS: tuple[str, ...] = (
    "api_key",
    "api_base",
    "base_url",
    "headers",
    "extra_headers",
    "timeout",
    "api_version",
    "azure_ad_token_provider",
    "organization",
    "project",
    "extra_query",
    "custom_llm_provider",
)


def behind_engine(lm: dspy.LM, engine: Any) -> dspy.LM:
    """A copy of ``lm`` whose calls go through ``engine``: no cache, one attempt, no connection settings.

    Args:
        lm: The LM callers hold (model, settings and callbacks are kept).
        engine: A DSPy engine wrapping another copy of ``lm`` (made with ``lm.copy(callbacks=[])``,
            so usage is counted once, by the outer LM).
    """
    drop = {k: None for k in CLIENT_KEYS if lm.kwargs.get(k) is not None}
    return lm.copy(engine=engine, cache=False, num_retries=0, **drop)
