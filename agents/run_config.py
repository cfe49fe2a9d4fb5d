"""Seed 004's ``RunnableConfig`` as LangGraph takes it, for ``Pipeline.stream(config=...)``.

The pipeline already takes ``tags``, ``metadata`` and ``run_name`` as keywords; a seed-style
``config`` dict may carry them too, plus ``callbacks`` (LangChain callback handlers, given to
LangGraph with the run), ``max_concurrency``, ``recursion_limit`` and ``configurable`` (its
``thread_id`` is the conversation id when none is given). :func:`langgraph_run_config` builds
the one run config from both.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from routerlab.agents.errors import ContractError, reject_unknown_keys

__all__ = ["RUNNABLE_CONFIG_KEYS", "langgraph_run_config"]

#: the keys of LangGraph's RunnableConfig the pipeline accepts (seed 004's list)
RUNNABLE_CONFIG_KEYS = frozenset(
    {"tags", "metadata", "callbacks", "run_name", "max_concurrency", "recursion_limit", "configurable"}
)


def langgraph_run_config(
    given: Mapping[str, Any] | None,
    *,
    conversation_id: str | None,
    tags: Sequence[str],
    metadata: Mapping[str, Any] | None,
    run_name: str | None,
    recursion_limit: int,
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The conversation id, LangGraph's run config and the state's ``run_config`` of one run.

    Args:
        given: A ``RunnableConfig`` dict, or None.
        conversation_id: The keyword's conversation id (wins over ``configurable.thread_id``).
        tags: The keyword's tags (``given``'s are added after them).
        metadata: The keyword's metadata (``given``'s update it).
        run_name: The keyword's run name (``given``'s when it is None).
        recursion_limit: The pipeline's limit, unless ``given`` sets one.

    Raises:
        ContractError: For an unknown key, or a ``configurable`` that is not a dict.
    """
    cfg_in = dict(given or {})
    reject_unknown_keys("RunnableConfig", cfg_in, RUNNABLE_CONFIG_KEYS)
    configurable = cfg_in.get("configurable") or {}
    if not isinstance(configurable, Mapping):
        raise ContractError(
            "RunnableConfig configurable is not a dict",
            expected="{'thread_id': ...}",
            found=type(configurable).__name__,
            fix="pass configurable as a dict",
        )
    conv = conversation_id or configurable.get("thread_id") or uuid.uuid4().hex[:12]
    all_tags = [*tags, *cfg_in.get("tags", [])]
    meta = {**dict(metadata or {}), **dict(cfg_in.get("metadata") or {})}
    name = run_name or cfg_in.get("run_name")
    cfg: dict[str, Any] = {
        "configurable": {**configurable, "thread_id": str(conv)},
        "recursion_limit": int(cfg_in.get("recursion_limit") or recursion_limit),
        "tags": all_tags,
        "metadata": meta,
        **({"run_name": name} if name else {}),
        **({"callbacks": cfg_in["callbacks"]} if cfg_in.get("callbacks") else {}),
        **({"max_concurrency": cfg_in["max_concurrency"]} if cfg_in.get("max_concurrency") else {}),
    }
    return str(conv), cfg, {"tags": all_tags, "metadata": meta, "run_name": name}
