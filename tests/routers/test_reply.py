"""A reply to the assistant's own question continues the pending request, for every router.

Conversations are built from the shared CoSQL data (each ``question | clarifying question | reply``
turn becomes the question, the assistant asking back, and the user's reply as the next turn), from
the built-in benchmark's clarifications (its scripted replies) and from a property over reply
forms. ``rules`` and ``semantic`` run as they are (real MiniLM embeddings); ``hybrid``, ``llm``,
``handoff`` and ``team`` run with a scripted LM that routes every request to chat, so what sends
the reply to SQL is the shared reading of the pending question, not the model.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import initial_state
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.turn_history import Turn
from routerlab.benchmarks.builtin import builtin_database_path, load_builtin
from routerlab.benchmarks.dataset import dataset
from routerlab.routers.llm import to_openai_messages
from routerlab.routers.support.reply import as_reply, read_reply
from tests.conftest import SPIDER_DEV_A

COSQL = SPIDER_DEV_A.parent / "cosql-dev-a"
DATABASES = SPIDER_DEV_A / "database"
ROUTERS = ("rules", "semantic", "hybrid", "llm")


def _chat_lm():
    """An LM that sends every request to chat (tool call, and ``chat`` as a DSPy intent field)."""

    def reply(request) -> Any:
        if request.tools:
            return {"name": "chat", "args": {"message": "hello"}}
        return {"fields": {"intent": "chat", "reasoning": "small talk"}}

    return scripted_lm(reply)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        root = tmp_path_factory.mktemp("cache")
        mp.setenv("ROUTERLAB_CACHE", str(root))
        yield root


@pytest.fixture(scope="module")
def bound(cache_dir) -> dict[str, Any]:
    """Each router, bound with an LM that says chat; hybrid always asks it (threshold above every rule)."""
    args = {"hybrid": {"threshold": 1.01, "one_pass": False}, "llm": {"one_pass": False}}
    out = {}
    for name in ROUTERS:
        r = routers.router.build(name, **args.get(name, {}))
        r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=_chat_lm(), open_db=open_database))
        out[name] = r
    return out


def _asked(question: str, asked: str) -> Turn:
    """The turn the assistant ended on a question it asked back (no reply within the turn)."""
    return Turn(question=question, answer=asked, intent="clarify", sql=None, tables=[], asked=asked)


# -- the shared turn context ---------------------------------------------------------------------
def test_the_pending_question_is_in_the_state_with_its_readings(tmp_path):
    history = [_asked("Who is maker for the ID number 2 ?", "Did you mean Id or ModelId?")]
    state = initial_state("I mean id", "db.sqlite", history=history)
    assert state["pending_question"] == {
        "request": "Who is maker for the ID number 2 ?",
        "asked": "Did you mean Id or ModelId?",
        "readings": ["Id", "ModelId"],
    }
    # no question left pending: none in the state
    data_turn = Turn(question="How many?", answer="3", intent="sql", sql="SELECT 3")
    assert initial_state("yes", "db.sqlite", history=[data_turn])["pending_question"] is None
    assert initial_state("yes", "db.sqlite")["pending_question"] is None


@pytest.mark.parametrize(
    ("reply", "kind", "chosen"),
    [
        ("yes", "affirm", None),
        ("Yes.", "affirm", None),
        ("yes, the capacity", "affirm", "the capacity"),
        ("exactly", "affirm", None),
        ("no", "deny", None),
        ("the first one", "choice", "the capacity"),
        ("the latter please", "choice", "the average attendance"),
        ("average attendance", "choice", "the average attendance"),
        ("stadium names only", "answer", None),
    ],
)
def test_reply_forms_are_read_as_answers(reply, kind, chosen):
    history = [_asked("Which stadium is biggest?", "Do you mean the capacity or the average attendance?")]
    found = read_reply(initial_state(reply, "db.sqlite", history=history))
    assert found is not None and (found.kind, found.chosen) == (kind, chosen)
    # the plan reads the pending request with the reply, as a reply given within the turn
    planned = as_reply(initial_state(reply, "db.sqlite", history=history), found)
    assert planned["question"] == "Which stadium is biggest?"
    assert planned["user_reply"].startswith("the assistant asked back: 'Do you mean the capacity or")
    assert f"the user replied: {reply!r}" in planned["user_reply"]
    assert (f"choosing {chosen!r}" in planned["user_reply"]) == (chosen is not None)


@pytest.mark.parametrize("turn", ["thanks, bye", "never mind", "Thank you!", "tell me a joke", "no thanks"])
def test_a_closing_or_another_request_is_no_answer(turn):
    history = [_asked("Which stadium is biggest?", "Do you mean the capacity or the average attendance?")]
    assert read_reply(initial_state(turn, "db.sqlite", history=history)) is None


def test_lm_routers_see_the_pending_question_whatever_their_window():
    history = [_asked("Which stadium is biggest?", "Do you mean the capacity or the average attendance?")]
    state = initial_state("the first one", "db.sqlite", history=history)
    from routerlab.routers.support.history_window import window_of

    for name in ("none", "last", "last_k"):
        assert window_of(name, state).turns == history, name
    messages = to_openai_messages(state, window=window_of("none", state))
    assert messages[2] == {"role": "assistant", "content": "Do you mean the capacity or the average attendance?"}


# -- conversations from the shared CoSQL data ---------------------------------------------------
def _cosql_replies() -> list[tuple[str, list[Turn], str, str]]:
    """Every CoSQL clarification as (database, history ending with the question asked back, reply, gold SQL)."""
    if not (COSQL / "dev.json").is_file():
        pytest.skip("shared conversation data not found (set ROUTERLAB_SPIDER_DEV)")
    # the cases scripts/reply_routing.py decides (the results page's figures)
    cases = _script("reply_routing").reply_cases(dataset.build("cosql", path=str(COSQL)).examples)
    return [(e.db_path, history, str(e.user_reply), str(e.gold_sql)) for e, history in cases]


def _script(name: str) -> Any:
    """A module of scripts/ (not a package), loaded from its file."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_reply_routing_script_counts_replies_before_and_after(tmp_path, capsys):
    """``scripts/reply_routing.py`` on the shared CoSQL part: every reply to sql with its question pending."""
    _cosql_replies()  # skips without the shared data
    out = tmp_path / "replies.csv"
    assert _script("reply_routing").main([str(COSQL), "--router", "rules", "--before", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "rules (pending): 39/39 to sql" in printed and "rules (settled): " in printed
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("router,reading,example_id") and len(lines) == 1 + 2 * 39


def test_every_cosql_reply_goes_to_sql_for_every_router(bound):
    cases = _cosql_replies()
    assert len(cases) == 39
    for name, r in bound.items():
        missed = []
        for db, history, reply, _ in cases:
            d = r.decide(initial_state(reply, db, history=history))
            if d.intent != "sql" or d.tool_calls[0]["name"] != "data_discovery":
                missed.append((reply, d.intent, d.method))
            # the first call links the pending request, not the bare reply
            elif history[-1]["question"] not in d.tool_calls[0]["args"]["question"]:
                missed.append((reply, "linked", d.tool_calls[0]["args"]["question"]))
        assert not missed, (name, missed)


def test_the_llm_prompt_carries_the_question_asked_back(bound):
    db, history, reply, _ = _cosql_replies()[0]
    lm = bound["llm"].env.lm
    before = len(lm.routerlab_engine.requests)
    bound["llm"].decide(initial_state(reply, db, history=history))
    prompt = " ".join(str(p) for m in lm.routerlab_engine.requests[before].messages for p in m.parts)
    assert str(history[-1]["asked"]) in prompt and str(history[-1]["question"]) in prompt


def test_hybrid_and_dspy_prompts_carry_the_question_asked_back(bound):
    db, history, reply, _ = _cosql_replies()[0]
    dspy_router = routers.router.build("dspy", one_pass=False, history="none")
    dspy_router.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=_chat_lm(), open_db=open_database))
    for r in (bound["hybrid"], dspy_router):
        engine = r.env.lm.routerlab_engine
        before = len(engine.requests)
        assert r.decide(initial_state(reply, db, history=history)).intent == "sql"
        prompt = " ".join(text_of(m) for m in engine.requests[before].messages)
        assert str(history[-1]["asked"]) in prompt, r.name


