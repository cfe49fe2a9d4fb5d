"""Seed 004's prebuilt names: create_react_agent's retries, RunnableConfig and InjectedState.

The react agent is the swarm loop behind LangGraph's call shape; these tests drive it with
scripted models (the seed examples themselves run in tests/seeds). ``InjectedState`` is also
checked through the real pipeline on a real DuckDB file.
"""

from __future__ import annotations

from typing import Annotated

import pytest
from langchain_core.messages import AIMessage
from pydantic import BaseModel

from routerlab import routers
from routerlab.agents.errors import ContractError
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.prebuilt import create_react_agent, tool
from routerlab.agents.routing import RouteDecision
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.tools.schema import InjectedState


def lookup(item: str) -> str:
    """Look an item up.

    Args:
        item: The item.
    """
    return f"{item}: in stock"


def _script(request):
    if request.tools and not any(m.role == "tool" for m in request.messages):
        return {"name": "lookup", "args": {"item": "tea"}}
    return "Tea is in stock."


def test_a_run_raising_a_retry_on_error_is_retried_with_backoff():
    calls = {"n": 0}

    def flaky(request):
        calls["n"] += 1
        if calls["n"] <= 2:
            raise ConnectionError("network blip")
        return "ok"

    waits: list[float] = []
    agent = create_react_agent(
        scripted_lm(flaky),
        [],
        retry_policy={"max_attempts": 3, "initial_interval": 1.0, "backoff_factor": 2.0, "jitter": False},
        sleep=waits.append,
    )
    out = agent.invoke({"messages": ["hi"]})
    assert isinstance(out["messages"][-1], AIMessage) and out["messages"][-1].content == "ok"
    assert waits == [1.0, 2.0]


def test_retries_stop_at_max_attempts_and_other_errors_are_not_retried():
    def down(request):
        raise ConnectionError("down")

    waits: list[float] = []
    agent = create_react_agent(
        scripted_lm(down), [], retry_policy={"max_attempts": 2, "jitter": False}, sleep=waits.append
    )
    with pytest.raises(Exception) as info:
        agent.invoke({"messages": ["hi"]})
    assert "down" in str(info.value)
    assert len(waits) == 1
    only_timeouts = create_react_agent(
        scripted_lm(down), [], retry_policy={"retry_on": (TimeoutError,)}, sleep=waits.append
    )
    with pytest.raises(Exception, match="down"):
        only_timeouts.invoke({"messages": ["hi"]})
    assert len(waits) == 1  # not retried


def test_runnable_config_is_accepted_as_langgraph_takes_it():
    seen = []
    agent = create_react_agent(scripted_lm(_script), [lookup])
    config = {
        "callbacks": [seen.append],
        "max_concurrency": 4,
        "configurable": {"thread_id": "t-1"},
        "recursion_limit": 10,
        "tags": ["a"],
        "metadata": {"k": "v"},
        "run_name": "lookup run",
    }
    out = agent.invoke({"messages": [{"role": "user", "content": "tea?"}]}, config)
    assert [e.type.name for e in seen] == ["USER_MESSAGE", "TOOL_CALL", "TOOL_RESULT", "AGENT_MESSAGE"]
    assert out["run_config"]["configurable"] == {"thread_id": "t-1"} and out["run_config"]["max_concurrency"] == 4
    assert out["remaining_steps"] == 10 - 3
    with pytest.raises(ContractError, match="unknown RunnableConfig keys") as info:
        agent.invoke({"messages": ["tea?"]}, {"recursion_limt": 3})
    assert info.value.fix


def test_the_recursion_limit_stops_a_looping_model():
    agent = create_react_agent(scripted_lm([{"name": "lookup", "args": {"item": "tea"}}]), [lookup])
    out = agent.invoke({"messages": ["tea?"]}, {"recursion_limit": 4})
    assert out["remaining_steps"] == 0
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai", "tool"]


