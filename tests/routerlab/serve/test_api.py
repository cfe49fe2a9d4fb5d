"""The HTTP API of ``routerlab serve`` through a real client against a real uvicorn server."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime

import httpx
import pytest

from routerlab import routers
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.serve import API_PREFIX, ErrorCode, ServeSettings, create_app, serve_in_background

pytestmark = pytest.mark.server

ASK = f"{API_PREFIX}/ask_agent"
STREAM = f"{API_PREFIX}/ask_agent_stream"
COUNT_SQL = "SELECT count(*) AS n FROM areas WHERE has_ev"
NAMES_SQL = "SELECT name FROM areas ORDER BY id"


class Gate:
    """Holds the LM inside generate_sql for prompts marked ``[slow]`` until released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def reset(self) -> None:
        self.entered.clear()
        self.release.clear()


def _output_field(request) -> str:
    return requested_field(request)


def make_lm(gate: Gate):
    """A scripted LM for the sub-agents' programs; the prompt's markers pick the SQL."""

    def reply(request):
        text = " ".join(str(p) for m in request.messages for p in m.parts)
        field = _output_field(request)
        if "[crash]" in text:
            raise RuntimeError("scripted crash")
        if field == "sql":
            if "[slow]" in text:
                gate.entered.set()
                gate.release.wait(10)
            if "[guard]" in text:
                return answer_field(request, "DROP TABLE areas")
            return answer_field(request, NAMES_SQL if "[names]" in text else COUNT_SQL)
        value = {"fixed_sql": NAMES_SQL, "explanation": "It counts the areas.", "reply": "Hello!"}.get(field, "")
        return answer_field(request, value)

    return scripted_lm(reply)


@contextmanager
def rules_server(database) -> Iterator[str]:
    """A served app on ``database`` whose ``rules`` router answers at once (its gate is open); yields its URL."""
    gate = Gate()
    gate.release.set()
    app = create_app(ServeSettings(lm=make_lm(gate), database=database, poll_s=0.05, router="rules"))
    with serve_in_background(app) as url:
        yield url


@pytest.fixture(scope="module")
def gate_module() -> Gate:
    return Gate()


@pytest.fixture
def gate(gate_module):
    gate_module.reset()
    yield gate_module
    gate_module.release.set()  # never leave a worker blocked


@pytest.fixture(scope="module")
def lm(gate_module):
    return make_lm(gate_module)


@pytest.fixture(scope="module")
def server(lm, sales_db):
    app = create_app(ServeSettings(lm=lm, database=sales_db, poll_s=0.05))
    with serve_in_background(app) as url:
        yield url, app


@pytest.fixture(scope="module")
def url(server):
    return server[0]


@pytest.fixture(scope="module")
def runs(server):
    return server[1].state.runtime.runs


def read_sse(response: httpx.Response) -> list[tuple[str, dict]]:
    """``(event name, envelope)`` of every SSE message of a streamed response."""
    out, name, data = [], "message", []
    for line in response.iter_lines():
        if not line:
            if data:
                out.append((name, json.loads("\n".join(data))))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    return out


def stream(url: str, body: dict, *, named: bool = True) -> list[tuple[str, dict]]:
    """``(event name, envelope)`` of a run's messages; ``named`` asks for ``event:`` names."""
    with httpx.stream("POST", url + STREAM + ("?named_events=1" if named else ""), json=body, timeout=30) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        return read_sse(r)


def wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_health(url):
    r = httpx.get(url + "/health")
    assert r.status_code == 200
    body = r.json()
    assert body["code"] == 200 and body["success"] is True
    assert body["data"]["status"] == "ok"
    assert body["data"]["router"] == "rules"
    assert body["data"]["database"] == "sales.duckdb"


def test_routers_lists_the_registry(url):
    body = httpx.get(url + f"{API_PREFIX}/routers").json()
    assert [r["name"] for r in body["data"]["routers"]] == routers.router.names()
    assert body["data"]["default"] == "rules"
    assert "explain_sql" in body["data"]["agents"]


