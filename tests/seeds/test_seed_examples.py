"""The seeds' own examples, read from ``../shared/seeds`` at test time, run against routerlab.

Only import lines change (``tests/seeds/harness.py``: ``IMPORTS``) and the seeds' LMs become
scripted ones (``tests/seeds/lms.py``); a row marked ``substituted`` says what else changed and
why. A fragment (a signature, pseudo-code, an excerpt of the seed's own application) has its
names found in it and resolved against routerlab, and a check that drives their behaviour on
real components (``tests/seeds/pipeline_checks.py``); a sample of rows is run again with its
feature removed and must fail. docs/seeds.md lists the same rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from routerlab.agents import common_agent, prebuilt
from routerlab.agents.lm import scripted_lm
from routerlab.agents.retry import SEED_RETRY_POLICY
from routerlab.agents.state import add_new
from routerlab.agents.swarm import (
    DEFAULT_AGENT_NAME,
    Agent,
    Controller,
    ControllerResponse,
    FunctionTool,
    MaxTurns,
    MCPServer,
    RoundTeam,
    SwarmEvent,
    SwarmEventType,
    function_tool,
)
from routerlab.agents.swarm import runner as runner_module
from routerlab.agents.swarm.runner import NEED_MORE_STEPS
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.tools import index as tool_index_module
from routerlab.agents.tools.index import FunctionIndex, retrieval_form, tool_store
from routerlab.agents.tools.store import MemoryStore
from tests.agents.swarm.mcp_process import free_port, http_server
from tests.seeds import lms, mcp_seed
from tests.seeds import pipeline_checks as checks
from tests.seeds.harness import Example, Status, examples, fingerprint, names_used, resolve, run_session, seeds_dir

pytestmark = pytest.mark.skipif(
    seeds_dir() is None,
    reason="the seed documents (shared/seeds beside the checkout, or $ROUTERLAB_SEEDS_DIR) are not here",
)


# ---------------------------------------------------------------- seed 003: the swarm framework


def _c003_translator(ns: dict[str, Any]) -> None:
    t = ns["translator"]
    assert isinstance(t, Agent) and t.name == "translator" and t.lm is ns["llm"]
    assert t.instructions() and t.tools == ()


def _c003_instruction_args(ns: dict[str, Any]) -> None:
    agent = ns["agent"]
    assert agent.name == DEFAULT_AGENT_NAME
    assert agent.instructions() == ns["get_instruction"]("Mike")


def _c003_controller(ns: dict[str, Any]) -> None:
    assert ns["controller"].terminator == MaxTurns(10)


def _c003_run_sync(ns: dict[str, Any]) -> None:
    resp = ns["resp"]
    assert isinstance(resp, ControllerResponse)
    assert resp.agent is ns["translator"]
    assert resp.message.startswith("Answer to: ") and resp.turns == 1


def _c003_functions(ns: dict[str, Any]) -> None:
    tool = ns["assistant"].get_tool("get_weather")
    assert isinstance(tool, FunctionTool)
    assert tool.openai_schema()["function"]["parameters"]["required"] == ["location"]


def _c003_one_weather_tool(ns: dict[str, Any]) -> None:
    # adding the same function again replaces it: one tool, not two
    assert [t.name for t in ns["assistant"].tools] == ["get_weather"]


def _c003_decorator(ns: dict[str, Any]) -> None:
    tool = ns["assistant"].get_tool("get_weather")
    assert tool.tool.fn is ns["get_weather"]
    assert callable(ns["get_weather"])  # the decorator returns the function


def _c003_documented(ns: dict[str, Any]) -> None:
    schema = function_tool(ns["get_weather"]).openai_schema()["function"]
    assert schema["parameters"]["properties"]["location"]["type"] == "string"
    assert schema["parameters"]["properties"]["location"]["description"]
    assert ns["get_weather"]("南京").startswith("南京")


def _c003_tool_dict(ns: dict[str, Any]) -> None:
    tool = ns["assistant"].get_tool("get_weather")
    spec = ns["get_weather_tool"]["tool"]["function"]
    assert tool.openai_schema()["function"] == spec
    resp = Controller().run_sync(ns["assistant"], "南京天气?")
    calls = [e for e in resp.swarm.events if e.type.name == "TOOL_RESULT"]
    assert calls and calls[0].data["value"] == ns["get_weather"](lms.ARGUMENT_VALUE)


def _c003_result_message(ns: dict[str, Any]) -> None:
    result = ns["result"]
    assert result.agent is ns["assistant"] and result.carry_history is False


def _c003_context_controller(ns: dict[str, Any]) -> None:
    assert ns["controller"].context_variables == {"current_time": "2024/09/01"}


def _c003_context_instruction(ns: dict[str, Any]) -> None:
    assert "2024/09/01" in ns["assistant"].instructions({"current_time": "2024/09/01"})


def _c003_context_tool(ns: dict[str, Any]) -> None:
    tool = function_tool(ns["get_weather"])
    assert tool.context_params == ("context_variables",)
    assert "context_variables" not in tool.openai_schema()["function"]["parameters"]["properties"]
    agent = Agent(llm=ns["llm"], functions=[ns["get_weather"]])
    resp = Controller(context_variables={"current_time": "2024/09/01"}).run_sync(agent, "天气?")
    results = [e.data["value"] for e in resp.swarm.events if e.type.name == "TOOL_RESULT"]
    assert results and "2024/09/01" in results[0]


def _c003_context_tool_dict(ns: dict[str, Any]) -> None:
    agent = Agent(llm=ns["llm"]).add_tools(ns["get_weather_tool"])
    assert agent.get_tool("get_weather").context_params == ("context_variables",)
    resp = Controller(context_variables={"current_time": "2024/09/03"}).run_sync(agent, "天气?")
    results = [e.data["value"] for e in resp.swarm.events if e.type.name == "TOOL_RESULT"]
    assert results and "2024/09/03" in results[0]


def _c003_result_context(ns: dict[str, Any]) -> None:
    assert ns["result"].context_variables == {"current_time": "2024/09/02"}


def _c003_mcp_server(ns: dict[str, Any]) -> None:
    """The seed's server, run as a real process over stdio and over streamable HTTP on loopback."""
    listed = asyncio.run(ns["mcp"].list_tools())  # the example's own FastMCP object
    assert [t.name for t in listed] == ["get_weather"]

    async def call(params: dict[str, Any]) -> tuple[list[str], str]:
        async with MCPServer(params) as server:
            return [t.name for t in server.tools], await server.acall_tool("get_weather", {"city": "西安"})

    expected = {
        "city": "西安",
        "temperature_high": 20,
        "temperature_low": 18,
        "temperature_unit": "C",
        "weather": "sunny",
    }
    names, text = asyncio.run(call({"command": sys.executable, "args": [mcp_seed.seed_server_file()]}))
    assert names == ["get_weather"] and json.loads(text) == expected
    port = free_port()
    with http_server(mcp_seed.http_argv(port), port) as url:
        names, text = asyncio.run(call({"url": url}))
    assert names == ["get_weather"] and json.loads(text) == expected


