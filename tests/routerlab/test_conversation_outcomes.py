"""Clarification end to end and the outcome scores, on real CoSQL conversations through the real pipeline.

The conversations are CoSQL's own (shared ``cosql-dev-a``, their real SQLite files); the routers,
the pipeline, the runner and the scorers are the real ones. A scripted LM writes a turn's gold
SQL only when its prompt carries what the turn needs: for a clarification turn, the dataset's
clarifying question and the user's reply together, except for the one turn a direct answer
serves (voter_1's "who all are the contest", whose gold lists every contestant's name).
Skipped where the shared data is absent (``ROUTERLAB_SPIDER_DEV``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
from routerlab._runs.runner import RouterRun, RunConfig, build_scorers, run_router
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.example import Example
from routerlab.eval.outcomes import outcome_summary, served
from routerlab.eval.rate import rate
from routerlab.eval.scoring import ExampleResult
from tests.conftest import SPIDER_DEV_A, figures_of

COSQL = SPIDER_DEV_A.parent / "cosql-dev-a"
#: voter_1: clarification exchanges at turns 1 and 3, data questions at turns 2 and 4
VOTER = "cosql-dev-0023"
#: a data question the ``rules`` router asks back on (``missing_measure``): it expects no question
ASKED_DATA = "Which singer is the best?"
CONCERT = SPIDER_DEV_A / "database" / "concert_singer" / "concert_singer.sqlite"

pytestmark = pytest.mark.skipif(
    not (COSQL / "dev.json").is_file() or not (SPIDER_DEV_A / "database").is_dir(),
    reason="shared conversation data not found (set ROUTERLAB_SPIDER_DEV)",
)


def _flat(text: str) -> str:
    return " ".join(str(text).split())


@pytest.fixture(scope="module")
def cosql() -> list[Any]:
    return dataset.build("cosql", path=str(COSQL)).examples


@pytest.fixture(scope="module")
def voter(cosql) -> list[Any]:
    turns = [e for e in cosql if e.conversation == VOTER]
    assert [e.intent for e in turns] == ["clarify", "sql", "clarify", "sql"]
    return turns


def gold_lm(examples, *, direct: tuple[str, ...] = ()):
    """Gold SQL for the latest turn the prompt carries; a clarification turn needs its exchange.

    ``direct``: questions of clarification turns answered right without the exchange.
    """
    prompts: dict[str, str] = {}

    def reply(request):
        if requested_field(request) != "sql":
            return answer_field(request, "ok")
        text = _flat("\n".join(text_of(m) for m in request.messages))
        # a follow-up's prompt carries the earlier questions too: the latest turn it names is this one
        for e in sorted(examples, key=lambda e: -e.turn):
            if _flat(e.question) not in text:
                continue
            prompts[e.id] = text
            if e.intent == "clarify" and e.question not in direct:
                exchange = _flat(e.meta["clarifying_question"]) in text and _flat(e.user_reply) in text
                if not exchange:
                    return answer_field(request, "SELECT 1")
            return answer_field(request, e.gold_sql)
        return answer_field(request, "SELECT 1")

    lm = scripted_lm(reply)
    lm.prompts = prompts  # type: ignore[attr-defined]
    return lm


def _run(router: str, examples, lm) -> list[ExampleResult]:
    config = RunConfig(dataset="cosql", lm="scripted:gold")
    run = RouterRun(router, {}, lm, config, build_scorers(config))
    out: list[ExampleResult] = []
    run_router(run, examples, on_result=out.append)
    return sorted(out, key=lambda r: (r.conversation or "", r.turn))


def test_clarification_reaches_sql_generation_at_any_turn(voter):
    lm = gold_lm(voter)
    results = _run("oracle", voter, lm)
    for r, e in zip(results, voter, strict=True):
        assert r.value("ex") == 1.0, (e.id, r.trace.sql if r.trace else None)
        if e.intent == "clarify":
            # asked back, at turn 1 and at turn 3 alike, with the dataset's own question
            assert r.trace.ask_human == e.meta["clarifying_question"], e.id
            assert r.value("success") == 1.0
            # the reply reached SQL generation together with the question it answers
            prompt = lm.prompts[e.id]
            assert _flat(e.meta["clarifying_question"]) in prompt and _flat(e.user_reply) in prompt
        else:
            assert not r.trace.ask_human
    assert voter[2].turn == 3 and results[2].trace.route_decisions[0]["intent"] == "clarify"


def test_outcomes_case_by_case(cosql, voter, tmp_path):
    # a data question (gold sql, no scripted reply) on which the rules router asks back
    data_turn = Example(
        "asked-t1",
        ASKED_DATA,
        "concert_singer",
        str(CONCERT),
        "sql",
        gold_sql="SELECT name FROM singer ORDER BY age DESC LIMIT 1",
        conversation="asked",
    )
    examples = [*voter, data_turn]
    lm = gold_lm(examples, direct=(voter[0].question,))
    oracle = _run("oracle", voter, lm)
    always = _run("always_sql", voter, lm)
    rules = _run("rules", [data_turn], lm)

    # oracle: asked both expected questions, served every turn
    o = outcome_summary(oracle)
    assert o is not None
    assert (o.asking.clarify_turns, o.asking.asked_expected, o.asking.answered_directly) == (2, 2, 0)
    assert (o.asking.other_turns, o.asking.asked_unexpected) == (2, 0)
    assert o.served.value == 1.0 and o.served.n == 4 and o.question_ex.value == 1.0

    # always_sql: turn 1 answered directly and right (served, yet success 0); turn 3 directly and wrong
    by_turn = {r.turn: r for r in always}
    assert by_turn[1].value("ex") == 1.0 and by_turn[1].value("success") == 0.0 and served(by_turn[1]) == 1.0
    assert by_turn[3].value("ex") == 0.0 and served(by_turn[3]) == 0.0
    a = outcome_summary(always)
    assert a is not None
    assert (a.asking.asked_expected, a.asking.answered_directly, a.asking.asked_unexpected) == (0, 1, 0)
    assert a.served.value == 0.75 and a.asking.diverted.diverted == 0

    # rules asks back on a data question: asked when not expected, diverted, not served
    assert rules[0].trace.ask_human and rules[0].intent == "sql"
    r = outcome_summary(rules)
    assert r is not None
    assert (r.asking.other_turns, r.asking.asked_unexpected, r.asking.diverted.diverted) == (1, 1, 1)
    assert r.served.value == 0.0

    # served against always_sql, paired on the same turns (the comparison's one test per pair):
    # oracle wins turn 3, loses nothing
    from routerlab.eval.analysis.build import _pair
    from routerlab.eval.analysis.measures import SERVED

    d = _pair(SERVED, "oracle", "always_sql", oracle, always)
    assert d is not None and (d.a, d.n, d.a_only, d.b_only) == ("oracle", 4, 1, 0) and math.isclose(d.diff, 0.25)

    # asks per served turn: oracle asked 2 questions and served 4 turns, always_sql asked none
    # and served 3, rules asked 1 and served none (no ratio)
    assert (o.asking.asks, o.asking.asks_per_served.value, o.asking.asks_per_served.n) == (2, 0.5, 4)
    assert (a.asking.asks, a.asking.asks_per_served.value, a.asking.asks_per_served.n) == (0, 0.0, 3)
    assert r.asking.asks == 1 and r.asking.asks_per_served.n == 0
    assert "asks_per_served" not in r.metrics() and r.metrics()["asking.asks"] == 1.0

    # the MLflow metrics and the printed table
    metrics = o.metrics()
    assert metrics["served"] == 1.0 and metrics["asking.asked_expected_rate"] == 1.0
    assert metrics["asks_per_served"] == 0.5 and metrics["asking.asks"] == 2.0
    # computed once, in the comparison's figures, and shown in its words beside served
    from routerlab.eval.analysis.build import _figures
    from routerlab.eval.analysis.words import CONVERSATION_FIGURES, figure_text
    from routerlab.eval.store import END_TO_END

    figures = _figures(END_TO_END, oracle)
    assert figures["asks_per_served"] == 0.5 and figure_text(figures, "asks_per_served") == "0.50"
    assert dict(CONVERSATION_FIGURES[END_TO_END])["asks_per_served"] == "asks per served turn"
    assert a.metrics()["asking.answered_directly"] == 1.0
    # a run without conversations has no outcome figures
    assert outcome_summary([dataclasses.replace(x, conversation=None) for x in always]) is None
    # served is a measure of its own in the comparison; the scorers' rates are untouched by it
    rates = figures_of(tmp_path / "r.duckdb", always).rates
    assert rates["served"].value == a.served.value == 0.75
    assert all(rates[k].value == rate(always, k).value for k in ("success", "ex"))


def test_replay_keys_a_reply_apart_by_the_question_it_answers(voter):
    """A cached generate_sql outcome is reused only for the same reply to the same question."""
    from routerlab.agents.replay import outcome_key
    from routerlab.agents.state import initial_state

    e = voter[0]
    fixed = {"lm": {"spec": "x"}, "context": {}}
    args = {"question": e.question}

    def key(**state_args):
        state = initial_state(e.question, e.db_path, **{k: v for k, v in state_args.items() if k == "clarification"})
        state.update({k: v for k, v in state_args.items() if k != "clarification"})
        return outcome_key("generate_sql", args, {}, state, **fixed)

    plain = key()
    # no reply: the key is what it always was, whatever question was asked
    assert key(clarification=e.meta["clarifying_question"]) == plain
    answered = key(clarification=e.meta["clarifying_question"], user_reply=e.user_reply)
    assert answered != key(user_reply=e.user_reply, ask_human="Which one do you mean?")
    assert answered == key(user_reply=e.user_reply, ask_human=e.meta["clarifying_question"])


def test_a_reply_comes_back_as_the_next_turn(voter):
    """A conversation turn that asks back ends waiting; the dataset's reply is the user's next turn."""
    ask = Example(
        "best-t1",
        ASKED_DATA,
        "concert_singer",
        str(CONCERT),
        "clarify",
        gold_sql="SELECT name FROM singer ORDER BY age LIMIT 1",
        user_reply="the youngest one",
        conversation="best",
        turn=1,
        turns=2,
    )
    then = Example(
        "best-t2", "How many singers are there?", "concert_singer", str(CONCERT), "sql",
        gold_sql="SELECT count(*) FROM singer", conversation="best", turn=2, turns=2,
    )  # fmt: skip
    prompts: list[str] = []

    def reply(request):
        if requested_field(request) != "sql":
            return answer_field(request, "ok")
        text = _flat("\n".join(text_of(m) for m in request.messages))
        prompts.append(text)
        if "How many singers" in text:
            return answer_field(request, then.gold_sql)
        # the youngest singer only when the prompt holds the request and the reply together
        right = ASKED_DATA in text and "the youngest one" in text
        return answer_field(request, ask.gold_sql if right else "SELECT name FROM singer ORDER BY age DESC LIMIT 1")

    first, second = _run("rules", [ask, then], scripted_lm(reply))
    t = first.trace
    assert t is not None and t.turns == 2 and t.intent == "clarify" and t.ask_human
    # the router decided the reply turn itself, reading it as the answer to its question
    methods = [d["method"] for d in t.route_decisions]
    assert methods[0].startswith("rule:") and methods[1].endswith(":reply-answer"), methods
    asks = [c for c in t.tool_calls if c["name"] == "ask_human"]
    assert len(asks) == 1 and asks[0]["status"] == "success" and asks[0]["output"] == {"reply": "the youngest one"}
    assert first.value("ex") == 1.0 and served(first) == 1.0 and first.value("chain_valid") == 1.0
    assert first.value("success") == 1.0
    # the next dataset turn sees the exchange settled: a question of its own, not a reply
    assert not any("reply-" in d["method"] for d in second.trace.route_decisions)
    assert second.value("ex") == 1.0
    o = outcome_summary([first, second])
    assert o is not None and (o.asking.asks, o.asking.asks_per_served.value) == (1, 0.5)


def test_asks_count_each_question_and_a_wrong_answer_after_the_reply_is_not_served(voter):
    """Each question asked is one exchange; a reply followed by a wrong answer serves nothing."""
    from routerlab.agents.graph import Pipeline
    from routerlab.agents.lm.adapter import lm_context
    from routerlab.agents.trace import answered_by_reply
    from routerlab.eval.outcomes import asks_of
    from routerlab.routers import router

    e = voter[0]
    wrong = scripted_lm(lambda q: answer_field(q, "SELECT 1" if requested_field(q) == "sql" else "ok"))
    results = _run("oracle", voter, wrong)
    assert [r.value("ex") for r in results] == [0.0] * 4
    o = outcome_summary(results)
    assert o is not None and o.asking.asks == 2 and o.served.value == 0.0 and o.asking.asks_per_served.n == 0

    # a reply turn that asks again: two questions on one turn, the second left waiting
    pipeline = Pipeline(router.build("oracle"), wrong)
    with lm_context(wrong):
        asked = pipeline.run(e.question, e.db_path, oracle_intent="clarify", clarification="Which contest?")
        again = pipeline.run(e.user_reply, e.db_path, oracle_intent="clarify")
    joined = answered_by_reply(asked, e.user_reply, again)
    result = dataclasses.replace(results[0], trace=joined)
    assert asks_of(result) == 2 and joined.turns == 2
    assert [c["status"] for c in joined.tool_calls if c["name"] == "ask_human"] == ["success", "pending"]
    assert joined.ask_human == again.ask_human