# -- the built-in benchmark's clarifications -----------------------------------------------------
def test_every_builtin_clarification_reply_goes_to_sql(bound):
    clarify = [e for e in load_builtin().examples if e.intent == "clarify"]
    assert clarify
    db = str(builtin_database_path())
    for name, r in bound.items():
        missed = []
        for e in clarify:
            asked = str(e.meta.get("clarifying_question") or "Which one do you mean?")
            d = r.decide(initial_state(str(e.user_reply), db, history=[_asked(e.question, asked)]))
            if d.intent != "sql":
                missed.append((e.user_reply, d.method))
        assert not missed, (name, missed)


# -- a property over reply forms -------------------------------------------------------------------
READINGS = ("the capacity", "the average attendance")
_LEADS = ("yes", "Yes.", "yeah", "yep", "sure", "ok", "exactly", "correct", "right", "no", "nope", "I mean")
_BODIES = ("", "the first one", "the second", "the latter", "capacity", "average attendance", "the capacity one")
_TAILS = ("", " please", ", thanks", "!", ".")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lead=st.sampled_from(_LEADS), body=st.sampled_from(_BODIES), tail=st.sampled_from(_TAILS))
def test_any_reply_form_goes_to_sql(bound, lead, body, tail):
    db = str(DATABASES / "concert_singer" / "concert_singer.sqlite")
    if not DATABASES.is_dir():
        pytest.skip("shared data not found")
    reply = f"{lead}, {body}{tail}" if body else f"{lead}{tail}"
    # "no, thanks" declines and closes the exchange (test_a_closing_or_another_request_is_no_answer)
    assume(reply != "no, thanks")
    history = [_asked("Which stadium is the biggest?", "Do you mean the capacity or the average attendance?")]
    for name, r in bound.items():
        d = r.decide(initial_state(reply, db, history=history))
        assert d.intent == "sql", (name, reply, d.method)


