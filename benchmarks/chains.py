"""The canonical tool chain of each intent, for datasets and loaders (defined with the plan that follows it)."""

from __future__ import annotations

from routerlab.agents.plan import CHAINS

__all__ = ["CHAINS", "chain_for"]


def chain_for(intent: str) -> tuple[str, ...]:
    """The canonical chain of ``intent`` (``KeyError`` for an unknown intent)."""
    return CHAINS[intent]
