"""The ``@router`` registry and the baseline names; the protocol lives in ``routerlab.agents.routing``."""

from __future__ import annotations

from routerlab.agents.registry import Registry
from routerlab.agents.routing import Router

__all__ = ["BASELINES", "router"]

#: routers that bound a comparison instead of competing in it; labelled "(baseline)" everywhere
BASELINES: frozenset[str] = frozenset({"oracle", "random", "single_call"})


router: Registry[Router] = Registry("router", returns=Router)
"""Decorator/registry: ``@router("rules") class RulesRouter: ...``."""
