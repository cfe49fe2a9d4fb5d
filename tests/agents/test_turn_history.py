"""A conversation's earlier turns reach the routers and the sub-agents of a follow-up turn."""

from __future__ import annotations

from routerlab import routers
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.agents.replay import outcome_key
from routerlab.agents.state import initial_state
from routerlab.agents.tools import ToolSettings
from routerlab.agents.turn_history import history_text, question_in_context, turn_from_trace
from routerlab.routers.llm import to_openai_messages

MOST_SQL = (
    "SELECT a.name FROM areas a JOIN revenue r ON r.area_id = a.id GROUP BY a.name ORDER BY sum(r.amount) DESC LIMIT 1"
)
FEWEST_SQL = (
    "SELECT a.name FROM areas a JOIN revenue r ON r.area_id = a.id GROUP BY a.name ORDER BY sum(r.amount) LIMIT 1"
)
FIRST = "Which area has the most revenue?"
FOLLOW_UP = "And the least?"


def _field(request) -> str:
    return requested_field(request)


def follow_up_lm():
    """Writes the 'least' query only when the prompt carries the earlier turn's SQL."""

    def reply(request):
        text = " ".join(str(p) for m in request.messages for p in m.parts)
        field = _field(request)
        if field == "sql":
            # the previous turn's SQL reaches the prompt (as a parenthesis or as the query to edit)
            follows = ("Earlier in this conversation" in text or "Previous SQL:" in text) and MOST_SQL in text
            return answer_field(request, FEWEST_SQL if follows and "least" in text else MOST_SQL)
        return answer_field(request, "ok")

    return scripted_lm(reply)


def _two_turns(db, router="rules", lm=None, config=None):
    pipeline = Pipeline(routers.router.build(router), lm or follow_up_lm(), config=config)
    first = pipeline.run(FIRST, str(db))
    history = [turn_from_trace(FIRST, first)]
    second = pipeline.run(FOLLOW_UP, str(db), history=history)
    return pipeline, first, second, history


def test_a_follow_up_reuses_the_previous_sql(sales_db):
    _, first, second, history = _two_turns(sales_db)
    assert first.sql == MOST_SQL and first.rows == [["Qinling North"]]
    assert history[0]["sql"] == MOST_SQL and history[0]["row_count"] == 1 and history[0]["tables"]
    assert second.sql == FEWEST_SQL and second.rows == [["Hanzhong East"]]
    # without the history the same words refer to nothing: the rules ask for the whole question
    alone = Pipeline(routers.router.build("rules"), follow_up_lm()).run(FOLLOW_UP, str(sales_db))
    assert alone.intent == "clarify" and alone.sql is None
    assert "follows up on what" in alone.answer


def test_a_first_turn_prompt_is_unchanged():
    assert question_in_context("How many?", []) == "How many?"
    # a turn without SQL gives nothing to follow up on
    assert question_in_context("How many?", [{"question": "hi", "answer": "Hello", "intent": "chat"}]) == "How many?"


def test_a_follow_up_keeps_the_previous_turns_tables(sales_db):
    # overlap linking shows only the tables a question names: the follow-up names none
    config = PipelineConfig(tools=ToolSettings(linking="overlap", max_tables=1))
    _, _, second, history = _two_turns(sales_db, config=config)
    discovery = next(c for c in second.tool_calls if c["name"] == "data_discovery")
    assert set(history[0]["tables"]) <= set(discovery["output"]["tables"])


def test_an_ambiguous_request_after_a_data_turn_is_a_follow_up(sales_db):
    pipeline = Pipeline(routers.router.build("rules"), follow_up_lm())
    vague = "How did that area do recently?"
    alone = pipeline.run(vague, str(sales_db))
    assert alone.intent == "clarify"
    history = [turn_from_trace(FIRST, pipeline.run(FIRST, str(sales_db)))]
    after = pipeline.run(vague, str(sales_db), history=history)
    assert after.intent == "sql" and after.route_decisions[0]["method"] == "rule:vague_reference:follow-up"
    assert "ask_human" not in after.tool_names
    # a chat turn gives no data to follow up on: still a clarifying question
    chat = [{"question": "hi", "answer": "Hello", "intent": "chat", "sql": None}]
    assert pipeline.run(vague, str(sales_db), history=chat).intent == "clarify"


def test_lm_routers_see_the_earlier_turns(sales_db):
    history = [{"question": FIRST, "answer": "Qinling North", "intent": "sql", "sql": MOST_SQL}]
    state = initial_state(FOLLOW_UP, str(sales_db), history=history)
    messages = to_openai_messages(state)
    assert [m["role"] for m in messages[:4]] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == FIRST and MOST_SQL in messages[2]["content"]
    assert messages[3]["content"] == FOLLOW_UP
    text = history_text(history)
    assert FIRST in text and MOST_SQL in text
    for name in ("dspy", "hybrid"):
        lm = follow_up_lm()
        args = {"threshold": 0.99, "one_pass": False} if name == "hybrid" else {"one_pass": False}
        Pipeline(routers.router.build(name, **args), lm).run(FOLLOW_UP, str(sales_db), history=history)
        prompts = [" ".join(str(p) for m in r.messages for p in m.parts) for r in lm.routerlab_engine.requests]
        assert any(FIRST in p for p in prompts[:1]), (name, prompts[:1])


def test_replay_keys_a_follow_up_apart_from_the_same_words_alone(sales_db):
    args = {"question": FOLLOW_UP}
    state = initial_state(FOLLOW_UP, str(sales_db))
    later = initial_state(FOLLOW_UP, str(sales_db), history=[{"question": FIRST, "sql": MOST_SQL}])
    fixed = {"lm": {"spec": "x"}, "context": {}}
    alone = outcome_key("data_discovery", args, {}, state, **fixed)
    assert alone is not None and alone != outcome_key("data_discovery", args, {}, later, **fixed)
