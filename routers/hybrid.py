"""The ``hybrid`` router (rule, LLM or hybrid routing): rules first, the LM when they are unsure."""

from __future__ import annotations

from routerlab.agents.lm.chat import chat
from routerlab.agents.plan import TOOL_INTENT
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import PipelineState
from routerlab.agents.trace import Usage
from routerlab.routers.base import router
from routerlab.routers.intent import Classification, IntentRouter
from routerlab.routers.llm import SYSTEM_PROMPT, to_openai_messages
from routerlab.routers.rules import RulesRouter

__all__ = ["HybridRouter"]


@router("hybrid")
class HybridRouter(IntentRouter):
    """Rules decide when confident; below ``threshold`` one LM tool call picks the intent.

    Args:
        threshold: Rule confidence below which the LM is asked.
        fix_budget: fix_sql calls a failed execution may trigger.
        max_tokens: Completion budget of the LM call.
    """

    name = "hybrid"

    def __init__(self, threshold: float = 0.8, fix_budget: int = 1, max_tokens: int = 256) -> None:
        super().__init__(fix_budget=fix_budget)
        self.threshold = threshold
        self.max_tokens = max_tokens
        self._rules = RulesRouter(fix_budget=fix_budget)

    def bind(self, env: RouterEnv) -> None:
        """Needs the plan's tools; the LM is optional (without one, rules always decide)."""
        super().bind(env)
        self._rules.bind(env)

    def classify(self, state: PipelineState) -> Classification:
        """Rules, then the LM when the rules' confidence is below the threshold."""
        intent, conf, method, _ = self._rules.classify(state)
        if conf >= self.threshold or self.env is None or self.env.lm is None:
            return intent, conf, f"hybrid:{method}", Usage()
        result = chat(
            self.env.lm,
            to_openai_messages(state, SYSTEM_PROMPT),
            tools=[t.openai_schema() for t in self.env.tools],
            tool_choice="required",
            max_tokens=self.max_tokens,
        )
        if result.tool_calls and result.tool_calls[0]["name"] in TOOL_INTENT:
            return TOOL_INTENT[result.tool_calls[0]["name"]], 1.0, "hybrid:llm", result.usage
        return intent, conf, f"hybrid:{method}(llm-invalid)", result.usage