def _c003_mcp_agent(ns: dict[str, Any]) -> None:
    """``await controller.run(agent, ...)`` with the seed's server: its tool called over MCP, traced."""
    runs: list[ControllerResponse] = []

    class Recorded(Controller):
        async def run(self, agent: Any, message: Any) -> ControllerResponse:
            runs.append(await super().run(agent, message))
            return runs[-1]

    ns["Controller"] = Recorded  # main() builds the seed's Controller(): recorded here
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        asyncio.run(ns["main"]())
    assert out.getvalue().strip() == "Answer to: 帮我查询南京今天的天气"
    events = runs[0].swarm.events
    kinds = [e.type for e in events]
    assert SwarmEventType.MCP_TOOL_CALL in kinds and SwarmEventType.TOOL_CALL not in kinds
    call = next(e for e in events if e.type is SwarmEventType.MCP_TOOL_CALL)
    assert call.data["name"] == "get_weather" and call.data["args"] == {"city": lms.ARGUMENT_VALUE}
    result = next(e for e in events if e.type is SwarmEventType.TOOL_RESULT)
    assert json.loads(result.data["value"])["city"] == lms.ARGUMENT_VALUE and result.data["status"] == "success"


def _c003_trace(ns: dict[str, Any]) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ns["controller"].run_sync(ns["translator"], "蛋白质")
    assert "USER_MESSAGE" in out.getvalue() and "AGENT_MESSAGE" in out.getvalue()


def _c003_team(ns: dict[str, Any]) -> None:
    team = ns["team"]
    assert isinstance(team, RoundTeam)
    assert [a.name for a in team.agents] == ["agent1", "agent2", "agent3"]


def _c003_task(ns: dict[str, Any]) -> None:
    assert ns["team"].tasks == ["请创作一首关于春天的七律诗。"]


def _c003_terminator(ns: dict[str, Any]) -> None:
    assert ns["team"].terminator == MaxTurns(10)


def _c003_team_run(ns: dict[str, Any]) -> None:
    team = ns["team"]
    seen: list[SwarmEvent] = []
    team.add_trace_callback(seen.append)
    team.run_sync()
    said = [m for m in team.global_messages if m["role"] == "assistant"]
    assert len(said) == 10  # MaxTurnsTerminator(max_turns=10): ten replies, no tools
    assert [m["content"].split("]")[0] for m in said[:3]] == ["[agent1", "[agent2", "[agent3"]
    assert seen and seen[0].type.name == "USER_MESSAGE"


_AGENTS_1_2_3 = "\n".join(f"agent{i} = Agent(name='agent{i}', llm=Qwen())" for i in (1, 2, 3)) + "\n"

SEED_003: dict[int, Status] = {
    0: Status("6f4d1d7b81", "run", check=_c003_translator),
    1: Status("005fa88b98", "run", check=_c003_instruction_args),
    2: Status("8bc3273499", "run", check=_c003_controller),
    3: Status("ddaefb405b", "run", check=_c003_run_sync),
    4: Status(
        "8f73fa4a71",
        "substituted",
        "the body `....` is a SyntaxError in Python; run with `...`",
        replace=(("....", "..."),),
        check=_c003_functions,
    ),
    5: Status(
        "2d4afc971b",
        "substituted",
        "`add_too_functions` is a typo of the seed's own `add_tool_functions` (named in its next section)",
        replace=(("add_too_functions", "add_tool_functions"),),
        check=_c003_one_weather_tool,
    ),
    6: Status("20a2139343", "run", check=_c003_decorator),
    7: Status("ed5391161d", "run", check=_c003_documented),
    8: Status("a89cef33bf", "run", check=_c003_tool_dict),
    9: Status("593c94faf9", "run", check=_c003_result_message),
    10: Status("91cafb899d", "run", check=_c003_context_controller),
    11: Status("47efb97a9d", "run", check=_c003_context_instruction),
    12: Status("dd780580d6", "run", check=_c003_context_tool),
    13: Status("ae8b8af8d1", "run", check=_c003_context_tool_dict),
    14: Status("1fc1bd9759", "run", check=_c003_result_context),
    15: Status("84d620519d", "run", check=_c003_mcp_server),
    16: Status(
        "b0105ea95d",
        "substituted",
        "`uv --directory examples/agent run mcp_server.py` becomes this environment's Python on the server "
        "example above, written unchanged to a temporary `mcp_server.py` (no `uv`, no `examples/` folder here)",
        replace=(
            ("'command': 'uv'", "'command': sys.executable"),
            ("['--directory', 'examples/agent', 'run', 'mcp_server.py']", "[MCP_SERVER_FILE]"),
        ),
        prelude="import sys\nfrom tests.seeds.mcp_seed import seed_server_file\nMCP_SERVER_FILE = seed_server_file()\n",
        check=_c003_mcp_agent,
    ),
    17: Status("15a7b3dbec", "run", check=_c003_trace),
    18: Status(
        "e935c869e8",
        "substituted",
        "`agent1`..`agent3` are not defined by the seed: the harness builds three agents first",
        prelude=_AGENTS_1_2_3,
        check=_c003_team,
    ),
    19: Status(
        "49834896ff",
        "substituted",
        "`agent1`..`agent3` are not defined by the seed: the harness builds three agents first",
        prelude=_AGENTS_1_2_3,
        check=_c003_team,
    ),
    20: Status("1c4a87c126", "run", check=_c003_task),
    21: Status("b0a2c9bbcc", "run", check=_c003_terminator),
    22: Status("1a3f3bb26d", "run", check=_c003_team_run),
}
#: names the swarm seed uses without showing their import (its `from course_graph.agent import ...`)
SETUP_003 = "from course_graph.agent import MaxTurnsTerminator, Result, RoundTeam\n"


