"""Checks of seeds 000, 001 and 002's fragments: each runs the behaviour its names stand for.

Seeds 000 and 002 are excerpts of their applications, seed 001's mostly of LangGraph-BigTool's
own graph: there is nothing to run but the names they use. Every row's check therefore drives
routerlab's counterpart on real components (the pipeline on the real DuckDB file of the
``sales_db`` fixture, the real store, the real streaming app) and asserts what the fragment
shows, so removing the feature turns the row red (``test_seed_examples.py``'s mutation test).

A check takes the row's context: ``{"__db__": path of the DuckDB file, "__code__": the
fragment's text}``.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import itertools
import json
import re
import typing
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, ToolMessage

from routerlab import routers
from routerlab.agents import common_agent
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import resolve_lm, scripted_lm
from routerlab.agents.routing import RouteDecision
from routerlab.agents.state import PipelineState, add_new
from routerlab.agents.tools import DEFAULT_TOOLS, tools
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.distractors import tool_registry
from routerlab.agents.tools.index import TOOL_NAMESPACE, FunctionIndex, tool_document, tool_store
from routerlab.agents.tools.schema import InjectedState, InjectedStore, function_schema, injected_stores
from routerlab.agents.tools.store import MemoryStore
from routerlab.agents.tools.text_index import load_embedder

QUESTION = "How many areas have EV charging?"
SQL_PLAN = ["data_discovery", "generate_sql", "execute_sql_and_analyze_result"]


# ---------------------------------------------------------------- shared pipeline runs


def _run(pipeline: Pipeline, db: str, conv: str, question: str = QUESTION, **kwargs: Any) -> dict[str, Any]:
    list(pipeline.stream(question, db, conversation_id=conv, **kwargs))
    return dict(pipeline.final_state(conv))


@functools.cache
def sql_run(db: str) -> dict[str, Any]:
    """The final state of one SQL turn (rules router, scripted model) on the DuckDB file ``db``."""
    pipeline = Pipeline(routers.router.build("rules"), resolve_lm("scripted:basic"))
    return _run(pipeline, db, "seed-sql", run_name="seed run")


def _records(state: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(state["tool_calls"].values(), key=lambda r: r["step"])


def _by_name(state: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in _records(state) if r["name"] == name)


# ---------------------------------------------------------------- seed 000: the common agent


def _seed_fields(code: str) -> list[str]:
    """The annotated fields of the fragment's class body (seed 000's ``CommonAgentState``)."""
    cls = next(n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.ClassDef))
    return [n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]


def c000_state(ctx: dict[str, Any]) -> None:
    """Every field of the seed's ``CommonAgentState``, computed from a real turn's state."""
    fields = _seed_fields(ctx["__code__"])
    assert len(fields) == 17
    hints = typing.get_type_hints(common_agent.CommonAgentState)
    assert set(fields) <= set(hints), sorted(set(fields) - set(hints))
    state = sql_run(ctx["__db__"])
    view = common_agent.common_agent_state(state)
    assert set(fields) <= set(view)
    assert view["question"] == QUESTION and view["session_id"] == "seed-sql" and view["chat_id"] == 1
    assert view["timeout_timestamp"] == state["deadline"] and view["run_name"] == "seed run"
    assert view["sql_dialect"] == "duckdb" and view["original_sql"] is None and view["error_message"] is None
    discovery = _by_name(state, "data_discovery")["output"]["tables"]
    assert view["selected_tables"] == [{"name": t} for t in discovery] and discovery
    assert list(view["chat_tool_call_info"]["tool_call_name_mapping"].values()) == SQL_PLAN
    assert view["messages"] == state["messages"] and view["interruption_reason"] == ""
    assert view["has_internal_error"] is False and view["internal_error_message"] is None


def c000_tool_call_info(_: dict[str, Any]) -> None:
    """The three mappings keyed by tool_call_id, and the session / chat split."""
    assert set(typing.get_type_hints(common_agent.ToolCallInfo)) == {
        "tool_call_output_mapping",
        "tool_call_name_mapping",
        "tool_call_input_mapping",
    }
    records = {
        "c2": {"id": "c2", "name": "generate_sql", "args": {"related_table_source_tool_call_id": "c1"}, "step": 1},
        "c1": {"id": "c1", "name": "data_discovery", "args": {"user_question": "q"}, "output": {"t": 1}, "step": 0},
    }
    info = common_agent.tool_call_info(records)
    assert list(info["tool_call_name_mapping"].items()) == [("c1", "data_discovery"), ("c2", "generate_sql")]
    assert info["tool_call_output_mapping"] == {"c1": {"t": 1}}
    session, chat = common_agent.session_and_chat_info({"tool_calls": {"c2": records["c2"]}}, [records["c1"]])
    assert set(session["tool_call_name_mapping"]) == {"c1", "c2"} and set(chat["tool_call_name_mapping"]) == {"c2"}


def c000_tools(ctx: dict[str, Any]) -> None:
    """The seed's tools routerlab has are registered pipeline tools with a schema the model sees."""
    shared = {"ask_human", "data_discovery", "generate_sql", "fix_sql", "explain_sql", "execute_sql_and_analyze_result"}
    assert shared <= {t.name for t in DEFAULT_TOOLS}
    for name in shared:
        registered = tools.get(name)()
        assert isinstance(registered, Tool) and registered.openai_schema()["function"]["name"] == name
    assert _by_name(sql_run(ctx["__db__"]), "generate_sql")["status"] == "success"


