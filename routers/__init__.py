"""Router strategies behind one protocol and one registry; one module per router.

Importing this package registers every router: each module here (``base.py``, the ``@router``
registry, aside) holds one router, or a few variants of one (``baselines.py``), and registers it
with ``@router("name")``, which also sets the class's ``name``. ``routerlab routers`` (or
``router.names()``) lists them; ``tests/routers/test_conformance.py`` checks that every module
here registers a router and runs every registered one. What routers share but is not a router (the
intent-router base, one-pass LM classification, label calibration, the schema outline and the
ambiguity and neighbours checks) is in :mod:`routerlab.routers.support`.
"""

from routerlab.agents.plan import TOOL_INTENT, next_call
from routerlab.agents.registry import import_submodules
from routerlab.agents.routing import RouteDecision, Router, RouterEnv
from routerlab.routers.always_sql import AlwaysSqlRouter
from routerlab.routers.base import BASELINES, build_pipeline, router
from routerlab.routers.baselines import OracleRouter, RandomRouter
from routerlab.routers.dspy_router import DSPyRouter
from routerlab.routers.handoff import HandoffRouter
from routerlab.routers.hybrid import HybridRouter
from routerlab.routers.llm import LLMRouter
from routerlab.routers.retrieval import RetrievalRouter
from routerlab.routers.rules import DEFAULT_RULES, Rule, RulesRouter
from routerlab.routers.support.intent import IntentRouter
from routerlab.routers.team import TeamRouter

__all__ = [
    "BASELINES",
    "DEFAULT_RULES",
    "TOOL_INTENT",
    "AlwaysSqlRouter",
    "DSPyRouter",
    "HandoffRouter",
    "HybridRouter",
    "IntentRouter",
    "LLMRouter",
    "OracleRouter",
    "RandomRouter",
    "RetrievalRouter",
    "RouteDecision",
    "Router",
    "RouterEnv",
    "Rule",
    "RulesRouter",
    "TeamRouter",
    "build_pipeline",
    "label",
    "next_call",
    "router",
]


def label(name: str) -> str:
    """Display name of a router: baselines are marked as such everywhere they appear."""
    return f"{name} (baseline)" if name in BASELINES else name


# modules added later register themselves: a new router/scorer/loader is one new file
import_submodules(__name__, __path__)