def test_page_is_served(url):
    r = httpx.get(url + "/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "ask_agent_stream" in r.text


@pytest.mark.parametrize(
    ("body", "sql", "rows"),
    [
        ({"question": "How many areas have EV charging?"}, COUNT_SQL, [[1]]),
        ({"question": "List the area names [names]", "router": "hybrid"}, NAMES_SQL, None),
        ({"question": "Explain: SELECT count(*) FROM areas", "mode": "direct", "agent": "explain_sql"}, None, []),
    ],
    ids=["rules", "hybrid", "direct"],
)
def test_sync_and_stream_give_the_same_result(url, body, sql, rows):
    for i in range(2):  # the same conversation id may be reused once a run has ended
        conv = f"same-{body.get('router', 'rules')}-{body.get('mode', 'auto')}"
        sync = httpx.post(url + ASK, json={**body, "conversation_id": conv}, timeout=30)
        assert sync.status_code == 200, sync.text
        result = sync.json()
        events = stream(url, {**body, "conversation_id": conv})
        name, last = events[-1]
        assert name == "completed" and last["data"]["type"] == "completed"
        assert result["data"].pop("timestamp") <= last["data"].pop("timestamp")
        assert result == last, f"round {i}"
    assert result["code"] == 200 and result["success"] is True
    data = result["data"]
    assert data["conversation_id"] == conv
    assert data["sql"] == sql
    if rows is not None:
        assert data["query_result"]["rows"] == rows
        assert data["query_result"]["row_count"] == len(rows)
    assert data["response"]


def test_event_order(url):
    events = stream(url, {"question": "How many areas have EV charging?"})
    kinds = [env["data"]["type"] for _, env in events]
    assert len(events) >= 3
    assert set(kinds[:-1]) == {"progress"}
    assert kinds[-1] in ("completed", "error") and kinds.count("completed") + kinds.count("error") == 1
    assert [name for name, _ in events] == kinds  # asked for: the SSE event name is the event type
    first = events[0][1]["data"]
    assert (first["node"], first["graph_node"], first["status"]) == ("start", "start", "started")
    stamps = [datetime.fromisoformat(env["data"]["timestamp"]) for _, env in events]
    assert stamps == sorted(stamps) and all(s.tzinfo is not None for s in stamps)
    paths = [env["data"]["state_summary"]["execution_path"] for _, env in events]
    for before, after in itertools.pairwise(paths):
        assert after[: len(before)] == before and len(after) == len(before) + 1
    # seed 002's nodes: classify, generate, execute, format (the graph's nodes in graph_node)
    # seed 002: one classify_question per turn (the later router decisions fold into the summary)
    assert paths[-1] == [
        "start",
        "classify_question",
        "agent_sql_generation",
        "agent_sql_generation",
        "agent_sql_execution",
        "format_response",
    ]
    assert [env["data"]["graph_node"] for _, env in events][1:] == ["route", "tools", "tools", "tools", "respond"]
    # the envelope's message names the seed's node; the SQL shows on its generation event
    assert [env["message"] for _, env in events][:2] == ["running: Starting", "running: Analysing the question type"]
    generated = next(env["data"] for _, env in events if env["data"].get("tool") == "generate_sql")
    assert generated["node"] == "agent_sql_generation" and generated["sql"].startswith("SELECT")
    assert generated["state_summary"]["sql"] == generated["sql"]
    assert events[-1][1]["data"]["graph_path"][-1] == "respond"
    assert {env["data"]["conversation_id"] for _, env in events} == {events[0][1]["data"]["conversation_id"]}
    for _, env in events:
        assert set(env) == {"code", "success", "message", "data"}
        assert {"type", "node", "display_name", "details", "conversation_id", "timestamp", "state_summary"} <= set(
            env["data"]
        )
    final = events[-1][1]["data"]
    assert final["state_summary"]["tools"] == ["data_discovery", "generate_sql", "execute_sql_and_analyze_result"]
    assert final["state_summary"]["intent"] == "sql"


def test_the_classify_event_carries_the_question_type(url):
    """Seed 002: the ``classify_question`` progress event says how the question was classified."""
    events = stream(url, {"question": "How many areas have EV charging?"})
    classify = next(env["data"] for _, env in events if env["data"]["node"] == "classify_question")
    assert classify["type"] == "progress" and classify["question_type"] == "DATABASE"
    info = classify["classification_info"]
    assert info["question_type"] == "DATABASE" and info["intent"] == "sql" and info["method"]
    assert info == events[-1][1]["data"]["classification_info"]  # the same decision the turn ended with


def test_failed_turn_ends_with_one_error_event(url):
    events = stream(url, {"question": "How many areas have EV charging? [guard]"})
    name, last = events[-1]
    assert name == "error"
    assert last["code"] == ErrorCode.RUN_FAILED == 500 and last["success"] is False
    # seed 002's type of a refused write; routerlab's class rides along
    assert last["data"]["error_type"] == "forbidden_keywords" and last["data"]["error_class"] == "guard_violation"
    assert last["data"]["node"] == "agent_sql_generation" and last["data"]["graph_node"] == "respond"
    assert all(env["data"]["type"] == "progress" for _, env in events[:-1])
    sync = httpx.post(url + ASK, json={"question": "How many areas have EV charging? [guard]"}, timeout=30)
    assert sync.status_code == 500  # seed 002's code, sent as the HTTP status too
    assert sync.json()["data"]["error_type"] == "forbidden_keywords"


def test_a_crashing_run_reports_an_internal_error(url):
    body = {"question": "How many areas have EV charging? [crash]", "router": "llm"}
    events = stream(url, body)
    name, last = events[-1]
    assert name == "error" and last["success"] is False
    assert last["code"] in (ErrorCode.INTERNAL_ERROR, ErrorCode.RUN_ERROR, ErrorCode.RUN_FAILED)
    assert "crash" in last["data"]["details"]
    sync = httpx.post(url + ASK, json=body, timeout=30)
    assert sync.json()["data"]["type"] == "error"
    assert sync.status_code == 500


def test_reply_answers_a_clarifying_question(url):
    asked = httpx.post(url + ASK, json={"question": "How did that area do recently?"}, timeout=30).json()
    assert asked["data"]["type"] == "completed" and asked["data"]["ask_human"]
    replied = httpx.post(
        url + ASK, json={"question": "How did that area do recently?", "reply": "Qinling North"}, timeout=30
    ).json()
    assert replied["data"]["type"] == "completed"
    assert replied["data"]["sql"] == COUNT_SQL
    assert "ask_human" in replied["data"]["graph_path"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "question"),
        ({"question": 3}, "question"),
        ({"question": "   "}, "question"),
        ({"question": "hi", "mode": "direct"}, "agent"),
        ({"question": "hi", "agent": "chat"}, "agent"),
        ({"question": "hi", "mode": "sideways"}, "mode"),
        ({"question": "hi", "conversation_id": "has spaces!"}, "conversation_id"),
        ({"question": "hi", "router_args": [1, 2]}, "router_args"),
        ([1, 2], ""),
    ],
)
@pytest.mark.parametrize("endpoint", [ASK, STREAM])
def test_invalid_bodies_are_400_json(url, endpoint, body, field):
    r = httpx.post(url + endpoint, json=body, timeout=10)
    assert r.status_code == 400
    assert r.headers["content-type"] == "application/json"
    err = r.json()
    assert err["code"] == ErrorCode.INVALID_REQUEST and err["success"] is False
    assert err["data"]["type"] == "error"
    assert err["data"]["field"] == field
    assert err["data"]["expected"] and err["data"]["found"]
    assert (field or "request body") in err["message"]