def test_without_the_question_asked_back_a_yes_is_small_talk(bound):
    """The same "yes" with no pending question stays what it is: the reading needs the question."""
    db = str(DATABASES / "concert_singer" / "concert_singer.sqlite")
    d = bound["rules"].decide(initial_state("yes", db))
    assert d.intent == "chat"


def test_a_gold_clarification_with_its_sql_leaves_the_question_pending(bound):
    """In ``route``'s gold history a dataset's clarification turn keeps its gold SQL and no reply:
    a dataset that writes the reply as the next turn ("yes") has it answer that turn."""
    db = str(DATABASES / "concert_singer" / "concert_singer.sqlite")
    if not DATABASES.is_dir():
        pytest.skip("shared data not found")
    asked = Turn(question="please list the singers", answer="", intent="clarify", sql="SELECT name FROM singer")
    for reply in ("yes", "Yes."):
        state = initial_state(reply, db, history=[asked])
        assert state["pending_question"] == {"request": "please list the singers", "asked": "", "readings": []}
        for name, r in bound.items():
            assert r.decide(state).intent == "sql", name
    # a turn whose question was answered within it (a run's own turn) leaves nothing pending
    answered = Turn(**asked, replied="yes")
    assert initial_state("Thanks!", db, history=[answered])["pending_question"] is None
    assert bound["rules"].decide(initial_state("Thanks!", db, history=[answered])).intent == "chat"


def test_routers_that_choose_their_own_calls_continue_the_request_too(cache_dir):
    """``retrieval`` (an LM choosing among retrieved tools) and ``single_call`` read the reply the same way."""
    db, history, reply, _ = _cosql_replies()[0]
    state = initial_state(reply, db, history=history)
    retrieval = routers.router.build("retrieval")
    retrieval.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=_chat_lm(), open_db=open_database))
    d = retrieval.decide(state)
    assert d.intent == "sql" and d.method.endswith(":reply-affirm")
    assert history[-1]["question"] in d.tool_calls[0]["args"]["question"]
    single = routers.router.build("single_call")
    single.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=_chat_lm(), open_db=open_database))
    call = single.decide(state).tool_calls[0]
    assert call["name"] == "generate_sql" and call["args"]["question"].startswith(history[-1]["question"])


def test_the_cosql_exchanges_written_as_two_turns_are_replies_routed_to_sql(tmp_path):
    """``scripts/cosql_reply_turns.py``: each exchange becomes the question, then the reply as a turn."""
    import json

    from routerlab._routing_eval.decisions import first_decisions
    from routerlab.agents.lm import resolve_lm

    module = _script("cosql_reply_turns")
    _cosql_replies()  # skips without the shared data
    out = tmp_path / "replies.jsonl"
    assert module.main([str(COSQL), str(out)]) == 0
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    replies = [r for r in records if "reply_to" in r.get("meta", {})]
    assert len(replies) == 39
    by_id = {r["id"]: r for r in records}
    for r in replies:
        asked = by_id[f"{r['conversation']}-t{r['turn'] - 1}"]
        assert asked["intent"] == "clarify" and asked["user_reply"] == r["question"]
        assert asked["question"] == r["meta"]["reply_to"] and r["intent"] == "sql"
    examples = dataset.build("jsonl", path=str(out)).examples
    ids = {r["id"] for r in replies}
    for name in ("rules", "semantic"):
        got = [d for d in first_decisions(name, {}, examples, resolve_lm("scripted:basic")) if d.example_id in ids]
        assert len(got) == 39 and all(d.predicted == "sql" for d in got), name


