"""The conversation store: turns per id, bounded in turns and conversations, expiring, on disk or in memory."""

from __future__ import annotations

import threading

import pytest
from typer.testing import CliRunner

from routerlab.agents.errors import ConfigError
from routerlab.cli import app
from routerlab.conversation_store import ConversationForbidden, ConversationStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1.0  # every reading is later: "most recently used" is never a tie
        return self.now


def _turn(i: int) -> dict:
    return {"question": f"q{i}", "answer": f"a{i}", "sql": f"SELECT {i}", "intent": "sql"}


def test_turns_are_kept_in_order_and_bounded():
    store = ConversationStore(max_turns=3, clock=Clock())
    for i in range(5):
        store.append("c1", _turn(i))
    assert [t["question"] for t in store.history("c1")] == ["q2", "q3", "q4"]
    assert store.history("unknown") == []


def test_the_least_recently_used_conversations_are_dropped():
    store = ConversationStore(max_conversations=2, clock=Clock())
    store.append("a", _turn(1))
    store.append("b", _turn(2))
    store.append("a", _turn(3))  # a is used again: b is now the oldest
    store.append("c", _turn(4))
    assert len(store) == 2
    assert store.history("b") == [] and len(store.history("a")) == 2 and len(store.history("c")) == 1


def test_conversations_expire_after_their_ttl():
    clock = Clock()
    store = ConversationStore(ttl_s=100, clock=clock)
    store.append("old", _turn(1))
    clock.now += 50
    store.append("new", _turn(2))
    clock.now += 60  # old was last used 110 s ago, new 60 s ago
    assert store.history("old") == [] and len(store.history("new")) == 1
    assert len(store) == 1


def test_a_file_store_is_shared_by_instances(tmp_path):
    path = tmp_path / "sub" / "conversations.sqlite"
    ConversationStore(path).append("c1", _turn(1), user_id="u1")
    again = ConversationStore(path)
    assert again.history("c1", user_id="u1") == [_turn(1)]


def test_concurrent_appends_lose_nothing():
    store = ConversationStore(max_turns=1000)

    def add(k: int) -> None:
        for i in range(25):
            store.append("shared", _turn(k * 100 + i))

    threads = [threading.Thread(target=add, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.history("shared")) == 100


@pytest.mark.parametrize("bound", [{"max_turns": 0}, {"max_conversations": -1}, {"ttl_s": 0}, {"max_turns": True}])
def test_bad_bounds_are_refused(bound):
    with pytest.raises(ConfigError, match="positive"):
        ConversationStore(**bound)


def test_ask_continues_a_conversation_by_id(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path))
    first = CliRunner().invoke(app, ["ask", "How many service areas have EV charging?", "--lm", "scripted:basic"])
    assert first.exit_code == 0, first.output
    conv = first.output.split("continue with --conversation ")[1].split(")")[0]
    second = CliRunner().invoke(app, ["ask", "And how many without?", "--lm", "scripted:basic", "--conversation", conv])
    assert second.exit_code == 0, second.output
    assert f"conversation {conv}: 1 earlier turn(s)" in second.output
    assert f"conversation: {conv} (turn 2;" in second.output
    history = ConversationStore(tmp_path / "conversations.sqlite").history(conv)
    assert [t["question"] for t in history] == ["How many service areas have EV charging?", "And how many without?"]
    assert history[0]["sql"] and history[0]["intent"] == "sql"


def test_ask_refuses_a_bad_conversation_id(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path))
    result = CliRunner().invoke(app, ["ask", "hi", "--lm", "scripted:basic", "--conversation", "has spaces!"])
    assert result.exit_code == 2 and "--conversation" in result.output


def test_a_conversation_belongs_to_its_first_user(tmp_path):
    store = ConversationStore(tmp_path / "c.sqlite")
    store.append("c1", _turn(1), user_id="alice")
    with pytest.raises(ConversationForbidden) as caught:
        store.history("c1", user_id="bob")
    assert "alice" not in str(caught.value) and "q1" not in str(caught.value)
    with pytest.raises(ConversationForbidden):
        store.append("c1", _turn(2), user_id="bob")  # and the owner is not overwritten
    with pytest.raises(ConversationForbidden):
        store.history("c1")  # no user is another user
    assert [t["question"] for t in store.history("c1", user_id="alice")] == ["q1"]
    # an unknown id is a new conversation for anyone; shared stores let anyone continue any
    assert store.history("new", user_id="bob") == []
    shared = ConversationStore(tmp_path / "c.sqlite", shared=True)
    assert shared.append("c1", _turn(2), user_id="bob") == 2
    assert [t["question"] for t in store.history("c1", user_id="alice")] == ["q1", "q2"]


def test_ask_refuses_another_users_conversation(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path))
    question = "How many service areas have EV charging?"
    first = CliRunner().invoke(app, ["ask", question, "--lm", "scripted:basic", "--user", "alice"])
    assert first.exit_code == 0, first.output
    conv = first.output.split("continue with --conversation ")[1].split(")")[0]
    assert len(conv) >= 22  # an unguessable id
    other = CliRunner().invoke(
        app, ["ask", "And how many without?", "--lm", "scripted:basic", "--conversation", conv, "--user", "bob"]
    )
    assert other.exit_code == 2, other.output
    text = " ".join(other.output.split())
    assert "belongs to another user" in text and question not in text and "alice" not in text
    assert "earlier turn" not in text  # nothing of the conversation was shown
    shared = CliRunner().invoke(
        app,
        [
            "ask",
            "And how many without?",
            "--lm",
            "scripted:basic",
            "--conversation",
            conv,
            "--user",
            "bob",
            "--shared-conversations",
        ],
    )
    assert shared.exit_code == 0 and f"conversation {conv}: 1 earlier turn(s)" in shared.output


def test_a_new_conversations_file_is_private_to_its_owner(tmp_path):
    # issue 62: the file (questions in clear text) was created 0644
    import os
    import stat

    old = os.umask(0o022)  # a user's usual umask, which would give 0644
    try:
        path = tmp_path / "conversations.sqlite"
        store = ConversationStore(path)
        store.append("c1", _turn(1), user_id="u1")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    journals = [p for p in tmp_path.iterdir() if p.name.startswith("conversations.sqlite-")]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in journals)
    # an existing file keeps the mode its owner chose
    path.chmod(0o640)
    ConversationStore(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
