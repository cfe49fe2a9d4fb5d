"""Conversations through the HTTP API and the page: a follow-up continues its conversation id."""

from __future__ import annotations

import httpx
import pytest

from routerlab.serve import API_PREFIX, ServeSettings, create_app, serve_in_background
from tests.agents.test_turn_history import FEWEST_SQL, FIRST, FOLLOW_UP, MOST_SQL, follow_up_lm
from tests.routerlab.serve.test_api import read_sse

pytestmark = pytest.mark.server

ASK = f"{API_PREFIX}/ask_agent"
STREAM = f"{API_PREFIX}/ask_agent_stream"


@pytest.fixture(scope="module")
def server(sales_db, tmp_path_factory):
    path = tmp_path_factory.mktemp("conv") / "conversations.sqlite"
    app = create_app(ServeSettings(lm=follow_up_lm(), database=sales_db, poll_s=0.05, conversations=path))
    with serve_in_background(app) as url:
        yield url, app, path


def _stream(url: str, body: dict) -> dict:
    with httpx.stream("POST", url + STREAM, json=body, timeout=30) as r:
        assert r.status_code == 200
        return read_sse(r)[-1][1]["data"]


def test_a_follow_up_continues_its_conversation(server):
    url, app, _ = server
    first = _stream(url, {"question": FIRST, "user_id": "u1"})
    conv = first["conversation_id"]
    assert first["sql"] == MOST_SQL and first["query_result"]["rows"] == [["Qinling North"]]
    second = _stream(url, {"question": FOLLOW_UP, "conversation_id": conv, "user_id": "u1"})
    assert second["conversation_id"] == conv
    assert second["sql"] == FEWEST_SQL and second["query_result"]["rows"] == [["Hanzhong East"]]
    # the synchronous endpoint continues the same conversation: its SQL prompt cites the last turn
    third = httpx.post(url + ASK, json={"question": "And the top 2?", "conversation_id": conv}, timeout=30).json()
    assert third["data"]["type"] == "completed"
    engine = app.state.runtime.lm.routerlab_engine
    prompt = " ".join(str(p) for m in engine.requests[-1].messages for p in m.parts)
    assert "And the top 2?" in prompt and FEWEST_SQL in prompt and FOLLOW_UP in prompt
    history = app.state.runtime.store.history(conv)
    assert [t["question"] for t in history] == [FIRST, FOLLOW_UP, "And the top 2?"]
    assert history[0]["sql"] == MOST_SQL and history[0]["row_count"] == 1


def test_another_conversation_starts_without_context(server):
    url, _, _ = server
    alone = _stream(url, {"question": FOLLOW_UP})
    assert alone["sql"] == MOST_SQL  # no earlier turn: the follow-up has nothing to build on


def test_turns_are_kept_in_the_configured_file(server):
    url, _, path = server
    done = _stream(url, {"question": FIRST, "conversation_id": "kept-on-disk"})
    assert done["type"] == "completed"
    from routerlab.conversation_store import ConversationStore

    assert [t["question"] for t in ConversationStore(path).history("kept-on-disk")] == [FIRST]
    health = httpx.get(url + "/health").json()["data"]
    assert health["conversations"] >= 1
