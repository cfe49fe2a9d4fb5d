"""``always_sql``: the pipeline with every decision ``sql``, the baseline routing is measured against."""

from __future__ import annotations

from routerlab.agents.state import PipelineState
from routerlab.agents.trace import Usage
from routerlab.routers.base import router
from routerlab.routers.support.intent import Classification, IntentRouter

__all__ = ["AlwaysSqlRouter"]


@router("always_sql")
class AlwaysSqlRouter(IntentRouter):
    """Classifies every request as ``sql`` and follows the canonical plan; a baseline.

    It runs the same pipeline, tools and sub-agents as every intent router, so a comparison
    against it isolates what routing adds: a router that asks back, abstains or refuses has to
    serve the user better than simply answering every request with SQL (issue 49). Unlike
    ``single_call`` it is not a plain call: discovery, repair and the SQL checks all run.

    Args:
        fix_budget: fix_sql calls a failed execution may trigger.
    """

    def classify(self, state: PipelineState) -> Classification:
        """``sql`` with full confidence, whatever the request; no LM call."""
        return Classification("sql", 1.0, "always_sql", Usage())