def test_malformed_json_is_400(url):
    r = httpx.post(url + ASK, content=b'{"question": ', headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["data"]["found"].startswith("malformed JSON")


@pytest.mark.parametrize("endpoint", [ASK, STREAM])
def test_unknown_router_is_400_listing_the_known_names(url, endpoint):
    r = httpx.post(url + endpoint, json={"question": "hi", "router": "rulez"}, timeout=10)
    assert r.status_code == 400
    err = r.json()
    assert err["code"] == ErrorCode.UNKNOWN_COMPONENT
    assert err["data"]["field"] == "router"
    assert all(name in err["data"]["expected"] for name in routers.router.names())
    assert "'rules'" in err["data"]["fix"]  # the registry's suggestion
    assert err["data"]["found"] == "'rulez'"


def test_unknown_agent_and_bad_router_args_are_400(url):
    r = httpx.post(url + ASK, json={"question": "hi", "mode": "direct", "agent": "fix_sqll"})
    assert r.status_code == 400 and r.json()["data"]["field"] == "agent"
    assert "fix_sql" in r.json()["data"]["fix"]
    r = httpx.post(url + ASK, json={"question": "hi", "router": "hybrid", "router_args": {"treshold": 0.5}})
    assert r.status_code == 400 and r.json()["data"]["field"] == "router_args"
    assert r.json()["code"] == ErrorCode.BAD_COMPONENT


def test_router_args_are_passed_to_the_router(url):
    body = {"question": "How many areas have EV charging?", "router": "hybrid"}
    default = stream(url, body)[1][1]["data"]
    assert default["route"]["method"] == "hybrid:rule:data_question"  # confident rules decide
    # above the rules' confidence the LM is asked (the scripted one gives no valid tool call)
    strict = stream(url, {**body, "router_args": {"threshold": 0.99}})[1][1]["data"]
    assert strict["route"]["method"] == "hybrid:rule:data_question(llm-invalid)"


def test_unknown_path_is_404_json(url):
    r = httpx.get(url + "/api/v0/nothing")
    assert r.status_code == 404 and r.json()["code"] == ErrorCode.NOT_FOUND


def test_disconnect_cancels_the_run(url, runs, gate, lm):
    engine = lm.routerlab_engine
    conv = "leaves-early"
    body = {"question": "How many areas? [slow]", "conversation_id": conv}
    with httpx.Client(timeout=30) as client, client.stream("POST", url + STREAM, json=body) as r:
        # keep the line iterator alive: dropping it closes the connection early
        lines = r.iter_lines()
        assert next(lines) == "id: 1"  # the run started streaming
        assert gate.entered.wait(10)  # the run is now inside generate_sql
        assert not runs.get(conv).cancel.is_set()
    # leaving the block closed the connection while the run is still busy
    run = runs.get(conv)
    assert run is not None
    wait_for(run.cancel.is_set)  # the server noticed the client left while the node was busy
    assert run.outcome == "running"
    calls = len(engine.requests)
    gate.release.set()
    assert run.done.wait(10)
    assert run.outcome == "cancelled"
    # route, data_discovery, route(generate_sql) were produced (after the server's own start
    # message); generate_sql's result was dropped
    # and no further node ran (no execution, no more model calls)
    assert run.events == 3
    assert len(engine.requests) == calls
    assert conv not in {r.conversation_id for r in runs.active()}
    # and the conversation id is free again
    again = httpx.post(url + ASK, json={"question": "How many areas have EV charging?", "conversation_id": conv})
    assert again.status_code == 200 and again.json()["data"]["conversation_id"] == conv


def test_busy_conversation_is_409(url, gate):
    body = {"question": "How many areas? [slow]", "conversation_id": "busy-one"}
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(httpx.post, url + ASK, json=body, timeout=30)
        assert gate.entered.wait(10)
        r = httpx.post(url + STREAM, json={"question": "hi", "conversation_id": "busy-one"}, timeout=10)
        assert r.status_code == 409
        assert r.json()["code"] == ErrorCode.CONVERSATION_BUSY and r.json()["data"]["field"] == "conversation_id"
        gate.release.set()
        assert slow.result().status_code == 200


def test_concurrent_clients_get_their_own_conversations(url, gate, runs):
    slow_body = {"question": "How many areas have EV charging? [slow]"}
    fast_body = {"question": "List the area names [names]"}
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(stream, url, slow_body)
        assert gate.entered.wait(10)
        # the first run is parked inside a node; a second client is served meanwhile
        assert len(runs.active()) == 1
        fast = httpx.post(url + ASK, json=fast_body, timeout=30).json()
        assert not slow.done()
        gate.release.set()
        slow_events = slow.result()
    slow_final = slow_events[-1][1]["data"]
    assert fast["data"]["query_result"]["rows"] == [["Qinling North"], ["Hanzhong East"], ["Baoji West"]]
    assert slow_final["query_result"]["rows"] == [[1]]
    assert fast["data"]["conversation_id"] != slow_final["conversation_id"]
    assert {env["data"]["conversation_id"] for _, env in slow_events} == {slow_final["conversation_id"]}
    assert fast["data"]["state_summary"]["execution_path"] == slow_final["state_summary"]["execution_path"]


def test_many_clients_at_once(url):
    questions = ["How many areas have EV charging?", "List the area names [names]"] * 3
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda q: stream(url, {"question": q}), questions))
    convs = {events[-1][1]["data"]["conversation_id"] for events in results}
    assert len(convs) == len(questions)
    for q, events in zip(questions, results, strict=True):
        final = events[-1][1]["data"]
        assert final["sql"] == (NAMES_SQL if "[names]" in q else COUNT_SQL)
        assert {env["data"]["conversation_id"] for _, env in events} == {final["conversation_id"]}