# ---------------------------------------------------------------- seed 004: prebuilt structures


def _fields(cls: Any) -> dict[str, Any]:
    """A class's declared fields and their types (TypedDict, dataclass or pydantic model)."""
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return {name: f.annotation for name, f in cls.model_fields.items()}
    return typing.get_type_hints(cls, include_extras=True)


def _weather(city: str) -> str:
    """The weather of a city.

    Args:
        city: The city.
    """
    return f"{city}: sunny"


def _react(tools: list[Any], **kwargs: Any) -> prebuilt.ReactAgent:
    return prebuilt.create_react_agent(lms.Qwen(), tools, sleep=lambda _s: None, **kwargs)


def _c004_agent_state(_: dict[str, Any]) -> None:
    """``AgentState``: ``add_messages`` messages; ``remaining_steps`` counts down and stops tools below 2."""
    hints = _fields(prebuilt.AgentState)
    assert prebuilt.add_messages in hints["messages"].__metadata__  # the seed's reducer
    assert typing.get_args(hints["remaining_steps"]) == (int,)  # NotRequired[int]
    # behaviour: remaining_steps counts down the recursion limit, and with fewer than 2 steps
    # left a reply asking for tools ends with the seed's error message instead (never negative)
    out = _react([_weather]).invoke({"messages": ["天气?"]}, {"recursion_limit": 7})
    assert out["remaining_steps"] == 7 - 3 and isinstance(out["messages"][0], HumanMessage)
    stopped = _react([_weather]).invoke({"messages": ["天气?"]}, {"recursion_limit": 1})
    assert stopped["messages"][-1].content == NEED_MORE_STEPS and stopped["remaining_steps"] == 0
    assert not any(isinstance(m, ToolMessage) for m in stopped["messages"])


def _c004_structured_state(_: dict[str, Any]) -> None:
    """``structured_response``: the response format's object at the end of a run."""

    class Weather(BaseModel):
        city: str

    assert {"messages", "remaining_steps", "structured_response"} <= set(
        _fields(prebuilt.AgentStateWithStructuredResponse)
    )
    out = _react([_weather], response_format=Weather).invoke({"messages": ["天气?"]})
    assert out["structured_response"] == Weather(city=lms.ARGUMENT_VALUE)


def _c004_structured(ns: dict[str, Any]) -> None:
    response = ns["result"]["structured_response"]
    assert isinstance(response, ns["SearchResult"])  # the model object, not a dict
    assert response.title == lms.ARGUMENT_VALUE
    assert isinstance(ns["result"]["messages"][-1], AIMessage) and not ns["result"]["messages"][-1].tool_calls


def _c004_tool_call(_: dict[str, Any]) -> None:
    """``ToolCall`` dicts in an ``AIMessage``, answered by a ``ToolMessage`` of the same id and a status."""
    hints = _fields(prebuilt.ToolCall)
    assert hints["name"] is str and hints["id"] is str and hints["type"] == typing.Literal["tool_call"]
    out = _react([_weather]).invoke({"messages": ["天气?"]})
    ai, result = out["messages"][1], out["messages"][2]
    assert isinstance(ai, AIMessage) and isinstance(result, ToolMessage)
    call = ai.tool_calls[0]
    assert set(call) == {"name", "args", "id", "type"} and call["type"] == "tool_call"
    assert call["name"] == "_weather" and call["args"] == {"city": lms.ARGUMENT_VALUE}
    assert result.tool_call_id == call["id"] and result.name == "_weather" and result.status == "success"


def _c004_markers(_: dict[str, Any]) -> None:
    """``InjectedState`` is a read-only copy (a write is an error message), ``InjectedStore`` read-write."""
    assert prebuilt.InjectedState() is prebuilt.InjectedState
    assert prebuilt.InjectedStore() is prebuilt.InjectedStore

    def meddle(
        city: str,
        state: Annotated[dict, prebuilt.InjectedState],
        store: Annotated[prebuilt.BaseStore, prebuilt.InjectedStore],
    ) -> str:
        """Try to change the state; write the store."""
        store.put(("seen",), "city", city)
        state["prefs"]["units"] = "F"  # a nested change touches only the tool's copy
        state["user_id"] = "HACKED"  # read-only: raises
        return "changed"

    agent = _react([meddle])
    out = agent.invoke({"messages": ["天气?"], "user_id": "u1", "prefs": {"units": "C"}})
    assert out["user_id"] == "u1" and out["prefs"] == {"units": "C"}
    result = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert result.status == "error" and "does not support item assignment" in result.content
    assert agent.store.get(("seen",), "city") == lms.ARGUMENT_VALUE  # the store is read-write


