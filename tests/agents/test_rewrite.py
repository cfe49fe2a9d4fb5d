"""``standalone_question``: the one shared rewrite of a follow-up (issue 51, reused by issue 49's routers).

A scripted LM stands in for the model: what the rewrite asks, what it reads back, what it costs.
"""

from __future__ import annotations

import pytest

from routerlab.agents.lm import scripted_lm, usage_scope
from routerlab.agents.lm.messages import text_of
from routerlab.agents.rewrite import REWRITE_TURNS, Rewrite, standalone_question
from routerlab.agents.turn_history import Turn

HISTORY = [
    Turn(question="How many complaints were filed in 2024?", sql="SELECT count(*) FROM complaints WHERE year = 2024"),
    Turn(question="hello", answer="Hi!", intent="chat", sql=None),
    Turn(question="Only Queue complaints.", sql="SELECT count(*) FROM complaints WHERE year = 2024 AND kind = 'Queue'"),
    # a failed turn is no base for a follow-up
    Turn(question="By hour?", sql="SELECT hour FROM complaints", error_class="sql_error"),
]


def _prompt(lm) -> str:
    (request,) = lm.routerlab_engine.requests
    return "\n".join(text_of(m) for m in request.messages)


@pytest.mark.parametrize("history", [[], [Turn(question="hello", answer="Hi!", intent="chat", sql=None)]])
def test_a_first_turn_is_not_rewritten_and_costs_no_call(history):
    lm = scripted_lm(["should not be asked"])
    with usage_scope() as log:
        out = standalone_question(lm, "How many branches are there?", history)
    assert out == Rewrite(text="How many branches are there?") and out.ok and not out.rewritten
    assert lm.routerlab_engine.requests == [] and log.total().lm_calls == 0


def test_the_rewrite_reads_the_data_turns_and_its_usage_is_counted():
    lm = scripted_lm(["How many Queue complaints were filed in 2023?"])
    with usage_scope() as log:
        out = standalone_question(lm, "What about in 2023?", HISTORY)
    assert out.ok and out.rewritten and out.text == "How many Queue complaints were filed in 2023?"
    prompt = _prompt(lm)
    for turn in (HISTORY[0], HISTORY[2]):
        assert turn["question"] in prompt and turn["sql"] in prompt
    assert "hello" not in prompt and "By hour?" not in prompt  # a chat turn and a failed turn
    assert "Follow-up request: What about in 2023?" in prompt
    # one call, in the caller's usage scope (a turn's sub-agent usage) and on the Rewrite
    assert out.usage.lm_calls == 1 and out.usage.prompt_tokens > 0
    assert log.total().lm_calls == 1 and log.total().prompt_tokens == out.usage.prompt_tokens


def test_at_most_the_last_three_data_turns_are_read():
    history = [
        Turn(question=f"Areas with {n} branches.", sql=f"SELECT name FROM areas WHERE n = {n}") for n in range(5)
    ]
    lm = scripted_lm(["Areas with 5 branches."])
    standalone_question(lm, "And 5?", history)
    prompt = _prompt(lm)
    assert REWRITE_TURNS == 3
    assert [n for n in range(5) if f"n = {n}" in prompt] == [2, 3, 4]


@pytest.mark.parametrize(
    ("reply", "text"),
    [
        (
            "Standalone question: How many Queue complaints were filed in 2023?",
            "How many Queue complaints were filed in 2023?",
        ),
        ('"How many Queue complaints were filed in 2023?"', "How many Queue complaints were filed in 2023?"),
        (
            "\nHow many Queue complaints were filed in 2023?\nThis keeps the Queue filter.",
            "How many Queue complaints were filed in 2023?",
        ),
    ],
)
def test_the_question_is_read_out_of_the_reply(reply, text):
    out = standalone_question(scripted_lm([reply]), "What about in 2023?", HISTORY)
    assert out.ok and out.text == text and out.reply == reply


@pytest.mark.parametrize(
    ("reply", "failure"),
    [
        ("", "empty rewrite"),
        ("  \n", "empty rewrite"),
        ('""', "empty rewrite"),
        (
            "```sql\nSELECT count(*)\nFROM complaints WHERE year = 2023\n```",
            "the rewrite is a SQL query, not a question",
        ),
        ("WITH q AS (SELECT 1) SELECT * FROM q", "the rewrite is a SQL query, not a question"),
    ],
)
def test_an_empty_or_sql_reply_is_a_failure_the_caller_falls_back_on(reply, failure):
    out = standalone_question(scripted_lm([reply]), "What about in 2023?", HISTORY)
    assert not out.ok and out.failure == failure and out.text == "" and out.rewritten
    assert out.usage.lm_calls == 1  # the failed call still cost what it cost