def test_the_api_creates_no_module_state(lm, sales_db):
    # two apps from two settings objects share nothing
    a = create_app(ServeSettings(lm=lm, database=sales_db, router="rules"))
    b = create_app(ServeSettings(lm=lm, database=sales_db, router="hybrid"))
    assert a.state.runtime is not b.state.runtime
    assert a.state.runtime.runs is not b.state.runtime.runs


def test_missing_database_and_unknown_default_router_fail_at_creation(lm, sales_db, tmp_path):
    from routerlab.agents.errors import DatabaseError, UnknownComponentError

    with pytest.raises(DatabaseError):
        create_app(ServeSettings(lm=lm, database=tmp_path / "nope.duckdb"))
    with pytest.raises(UnknownComponentError):
        create_app(ServeSettings(lm=lm, database=sales_db, router="nope"))


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--router", "rulez"], "unknown router 'rulez'"), (["--db", "/nonexistent/x.duckdb"], "database file not found")],
)
def test_serve_command_refuses_bad_options_cleanly(args, message):
    from typer.testing import CliRunner

    from routerlab.cli import app

    # an API LM spec builds no model and reaches no network before a request
    result = CliRunner().invoke(app, ["serve", "--lm", "openai/gpt-4o-mini", *args])
    assert result.exit_code == 2
    assert message in result.output
