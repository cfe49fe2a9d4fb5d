"""History windows of the LM routers: what each window puts in the routing prompt (issue 49).

``llm`` is checked on the messages of its tool-calling request, ``hybrid`` and ``dspy`` on the
request turn of their one-pass call (a scripted engine that scores labels and records what it
was asked). The default window is the routers' behaviour before windows existed.
"""

from __future__ import annotations

import dspy
import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError
from routerlab.agents.lm import scripted_lm, usage_scope
from routerlab.agents.lm.messages import text_of
from routerlab.agents.lm.scoring import ChoiceScores
from routerlab.agents.lm.scripted import ScriptedEngine, adapter_reply
from routerlab.agents.lm.usage import UsageCallback
from routerlab.agents.registry import component_spec
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import initial_state
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.turn_history import history_text
from routerlab.routers.llm import to_openai_messages
from routerlab.routers.support.history_window import Window, history_window, window_of

#: four earlier turns: the oldest falls outside last_k (3), only the newest is in last
HISTORY = [
    {"question": f"Q{i}: how many areas in region R{i}?", "answer": f"A{i}", "intent": "sql", "sql": f"SELECT {i}"}
    for i in range(1, 5)
]
REQUEST = "and only the ones with EV charging?"


def _state(db):
    return initial_state(REQUEST, str(db), history=list(HISTORY))


def _shown(text: str) -> list[int]:
    """Which earlier turns (1-4) a prompt shows."""
    return [i for i in range(1, 5) if f"Q{i}:" in text]


def test_the_windows_choose_turns():
    assert history_window.names() == ["last", "last_k", "none", "rewrite"]
    state = {"question": REQUEST, "history": HISTORY}
    assert window_of("none", state) == Window()
    assert window_of("last", state).turns == HISTORY[-1:]
    assert window_of("last_k", state).turns == HISTORY[-3:]
    assert all(window_of(name, state).request is None for name in ("last", "last_k", "none"))
    assert window_of("last", {"question": REQUEST}).turns == []


def _llm_prompt(db, **args) -> str:
    lm = scripted_lm([{"name": "data_discovery", "args": {"question": REQUEST}}])
    r = routers.router.build("llm", abstain_check=False, **args)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    decision = r.decide(_state(db))
    assert decision.tool_calls[0]["name"] == "data_discovery"
    (request,) = lm.routerlab_engine.requests
    return "\n".join(text_of(m) for m in request.messages)


@pytest.mark.parametrize(("history", "shown"), [("none", []), ("last", [4]), ("last_k", [2, 3, 4])])
def test_llm_prompt_shows_the_window(history, shown, sales_db):
    prompt = _llm_prompt(sales_db, history=history)
    assert _shown(prompt) == shown and REQUEST in prompt
    if history == "last":  # the last turn is the user's request and the assistant's reply
        assert "A4" in prompt and "SELECT 4" in prompt


def test_llm_default_is_no_earlier_turn_and_last_k_is_the_former_prompt(sales_db):
    # the default chosen by the history-window study (docs/results/2026-11-28-history-windows.md)
    assert _shown(_llm_prompt(sales_db)) == []
    state = _state(sales_db)
    # last_k's messages are exactly those built without a window (the prompt before windows existed)
    assert to_openai_messages(state, "sys", window=window_of("last_k", state)) == to_openai_messages(state, "sys")


def test_a_window_may_replace_the_request(sales_db):
    """The extension point a ``rewrite`` window uses: the request turn carries the rewritten words."""
    state = _state(sales_db)
    rewritten = Window(turns=[], request="How many areas in region R4 have EV charging?")
    messages = to_openai_messages(state, "sys", note="Schema check: ok.", window=rewritten)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] == "How many areas in region R4 have EV charging?\n\nSchema check: ok."


def test_the_rewrite_window_routes_the_standalone_request_alone():
    """``rewrite``: one model call (the shared ``agents.rewrite``), the rewritten request, no earlier turn."""
    lm = scripted_lm(["How many areas in region R4 have EV charging?"])
    state = {"question": REQUEST, "history": HISTORY}
    with usage_scope() as log:
        window = window_of("rewrite", state, lm)
    assert window.turns == [] and window.request == "How many areas in region R4 have EV charging?"
    assert window.usage.lm_calls == 1  # the window carries its call's cost to the decision
    (request,) = lm.routerlab_engine.requests
    prompt = "\n".join(text_of(m) for m in request.messages)
    assert REQUEST in prompt and "SELECT 4" in prompt  # the rewrite reads the follow-up and the turns' SQL
    assert log.total().lm_calls == 1  # counted where the decision's usage is counted


def test_the_rewrite_window_falls_back_to_the_last_turn():
    state = {"question": REQUEST, "history": HISTORY}
    # a reply that is a query is no question: the window the model would otherwise have had
    failed = window_of("rewrite", state, scripted_lm(["SELECT count(*) FROM areas"]))
    assert failed.turns == HISTORY[-1:] and failed.request is None
    assert failed.usage.lm_calls == 1  # the failed call was still made and paid for
    # no earlier data turn: nothing to rewrite and no call
    lm = scripted_lm(["never asked"])
    chat_only = [{"question": "hi", "answer": "Hello!", "intent": "chat", "sql": None}]
    assert window_of("rewrite", {"question": "how many areas?", "history": chat_only}, lm) == Window(turns=chat_only)
    assert lm.routerlab_engine.requests == []


def test_the_rewrite_window_needs_an_lm():
    with pytest.raises(ConfigError, match="needs the router's LM"):
        window_of("rewrite", {"question": REQUEST, "history": HISTORY}, None)


