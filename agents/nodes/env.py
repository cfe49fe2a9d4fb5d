"""What the graph's nodes share: :class:`NodeEnv`, built once by the pipeline."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from routerlab.agents.db import Database
from routerlab.agents.nodes.call_replay import CallReplay
from routerlab.agents.nodes.config import PipelineConfig
from routerlab.agents.routing import Router
from routerlab.agents.tools import SQLPrograms, Tool

__all__ = ["NodeEnv", "conversation_of"]


@dataclass(frozen=True)
class NodeEnv:
    """The pipeline's parts a node reads (never state: that is the graph's).

    Attributes:
        router: The bound router.
        lm: The sub-agents' LM (None for LM-free tests of tools that need none).
        tools: The pipeline's tools by name.
        config: Bounds and settings (the router's tool settings applied).
        programs: The sub-agents' DSPy programs.
        database: Opens (and caches) the read-only database at a path.
        replay: The outcome cache of sub-agent calls.
        response_formats: Seed 004's response format per tool name.
    """

    router: Router
    lm: Any
    tools: Mapping[str, Tool]
    config: PipelineConfig
    programs: SQLPrograms
    database: Callable[[str], Database]
    replay: CallReplay
    response_formats: Mapping[str, type[BaseModel]] = field(default_factory=dict)


def conversation_of(state: Mapping[str, Any]) -> str:
    """The turn's conversation id (empty when the state has none)."""
    return state.get("conversation_id", "") or ""
