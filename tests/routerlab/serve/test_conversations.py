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
    body = {"question": "And the top 2?", "conversation_id": conv, "user_id": "u1"}
    third = httpx.post(url + ASK, json=body, timeout=30).json()
    assert third["data"]["type"] == "completed"
    engine = app.state.runtime.lm.routerlab_engine
    prompt = " ".join(str(p) for m in engine.requests[-1].messages for p in m.parts)
    assert "And the top 2?" in prompt and FEWEST_SQL in prompt and FOLLOW_UP in prompt
    history = app.state.runtime.store.history(conv, user_id="u1")
    assert [t["question"] for t in history] == [FIRST, FOLLOW_UP, "And the top 2?"]
    assert history[0]["sql"] == MOST_SQL and history[0]["row_count"] == 1


def test_another_conversation_starts_without_context(server):
    url, _, _ = server
    alone = _stream(url, {"question": FOLLOW_UP})
    # no earlier turn: the follow-up has nothing to build on, so the rules ask for the whole question
    # (a follow-up with no antecedent is ambiguity, docs/turns-and-ambiguity.md) rather than guess
    assert alone["status"] == "waiting" and "sql" not in alone
    assert "follows up on what" in alone["ask_human"]
    assert alone["state_summary"]["intent"] == "clarify"


def test_turns_are_kept_in_the_configured_file(server):
    url, _, path = server
    done = _stream(url, {"question": FIRST, "conversation_id": "kept-on-disk"})
    assert done["type"] == "completed"
    from routerlab.conversation_store import ConversationStore

    assert [t["question"] for t in ConversationStore(path).history("kept-on-disk")] == [FIRST]
    health = httpx.get(url + "/health").json()["data"]
    assert health["conversations"] >= 1


def _prompts(app) -> str:
    engine = app.state.runtime.lm.routerlab_engine
    return " ".join(str(p) for r in engine.requests for m in r.messages for p in m.parts)


@pytest.mark.parametrize("endpoint", [ASK, STREAM])
def test_another_user_cannot_continue_a_conversation(server, endpoint):
    url, app, _ = server
    secret = FIRST
    first = _stream(url, {"question": secret, "user_id": "alice"})
    conv = first["conversation_id"]
    engine = app.state.runtime.lm.routerlab_engine
    calls = len(engine.requests)
    r = httpx.post(url + endpoint, json={"question": FOLLOW_UP, "conversation_id": conv, "user_id": "mallory"})
    assert r.status_code == 403, r.text
    body = r.json()
    assert body["code"] == 40300 and body["data"]["field"] == "conversation_id"
    assert "belongs to another user" in body["message"]
    # the refusal shows nothing of the conversation: not its owner, questions or SQL
    assert "alice" not in r.text and "most revenue" not in r.text and MOST_SQL not in r.text
    assert len(engine.requests) == calls  # no model call ran for the refused request
    # without a user_id is "another user" too; the owner is unchanged and still continues it
    anon = httpx.post(url + ASK, json={"question": FOLLOW_UP, "conversation_id": conv})
    assert anon.status_code == 403
    again = _stream(url, {"question": FOLLOW_UP, "conversation_id": conv, "user_id": "alice"})
    assert again["sql"] == FEWEST_SQL
    stored = app.state.runtime.store
    assert [t["question"] for t in stored.history(conv, user_id="alice")] == [secret, FOLLOW_UP]


def test_server_issued_conversation_ids_are_unguessable(server):
    url, _, _ = server
    ids = {_stream(url, {"question": FIRST})["conversation_id"] for _ in range(3)}
    assert len(ids) == 3
    # 128 random bits in URL-safe base64 (the old ids were 12 hex digits: 48 bits)
    assert all(len(i) >= 22 and not all(c in "0123456789abcdef" for c in i) for i in ids)


def test_shared_conversations_let_users_continue_each_others(sales_db, tmp_path):
    app = create_app(ServeSettings(lm=follow_up_lm(), database=sales_db, poll_s=0.05, shared_conversations=True))
    with serve_in_background(app) as url:
        first = _stream(url, {"question": FIRST, "user_id": "alice"})
        second = _stream(url, {"question": FOLLOW_UP, "conversation_id": first["conversation_id"], "user_id": "bob"})
    assert second["sql"] == FEWEST_SQL  # bob's turn saw alice's first turn
    assert FIRST in _prompts(app)