def _c004_injected(ns: dict[str, Any]) -> None:
    my_tool = ns["my_tool"]
    assert my_tool.states == ("state",) and my_tool.stores == ("store",)
    assert list(my_tool.parameters["properties"]) == ["query"]
    agent = prebuilt.create_react_agent(lms.Qwen(), [my_tool])
    out = agent.invoke({"messages": [{"role": "user", "content": "搜索"}], "user_id": "u1"})
    results = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
    assert results == [f"搜索 {lms.ARGUMENT_VALUE} for user u1"]
    saved = agent.store.get(("logs", "u1"), "last_query")
    assert saved["query"] == lms.ARGUMENT_VALUE and saved["timestamp"][:2] == "20"  # ISO 8601 text
    hits = agent.store.search(("logs",), query=lms.ARGUMENT_VALUE)
    assert [(h.namespace, h.key) for h in hits] == [(("logs", "u1"), "last_query")]


def _c004_retry_policy(_: dict[str, Any]) -> None:
    """``RetryPolicy``'s fields and the seed's defaults: 3 attempts, waits of 1 s then 2 s, any Exception."""
    hints = _fields(prebuilt.RetryPolicy)
    assert hints["max_attempts"] is int and hints["backoff_factor"] is float and hints["jitter"] is bool
    policy = _react([]).retry_policy  # the seed's defaults
    assert (policy["max_attempts"], policy["backoff_factor"], policy["jitter"]) == (3, 2.0, True)
    assert policy["retry_on"] == (Exception,)
    calls, waits = [], []

    def flaky(request: Any) -> str:
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("blip")  # any Exception is retried by default
        return "ok"

    agent = prebuilt.create_react_agent(scripted_lm(flaky), [], retry_policy={"jitter": False}, sleep=waits.append)
    assert agent.invoke({"messages": ["hi"]})["messages"][-1].content == "ok"
    assert waits == [1.0, 2.0]  # backoff_factor ** (attempt - 1)


def _c004_retry(ns: dict[str, Any]) -> None:
    policy = ns["agent"].retry_policy
    assert policy["max_attempts"] == 5 and policy["retry_on"] == (TimeoutError, ConnectionError)


def _c004_config_keys(_: dict[str, Any]) -> None:
    """Every ``RunnableConfig`` key is taken: callbacks see the events, ``recursion_limit`` bounds the steps."""
    seed_keys = {"tags", "metadata", "callbacks", "run_name", "max_concurrency", "recursion_limit", "configurable"}
    assert seed_keys <= prebuilt.RUNNABLE_CONFIG_KEYS
    seen: list[Any] = []
    config = {"callbacks": [seen.append], "recursion_limit": 9, "tags": ["t"], "run_name": "r", "metadata": {}}
    out = _react([_weather]).invoke({"messages": ["天气?"]}, {**config, "configurable": {"thread_id": "x"}})
    assert [e.type.name for e in seen][:3] == ["USER_MESSAGE", "TOOL_CALL", "TOOL_RESULT"]
    assert out["remaining_steps"] == 9 - 3 and out["run_config"]["run_name"] == "r"


def _c004_config(ns: dict[str, Any]) -> None:
    result = ns["result"]
    assert result["run_config"]["tags"] == ["production", "user-123"]
    assert result["run_config"]["configurable"] == {"thread_id": "user-123-session-abc"}
    assert result["remaining_steps"] == 50 - 3  # a tool call, its result, the answer


def _c004_base_tool(_: dict[str, Any]) -> None:
    """A ``BaseTool`` subclass with ``_run``: ``invoke``, ``ainvoke``, and a ``ToolMessage`` for a ``ToolCall``."""
    hints = _fields(prebuilt.BaseTool)
    assert hints["name"] is str and hints["description"] is str and "args_schema" in hints

    class Echo(prebuilt.BaseTool):
        name: str = "echo"
        description: str = "Echo the text."

        def _run(self, text: str) -> str:
            return text * 2

    echo = Echo()
    assert echo.invoke({"text": "ab"}) == "abab" and echo.invoke("ab") == "abab"
    assert asyncio.run(echo.ainvoke({"text": "c"})) == "cc"  # _arun defaults to _run
    message = echo.invoke({"name": "echo", "args": {"text": "x"}, "id": "call_1", "type": "tool_call"})
    assert isinstance(message, ToolMessage) and message.content == "xx" and message.tool_call_id == "call_1"


def _c004_tool_kinds(ns: dict[str, Any]) -> None:
    assert ns["my_tool"].parameters["properties"]["max_results"]["default"] == 10
    assert ns["my_tool"].invoke({"query": "x"}) == "found x"
    assert set(ns["tool"].parameters["properties"]) == {"query", "max_results"}
    assert ns["tool"].name == "search" and ns["tool"].invoke({"query": "x"}) == "found x"
    assert asyncio.run(ns["tool"].ainvoke({"query": "y"})) == "found y"
    mine = ns["MyTool"]()  # the seed's subclass, with _run and _arun
    assert (mine.name, mine.description) == ("my_tool", "我的工具")
    assert mine.invoke({"query": "z"}) == "found z" and asyncio.run(mine.ainvoke("w")) == "found w"
    out = _react([mine]).invoke({"messages": ["找"]})
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == [f"found {lms.ARGUMENT_VALUE}"]


_MODEL_AND_TOOLS = (
    "from tests.seeds.lms import Qwen\n"
    "model = Qwen()\n"
    "def search(query: str) -> str:\n"
    '    """Search the web.\n\n    Args:\n        query: What to look for.\n    """\n'
    "    return 'results for ' + query\n"
    "tools = [search]\n"
)
_SEARCH_API = (
    "def search_api(query, max_results=10):\n    return 'found ' + query\n"
    "async def async_search_api(query):\n    return 'found ' + query\n"
)

