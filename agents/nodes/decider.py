"""Who picks the next step: the direct chain of an explicit agent request, else the router."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["pick_decider"]


def pick_decider(tools: Mapping[str, Any], state: Mapping[str, Any]) -> Literal["direct", "route"]:
    """``direct`` when the turn names one of ``tools`` as its agent (reads ``agent``), else ``route``."""
    agent = state.get("agent")
    return "direct" if agent and agent in tools else "route"
