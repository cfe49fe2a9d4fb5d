"""Seed 004's prebuilt structures on real components: the conversation store (a real SQLite file),
structured responses (the pipeline on a real DuckDB file) and RunnableConfig (a real MLflow store).
"""

from __future__ import annotations

from typing import Annotated

import pytest
from langchain_core.messages import ToolMessage
from pydantic import BaseModel

from routerlab import routers
from routerlab.agents.errors import ContractError, ToolError
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.schema import function_schema, injected_stores
from routerlab.agents.tools.store import MAX_ITEMS, MAX_VALUE_CHARS, InjectedStore, MemoryStore
from routerlab.conversation_store import ConversationStore
from tests.routerlab.serve.test_api import COUNT_SQL, Gate, make_lm


def remember(fact: str, store: Annotated[MemoryStore, InjectedStore]) -> dict:
    """Remember a fact the user stated, for later turns.

    Args:
        fact: The fact, in the user's words.
    """
    facts = store.get(("user",), "facts") or []
    store.put(("user",), "facts", [*facts, fact])
    return {"answer": f"noted: {fact}"}


def recall(store: Annotated[MemoryStore, InjectedStore]) -> dict:
    """Say every fact the user stated in earlier turns."""
    return {"answer": "; ".join(store.get(("user",), "facts") or []) or "nothing yet"}


def _tool(fn, *, terminal: bool = True) -> Tool:
    description, parameters, injected = function_schema(fn)
    return Tool(fn.__name__, description, parameters, fn, injected, terminal=terminal, stores=injected_stores(fn))


MEMORY_TOOLS = [*DEFAULT_TOOLS, _tool(remember), _tool(recall)]


def memory_lm():
    """The llm router's model: "remember ..." calls remember, anything else recall."""

    def reply(request):
        asked = [text_of(m) for m in request.messages if m.role == "user"][-1]
        if asked.startswith("Remember "):
            return {"name": "remember", "args": {"fact": asked.removeprefix("Remember ")}}
        return {"name": "recall", "args": {}}

    return scripted_lm(reply)


def _turn(pipeline, question: str, db, conv: str, conversations: ConversationStore) -> dict:
    for _ in pipeline.stream(question, str(db), conversation_id=conv, store=conversations.store(conv)):
        pass
    state = pipeline.final_state(conv)
    from routerlab.agents.capture import build_trace
    from routerlab.agents.turn_history import turn_from_trace

    conversations.append(conv, turn_from_trace(question, build_trace("", state, 0.0)), store=state.get("store"))
    pipeline.graph.checkpointer.delete_thread(conv)
    return state


def test_a_fact_stated_in_one_turn_is_read_by_a_tool_in_the_next(sales_db, tmp_path):
    path = tmp_path / "conversations.sqlite"
    pipeline = Pipeline(routers.router.build("llm"), memory_lm(), tools=MEMORY_TOOLS)
    first = _turn(pipeline, "Remember that my region is Shaanxi", sales_db, "c1", ConversationStore(path))
    assert first["store"] == {"user": {"facts": ["that my region is Shaanxi"]}}
    # a new store object on the same file: what the server sees after a restart
    again = ConversationStore(path)
    assert again.store("c1") == {"user": {"facts": ["that my region is Shaanxi"]}}
    second = _turn(pipeline, "What do you know about me?", sales_db, "c1", again)
    assert second["answer"] == "that my region is Shaanxi"
    # another conversation has its own store
    other = _turn(pipeline, "What do you know about me?", sales_db, "c2", again)
    assert other["answer"] == "nothing yet" and again.store("c2") == {}
    # a turn that writes nothing keeps the conversation's store
    assert ConversationStore(path).store("c1") == {"user": {"facts": ["that my region is Shaanxi"]}}


def test_the_store_is_bounded_and_a_full_store_is_a_tool_error_the_router_sees(sales_db):
    store = MemoryStore()
    store.put(("a", "b"), "k", {"x": 1})
    assert store.get(("a", "b"), "k") == {"x": 1} and [(h.key, h.value) for h in store.search(("a", "b"))] == [
        ("k", {"x": 1})
    ]
    assert store.delete(("a", "b"), "k") and len(store) == 0
    with pytest.raises(ToolError) as info:
        store.put(("a",), "big", "x" * MAX_VALUE_CHARS)
    assert info.value.error_class == "store_full"
    with pytest.raises(ToolError) as info:
        store.put(("a",), "obj", object())
    assert info.value.error_class == "store_invalid"
    for bad in ((), "a", ("a/b",)):
        with pytest.raises(ToolError):
            store.put(bad, "k", 1)
    for i in range(MAX_ITEMS):
        store.put(("n",), f"k{i}", i)
    with pytest.raises(ToolError, match=f"{MAX_ITEMS} items"):
        store.put(("n",), "one-more", 1)
    store.put(("n",), "k0", "replaced")  # replacing an item is always allowed

    # through the pipeline: the failed write is the call's error, in the router's messages
    pipeline = Pipeline(routers.router.build("llm"), memory_lm(), tools=MEMORY_TOOLS)
    huge = "Remember " + "y" * MAX_VALUE_CHARS
    for _ in pipeline.stream(huge, str(sales_db), conversation_id="full"):
        pass
    state = pipeline.final_state("full")
    records = sorted(state["tool_calls"].values(), key=lambda r: r["step"])
    assert records[0]["status"] == "error" and records[0]["error_class"] == "store_full"
    assert any(isinstance(m, ToolMessage) and "ERROR [store_full]" in m.content for m in state["messages"])
    # the router saw the error and decided again (this scripted one retries until its steps run out)
    assert len(state["router_usage"]) > 1 and state["error_class"] == "step_limit"
    assert not state.get("store")