SEED_004: dict[int, Status] = {
    0: Status(
        "84c7e2b9df", "names", names={"AgentState": "routerlab.agents.prebuilt:AgentState"}, check=_c004_agent_state
    ),
    1: Status(
        "ce79db95c6",
        "names",
        names={"AgentStateWithStructuredResponse": "routerlab.agents.prebuilt:AgentStateWithStructuredResponse"},
        check=_c004_structured_state,
    ),
    2: Status(
        "f55b259d3e",
        "substituted",
        "`model` and `tools` are not defined by the seed: the harness gives a scripted model and one search tool",
        prelude=_MODEL_AND_TOOLS,
        check=_c004_structured,
    ),
    3: Status("59e89d34e5", "names", names={"ToolCall": "routerlab.agents.prebuilt:ToolCall"}, check=_c004_tool_call),
    4: Status(
        "c61d5709cc",
        "names",
        names={
            "InjectedState": "routerlab.agents.prebuilt:InjectedState",
            "InjectedStore": "routerlab.agents.prebuilt:InjectedStore",
        },
        check=_c004_markers,
    ),
    5: Status("4d62bbb1ce", "run", check=_c004_injected),
    6: Status(
        "1b957e305e", "names", names={"RetryPolicy": "routerlab.agents.prebuilt:RetryPolicy"}, check=_c004_retry_policy
    ),
    7: Status(
        "935092c879",
        "substituted",
        "`model` and `tools` are not defined by the seed: the harness gives a scripted model and one search tool",
        prelude=_MODEL_AND_TOOLS,
        check=_c004_retry,
    ),
    8: Status(
        "fa0ed6e00d",
        "names",
        names={"RunnableConfig": "routerlab.agents.prebuilt:RunnableConfig"},
        check=_c004_config_keys,
    ),
    9: Status(
        "8e3afc0d28",
        "substituted",
        "the messages are the placeholder `[...]`: run with one user message",
        replace=(("[...]", "[{'role': 'user', 'content': '查询天气'}]"),),
        check=_c004_config,
    ),
    10: Status("f613d4bc0f", "names", names={"BaseTool": "routerlab.agents.prebuilt:BaseTool"}, check=_c004_base_tool),
    11: Status(
        "0519d86b4e",
        "substituted",
        "`search_api` and `async_search_api` are not defined by the seed: the harness gives two stand-ins",
        prelude=_SEARCH_API,
        check=_c004_tool_kinds,
    ),
}
#: what seed 004's fragments use without importing it
SETUP_004 = (
    "from datetime import datetime\n"
    "from typing import Annotated, Any\n"
    "from langgraph.prebuilt import create_react_agent\n"
    "from langchain_core.tools import BaseTool, tool\n"
    "from langgraph.store.base import BaseStore\n"
)


# ---------------------------------------------------------------- seed 001: tool retrieval


def _c001_add_new(ns: dict[str, Any]) -> None:
    for left, right in ((["a", "b"], ["b", "c", "a", "d"]), ([], ["x"]), (["x"], [])):
        assert ns["_add_new"](left, right) == add_new(left, right)


def _c001_store_retrieval(ns: dict[str, Any]) -> None:
    tools = list(DEFAULT_TOOLS)
    store = tool_store(tools)
    found = ns["retrieve_tools"]("explain sql", store=store)
    assert found and found[0] == "explain_sql"
    index = FunctionIndex(tools, ns["retrieve_tools"])
    assert index.form == "store" and next(h.name for h in index.search("explain sql", 3)) == "explain_sql"


def _c001_category(ns: dict[str, Any]) -> None:
    assert ns["retrieve_tools"]("billing") == ["id_1", "id_2"]
    assert retrieval_form(ns["retrieve_tools"]) == "model"
    schema = FunctionIndex([], ns["retrieve_tools"]).retrieve_tool().parameters
    assert schema["properties"]["category"]["enum"] == ["billing", "service"]


_001_RETRIEVE = {"retrieve_tools": "routerlab.routers.retrieval:retrieve_tools"}
_001_STORE_PRELUDE = "ToolId = str\nnamespace_prefix = ('tools',)\nlimit = 3\nfilter = None\n"
_001_STATE = {"selected_tool_ids": "routerlab.agents.state:PipelineState"}

