"""The ``ask_human`` node: the turn waits for the user's reply to a clarifying question."""

from __future__ import annotations

import time

from langchain_core.messages import ToolMessage
from langgraph.types import Command, interrupt

from routerlab.agents.events import make_event
from routerlab.agents.nodes.decider import pick_decider
from routerlab.agents.nodes.env import NodeEnv, conversation_of
from routerlab.agents.state import PipelineState

__all__ = ["ask_human_node"]


def ask_human_node(env: NodeEnv, state: PipelineState) -> Command:
    """Interrupt with the question of the last message's first call; resume with the reply.

    Reads ``messages`` (the last one's first tool call); writes an
    :class:`~routerlab.agents.nodes.updates.AskHumanUpdate` (the reply as the call's output) and
    goes back to the decider. A checkpointer keeps the thread while the turn waits.
    """
    msg = state["messages"][-1]
    call = msg.tool_calls[0]  # type: ignore[union-attr]
    question = str(call["args"].get("question", ""))
    reply = interrupt({"question": question, "tool_call_id": call["id"]})
    now = time.time()
    return Command(
        goto=pick_decider(env.tools, state),
        update={
            "messages": [ToolMessage(content=str(reply), tool_call_id=call["id"], name=call["name"], status="success")],
            "tool_calls": {
                call["id"]: {
                    "output": {"reply": str(reply)},
                    "status": "success",
                    "started": now,
                    "ended": now,
                }
            },
            "user_reply": str(reply),
            "path": ["ask_human"],
            "events": [make_event("progress", "ask_human", f"user replied: {reply}", conversation_of(state))],
        },
    )