class CountResult(BaseModel):
    """What the caller wants from the execution sub-agent."""

    sql: str
    columns: list[str]
    rows: list[list[int]]
    row_count: int


class NamesResult(BaseModel):
    """A schema the count query's output cannot meet (rows of names)."""

    rows: list[list[str]]


def _sql_pipeline(fmt) -> Pipeline:
    gate = Gate()
    gate.release.set()
    return Pipeline(
        routers.router.build("rules"), make_lm(gate), response_formats={"execute_sql_and_analyze_result": fmt}
    )


def test_a_structured_response_is_a_validated_object(sales_db):
    pipeline = _sql_pipeline(CountResult)
    for _ in pipeline.stream("How many areas have EV charging?", str(sales_db), conversation_id="s1"):
        pass
    state = pipeline.final_state("s1")
    assert state["structured_response"] == {"sql": COUNT_SQL, "columns": ["n"], "rows": [[1]], "row_count": 1}
    obj = pipeline.structured_response(state)
    assert isinstance(obj, CountResult) and obj.rows == [[1]] and obj.sql == COUNT_SQL
    record = next(r for r in state["tool_calls"].values() if r["name"] == "execute_sql_and_analyze_result")
    assert record["structured_response"]["row_count"] == 1


def test_output_that_does_not_validate_is_a_tool_error_the_router_sees(sales_db):
    pipeline = _sql_pipeline(NamesResult)
    for _ in pipeline.stream("How many areas have EV charging?", str(sales_db), conversation_id="s2"):
        pass
    state = pipeline.final_state("s2")
    records = sorted(state["tool_calls"].values(), key=lambda r: r["step"])
    failed = next(r for r in records if r["name"] == "execute_sql_and_analyze_result")
    assert failed["status"] == "error" and failed["error_class"] == "invalid_structured_response"
    assert "NamesResult" in failed["output"] and "rows" in failed["output"]
    message = next(m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == failed["id"])
    assert message.content.startswith("ERROR [invalid_structured_response]")
    # the router saw it and repaired the query (this scripted fix_sql lists the names), whose
    # output fits: the turn ends with a validated object
    after = [r["name"] for r in records if r["step"] > failed["step"]]
    assert after[0] == "fix_sql" and after[-1] == "execute_sql_and_analyze_result"
    obj = pipeline.structured_response(state)
    assert isinstance(obj, NamesResult) and obj.rows == [["Qinling North"], ["Hanzhong East"], ["Baoji West"]]
    assert not state.get("error")


def test_a_response_format_for_an_unknown_tool_or_not_a_model_is_refused():
    with pytest.raises(ContractError):
        Pipeline(routers.router.build("rules"), None, response_formats={"nope": CountResult})
    with pytest.raises(ContractError):
        Pipeline(routers.router.build("rules"), None, response_formats={"generate_sql": dict})


def test_runnable_config_reaches_the_trace_and_mlflow(sales_db, tmp_path):
    from mlflow import MlflowClient

    from routerlab._runs.runner import RouterRun, RunConfig, build_scorers
    from routerlab.benchmarks.dataset import Dataset
    from routerlab.benchmarks.example import Example
    from routerlab.eval.tracking import MlflowSink

    gate = Gate()
    gate.release.set()
    config = RunConfig(lm="scripted")
    run = RouterRun("rules", {}, make_lm(gate), config, build_scorers(config))
    example = Example(
        id="rc1",
        question="How many areas have EV charging?",
        db_id="sales",
        db_path=str(sales_db),
        intent="sql",
        gold_sql=COUNT_SQL,
        dataset="cfg-ds",
    )
    result = run.run_example(example)
    assert result.trace.run_config == {
        "tags": ["routerlab", "rules", "cfg-ds"],
        "metadata": {"example_id": "rc1", "attempt": 0, "split": "dev"},
        "run_name": "rules rc1",
    }
    # a direct run passes its own
    pipeline = Pipeline(routers.router.build("rules"), make_lm(gate))
    trace = pipeline.run(COUNT_SQL, str(sales_db), tags=["nightly"], metadata={"user": "li"}, run_name="mine")
    assert trace.run_config == {"tags": ["nightly"], "metadata": {"user": "li"}, "run_name": "mine"}

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with MlflowSink(uri) as sink:
        run_id = sink.start_run(run.router, "scripted", Dataset("cfg-ds", "1", [example], source="tests"), {})
        trace_id = sink.log_example(run_id, result)
        sink.finish_run(run_id, [result])
    logged = MlflowClient(uri).get_trace(trace_id)
    tags = logged.info.tags
    assert tags["routerlab.tags"] == "routerlab,rules,cfg-ds"
    assert tags["routerlab.meta.example_id"] == "rc1" and tags["routerlab.meta.split"] == "dev"
    root = next(s for s in logged.data.spans if s.parent_id is None)
    assert root.name == "rules rc1"
