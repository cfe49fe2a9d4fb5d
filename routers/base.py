"""The ``@router`` registry, the baseline names and the one pipeline builder.

The protocol lives in ``routerlab.agents.routing``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from routerlab.agents.errors import ContractError, RouterlabError
from routerlab.agents.faults import FaultInjector, FaultyPipeline
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.registry import Registry
from routerlab.agents.routing import Router, RouterEnv
from routerlab.agents.tools import Tool

__all__ = ["BASELINES", "build_pipeline", "require_lm", "require_tools", "router", "turn_database"]

#: routers that bound a comparison instead of competing in it; labelled "(baseline)" everywhere
BASELINES: frozenset[str] = frozenset({"always_sql", "oracle", "random", "single_call", "single_call_fields"})


router: Registry[Router] = Registry("router", returns=Router, name_attr="name")
"""Decorator/registry: ``@router("rules") class RulesRouter: ...``."""


def build_pipeline(
    which: str | Router,
    lm: Any,
    *,
    router_args: Mapping[str, Any] | None = None,
    config: PipelineConfig | None = None,
    tools: Sequence[Tool] | None = None,
    injector: FaultInjector | None = None,
) -> Pipeline:
    """The one place a pipeline is built: a run's, a request's, a measurement's.

    Args:
        which: A registered router name (built here with ``router_args``) or a built router.
        lm: The resolved LM its sub-agents call.
        router_args: The named router's constructor arguments (checked by the registry).
        config: Pipeline bounds and settings (None: the defaults).
        tools: The sub-agents bound (None: the default tools).
        injector: Faults to inject into its LM and databases (None: none), for reliability runs.

    Raises:
        UnknownComponentError: An unknown router name.
        ConfigError: Arguments the router does not take.
    """
    built = router.build(which, **dict(router_args or {})) if isinstance(which, str) else which
    settings: dict[str, Any] = {"config": config} if tools is None else {"config": config, "tools": tools}
    if injector is not None:
        return FaultyPipeline(built, lm, injector=injector, **settings)
    return Pipeline(built, lm, **settings)


def require_tools(router_name: str, needs: Sequence[str], env: RouterEnv) -> None:
    """Raise ``ContractError`` at bind time if the pipeline lacks a tool the router calls.

    Args:
        router_name: The router's registry name, for the message.
        needs: Tool names the router may call.
        env: What the pipeline binds.
    """
    names = {t.name for t in env.tools}
    missing = [t for t in needs if t not in names]
    if missing:
        raise ContractError(
            f"router {router_name!r} needs tools the pipeline lacks",
            expected=f"tools {list(needs)}",
            found=f"missing {missing}",
            fix="build the pipeline with the default tools",
        )


_LM_FIX = "pass --lm local (the default) or another LM spec"


def require_lm(env: RouterEnv, what: str, *, expected: str = "a pipeline built with an LM", fix: str = _LM_FIX) -> None:
    """Raise ``ContractError`` at bind time if ``what`` (``"the llm router"``) gets no LM."""
    if env.lm is None:
        raise ContractError(f"{what} needs a language model", expected=expected, found="lm=None", fix=fix)


def turn_database(env: RouterEnv | None, state: Any) -> Any:
    """The turn's database opened through ``env`` (cached, read-only), or None when there is none to read.

    A router bound without a database opener, a turn without a database and a database that does
    not open all give None: the text alone decides.
    """
    if env is None or env.open_db is None or not state.get("database"):
        return None
    try:
        return env.open_db(state["database"])
    except RouterlabError:
        return None