# -- the swarm routers: handoff and team ---------------------------------------------------------
def _swarm_chat_lm(seen: list[str]):
    """Agents that send every request to chat and, as the SQL agent, ask about the bare user turn.

    Triage transfers to chat, a team member other than chat passes, the chat agent calls chat;
    the SQL agent calls a data tool with the latest user message as its question (a model that
    copies "yes"). ``seen`` gets every system prompt.
    """

    def reply(request) -> Any:
        names = [t.name for t in request.tools or []]
        seen.append(str(request.system or ""))
        user = next((text_of(m) for m in reversed(request.messages) if m.role == "user"), "")
        done = [text_of(m) for m in request.messages if m.role == "tool"]
        if "data_discovery" in names:
            name = "generate_sql" if any("[data_discovery" in d for d in done) else "data_discovery"
            return {"name": name, "args": {"question": user}}
        chatty = (("transfer_to_chat", {}), ("chat", {"message": user}), ("pass_turn", {"reason": "not mine"}))
        for name, args in chatty:
            if name in names:
                return {"name": name, "args": args}
        return {"name": names[0], "args": {}}

    return scripted_lm(reply)


@pytest.mark.parametrize("name", ["handoff", "team"])
def test_the_swarm_routers_continue_the_pending_request(name, cache_dir):
    """A reply the agents send to chat continues the request with the SQL agent, every step about the request."""

    db, history, reply, _ = _cosql_replies()[0]
    seen: list[str] = []
    r = routers.router.build(name)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=_swarm_chat_lm(seen), open_db=open_database))
    state = initial_state(reply, db, history=history)
    request = history[-1]["question"]
    first = r.decide(state)
    assert first.intent == "sql" and ":reply-" in first.method and first.agent == "sql", first.method
    call = first.tool_calls[0]
    assert call["name"] == "data_discovery" and call["args"]["question"].startswith(request)
    # the agents were told the request, the question asked back and the reply
    assert any(str(history[-1]["asked"]) in s and repr(reply) in s for s in seen)
    # the next step resumes with the SQL agent; its call asks about the request, not "yes"
    state["tool_calls"] = {call["id"]: {**call, "status": "success", "output": {"tables": []}, "step": 0}}
    state["route"] = first.summary(name)
    second = r.decide(state)
    assert second.agent == "sql" and second.tool_calls[0]["name"] in ("data_discovery", "generate_sql")
    # the model wrote the bare reply; the call asks about the request with it
    assert [c["args"]["question"] for a in second.activations for c in a.get("calls", [])] == [reply]
    assert second.tool_calls[0]["args"]["question"].startswith(request)
    assert repr(reply) in second.tool_calls[0]["args"]["question"]
    # the same model without a pending question: chat, as it says
    assert r.decide(initial_state(reply, db)).intent == "chat"


def test_an_explanation_or_a_fix_of_no_sql_gives_way_to_the_pending_request(cache_dir):
    """The embedded model read 2 of CoSQL's 39 replies as SQL to explain: "yes" holds none, so the request goes on."""
    db, history, reply, _ = _cosql_replies()[0]
    lm = scripted_lm(lambda request: {"name": "explain_sql", "args": {"sql": "SELECT 1"}})
    llm = routers.router.build("llm", one_pass=False)
    llm.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    d = llm.decide(initial_state(reply, db, history=history))
    assert d.intent == "sql" and d.method.endswith(":reply-affirm") and d.tool_calls[0]["name"] == "data_discovery"
    state = initial_state(reply, db, history=history)
    said = read_reply(state)
    assert said is not None and said.replaces("explain") and said.replaces("fix") and not said.replaces("refuse")
    # a reply that holds SQL may ask for it to be explained or fixed: that decision stands
    with_sql = read_reply(initial_state("yes, SELECT name FROM singer", db, history=history))
    assert with_sql is not None and not with_sql.replaces("explain") and with_sql.replaces("chat")
