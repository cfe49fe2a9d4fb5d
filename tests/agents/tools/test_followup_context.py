"""The follow-up context modes of the routed pipeline's generate_sql (issue 51).

Through the real pipeline (``oracle`` routing, data_discovery then generate_sql) on spider-dev-a's
real ``concert_singer`` SQLite file, with a scripted LM that records every prompt it gets: what
SQL generation sees of a three-turn conversation in each mode, a first turn unchanged in all of
them, the rewrite's fallback, and the plain call left as it was.
"""

from __future__ import annotations

import pytest

from routerlab import routers
from routerlab.agents.errors import UnknownComponentError
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.lm.scripts import answer_field, asks_for_sql
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools.followup_context import edit_instruction, followup_context
from routerlab.agents.turn_history import Turn, question_in_context
from tests.conftest import SPIDER_DEV_A

CONCERT = SPIDER_DEV_A / "database" / "concert_singer" / "concert_singer.sqlite"
needs_spider = pytest.mark.skipif(not CONCERT.is_file(), reason="real Spider data not found (set ROUTERLAB_SPIDER_DEV)")

FIRST_SQL = "SELECT name FROM singer WHERE country = 'France'"
SECOND_SQL = "SELECT name FROM singer WHERE country = 'France' AND age > 30"
#: two data turns and a chat turn between them: the follow-up's history
HISTORY: list[Turn] = [
    Turn(question="List the singers from France.", answer="", intent="sql", sql=FIRST_SQL, summary="4 row(s)."),
    Turn(question="thanks!", answer="You're welcome.", intent="chat", sql=None),
    Turn(question="Only those older than 30.", answer="", intent="sql", sql=SECOND_SQL, summary="2 row(s)."),
]
FOLLOW_UP = "How many are there?"
STANDALONE = "How many singers from France are older than 30?"
COUNT_SQL = "SELECT count(*) FROM singer WHERE country = 'France' AND age > 30"


def _prompt(request) -> str:
    return "\n".join(text_of(m) for m in request.messages)


def recording_lm(rewrite_reply: str = STANDALONE):
    """Answers the SQL request with a count, the rewrite request with ``rewrite_reply``; records both."""
    sql_prompts: list[str] = []
    rewrite_prompts: list[str] = []

    def reply(request):
        text = _prompt(request)
        if "Follow-up request:" in text:
            rewrite_prompts.append(text)
            return rewrite_reply
        if asks_for_sql(request):
            sql_prompts.append(text)
            return COUNT_SQL
        return answer_field(request, "ok")

    lm = scripted_lm(reply)
    lm.sql_prompts = sql_prompts  # type: ignore[attr-defined]
    lm.rewrite_prompts = rewrite_prompts  # type: ignore[attr-defined]
    return lm


def _run(mode: str, history: list[Turn], lm=None, router: str = "oracle"):
    lm = lm or recording_lm()
    config = PipelineConfig(tools=ToolSettings(followup_context=mode))
    trace = Pipeline(routers.router.build(router), lm, config=config).run(
        FOLLOW_UP, str(CONCERT), oracle_intent="sql", history=history
    )
    generate = next(c for c in trace.tool_calls if c["name"] == "generate_sql")
    return lm, trace, generate


def _question_of(prompt: str) -> str:
    """What the chat framing's prompt gives as the question (everything after ``Question: ``)."""
    return prompt.split("\nQuestion: ", 1)[1]


@needs_spider
def test_edit_is_the_default_and_parenthesis_is_the_former_prompt_byte_for_byte():
    assert ToolSettings().followup_context == "edit"  # chosen by docs/results/2026-11-28-followups.md
    lm, trace, generate = _run("parenthesis", HISTORY)
    assert _question_of(lm.sql_prompts[0]) == question_in_context(FOLLOW_UP, HISTORY)
    assert "standalone" not in generate["output"] and not lm.rewrite_prompts
    assert trace.sql == COUNT_SQL and trace.rows == [[2]]


@needs_spider
def test_edit_shows_the_previous_question_and_exact_sql_first_then_the_edit_rules():
    lm, trace, generate = _run("edit", HISTORY)
    question = _question_of(lm.sql_prompts[0])
    assert question == edit_instruction(FOLLOW_UP, HISTORY)
    # the last data turn only, its exact SQL, before the new request
    assert question.startswith("Previous request: Only those older than 30.\nPrevious SQL: " + SECOND_SQL + "\n")
    assert question.index(SECOND_SQL) < question.index(f"New request: {FOLLOW_UP}")
    assert "List the singers from France." not in question and "thanks!" not in question
    for rule in ("Keep its FROM, JOIN and WHERE", "replaces the one it stands in for", "counts the rows"):
        assert rule in question
    assert not lm.rewrite_prompts and "standalone" not in generate["output"]
    assert trace.rows == [[2]]


