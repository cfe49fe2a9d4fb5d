"""Seed 002's stream as its clients read it: a real headless Chromium's ``EventSource`` and ``httpx``.

Both clients run the same request against a real uvicorn server on loopback (scripted LM, real
DuckDB file); what each receives is compared with the other and with ``docs/api.md``'s examples.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from routerlab.serve import API_PREFIX
from tests.routerlab.serve.test_api import COUNT_SQL, read_sse, rules_server
from tests.routerlab.serve.test_contract import _doc_examples
from tests.routerlab.serve.test_page import browser  # noqa: F401  (the real-browser fixture)

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(
        not Path("/usr/bin/chromium").exists(),
        reason="/usr/bin/chromium is absent (install it with scripts/install_browser.sh)",
    ),
]

STREAM = f"{API_PREFIX}/ask_agent_stream"
SEED_NODES = {
    "start",
    "classify_question",
    "agent_sql_generation",
    "agent_sql_execution",
    "agent_chat",
    "format_response",
}

#: the browser side: an EventSource on the GET stream; resolves with every message it received
#: through onmessage and through per-type listeners, once the run is over (or after 20 s)
LISTEN_JS = """
const [url, done] = [arguments[0], arguments[arguments.length - 1]];
const got = {onmessage: [], listeners: []};
const source = new EventSource(url);
const finish = () => { source.close(); done(got); };
source.onmessage = (e) => {
  const env = JSON.parse(e.data);
  got.onmessage.push(env);
  if (env.data.type !== "progress") finish();
};
for (const type of ["progress", "completed", "error"]) {
  source.addEventListener(type, (e) => {
    const env = JSON.parse(e.data);
    got.listeners.push(env);
    if (type !== "progress") finish();
  });
}
source.onerror = () => { got.error = true; finish(); };
setTimeout(finish, 20000);
"""


@pytest.fixture(scope="module")
def server(sales_db):
    with rules_server(sales_db) as url:
        yield url


def _in_browser(browser, url: str, query: dict) -> dict:  # noqa: F811
    browser.get(url + "/")  # same origin as the stream
    browser.set_script_timeout(30)
    return browser.execute_async_script(LISTEN_JS, f"{url}{STREAM}?{urlencode(query)}")


def _with_httpx(url: str, body: dict) -> list[tuple[str, dict]]:
    with httpx.stream("POST", url + STREAM, json=body, headers={"Accept": "text/event-stream"}, timeout=30) as r:
        assert r.status_code == 200
        return read_sse(r)


def _shape(env: dict) -> tuple:
    """What must agree between two runs of one request: everything but ids and times."""
    data = env["data"]
    return (
        env["code"],
        data["type"],
        data["node"],
        data["graph_node"],
        data.get("tool"),
        data["status"],
        data["sub_status"],
        tuple(data["state_summary"]["execution_path"]),
        tuple(sorted(data)),
    )


@pytest.mark.parametrize(
    ("question", "last"),
    [("How many areas have EV charging?", "completed"), ("How many areas have EV charging? [guard]", "error")],
    ids=["completed", "refused-write"],
)
def test_browser_eventsource_and_httpx_read_the_same_stream_as_the_doc(browser, server, question, last):  # noqa: F811
    got = _in_browser(browser, server, {"question": question, "user_id": "test_user"})
    assert not got.get("error"), got
    # plain data: messages: onmessage receives all of them, no per-type listener fires
    assert got["listeners"] == []
    seen = got["onmessage"]
    plain = _with_httpx(server, {"question": question, "user_id": "test_user"})
    assert {name for name, _ in plain} == {"message"}  # no event: line on the wire
    assert [_shape(e) for e in seen] == [_shape(e) for _, e in plain]
    assert seen[0]["data"]["node"] == "start" and seen[-1]["data"]["type"] == last
    assert {e["data"]["node"] for e in seen} <= SEED_NODES
    for env in seen:
        datetime.fromisoformat(env["data"]["timestamp"])  # ISO-8601 in the browser too
    examples = _doc_examples()
    compared = {"start": seen[0], "progress": seen[1], last: seen[-1]}
    for name, env in compared.items():
        doc = examples[name]
        assert set(doc) == set(env), name
        assert set(doc["data"]) == set(env["data"]), (name, set(doc["data"]) ^ set(env["data"]))
        assert set(doc["data"]["state_summary"]) == set(env["data"]["state_summary"]), name
        assert (doc["code"], doc["data"]["node"]) == (env["code"], env["data"]["node"]), name
    if last == "completed":
        assert seen[-1]["data"]["sql"] == COUNT_SQL and seen[-1]["data"]["query_result"]["rows"] == [[1]]
    else:
        assert seen[-1]["code"] == 500 and seen[-1]["data"]["error_type"] == "forbidden_keywords"


def test_named_events_reach_per_type_listeners_not_onmessage(browser, server):  # noqa: F811
    query = {"question": "How many areas have EV charging?", "named_events": "1"}
    got = _in_browser(browser, server, query)
    assert got["onmessage"] == []
    types = [e["data"]["type"] for e in got["listeners"]]
    assert types[-1] == "completed" and set(types[:-1]) == {"progress"}
    headers = {"X-Named-Events": "1"}
    with httpx.stream("POST", server + STREAM, json={"question": query["question"]}, headers=headers) as r:
        named = read_sse(r)
    assert [name for name, _ in named] == [env["data"]["type"] for _, env in named]
    assert [_shape(e) for e in got["listeners"]] == [_shape(e) for _, e in named]


def test_a_bad_query_is_400_with_the_field(server):
    r = httpx.get(server + STREAM + "?" + urlencode({"question": "hi", "router_args": "not json"}), timeout=10)
    assert r.status_code == 400
    assert r.json()["data"]["field"] == "router_args"
    r = httpx.get(server + STREAM, timeout=10)
    assert r.status_code == 400 and r.json()["data"]["field"] == "question"
    ok = httpx.get(server + STREAM + "?" + urlencode({"question": "hi", "router_args": json.dumps({})}), timeout=30)
    assert ok.status_code == 200 and ok.headers["content-type"].startswith("text/event-stream")
