"""What each node writes: the keys of :class:`~routerlab.agents.state.PipelineState` it returns.

Each node's docstring names the keys it reads; these types name the keys it may write (LangGraph
merges them into the state with the state's reducers).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.messages import AnyMessage

__all__ = [
    "AskHumanUpdate",
    "DirectUpdate",
    "DispatchUpdate",
    "RespondUpdate",
    "RouteUpdate",
    "ToolsUpdate",
    "TurnError",
]


class TurnError(TypedDict, total=False):
    """The keys of a turn that ends with an error (see ``PipelineState``)."""

    error: str | None
    error_class: str | None
    error_detail: dict[str, Any]
    has_internal_error: bool
    internal_error_message: str | None


class RouteUpdate(TurnError, total=False):
    """The ``route`` node's update: the router's decision as an AI message, its cost and events."""

    messages: list[AnyMessage]
    route: dict[str, Any]
    router_usage: list[dict[str, Any]]
    remaining_steps: int
    selected_tool_ids: list[str]
    events: list[dict[str, Any]]


class DirectUpdate(TurnError, total=False):
    """The ``direct`` node's update: the next call of an explicit agent request, or its answer."""

    messages: list[AnyMessage]
    route: dict[str, Any]
    events: list[dict[str, Any]]


class DispatchUpdate(TurnError, total=False):
    """The ``dispatch`` node's update (with its ``goto``): requested calls, an answer, a question."""

    tool_calls: dict[str, dict[str, Any]]
    ask_human: str | None
    answer: str | None
    confirmation: str | None


class ToolsUpdate(TurnError, total=False):
    """The ``tools`` node's update: the calls' records and messages and what they set for the turn."""

    messages: list[AnyMessage]
    tool_calls: dict[str, dict[str, Any]]
    events: list[dict[str, Any]]
    subagent_usage: list[dict[str, Any]]
    store: dict[str, dict[str, Any]]
    structured_response: dict[str, Any] | None
    sql: str | None
    rows: list[list[Any]]
    columns: list[str]
    row_count: int
    summary: str | None
    executed: bool


class AskHumanUpdate(TypedDict, total=False):
    """The ``ask_human`` node's update (with its ``goto``): the user's reply as the call's output."""

    messages: list[AnyMessage]
    tool_calls: dict[str, dict[str, Any]]
    user_reply: str
    path: list[str]
    events: list[dict[str, Any]]


class RespondUpdate(TypedDict, total=False):
    """The ``respond`` node's update: the turn's answer and its last event (completed or error)."""

    answer: str | None
    events: list[dict[str, Any]]