SEED_001: dict[int, Status] = {
    0: Status("e6107a4435", "names", names={**_001_RETRIEVE, **_001_STATE}, check=checks.c001_bind),
    1: Status(
        "7d94d3121c",
        "names",
        names={**_001_RETRIEVE, "store": "routerlab.agents.tools.index:tool_store"},
        check=checks.c001_store,
    ),
    2: Status(
        "c9ef116fa0",
        "names",
        names={"tool_registry": "routerlab.agents.tools.distractors:tool_registry"},
        check=checks.c001_registry,
    ),
    3: Status(
        "2869b452a9",
        "names",
        names={**_001_STATE, "_add_new": "routerlab.agents.state:add_new"},
        check=checks.c001_state_field,
    ),
    4: Status("393c3e2ac4", "run", check=_c001_add_new),
    5: Status("6e685800ae", "names", names=_001_STATE, check=checks.c001_values),
    6: Status(
        "7a81624a5b",
        "names",
        names={**_001_RETRIEVE, "store": "routerlab.agents.tools.index:tool_store"},
        check=checks.c001_bind,
    ),
    7: Status(
        "f749dc0e6a",
        "names",
        names={"tool_registry": "routerlab.agents.tools.distractors:tool_registry"},
        check=checks.c001_registry,
    ),
    8: Status(
        "b85fc5c234",
        "names",
        names={
            "index": "routerlab.agents.tools.store:MemoryStore",
            "embed": "routerlab.agents.tools.text_index:load_embedder",
        },
        check=checks.c001_index,
    ),
    9: Status(
        "34bdf81620",
        "names",
        names={"description": "routerlab.agents.tools.index:tool_document"},
        check=checks.c001_document,
    ),
    10: Status(
        "f8b48c4840",
        "substituted",
        "`namespace_prefix`, `limit`, `filter` and `ToolId` are not defined by the seed: the harness sets "
        "`('tools',)`, 3, None and str",
        prelude=_001_STORE_PRELUDE,
        check=_c001_store_retrieval,
    ),
    11: Status(
        "bc8e7bb6d9",
        "names",
        names={
            "retrieve_tools_function": "routerlab.agents.tools.index:FunctionIndex",
            "retrieve_tools_coroutine": "routerlab.agents.tools.index:resolve_awaitable",
        },
        check=checks.c001_functions,
    ),
    12: Status("9d11d5a38c", "run", check=_c001_category),
    13: Status(
        "d642b01f96",
        "names",
        names={
            "InjectedStore": "routerlab.agents.tools.schema:InjectedStore",
            "get_store_arg": "routerlab.agents.tools.schema:injected_stores",
        },
        check=checks.c001_store_arg,
    ),
    14: Status(
        "920504a472",
        "names",
        names={
            "retrieve_tools_function": "routerlab.agents.tools.index:FunctionIndex",
            "retrieve_tools_coroutine": "routerlab.agents.tools.index:resolve_awaitable",
        },
        check=checks.c001_functions,
    ),
}
SETUP_001 = (
    "from typing import Annotated, Callable, Literal\n"
    "from langgraph.prebuilt import InjectedStore\n"
    "from langgraph.store.base import BaseStore\n"
)


# ---------------------------------------------------------------- seed 000: the common agent


_000_STATE = {"CommonAgentState": "routerlab.agents.common_agent:CommonAgentState"}
_000_NODES = {"action_dispatch_node": "routerlab.agents.common_agent:SEED_GRAPH_NODES"}
_000_INFO = {"session_tool_call_info": "routerlab.agents.common_agent:session_and_chat_info"}
_000_TOOLS = {"generate_sql": "routerlab.agents.tools.base:tools"}
_000_INJECTED = {"InjectedState": "routerlab.agents.tools.schema:InjectedState"}

SEED_000: dict[int, Status] = {
    0: Status(
        "8360f69abd",
        "names",
        names={**_000_STATE, "has_internal_error": "routerlab.agents.common_agent:CommonAgentState"},
        check=checks.c000_state,
    ),
    1: Status(
        "9bd4803254",
        "names",
        names={"ToolCallInfo": "routerlab.agents.common_agent:ToolCallInfo"},
        check=checks.c000_tool_call_info,
    ),
    2: Status("cd10a2e500", "names", names=_000_TOOLS, check=checks.c000_tools),
    3: Status("f500449aca", "names", names=_000_INJECTED, check=checks.c000_injected_state),
    4: Status(
        "5b9ce1c48f",
        "names",
        names={**_000_STATE, **_000_NODES, "build_common_chat_graph": "routerlab.agents.graph:Pipeline"},
        check=checks.c000_nodes,
    ),
    5: Status(
        "19f61b9876",
        "names",
        names={**_000_STATE, "invoked_common_agent_node": "routerlab.agents.common_agent:SEED_GRAPH_NODES"},
        check=checks.c000_invoke,
    ),
    6: Status("7301f5a4eb", "names", names={**_000_STATE, **_000_NODES}, check=checks.c000_dispatch),
    7: Status(
        "418360e97f",
        "names",
        names={"tool_call_node": "routerlab.agents.common_agent:SEED_GRAPH_NODES"},
        check=checks.c000_tool_node,
    ),
    8: Status(
        "6b5e4d7678",
        "names",
        names={
            "response_to_user_chain": "routerlab.agents.common_agent:response_to_user",
            "response_agent": "routerlab.agents.common_agent:response_to_user",
        },
        check=checks.c000_response,
    ),
    9: Status(
        "32fe5ba5a9",
        "names",
        names={"intent_route": "routerlab.agents.graph:Pipeline"},
        check=checks.c000_intent_route,
    ),
    10: Status("677ebc4a67", "names", names=_000_INFO, check=checks.c000_tool_call_info),
    11: Status("e11e304f95", "names", names=_000_INJECTED, check=checks.c000_cites),
    12: Status("078991be51", "names", names=_000_TOOLS, check=checks.c000_subagent),
    13: Status("08abc6678f", "names", names=_000_TOOLS, check=checks.c000_tool_node),
    14: Status("2ea3a67269", "names", names=_000_NODES, check=checks.c000_dispatch),
    15: Status("99a4162983", "names", names=_000_INFO, check=checks.c000_session_info),
    16: Status(
        "3e2855d61b",
        "names",
        names={"has_internal_error": "routerlab.agents.common_agent:CommonAgentState"},
        check=checks.c000_internal_error,
    ),
    17: Status(
        "fac2bca01d",
        "names",
        names={"timeout_timestamp": "routerlab.agents.common_agent:CommonAgentState"},
        check=checks.c000_timeout,
    ),
    18: Status(
        "b49a498a86",
        "names",
        names={"tool_call_input_mapping": "routerlab.agents.common_agent:ToolCallInfo"},
        check=checks.c000_cites,
    ),
}


# ---------------------------------------------------------------- seed 002: the streaming API


SEED_002: dict[int, Status] = {
    0: Status(
        "af32b20182",
        "names",
        names={
            "process_question_stream": "routerlab.agents.graph:Pipeline.stream",
            "conversation_id": "routerlab.app.ask_request:AskRequest",
        },
        check=checks.c002_request,
    ),
    1: Status(
        "6a94bfdda0", "names", names={"ask_agent_stream": "routerlab.serve.app:create_app"}, check=checks.c002_route
    ),
    2: Status(
        "33f5dccebb",
        "names",
        names={"_map_node_to_progress": "routerlab.serve.contract:present"},
        check=checks.c002_progress,
    ),
}

