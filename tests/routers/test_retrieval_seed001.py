"""Seed 001's retrieval on the real pipeline: a fallback on any failure, and the seed's plug-in forms.

Each of the four failures (the plug-in raises when the index is built, raises during a search,
finds nothing, or its index file is missing) ends in a recorded fallback, never in a failed
turn: the fallback index (BM25 over the same descriptions) searches the same query, and when
there is none the pipeline's own tools are bound. The seed's two other plug-in signatures run
too: ``retrieve_tools(query, *, store)`` over a store of the tool descriptions, and a function
whose own parameters the model fills (``category: Literal[...]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from routerlab import routers
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.index import TOOL_NAMESPACE, FunctionIndex, Hit, tool_index
from routerlab.agents.tools.store import InjectedStore, MemoryStore
from tests.routers.test_retrieval import _names, chain_lm

QUESTION = "How many areas have EV charging?"
PLAN = ["data_discovery", "generate_sql", "execute_sql_and_analyze_result"]


def _run(router, lm, db, conv: str):
    pipeline = Pipeline(router, lm)
    events = list(pipeline.stream(QUESTION, str(db), conversation_id=conv))
    return events, pipeline.final_state(conv)


def _calls(state) -> list[str]:
    return [r["name"] for r in sorted(state["tool_calls"].values(), key=lambda r: r["step"])]


def _broken_at_build(tools: Sequence[Tool]) -> FunctionIndex:
    raise RuntimeError("plug-in could not start")


def _raises(query: str, tools: Sequence[Tool], k: int) -> list[str]:
    raise ConnectionError("search service down")


def _nothing(query: str, tools: Sequence[Tool], k: int) -> list[str]:
    return []


class MissingFileIndex:
    """A plug-in index reading its vectors from a file that is not there (found out when it searches)."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.kind = "missing_file"
        self.path = Path("/nonexistent/routerlab-tool-index.npy")

    def search(self, query: str, k: int) -> list[Hit]:
        """Open the index file (missing)."""
        with self.path.open("rb"):
            return []


def _assert_fell_back_to_bm25(router, state, requested: str, why: str) -> None:
    assert not state.get("error"), state.get("error")
    assert _calls(state) == PLAN and state["rows"] == [[1]]
    info = router.fallback_info
    assert info["requested"] == requested and info["used"] == "bm25" and why in info["reason"]
    methods = {d["method"] for d in state["router_usage"]}
    assert methods == {f"retrieval:bm25(fallback:{requested})"}
    assert state["router_usage"][-1]["retrieval_fallback"] == info


def test_a_plug_in_that_raises_when_built_falls_back_to_bm25(sales_db):
    with tool_index.scoped("broken_build", _broken_at_build):
        router = routers.router.build("retrieval", index="broken_build", k=3)
        _events, state = _run(router, chain_lm(), sales_db, "s1-build")
    _assert_fell_back_to_bm25(router, state, "broken_build", "RuntimeError: plug-in could not start")


def test_a_plug_in_that_raises_during_a_search_falls_back_to_bm25(sales_db):
    with tool_index.scoped("broken_search", lambda tools: FunctionIndex(tools, _raises, kind="broken_search")):
        router = routers.router.build("retrieval", index="broken_search", k=3)
        _events, state = _run(router, chain_lm(), sales_db, "s1-search")
    _assert_fell_back_to_bm25(router, state, "broken_search", "ConnectionError: search service down")


def test_a_plug_in_that_finds_nothing_falls_back_to_bm25(sales_db):
    with tool_index.scoped("empty", lambda tools: FunctionIndex(tools, _nothing, kind="empty")):
        router = routers.router.build("retrieval", index="empty", k=3)
        _events, state = _run(router, chain_lm(), sales_db, "s1-empty")
    _assert_fell_back_to_bm25(router, state, "empty", "found nothing")


def test_a_missing_index_file_without_a_fallback_binds_the_default_toolset(sales_db):
    path = "tests.routers.test_retrieval_seed001:MissingFileIndex"
    lm = chain_lm()
    router = routers.router.build("retrieval", index=path, fallback="", k=3)
    _events, state = _run(router, lm, sales_db, "s1-missing")
    assert not state.get("error"), state.get("error")
    assert _calls(state) == PLAN and state["rows"] == [[1]]
    assert router.index is None and router.fallback_info["used"] == "default_toolset"
    assert "FileNotFoundError" in router.fallback_info["reason"]
    routing = [r for r in lm.routerlab_engine.requests if r.tools]
    assert _names(routing[0]) == ["retrieve_tools"]  # it searched first...
    assert set(_names(routing[1])) == {t.name for t in DEFAULT_TOOLS}  # ...then got every tool
    assert state["router_usage"][-1]["method"] == f"retrieval:default_toolset(fallback:{path})"


def retrieve_tools(query: str, *, store: Annotated[MemoryStore, InjectedStore]) -> list[str]:
    """Seed 001's form: search the store of tool descriptions; tool ids are the keys.

    Args:
        query: What the needed tool does.
        store: The tool descriptions (injected).
    """
    return [hit.key for hit in store.search(TOOL_NAMESPACE, query=query, limit=2)]


def test_the_seed_store_form_retrieve_tools_runs_the_pipeline(sales_db):
    router = routers.router.build("retrieval", index="tests.routers.test_retrieval_seed001:retrieve_tools", k=3)
    _events, state = _run(router, chain_lm(), sales_db, "s1-store")
    assert router.index.form == "store" and router.fallback_info is None
    assert _calls(state) == PLAN and state["rows"] == [[1]]
    assert state["router_usage"][0]["retrieved"][0] == "data_discovery"


def by_category(category: Literal["explain", "sql"]) -> list[str]:
    """Get the tools of a category.

    Args:
        category: The kind of request.
    """
    return ["explain_sql"] if category == "explain" else ["data_discovery", "generate_sql"]


def test_a_retrieval_function_the_model_fills_is_the_retrieval_tool(sales_db):
    schemas = []

    def reply(request):
        if _names(request) == ["retrieve_tools"]:
            schemas.append(request.tools[0])
            return {"name": "retrieve_tools", "args": {"category": "explain"}}
        return {"name": "explain_sql", "args": {"sql": "SELECT 1"}}

    router = routers.router.build("retrieval", index="tests.routers.test_retrieval_seed001:by_category", k=3)
    _events, state = _run(router, scripted_lm(reply), sales_db, "s1-model")
    assert router.index.form == "model"
    params = getattr(schemas[0], "parameters", None) or schemas[0].input_schema
    assert params["properties"]["category"]["enum"] == ["explain", "sql"]
    assert state["router_usage"][0]["retrieved"] == ["explain_sql"]
    assert _calls(state) == ["explain_sql"]