def _state_reader_tool() -> Tool:
    def read_question(state: Annotated[dict, InjectedState]) -> dict[str, Any]:
        """Answer with the question the run's state holds, after trying to change it."""
        question = state["question"]
        try:
            state["question"] = "HACKED"  # type: ignore[index]
            changed = True
        except TypeError:
            changed = False
        return {"answer": f"state question: {question}", "changed": changed}

    description, parameters, injected = function_schema(read_question)
    return Tool("read_question", description, parameters, read_question, injected, states=("state",), terminal=True)


def c000_injected_state(ctx: dict[str, Any]) -> None:
    """A pipeline tool with ``InjectedState`` reads the run's state, read-only, hidden from its schema."""
    reader = _state_reader_tool()
    assert reader.parameters["properties"] == {}
    lm = scripted_lm([{"name": "read_question", "args": {}}])
    pipeline = Pipeline(routers.router.build("llm"), lm, tools=[*DEFAULT_TOOLS, reader])
    state = _run(pipeline, ctx["__db__"], "seed-state", question="Who asks?")
    record = _by_name(state, "read_question")
    assert record["output"] == {"answer": "state question: Who asks?", "changed": False}
    assert state["question"] == "Who asks?"


def c000_nodes(ctx: dict[str, Any]) -> None:
    """The seed's nodes are the pipeline graph's, and a turn goes through them in the seed's order."""
    pipeline = Pipeline(routers.router.build("rules"), scripted_lm(["ok"]))
    assert set(common_agent.SEED_GRAPH_NODES.values()) <= set(pipeline.graph.get_graph().nodes)
    path = sql_run(ctx["__db__"])["path"]
    nodes = common_agent.SEED_GRAPH_NODES
    assert path[0] == nodes["invoke_common_agent"] and path[-1] == nodes["response_to_user_chain"]
    # every router decision goes to action_dispatch, which sends a tool call to tool_call_node
    for before, after in itertools.pairwise(path):
        if before == nodes["invoke_common_agent"]:
            assert after == nodes["action_dispatch_node"]
        if after == nodes["tool_call_node"]:
            assert before == nodes["action_dispatch_node"]