TABLES: dict[str, tuple[dict[int, Status], str]] = {
    "000": (SEED_000, ""),
    "001": (SEED_001, SETUP_001),
    "002": (SEED_002, ""),
    "003": (SEED_003, SETUP_003),
    "004": (SEED_004, SETUP_004),
}


def _cases() -> list[Any]:
    cases = []
    for seed, (table, _) in TABLES.items():
        for index, status in table.items():
            cases.append(pytest.param(seed, index, id=f"{seed}-{index:02d}-{status.kind}"))
    return cases


def _example(seed: str, index: int) -> tuple[list[Example], Status]:
    found = examples(seed)
    table = TABLES[seed][0]
    assert len(found) == len(table), (
        f"seed {seed} has {len(found)} Python examples, the table {len(table)}: re-check the table"
    )
    status = table[index]
    assert fingerprint(found[index].code) == status.fp, (
        f"seed {seed} example {index} changed (fingerprint {fingerprint(found[index].code)}, "
        f"table {status.fp}): re-check its status"
    )
    return found, status


def run_row(seed: str, index: int, db: Path) -> None:
    """One row: a fragment's names found in it and resolved, then its check; or the example run, then its check.

    Raises:
        AssertionError: When the row's check (or the harness's) fails.
    """
    found, status = _example(seed, index)
    assert status.check is not None, f"seed {seed} example {index} has no check: every row asserts behaviour"
    context = {"__db__": str(db), "__code__": found[index].code}
    if status.kind == "names":
        used = names_used(found[index].code)
        missing = sorted(set(status.names) - used)
        assert not missing, f"the table names {missing}, which seed {seed} example {index} does not use"
        for target in status.names.values():
            resolve(target)  # raises ImportError / AttributeError for a name routerlab lacks
        status.check(context)
        return
    if status.kind == "substituted":
        assert status.why and (status.replace or status.prelude)
    namespace = run_session(found, TABLES[seed][0], index, setup=TABLES[seed][1])
    namespace.update(context)
    status.check(namespace)


@pytest.mark.parametrize(("seed", "index"), _cases())
def test_seed_example(seed: str, index: int, sales_db: Path) -> None:
    """Each example: run and checked, or a fragment whose names resolve and whose behaviour is checked."""
    run_row(seed, index, sales_db)


def _drop_field(cls: type, name: str) -> Any:
    def mutate(mp: pytest.MonkeyPatch) -> None:
        mp.delitem(cls.__annotations__, name)

    return mutate


def _mutate_common_agent_view(mp: pytest.MonkeyPatch) -> None:
    real = common_agent.common_agent_state
    mp.setattr(common_agent, "common_agent_state", lambda *a, **k: {**real(*a, **k), "has_internal_error": False})


def _no_step_rule(mp: pytest.MonkeyPatch) -> None:
    from routerlab.agents.swarm import runner

    init = runner.Swarm.__init__
    mp.setattr(runner.Swarm, "__init__", lambda self, lm, **kw: init(self, lm, **{**kw, "step_limit": None}))


#: (seed, row, what is removed, how): each mutation removes the feature its row checks
MUTATIONS = [
    ("000", 0, "CommonAgentState.timeout_timestamp", _drop_field(common_agent.CommonAgentState, "timeout_timestamp")),
    ("000", 3, "read-only InjectedState", lambda mp: mp.setattr("routerlab.agents.tools.base.read_only", dict)),
    ("000", 16, "has_internal_error in the view", _mutate_common_agent_view),
    ("001", 10, "MemoryStore.search", lambda mp: mp.setattr(MemoryStore, "search", lambda *a, **k: [])),
    (
        "001",
        11,
        "awaiting a retrieval coroutine",
        lambda mp: mp.setattr(tool_index_module, "resolve_awaitable", lambda v: v),
    ),
    ("002", 2, "classify's question_type", lambda mp: mp.setattr("routerlab.serve.contract.QUESTION_TYPES", {})),
    (
        "003",
        16,
        "MCP_TOOL_CALL events",
        lambda mp: mp.setattr(runner_module, "call_event", lambda s: (SwarmEventType.TOOL_CALL, {})),
    ),
    ("003", 22, "RoundTeam.run_sync", lambda mp: mp.delattr(RoundTeam, "run_sync")),
    ("004", 0, "the remaining_steps stop rule", _no_step_rule),
    ("004", 3, "ToolCall.type", _drop_field(prebuilt.ToolCall, "type")),
    ("004", 4, "read-only InjectedState", lambda mp: mp.setattr(prebuilt, "read_only", dict)),
    ("004", 6, "the seed's retry defaults", lambda mp: mp.setitem(SEED_RETRY_POLICY, "retry_on", (ConnectionError,))),
    ("004", 10, "BaseTool.ainvoke", lambda mp: mp.delattr(prebuilt.BaseTool, "ainvoke")),
]


