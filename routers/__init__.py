"""Router strategies behind one protocol and one registry.

Importing this package registers every built-in router: ``rules``, ``llm``, ``hybrid``,
``dspy``, ``handoff``, ``retrieval`` and the baselines ``oracle`` and ``random``.
"""

from routerlab.agents.plan import TOOL_INTENT, next_call
from routerlab.agents.registry import import_submodules
from routerlab.agents.routing import RouteDecision, Router, RouterEnv
from routerlab.routers.base import BASELINES, router
from routerlab.routers.baselines import OracleRouter, RandomRouter
from routerlab.routers.dspy_router import DSPyRouter
from routerlab.routers.handoff import HandoffRouter
from routerlab.routers.hybrid import HybridRouter
from routerlab.routers.intent import IntentRouter
from routerlab.routers.llm import LLMRouter
from routerlab.routers.retrieval import RetrievalRouter
from routerlab.routers.rules import DEFAULT_RULES, Rule, RulesRouter

__all__ = [
    "BASELINES",
    "DEFAULT_RULES",
    "TOOL_INTENT",
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
    "label",
    "next_call",
    "router",
]


def label(name: str) -> str:
    """Display name of a router: baselines are marked as such everywhere they appear."""
    return f"{name} (baseline)" if name in BASELINES else name


# modules added later register themselves: a new router/scorer/loader is one new file
import_submodules(__name__, __path__)