def c000_invoke(ctx: dict[str, Any]) -> None:
    """``invoke_common_agent``: each visit is one router decision, recorded with its cost."""
    state = sql_run(ctx["__db__"])
    visits = state["path"].count(common_agent.SEED_GRAPH_NODES["invoke_common_agent"])
    assert visits == len(state["router_usage"]) == 3
    decisions = [m for m in state["messages"] if isinstance(m, AIMessage)]
    assert [c["name"] for m in decisions for c in m.tool_calls] == SQL_PLAN


def c000_tool_node(ctx: dict[str, Any]) -> None:
    """``tool_call_node``: a ToolMessage answers every call, by id, with its status."""
    state = sql_run(ctx["__db__"])
    calls = [c for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [r.tool_call_id for r in results] == [c["id"] for c in calls]
    assert [r.status for r in results] == ["success"] * 3 and [r.name for r in results] == SQL_PLAN


def c000_response(ctx: dict[str, Any]) -> None:
    """``response_to_user_chain``: the last successful agent, its output and the state."""
    state = {
        "question": "q",
        "tool_calls": {
            "c1": {"id": "c1", "name": "data_discovery", "status": "success", "output": {"t": 1}, "step": 0},
            "c2": {"id": "c2", "name": "generate_sql", "status": "success", "output": {"sql": "SELECT 1"}, "step": 1},
            "c3": {"id": "c3", "name": "execute_sql_and_analyze_result", "status": "error", "step": 2},
        },
    }
    out = common_agent.response_to_user(state)
    assert out["response_agent"] == "generate_sql" and out["sub_agent_response"] == {"sql": "SELECT 1"}
    state = sql_run(ctx["__db__"])
    real = common_agent.response_to_user(state)
    assert real["response_agent"] == "execute_sql_and_analyze_result"
    assert real["sub_agent_response"] == _by_name(state, "execute_sql_and_analyze_result")["output"]
    assert real["mid_state"]["rows"] == state["rows"] and state["rows"]


def c000_intent_route(ctx: dict[str, Any]) -> None:
    """``intent_route``: a named agent bypasses the router (``direct_tool_node``); otherwise the router decides."""
    pipeline = Pipeline(routers.router.build("rules"), resolve_lm("scripted:basic"))
    direct = _run(
        pipeline, ctx["__db__"], "seed-direct", question="Explain: SELECT count(*) FROM areas", agent="explain_sql"
    )
    assert direct["path"][0] == common_agent.SEED_GRAPH_NODES["direct_tool_node"]
    assert [r["name"] for r in _records(direct)] == ["explain_sql"] and not direct["router_usage"]
    assert sql_run(ctx["__db__"])["path"][0] == common_agent.SEED_GRAPH_NODES["invoke_common_agent"]


def c000_session_info(ctx: dict[str, Any]) -> None:
    """A real turn's ``session_tool_call_info``: name, input and output of every call, by id."""
    state = sql_run(ctx["__db__"])
    session = common_agent.common_agent_state(state)["session_tool_call_info"]
    ids = [r["id"] for r in _records(state)]
    assert list(session["tool_call_name_mapping"]) == ids and list(session["tool_call_output_mapping"]) == ids
    assert session["tool_call_input_mapping"][ids[0]] == {"question": QUESTION}
    c000_tool_call_info(ctx)


def c000_cites(ctx: dict[str, Any]) -> None:
    """``generate_sql`` names the ``data_discovery`` call whose output it reads, by tool_call_id."""
    state = sql_run(ctx["__db__"])
    discovery, generate = _by_name(state, "data_discovery"), _by_name(state, "generate_sql")
    assert generate["args"]["discovery_call_id"] == discovery["id"] == generate["parent"]
    assert tools.get("generate_sql")().refs == {"discovery_call_id": ("data_discovery",)}
    inputs = common_agent.common_agent_state(state)["session_tool_call_info"]["tool_call_input_mapping"]
    assert inputs[generate["id"]]["discovery_call_id"] == discovery["id"]


def c000_subagent(ctx: dict[str, Any]) -> None:
    """A tool runs a sub-agent of its own: ``generate_sql``'s model call is counted under it."""
    usage = {u["tool"]: u for u in sql_run(ctx["__db__"])["subagent_usage"]}
    assert usage["generate_sql"]["lm_calls"] == 1 and usage["data_discovery"]["lm_calls"] == 0
    assert _by_name(sql_run(ctx["__db__"]), "generate_sql")["output"]["sql"].upper().startswith("SELECT")


def c000_internal_error(ctx: dict[str, Any]) -> None:
    """The try/except around the router: an exception sets ``has_internal_error`` and ends the turn."""

    class Broken:
        name = "broken"

        def bind(self, env: Any) -> None:
            pass

        def decide(self, state: Any) -> RouteDecision:
            raise RuntimeError("router model crashed")

    state = _run(Pipeline(Broken(), scripted_lm(["x"])), ctx["__db__"], "seed-internal")
    assert state["has_internal_error"] is True and "router model crashed" in state["internal_error_message"]
    view = common_agent.common_agent_state(state)
    assert view["has_internal_error"] and view["interruption_reason"] == "internal_error"
    assert state["path"][-1] == common_agent.SEED_GRAPH_NODES["response_to_user_chain"]


def c000_timeout(ctx: dict[str, Any]) -> None:
    """``timeout_timestamp``: the turn's deadline; a turn past it ends with a timeout."""
    pipeline = Pipeline(
        routers.router.build("rules"), resolve_lm("scripted:basic"), config=PipelineConfig(timeout_s=1e-6)
    )
    state = _run(pipeline, ctx["__db__"], "seed-timeout")
    view = common_agent.common_agent_state(state)
    assert state["error_class"] == "timeout" and view["interruption_reason"] == "timeout"
    assert view["timeout_timestamp"] == state["deadline"] and view["timeout_timestamp"] < state["deadline"] + 1


def c000_dispatch(ctx: dict[str, Any]) -> None:
    """``action_dispatch_node``'s decision tree: a terminal tool ends the turn, ``ask_human`` ends it."""
    c000_nodes(ctx)
    state = sql_run(ctx["__db__"])
    assert tools.get("execute_sql_and_analyze_result")().terminal and state["path"][-2:] == ["dispatch", "respond"]
    ask = scripted_lm(lambda r: {"name": "ask_human", "args": {"question": "Which year?"}} if r.tools else "x")
    asked = _run(Pipeline(routers.router.build("llm"), ask), ctx["__db__"], "seed-ask", question="Sales?")
    assert asked["ask_human"] == "Which year?" and not asked.get("error")


# ---------------------------------------------------------------- seed 001: tool retrieval


def _chain_reply(request: Any) -> Any:
    """A model that searches for the SQL plan's next tool until it has it bound, then calls it."""
    text = " ".join(str(p) for m in request.messages for p in m.parts)
    names = [t.name for t in request.tools or ()]
    if not request.tools:
        return "SELECT count(*) FROM areas WHERE has_ev"
    done = {n for n in SQL_PLAN if f"[{n} tool_call_id=" in text}
    wanted = next(n for n in SQL_PLAN if n not in done)
    if wanted not in names:
        return {"name": "retrieve_tools", "args": {"query": wanted.replace("_", " ")}}
    ids = dict(re.findall(r"\[(\w+) tool_call_id=(\w+) status=success\]", text))
    args = {
        "data_discovery": {"question": QUESTION},
        "generate_sql": {"question": QUESTION, "discovery_call_id": ids.get("data_discovery", "")},
        "execute_sql_and_analyze_result": {"sql_call_id": ids.get("generate_sql", "")},
    }[wanted]
    return {"name": wanted, "args": args}


@functools.cache
def retrieval_run(db: str) -> tuple[dict[str, Any], tuple[tuple[str, ...], ...]]:
    """A retrieval-router turn (BM25 index) and the tool names bound in each of its model requests."""
    bound: list[tuple[str, ...]] = []

    def reply(request: Any) -> Any:
        if request.tools:
            bound.append(tuple(t.name for t in request.tools))
        return _chain_reply(request)

    router = routers.router.build("retrieval", index="bm25", k=3)
    state = _run(Pipeline(router, scripted_lm(reply)), db, "seed-retrieval")
    return state, tuple(bound)


def c001_bind(ctx: dict[str, Any]) -> None:
    """``call_model``: the model first sees only ``retrieve_tools``, then it and the tools selected."""
    state, bound = retrieval_run(ctx["__db__"])
    assert bound[0] == ("retrieve_tools",)
    assert all("retrieve_tools" in b for b in bound) and any(len(b) > 1 for b in bound)
    assert [r["name"] for r in _records(state)] == SQL_PLAN and state["rows"] == [[1]]
    assert set(state["selected_tool_ids"]) >= set(SQL_PLAN)


def c001_state_field(ctx: dict[str, Any]) -> None:
    """``selected_tool_ids`` is a state field merged by ``_add_new``: no repeats, first-seen order."""
    hint = typing.get_type_hints(PipelineState, include_extras=True)["selected_tool_ids"]
    assert add_new in hint.__metadata__
    state, _bound = retrieval_run(ctx["__db__"])
    ids = state["selected_tool_ids"]
    assert len(ids) == len(set(ids)) and ids[: len(SQL_PLAN)] != [] and ids == add_new([], ids)


def c001_values(ctx: dict[str, Any]) -> None:
    """The state before and after retrieval: messages grow, ``selected_tool_ids`` fills."""
    state, _bound = retrieval_run(ctx["__db__"])
    kinds = [type(m).__name__ for m in state["messages"]]
    assert kinds[0] == "HumanMessage" and "ToolMessage" in kinds and state["selected_tool_ids"]


def c001_store(ctx: dict[str, Any]) -> None:
    """``select_tools`` searches the store of tool descriptions: its hits are the tools selected."""
    store = tool_store(DEFAULT_TOOLS)
    hits = store.search(TOOL_NAMESPACE, query="explain what a SQL query does", limit=2)
    assert hits[0].key == "explain_sql" and len(hits) == 2 and hits[0].score >= hits[1].score
    assert store.last_search["index"] in ("embedding", "bm25")
    c001_bind(ctx)


def c001_registry(_: dict[str, Any]) -> None:
    """``tool_registry``: id -> tool, the real tools among distractors, every id unique."""
    registry = tool_registry(20, seed=3)
    names = [t.name for t in registry]
    assert len(registry) == 20 and len(set(names)) == 20
    assert {t.name for t in DEFAULT_TOOLS} <= set(names)
    assert all(isinstance(t, Tool) and t.description for t in registry)


def c001_index(_: dict[str, Any]) -> None:
    """``InMemoryStore(index={"embed", "dims", "fields"})``: the store ranks by the embedder's vectors."""
    embedder = load_embedder()
    store = MemoryStore(index={"embed": embedder, "dims": 384, "fields": ["description"]})
    for t in DEFAULT_TOOLS:
        store.put(TOOL_NAMESPACE, t.name, {"description": tool_document(t), "note": "unrelated words"})
    hits = store.search(TOOL_NAMESPACE, query="repair a failing SQL statement", limit=1)
    assert hits[0].key == "fix_sql" and store.last_search == {"index": "embedding", "fallback": None}


def c001_document(_: dict[str, Any]) -> None:
    """The indexed document of a tool is ``"name: description"``, stored under ``description``."""
    t = DEFAULT_TOOLS[0]
    assert tool_document(t) == f"{t.name}: {t.description}"
    assert tool_store([t]).get(TOOL_NAMESPACE, t.name) == {"description": tool_document(t)}


def c001_store_arg(_: dict[str, Any]) -> None:
    """``get_store_arg``: the parameter annotated ``InjectedStore``, hidden from the schema."""

    def search(query: str, store: Annotated[MemoryStore, InjectedStore]) -> list[str]:
        """Search.

        Args:
            query: What to find.
        """
        return []

    assert injected_stores(search) == ("store",) and injected_stores(c001_document) == ()
    assert list(function_schema(search)[1]["properties"]) == ["query"]


async def _retrieve_async(query: str, tools: Any, k: int) -> list[str]:
    await asyncio.sleep(0)
    return ["explain_sql", "fix_sql"][:k]


def _retrieve_sync(query: str, tools: Any, k: int) -> list[str]:
    return ["explain_sql", "fix_sql"][:k]


def c001_functions(_: dict[str, Any]) -> None:
    """``retrieve_tools_function`` and ``retrieve_tools_coroutine``: both plug in, the coroutine awaited."""
    sync = FunctionIndex(list(DEFAULT_TOOLS), _retrieve_sync).search("q", 2)
    awaited = FunctionIndex(list(DEFAULT_TOOLS), _retrieve_async).search("q", 2)
    assert [h.name for h in awaited] == [h.name for h in sync] == ["explain_sql", "fix_sql"]


# ---------------------------------------------------------------- seed 002: the streaming API


def _app_stream(db: str, question: str) -> list[dict[str, Any]]:
    """The data of every SSE message of a real ``ask_agent_stream`` request (in-process ASGI)."""
    from fastapi.testclient import TestClient

    from routerlab.serve.app import API_PREFIX, ServeSettings, create_app

    app = create_app(ServeSettings(router="rules", lm=resolve_lm("scripted:basic"), database=Path(db), poll_s=0.05))
    with TestClient(app) as client:
        body = client.post(f"{API_PREFIX}/ask_agent_stream", json={"question": question}).text
    return [json.loads(line[len("data: ") :])["data"] for line in body.splitlines() if line.startswith("data: ")]


def c002_request(ctx: dict[str, Any]) -> None:
    """``process_question_stream``: a request's progress events, then one completed event."""
    from routerlab.app.ask_request import AskRequest

    assert {"question", "conversation_id", "context_type", "routing_mode"} <= set(AskRequest.model_fields)
    events = list(Pipeline(routers.router.build("rules"), resolve_lm("scripted:basic")).stream(QUESTION, ctx["__db__"]))
    assert {e["type"] for e in events[:-1]} == {"progress"} and events[-1]["type"] == "completed"
    assert len({e["conversation_id"] for e in events}) == 1


def c002_route(ctx: dict[str, Any]) -> None:
    """The ``ask_agent_stream`` route streams seed 002's events over SSE."""
    data = _app_stream(ctx["__db__"], QUESTION)
    nodes = [d["node"] for d in data]
    assert nodes[0] == "start" and "classify_question" in nodes and nodes[-1] == "format_response"
    assert data[-1]["type"] == "completed" and data[-1]["query_result"]["rows"] == sql_run(ctx["__db__"])["rows"]


def c002_progress(ctx: dict[str, Any]) -> None:
    """``_map_node_to_progress``: each seed node's display name and icon, and classify's question type."""
    from routerlab.serve.contract import ICONS, SEED_DISPLAY_NAMES

    seed_nodes = {"classify_question", "agent_sql_generation", "agent_sql_execution", "agent_chat", "format_response"}
    assert seed_nodes <= set(SEED_DISPLAY_NAMES)
    classify = next(d for d in _app_stream(ctx["__db__"], QUESTION) if d["node"] == "classify_question")
    assert classify["question_type"] == "DATABASE" and classify["icon"] == ICONS["route"]
    assert classify["classification_info"]["intent"] == "sql" and classify["sub_status"].startswith("classified by")