def test_an_llm_decision_counts_the_rewrite_call_in_its_usage(sales_db):
    """The decision's usage (what ``route`` and ``run`` report) is the rewrite's call plus the routing call."""
    rewrite = "How many areas in region R4 have EV charging?"
    for history, calls in (("none", 1), ("rewrite", 2)):
        lm = scripted_lm([rewrite, {"name": "data_discovery", "args": {"question": rewrite}}][2 - calls :])
        r = routers.router.build("llm", abstain_check=False, history=history)
        r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
        decision = r.decide(_state(sales_db))
        assert decision.tool_calls[0]["name"] == "data_discovery", history
        assert len(lm.routerlab_engine.requests) == calls and decision.usage.lm_calls == calls, history


class _Recorder(ScriptedEngine):
    """Scores ``sql`` on every one-pass call and keeps each request turn."""

    def __init__(self) -> None:
        super().__init__(lambda request: adapter_reply({"intent": "sql"}))
        self.turns: list[str] = []

    def score_choices(self, prefix, messages, choices, *, reply_prefix=""):
        self.turns.append(messages[-1]["content"])
        probs = {c: (0.9 if c == "sql" else 0.1 / (len(choices) - 1)) for c in choices}
        return ChoiceScores(probs, 0.9, 100, 80, 20, "live", 0.0)


def _one_pass_turn(name: str, db, **args) -> str:
    engine = _Recorder()
    lm = dspy.LM("scripted/windows", engine=engine, cache=False, callbacks=[UsageCallback()])
    r = routers.router.build(name, abstain_check=False, **args)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    decision = r.decide(_state(db))
    assert decision.intent == "sql" and decision.method.endswith("logprob")
    (turn,) = engine.turns
    return turn


@pytest.mark.parametrize("name", ["hybrid", "dspy"])
@pytest.mark.parametrize(("history", "shown"), [("none", []), ("last", [4]), ("last_k", [2, 3, 4])])
def test_one_pass_routers_read_the_window(name, history, shown, sales_db):
    # hybrid asks its LM path only below its threshold: 1.0 sends every request there
    args = {"threshold": 1.0} if name == "hybrid" else {}
    turn = _one_pass_turn(name, sales_db, history=history, **args)
    assert _shown(turn) == shown and turn.rstrip().endswith(f"Request: {REQUEST}")
    if shown:
        assert turn.startswith("Conversation: " + history_text(HISTORY[-len(shown) :], max_turns=len(shown)))
    else:
        assert turn == f"Request: {REQUEST}"


@pytest.mark.parametrize("name", ["hybrid", "dspy"])
def test_a_one_pass_decision_counts_the_rewrite_call_in_its_usage(name, sales_db):
    args = {"threshold": 1.0} if name == "hybrid" else {}
    used = {}
    for history in ("none", "rewrite"):
        engine = _Recorder()
        lm = dspy.LM("scripted/windows", engine=engine, cache=False, callbacks=[UsageCallback()])
        r = routers.router.build(name, abstain_check=False, history=history, **args)
        r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
        used[history] = r.decide(_state(sales_db)).usage.lm_calls
    assert used["rewrite"] == used["none"] + 1 and used["none"] >= 1


@pytest.mark.parametrize("name", ["hybrid", "dspy"])
def test_one_pass_default_is_the_former_conversation(name, sales_db):
    # the history-window study kept last_k for hybrid and dspy (docs/results/2026-11-28-history-windows.md)
    args = {"threshold": 1.0} if name == "hybrid" else {}
    turn = _one_pass_turn(name, sales_db, **args)
    assert turn == f"Conversation: {history_text(HISTORY)}\nRequest: {REQUEST}"


def test_hybrid_generation_path_reads_the_window(sales_db):
    """Without label scores hybrid asks for one tool call: the same window shapes that request."""
    lm = scripted_lm([{"name": "data_discovery", "args": {"question": REQUEST}}])
    r = routers.router.build("hybrid", threshold=1.0, one_pass=False, abstain_check=False, history="last")
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    assert r.decide(_state(sales_db)).method == "hybrid:generation"
    (request,) = lm.routerlab_engine.requests
    assert _shown("\n".join(text_of(m) for m in request.messages)) == [4]


@pytest.mark.parametrize("name", ["llm", "hybrid", "dspy"])
def test_the_window_is_a_recorded_argument(name):
    spec = component_spec(routers.router.build(name, history="none"))
    assert spec["args"]["history"] == "none"
    rebuilt = routers.router.rebuild(spec)
    assert rebuilt.history == "none" and component_spec(rebuilt) == spec
    # each router's default, chosen by the history-window study
    assert routers.router.build(name).history == {"llm": "none"}.get(name, "last_k")


@pytest.mark.parametrize("name", ["llm", "hybrid", "dspy"])
def test_an_unknown_window_names_the_known_ones(name):
    with pytest.raises(ConfigError) as err:
        routers.router.build(name, history="rewrites")
    assert err.value.expected == "a history window: last, last_k, none, rewrite" and err.value.found == "'rewrites'"
    assert f"{name}.history=last" in err.value.fix


@pytest.mark.model
@pytest.mark.parametrize("history", ["none", "last"])
def test_llm_windows_on_the_embedded_model(history, sales_db):
    """The contract on real model output: each window gives a well-formed decision for a follow-up."""
    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.state import INTENTS

    lm = resolve_lm("local:0.5b", max_tokens=96)
    r = routers.router.build("llm", history=history)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    decision = r.decide(_state(sales_db))
    assert decision.tool_calls and decision.intent in INTENTS