def test_a_structured_response_that_does_not_validate_is_a_clear_error():
    class Count(BaseModel):
        n: int

    agent = create_react_agent(scripted_lm(["done", "not json"]), [], response_format=Count)
    with pytest.raises(ContractError, match="does not validate as Count") as info:
        agent.invoke({"messages": ["count"]})
    assert info.value.fix
    ok = create_react_agent(scripted_lm(["done", '{"n": 3}']), [], response_format=Count)
    assert ok.invoke({"messages": ["count"]})["structured_response"] == Count(n=3)


@tool
def whose_turn(state: Annotated[dict, InjectedState]) -> dict:
    """Say which question the pipeline's state holds."""
    return {"answer": f"state question: {state['question']}"}


def test_injected_state_through_the_pipeline(sales_db):
    """A pipeline tool declaring InjectedState receives the run's state (a tool of the seed's form)."""
    from dataclasses import replace

    terminal = replace(whose_turn.as_tool(), terminal=True)
    pipeline = Pipeline(
        routers.router.build("llm"),
        scripted_lm([{"name": "whose_turn", "args": {}}]),
        tools=[*DEFAULT_TOOLS, terminal],
    )
    list(pipeline.stream("Who asks?", str(sales_db), conversation_id="inj-state"))
    state = pipeline.final_state("inj-state")
    record = next(r for r in state["tool_calls"].values() if r["name"] == "whose_turn")
    assert record["status"] == "success" and record["output"] == {"answer": "state question: Who asks?"}
    assert whose_turn.states == ("state",) and whose_turn.parameters["properties"] == {}


class _FlakyChat:
    """A router whose first ``failures`` decisions raise ConnectionError, then it calls chat."""

    name = "flaky"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def bind(self, env):
        pass

    def decide(self, state):
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError("router model unreachable")
        return RouteDecision(tool_calls=[{"id": "c0", "name": "chat", "args": {"message": "hi"}}], intent="chat")


def test_the_pipeline_takes_the_seed_retry_policy(sales_db):
    """``Pipeline(retry_policy=...)``: the seed's dict sets the model-calling nodes' retries."""
    policy = {"max_attempts": 3, "initial_interval": 0.0, "jitter": False, "retry_on": (ConnectionError,)}
    router = _FlakyChat(failures=2)
    trace = Pipeline(router, scripted_lm(["Hello!"]), retry_policy=policy).run("hi", str(sales_db))
    assert router.calls == 3 and not trace.error_class
    once = _FlakyChat(failures=1)
    no_retry = Pipeline(once, scripted_lm(["Hello!"]), retry_policy={**policy, "max_attempts": 1})
    with pytest.raises(ConnectionError):  # not retried: the run crashes as an unretried error does
        no_retry.run("hi", str(sales_db))
    assert once.calls == 1
    with pytest.raises(ContractError, match="unknown retry_policy keys") as info:
        Pipeline(_FlakyChat(0), scripted_lm(["x"]), retry_policy={"attempts": 2})
    assert info.value.fix


def test_the_pipeline_stream_takes_a_runnable_config(sales_db):
    """``Pipeline.stream(config=...)``: callbacks reach LangGraph, configurable's thread_id names the turn."""
    from langchain_core.callbacks import BaseCallbackHandler

    class Seen(BaseCallbackHandler):
        def __init__(self) -> None:
            self.chains = 0

        def on_chain_start(self, *args, **kwargs):
            self.chains += 1

    seen = Seen()
    pipeline = Pipeline(_FlakyChat(0), scripted_lm(["Hello!"]))
    config = {
        "callbacks": [seen],
        "max_concurrency": 2,
        "configurable": {"thread_id": "seed-thread"},
        "tags": ["seed"],
        "metadata": {"user_id": "123"},
        "run_name": "seed run",
        "recursion_limit": 50,
    }
    events = list(pipeline.stream("hi", str(sales_db), tags=["routerlab"], config=config))
    assert {e["conversation_id"] for e in events} == {"seed-thread"}
    state = pipeline.final_state("seed-thread")
    assert state["run_config"] == {
        "tags": ["routerlab", "seed"],
        "metadata": {"user_id": "123"},
        "run_name": "seed run",
    }
    assert seen.chains > 0
    with pytest.raises(ContractError, match="unknown RunnableConfig keys"):
        list(pipeline.stream("hi", str(sales_db), config={"thread": "x"}))
