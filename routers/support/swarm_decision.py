"""A swarm's pipeline call as a routing decision: what the ``handoff`` and ``team`` routers share.

Both routers run the swarm's specialist agents (``routerlab.agents.swarm``) until one of them makes
a call to a pipeline tool. The swarm does not run that call: the router returns it for the
dispatch graph to run, exactly as the ``llm`` router returns its call. Turning the swarm's run
into that decision is one job, done here once:

* :func:`within_turn`: the swarm's bound, plus the turn's deadline so no agent's model call
  starts after it;
* :func:`pending_call`: the run's first pending call, under an id no earlier call of the turn has;
* :func:`swarm_decision`: the :class:`HandoffDecision` holding it, with the swarm's events and
  agent activations cut to :data:`EVENT_TEXT_CAP` characters per string.

* :func:`reply_context` and :func:`answering_pending`: a turn that answers the assistant's own
  question (``routers/support/reply.py``) shows the agents the pending request with the question
  asked back and the reply, and continues that request with the SQL agent.

How a router picks the turn's intent, its method string and its starting agent stays in the
router: those are what tell the two apart.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from typing import Any

from routerlab.agents.routing import PlannedCall, RouteDecision
from routerlab.agents.state import Intent, PipelineState
from routerlab.agents.swarm import PROGRESS_NODE, SwarmResponse, Terminator, Timeout
from routerlab.routers.support.reply import as_reply, continue_pending, read_reply

__all__ = [
    "EVENT_TEXT_CAP",
    "TRIAGE",
    "HandoffDecision",
    "answering_pending",
    "cap_text",
    "pending_call",
    "reply_context",
    "swarm_decision",
    "within_turn",
]

#: the agent that asks, refuses or abstains itself (and, in ``handoff``, hands requests out)
TRIAGE = "triage"

#: characters of a string kept in a decision's recorded swarm events and activations
EVENT_TEXT_CAP = 300


@dataclass
class HandoffDecision(RouteDecision):
    """A :class:`RouteDecision` that also records the swarm's side of the decision.

    Its :meth:`summary` (what the pipeline stores per decision, and what MLflow's decision spans
    show) adds ``agent``, ``swarm_events`` and ``activations``.

    Attributes:
        agent: The agent active after this decision (the one that made the call).
        swarm_events: The swarm's trace events (user message, agent messages and switches,
            handoff calls and results, context updates), as dicts with long strings cut.
        activations: Every agent activation of this decision
            (:meth:`routerlab.agents.swarm.Activation.to_dict`, long strings cut); the first
            one's ``reason`` says why that agent started (a new turn, or the agent resumed).
    """

    agent: str = TRIAGE
    swarm_events: list[dict[str, Any]] = field(default_factory=list)
    activations: list[dict[str, Any]] = field(default_factory=list)

    def summary(self, strategy: str) -> dict[str, Any]:
        """The base summary plus ``agent``, ``swarm_events`` and ``activations``."""
        return {
            **super().summary(strategy),
            "agent": self.agent,
            "swarm_events": list(self.swarm_events),
            "activations": list(self.activations),
        }


def cap_text(value: Any) -> Any:
    """``value`` with every string longer than :data:`EVENT_TEXT_CAP` cut (and marked ``…``), at any depth."""
    if isinstance(value, str) and len(value) > EVENT_TEXT_CAP:
        return value[:EVENT_TEXT_CAP] + "…"
    if isinstance(value, dict):
        return {k: cap_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [cap_text(v) for v in value]
    return value


def within_turn(bound: Terminator, state: PipelineState) -> Terminator:
    """``bound``, also stopping once the turn's deadline passes (when the turn has one ahead)."""
    remaining = state.get("deadline", float("inf")) - time.time()
    # no agent's model call may start after the turn's deadline
    return bound | Timeout(remaining) if 0 < remaining < float("inf") else bound


def pending_call(state: PipelineState, response: SwarmResponse) -> list[PlannedCall]:
    """The swarm's first pending pipeline call (or none), with an id no earlier call of the turn has.

    One step at a time: a later call must cite this one's id, so only the first is returned. A
    model that reuses an id of the turn gets ``<id>_<calls so far>``.
    """
    known = state.get("tool_calls", {})
    calls: list[PlannedCall] = []
    for c in response.pending[:1]:
        cid = c["id"] if c["id"] not in known else f"{c['id']}_{len(known)}"
        calls.append({"id": cid, "name": c["name"], "args": dict(c["args"])})
    return calls


def swarm_decision(
    response: SwarmResponse,
    calls: list[PlannedCall],
    *,
    intent: Intent | None,
    method: str,
    answer: str | None = None,
    why: str | None = None,
) -> HandoffDecision:
    """The decision holding ``calls`` (from :func:`pending_call`) and the swarm's record of the run.

    Args:
        response: The swarm's run.
        calls: The pipeline call the decision makes (empty: none, a scored failure unless ``answer``).
        intent: The turn's intent as the router decided it.
        method: How the router decided (``handoff:triage>sql``, ``team:fix>sql:stopped``).
        answer: The decision's text answer when it makes no call.
        why: Why the first activated agent started (kept as its activation's ``reason``).
    """
    events = [cap_text(e.to_dict()) for e in response.events]
    activations = [cap_text(a.to_dict()) for a in response.activations]
    if activations and why is not None:
        activations[0]["reason"] = why
    return HandoffDecision(
        tool_calls=calls,
        answer=answer,
        intent=intent,
        confidence=1.0 if calls else 0.0,
        method=method,
        usage=response.usage,
        invalid_tool_calls=list(response.invalid_tool_calls),
        agent=response.agent.name,
        swarm_events=json.loads(json.dumps(events, default=str)),
        activations=json.loads(json.dumps(activations, default=str)),
        steps=[
            (PROGRESS_NODE[e.type], e.describe(), {"swarm": ev}) for e, ev in zip(response.events, events, strict=True)
        ],
    )


def reply_context(state: PipelineState, db: Any = None) -> dict[str, str]:
    """The swarm's context variables: the request, and the user's answer to a question asked back.

    A turn that answers the assistant's pending question gives the pending request and, as the
    answer, the question asked back with the reply and the reading it chose
    (:func:`~routerlab.routers.support.reply.as_reply`); the agents' instructions show it.

    Args:
        state: The turn's state.
        db: The turn's database, for :func:`~routerlab.routers.support.reply.read_reply`.
    """
    shown = as_reply(state, read_reply(state, db))
    return {"question": str(shown.get("question", "") or ""), "user_reply": str(shown.get("user_reply") or "")}


def answering_pending(decision: HandoffDecision, state: PipelineState, db: Any = None) -> HandoffDecision:
    """``decision``, continuing the pending request when the turn answers the assistant's question.

    :func:`~routerlab.routers.support.reply.continue_pending`'s rule, as every router that chooses
    its calls follows it; a first step it turns into the request's SQL call is the SQL agent's, so
    the turn's next decision resumes with that agent.
    """
    continued = continue_pending(decision, state, db)
    if continued is decision or state.get("tool_calls"):
        return continued
    return dataclasses.replace(continued, agent="sql")
