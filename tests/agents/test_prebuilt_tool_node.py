"""Seed 004's ToolNode semantics, on the real tool loop of ``create_react_agent`` (scripted models).

The stop rule of ``remaining_steps``, read-only injected state, tool exceptions as error tool
messages (and the opt-out), ``BaseTool`` subclasses and every tool object's ``invoke`` /
``ainvoke``, LangChain message shapes merged by ``add_messages``, and the seed's retry defaults.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from routerlab.agents.errors import ContractError
from routerlab.agents.lm import scripted_lm
from routerlab.agents.prebuilt import (
    BaseTool,
    InjectedState,
    StructuredTool,
    ToolCall,
    add_messages,
    create_react_agent,
    tool,
)
from routerlab.agents.swarm.runner import NEED_MORE_STEPS


def lookup(item: str) -> str:
    """Look an item up.

    Args:
        item: The item.
    """
    return f"{item}: in stock"


def _always_calls(request: Any) -> dict[str, Any]:
    return {"name": "lookup", "args": {"item": "tea"}}


def _calls_once(request: Any) -> Any:
    if request.tools and not any(m.role == "tool" for m in request.messages):
        return {"name": request.tools[0].name, "args": {"item": "tea"}}
    return "done"


def _agent(script: Any, tools: list[Any], **kwargs: Any) -> Any:
    return create_react_agent(scripted_lm(script), tools, sleep=lambda _s: None, **kwargs)


@settings(max_examples=25, deadline=None)
@given(limit=st.integers(min_value=1, max_value=12))
def test_remaining_steps_never_goes_negative_and_tools_run_only_with_two_steps_left(limit: int) -> None:
    out = _agent(_always_calls, [lookup]).invoke({"messages": ["tea?"]}, {"recursion_limit": limit})
    assert 0 <= out["remaining_steps"] <= limit
    steps, tool_batches = 0, 0
    for m in out["messages"][1:]:
        if isinstance(m, AIMessage):
            # a model step: it may run tools only with at least 2 steps left (the seed's rule)
            left = limit - steps
            steps += 1
            if m.tool_calls:
                assert left >= 2
                steps += 1
                tool_batches += 1
            else:
                assert m.content == NEED_MORE_STEPS and left < 2
    assert len([m for m in out["messages"] if isinstance(m, ToolMessage)]) == tool_batches
    assert out["remaining_steps"] == max(0, limit - steps)


def test_recursion_limit_one_stops_with_the_seed_message_and_runs_no_tool() -> None:
    ran: list[str] = []

    def record(item: str) -> str:
        """Record.

        Args:
            item: The item.
        """
        ran.append(item)
        return "ok"

    out = _agent(_calls_once, [record]).invoke({"messages": ["tea?"]}, {"recursion_limit": 1})
    assert ran == [] and out["remaining_steps"] == 0
    assert out["messages"][-1].content == NEED_MORE_STEPS


def test_injected_state_is_a_read_only_copy() -> None:
    seen: list[Any] = []

    def peek(item: str, state: Annotated[dict, InjectedState]) -> str:
        """Peek at the state, then try to change it.

        Args:
            item: The item.
        """
        seen.append(state["user_id"])
        state["basket"].append(item)  # nested: only the copy changes
        state["user_id"] = "HACKED"
        return "unreachable"

    out = _agent(_calls_once, [peek]).invoke({"messages": ["tea?"], "user_id": "u1", "basket": []})
    assert seen == ["u1"] and out["user_id"] == "u1" and out["basket"] == []
    result = out["messages"][2]
    assert isinstance(result, ToolMessage) and result.status == "error" and "TypeError" in result.content


def test_a_raising_tool_becomes_an_error_message_the_model_reads_unless_it_opts_out() -> None:
    def broken(item: str) -> str:
        """Fail.

        Args:
            item: The item.
        """
        raise ValueError(f"no such item {item}")

    out = _agent(_calls_once, [broken]).invoke({"messages": ["tea?"]})
    result = out["messages"][2]
    assert isinstance(result, ToolMessage) and result.status == "error"
    assert result.content.startswith("Error: ValueError('no such item tea')")
    assert out["messages"][-1].content == "done"  # the model read the error and answered
    strict = tool(broken, handle_tool_error=False)
    with pytest.raises(ValueError, match="no such item tea"):
        _agent(_calls_once, [strict], retry_policy={"max_attempts": 1}).invoke({"messages": ["tea?"]})


def test_a_non_string_return_is_the_tool_message_as_json() -> None:
    def stock(item: str) -> dict[str, Any]:
        """Stock of an item.

        Args:
            item: The item.
        """
        return {"item": item, "count": 3}

    out = _agent(_calls_once, [stock]).invoke({"messages": ["tea?"]})
    assert out["messages"][2].content == '{"item": "tea", "count": 3}'


def test_messages_are_langchain_messages_merged_by_add_messages() -> None:
    agent = _agent(_calls_once, [lookup])
    first = agent.invoke({"messages": [HumanMessage("tea?", id="h1")]})
    kinds = [type(m) for m in first["messages"]]
    assert kinds == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    call: ToolCall = first["messages"][1].tool_calls[0]
    assert call == {"name": "lookup", "args": {"item": "tea"}, "id": call["id"], "type": "tool_call"}
    assert first["messages"][2].tool_call_id == call["id"] and first["messages"][0].id == "h1"
    # a second invoke continues the conversation: add_messages keeps ids, appends the new ones
    second = agent.invoke({"messages": [*first["messages"], HumanMessage("and coffee?", id="h2")]})
    assert [m.id for m in second["messages"][:5]] == [m.id for m in first["messages"]] + ["h2"]
    assert len({m.id for m in second["messages"]}) == len(second["messages"])
    assert add_messages(first["messages"], [HumanMessage("x", id="h1")])[0].content == "x"  # same id: replaced


def test_every_tool_object_has_invoke_and_ainvoke() -> None:
    async def fetch(item: str) -> str:
        """Fetch.

        Args:
            item: The item.
        """
        return f"fetched {item}"

    decorated = tool(lookup)
    structured = StructuredTool.from_function(func=lookup, name="find", description="Find an item.")
    coroutine_only = tool(fetch)
    assert decorated.invoke({"item": "a"}) == "a: in stock" == structured.invoke("a")
    assert asyncio.run(decorated.ainvoke({"item": "b"})) == "b: in stock"
    assert asyncio.run(coroutine_only.ainvoke({"item": "c"})) == "fetched c" == coroutine_only.invoke("c")
    message = structured.invoke({"name": "find", "args": {"item": "d"}, "id": "c9", "type": "tool_call"})
    assert isinstance(message, ToolMessage) and message.status == "success" and message.tool_call_id == "c9"
    failed = structured.invoke({"name": "find", "args": {"item": 3}, "id": "c10", "type": "tool_call"})
    assert failed.status == "error" and "invalid arguments" in failed.content


def test_base_tool_subclasses_run_in_the_agent_and_need_run() -> None:
    class Stock(BaseTool):
        """Count an item in stock."""

        name: str = "lookup"

        def _run(self, item: str) -> str:
            return f"{item}: 4 left"

        async def _arun(self, item: str) -> str:
            return f"{item}: 4 left (async)"

    stock = Stock()
    assert stock.description == "Count an item in stock." and stock.parameters["required"] == ["item"]
    assert asyncio.run(stock.ainvoke({"item": "tea"})) == "tea: 4 left (async)"
    out = _agent(_calls_once, [stock]).invoke({"messages": ["tea?"]})
    assert out["messages"][2].content == "tea: 4 left"

    class Empty(BaseTool):
        name: str = "empty"

    with pytest.raises(ContractError, match="defines no _run") as info:
        Empty()
    assert info.value.fix


def test_injected_state_of_a_directly_invoked_tool_comes_from_the_config() -> None:
    @tool
    def whoami(state: Annotated[dict, InjectedState]) -> str:
        """Say who asks."""
        return state["user_id"]

    assert whoami.invoke({}, {"configurable": {"__state__": {"user_id": "u7"}}}) == "u7"
    with pytest.raises(ContractError, match="__state__"):
        whoami.invoke({})


def test_ainvoke_runs_the_agent_from_async_code_with_async_tools() -> None:
    async def fetch(item: str) -> str:
        """Fetch an item.

        Args:
            item: The item.
        """
        await asyncio.sleep(0)
        return f"fetched {item}"

    async def main() -> dict[str, Any]:
        return await _agent(_calls_once, [fetch]).ainvoke({"messages": ["tea?"]})

    out = asyncio.run(main())
    assert out["messages"][2].content == "fetched tea" and out["messages"][-1].content == "done"


def test_the_seed_retry_defaults_retry_any_exception_with_waits_of_one_then_two_seconds() -> None:
    calls: list[int] = []

    def flaky(request: Any) -> str:
        calls.append(1)
        if len(calls) < 3:
            raise KeyError("transient")
        return "ok"

    waits: list[float] = []
    agent = create_react_agent(scripted_lm(flaky), [], retry_policy={"jitter": False}, sleep=waits.append)
    assert agent.invoke({"messages": ["hi"]})["messages"][-1].content == "ok"
    assert waits == [1.0, 2.0] and len(calls) == 3
    assert agent.retry_policy["retry_on"] == (Exception,) and agent.retry_policy["max_attempts"] == 3