@needs_spider
def test_rewrite_makes_one_call_and_generation_sees_the_standalone_question_as_a_first_turn():
    lm, trace, generate = _run("rewrite", HISTORY)
    # the rewrite read both data turns (questions and SQL), not the chat turn
    assert len(lm.rewrite_prompts) == 1
    rewrite_prompt = lm.rewrite_prompts[0]
    for part in (HISTORY[0]["question"], FIRST_SQL, HISTORY[2]["question"], SECOND_SQL, FOLLOW_UP):
        assert part in rewrite_prompt
    assert "thanks!" not in rewrite_prompt
    # generation saw the standalone question and nothing else of the conversation
    assert len(lm.sql_prompts) == 1 and _question_of(lm.sql_prompts[0]) == STANDALONE
    assert FIRST_SQL not in lm.sql_prompts[0] and SECOND_SQL not in lm.sql_prompts[0]
    assert generate["output"]["standalone"] == STANDALONE
    assert trace.sql == COUNT_SQL and trace.rows == [[2]]
    # the rewrite counts in the turn's sub-agent usage: one call more than the parenthesis
    _, plain, _ = _run("parenthesis", HISTORY)
    assert trace.subagent_usage.lm_calls == plain.subagent_usage.lm_calls + 1


@needs_spider
def test_the_rewrite_reads_at_most_the_last_three_data_turns():
    old = [Turn(question=f"Singers of age {a}.", sql=f"SELECT name FROM singer WHERE age = {a}") for a in (20, 21)]
    lm, _, _ = _run("rewrite", [*old, *HISTORY])
    prompt = lm.rewrite_prompts[0]
    assert "age = 20" not in prompt and "age = 21" in prompt and FIRST_SQL in prompt and SECOND_SQL in prompt


@needs_spider
@pytest.mark.parametrize("reply", ["", "  \n ", "```sql\nSELECT count(*)\nFROM singer\n```"])
def test_an_empty_or_sql_rewrite_falls_back_to_the_parenthesis_and_says_so(reply):
    lm, trace, generate = _run("rewrite", HISTORY, recording_lm(rewrite_reply=reply))
    assert len(lm.rewrite_prompts) == 1
    assert _question_of(lm.sql_prompts[0]) == question_in_context(FOLLOW_UP, HISTORY)
    out = generate["output"]
    assert out["standalone"] is None and out["fallback"] == "parenthesis"
    expected = "empty rewrite" if not reply.strip() else "the rewrite is a SQL query, not a question"
    assert out["rewrite_failed"] == expected
    assert trace.rows == [[2]]


@needs_spider
@pytest.mark.parametrize("history", [[], [Turn(question="hi", answer="Hello", intent="chat", sql=None)]])
def test_a_first_turn_is_the_question_unchanged_in_every_mode_at_no_cost(history):
    prompts = {}
    for mode in followup_context.names():
        lm, _, generate = _run(mode, history)
        assert not lm.rewrite_prompts and "standalone" not in generate["output"]
        prompts[mode] = lm.sql_prompts[0]
        assert _question_of(prompts[mode]) == FOLLOW_UP
    assert len(set(prompts.values())) == 1


@needs_spider
@pytest.mark.parametrize("mode", ["edit", "rewrite"])
def test_the_plain_call_keeps_the_parenthesis_whatever_the_mode(mode):
    lm, _, generate = _run(mode, HISTORY, router="single_call")
    assert not lm.rewrite_prompts and "standalone" not in generate["output"]
    assert _question_of(lm.sql_prompts[0]) == question_in_context(FOLLOW_UP, HISTORY)


def test_an_unknown_mode_fails_when_the_settings_are_built_naming_the_known_ones():
    assert followup_context.names() == ["edit", "parenthesis", "rewrite"]
    with pytest.raises(UnknownComponentError) as exc:
        ToolSettings(followup_context="rewrit")
    assert "edit, parenthesis, rewrite" in exc.value.expected and "did you mean 'rewrite'" in exc.value.fix
