"""Seed 004's message shapes: LangChain messages, ``ToolCall`` dicts and the ``add_messages`` reducer.

``create_react_agent`` keeps its conversation as LangChain messages (``HumanMessage``,
``AIMessage`` with ``tool_calls`` of :class:`ToolCall` dicts, ``ToolMessage`` with
``tool_call_id``, ``name`` and ``status``), merged with LangGraph's ``add_messages``. The swarm
loop underneath talks OpenAI-style dicts to the model; :func:`to_chat` and :func:`from_chat`
convert at that boundary, so there is one conversation, not two.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TypedDict, cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langgraph.graph.message import MessageLikeRepresentation, add_messages

from routerlab.agents.errors import ContractError

__all__ = ["ToolCall", "add_messages", "from_chat", "merged", "to_chat", "to_messages"]


class ToolCall(TypedDict):
    """A tool call in an ``AIMessage`` (seed 004's ``ToolCall``)."""

    name: str
    args: dict[str, Any]
    id: str
    type: Literal["tool_call"]


def to_messages(items: Iterable[Any]) -> list[BaseMessage]:
    """LangChain messages of ``invoke``'s input: messages, ``{"role", "content"}`` dicts or strings.

    Raises:
        ContractError: For an item of none of those forms.
    """
    out: list[BaseMessage] = []
    for m in items:
        if isinstance(m, BaseMessage):
            out.append(m)
            continue
        if isinstance(m, str) or (isinstance(m, Mapping) and "role" in m):
            out.extend(convert_to_messages([dict(m) if isinstance(m, Mapping) else m]))
            continue
        raise ContractError(
            "a message of invoke's input is neither a message, a dict nor a string",
            expected="HumanMessage(...), {'role': 'user', 'content': '...'} or the text",
            found=repr(m)[:80],
            fix="pass the conversation's messages",
        )
    return out


def to_chat(message: BaseMessage) -> dict[str, Any]:
    """The OpenAI-style dict the swarm loop sends to the model for ``message``."""
    if isinstance(message, ToolMessage):
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "name": message.name,
            "content": message.content,
            "status": message.status,
        }
    if isinstance(message, AIMessage):
        out: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
                for c in message.tool_calls
            ]
        return out
    role = "system" if isinstance(message, SystemMessage) else "user"
    return {"role": role, "content": message.content}


def _tool_call(entry: Mapping[str, Any]) -> ToolCall:
    fn = entry["function"]
    return ToolCall(name=fn["name"], args=dict(fn.get("arguments") or {}), id=str(entry["id"]), type="tool_call")


def from_chat(message: Mapping[str, Any]) -> BaseMessage:
    """The LangChain message of one of the swarm loop's dicts."""
    role, content = message["role"], message.get("content") or ""
    if role == "tool":
        return ToolMessage(
            content=content,
            tool_call_id=str(message["tool_call_id"]),
            name=message.get("name"),
            status=message.get("status", "success"),
        )
    if role == "assistant":
        return AIMessage(content=content, tool_calls=[_tool_call(c) for c in message.get("tool_calls") or ()])
    if role == "system":
        return SystemMessage(content=content)
    return HumanMessage(content=content)


def merged(before: Sequence[BaseMessage], new: Iterable[Mapping[str, Any]]) -> list[BaseMessage]:
    """``add_messages(before, new)`` with the swarm's new dicts as LangChain messages."""
    left: list[MessageLikeRepresentation] = [*before]
    right: list[MessageLikeRepresentation] = [from_chat(m) for m in new]
    # add_messages turns every message it returns into a BaseMessage; its hint is the input union
    return cast(list[BaseMessage], add_messages(left, right))
