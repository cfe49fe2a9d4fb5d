"""Router strategies behind one protocol and one registry.

Importing this package registers every built-in router: ``rules``, ``llm``, ``hybrid``,
``dspy``, ``handoff``, ``retrieval`` and the baselines ``oracle`` and ``random``.
"""

from routers.base import BASELINES, RouteDecision, Router, RouterEnv, router
from routers.baselines import OracleRouter, RandomRouter
from routers.dspy_router import DSPyRouter
from routers.handoff import HandoffRouter
from routers.hybrid import HybridRouter
from routers.intent import TOOL_INTENT, IntentRouter
from routers.llm import LLMRouter
from routers.plan import next_call
from routers.retrieval import RetrievalRouter
from routers.rules import DEFAULT_RULES, Rule, RulesRouter

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