@pytest.mark.parametrize(
    ("seed", "index", "removed", "mutate"), MUTATIONS, ids=[f"{m[0]}-{m[1]:02d}" for m in MUTATIONS]
)
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_a_row_fails_when_its_feature_is_removed(
    seed: str, index: int, removed: str, mutate: Any, sales_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sample of rows, each run with the feature it checks removed: the row must fail."""
    checks.sql_run.cache_clear()
    checks.retrieval_run.cache_clear()
    mutate(monkeypatch)
    try:
        run_row(seed, index, sales_db)
    except (AssertionError, AttributeError, KeyError, TypeError):
        pass  # the row's own check failed: an assertion, or the removed attribute or key it reads
    else:
        pytest.fail(f"seed {seed} row {index} still passes without {removed}")
    finally:
        monkeypatch.undo()
        checks.sql_run.cache_clear()
        checks.retrieval_run.cache_clear()


def test_no_row_is_left_unrun() -> None:
    """Every example either runs or is a fragment whose behaviour is checked: none is only named."""
    for seed, (table, _) in TABLES.items():
        for index, status in table.items():
            assert status.kind in ("run", "substituted", "names"), (seed, index, status.kind)
            assert status.check is not None, (seed, index)


def test_every_seed_has_a_table() -> None:
    """Every seed file in the folder has its table here."""
    folder = seeds_dir()
    assert folder is not None
    seeds = sorted(p.name[:3] for p in folder.glob("[0-9][0-9][0-9]_*.txt"))
    assert seeds == sorted(TABLES)


def test_controller_run_is_awaitable() -> None:
    """Seed 003's ``await controller.run(agent, message)`` (the MCP example's call, without MCP)."""
    agent = Agent(llm=lms.Qwen(), instruction="你是一个翻译")
    resp = asyncio.run(Controller().run(agent, "蛋白质"))
    assert resp.message == "Answer to: 蛋白质" and resp.agent is agent


_LABELS = {
    "run": "runs (imports and LM only)",
    "substituted": "runs with a substitution",
    "names": "fragment: behaviour checked",
}
_ROW = re.compile(
    r"^\| (\d{3}) \| (\d+) \| .+? \| (" + "|".join(re.escape(v) for v in _LABELS.values()) + r") \| (.*) \|$"
)
_COUNT_ROW = re.compile(r"^\| (\d{3}) [^|]* \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$")


def test_docs_list_every_example_with_its_status() -> None:
    """docs/seeds.md has one row per example, with the status and reason of the table here."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "seeds.md").read_text(encoding="utf-8")
    rows = {(m.group(1), int(m.group(2))): (m.group(3), m.group(4)) for m in map(_ROW.match, text.splitlines()) if m}
    expected = {(seed, i) for seed, (table, _) in TABLES.items() for i in table}
    assert set(rows) == expected
    for (seed, i), (label, note) in rows.items():
        status = TABLES[seed][0][i]
        assert label == _LABELS[status.kind], (seed, i)
        assert status.why in note, (seed, i)
        if status.kind == "names":  # the names it maps and what its check drives
            for seed_name, target in status.names.items():
                assert f"`{seed_name}` → `{target}`" in note, (seed, i, seed_name)
            assert status.check is not None and _summary(status.check) in note, (seed, i)
    count_rows = list(filter(None, map(_COUNT_ROW.match, text.splitlines())))
    assert sorted(m.group(1) for m in count_rows) == sorted(TABLES)
    for m in count_rows:
        row = counts()[m.group(1)]
        found = [int(g) for g in m.groups()[1:]]
        kinds = ("found", "run", "substituted", "names")
        assert found == [row.get(k, 0) for k in kinds], m.group(1)


def _summary(check: Any) -> str:
    """The first line of a check's docstring (what docs/seeds.md says the row checks)."""
    return (check.__doc__ or "").strip().splitlines()[0]


def counts() -> Mapping[str, dict[str, int]]:
    """Examples per seed and kind (the report's numbers)."""
    out: dict[str, dict[str, int]] = {}
    for seed, (table, _) in TABLES.items():
        row = out.setdefault(seed, {"found": len(table)})
        for status in table.values():
            row[status.kind] = row.get(status.kind, 0) + 1
    return out


@pytest.mark.model
@pytest.mark.parametrize("seed", sorted(TABLES))
def test_one_example_per_seed_on_the_embedded_model(seed: str, sales_db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """One example per seed with the embedded model in place of the seed's (the contract, not quality).

    The small embedded model (0.5B): the contract holds for any real model, and it costs about a
    third of the 1.5B's time in CI (the five: 80 s; on the 1.5B, two of them alone took 141 s).
    """
    from routerlab import routers
    from routerlab.agents.graph import Pipeline
    from routerlab.agents.lm import resolve_lm

    lm = resolve_lm("local:0.5b", max_tokens=128)
    monkeypatch.setattr(lms, "Qwen", lambda *a, **k: lm)
    if seed == "003":  # the translator, run by the controller
        found, _ = _example(seed, 3)
        namespace = run_session(found, SEED_003, 3, setup=SETUP_003)
        assert namespace["resp"].agent is namespace["translator"] and namespace["resp"].turns >= 1
    elif seed == "004":  # create_react_agent with a structured response
        found, _ = _example(seed, 2)
        try:
            namespace = run_session(found, SEED_004, 2, setup=SETUP_004)
        except prebuilt.ContractError as exc:  # a model may write JSON that does not validate: said so
            assert "does not validate" in str(exc)
        else:
            assert isinstance(namespace["result"]["structured_response"], namespace["SearchResult"])
    elif seed == "001":  # the seed's store-form retrieve_tools plugged into the retrieval router
        found, _ = _example(seed, 10)
        namespace = run_session(found, SEED_001, 10, setup=SETUP_001)
        monkeypatch.setattr(
            "routerlab.agents.tools.index.index_factory",
            lambda spec: lambda tools: FunctionIndex(tools, namespace["retrieve_tools"], kind="seed"),
        )
        router = routers.router.build("retrieval")
        trace = Pipeline(router, lm).run("How many customers are there?", str(sales_db))
        assert trace.route_decisions and trace.route_decisions[0]["method"].startswith("retrieval:")
    else:  # 000 (the common agent) and 002 (its stream): one run of the pipeline's llm router
        events = list(Pipeline(routers.router.build("llm"), lm).stream("How many customers are there?", str(sales_db)))
        assert events[-1]["type"] in ("completed", "error")
