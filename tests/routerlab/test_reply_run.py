"""``routerlab run`` on a conversation asked back at its first turn: the reply runs the confirmed reading's SQL.

The run machinery of ``routerlab run`` (``RouterRun`` and ``run_router``, turns in order, each
with the earlier turns as this run answered them) on the real ``concert_singer`` SQLite file of
the shared data, with a scripted LM standing in for SQL generation: it writes the capacity query
only when the prompt holds the pending request, the question asked back and the reply choosing it.
"""

from __future__ import annotations

import re

import pytest

from routerlab._runs.runner import RouterRun, RunConfig, build_scorers, run_router
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.lm.scripts import requested_field, sql_answer
from routerlab.benchmarks.example import Example
from tests.conftest import SPIDER_DEV_A

CONCERT = SPIDER_DEV_A / "database" / "concert_singer" / "concert_singer.sqlite"
REQUEST = "Which stadium is the best?"
BY_CAPACITY = "SELECT name FROM stadium ORDER BY capacity DESC LIMIT 1"
BY_AVERAGE = "SELECT name FROM stadium ORDER BY average DESC LIMIT 1"

pytestmark = pytest.mark.skipif(not CONCERT.is_file(), reason="shared data not found (set ROUTERLAB_SPIDER_DEV)")


def _sql_lm(prompts: list[str]):
    """Writes the reading the prompt's reply confirms, and records every SQL prompt."""

    def reply(request):
        text = "\n".join(text_of(m) for m in request.messages)
        if requested_field(request) != "sql":
            return {"fields": {requested_field(request) or "answer": "ok"}}
        prompts.append(text)
        # the request with the reply, as the plan writes it, and the exchange's note
        said = re.search(re.escape(REQUEST) + r" \(([^)]*)\)", text)
        if said and "asked back" in said.group(1):
            replied = said.group(1).split("the user replied:")[-1].lower()
            return sql_answer(request, BY_CAPACITY if "capacity" in replied else BY_AVERAGE)
        return sql_answer(request, "SELECT count(*) FROM stadium")

    return scripted_lm(reply)


def _conversation(reply: str) -> list[Example]:
    common = {"db_id": "concert_singer", "db_path": str(CONCERT), "dataset": "t", "conversation": "c1", "turns": 2}
    return [
        # the dataset writes the reply as the next turn: the first turn has no scripted reply
        Example(id="c1-t1", question=REQUEST, intent="sql", gold_sql=BY_CAPACITY, turn=1, **common),
        Example(id="c1-t2", question=reply, intent="sql", gold_sql=BY_CAPACITY, turn=2, **common),
    ]


@pytest.mark.parametrize("router_name", ["rules", "semantic"])
@pytest.mark.parametrize("reply", ["yes, the capacity", "by capacity please"])
def test_the_reply_turn_runs_the_confirmed_readings_sql(router_name, reply, tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path / "cache"))
    prompts: list[str] = []
    config = RunConfig(lm="scripted")
    run = RouterRun(router_name, {}, _sql_lm(prompts), config, build_scorers(config))
    results = []
    run_router(run, _conversation(reply), on_result=results.append)
    first, second = sorted(results, key=lambda r: r.turn)
    # the first turn asked back and ended waiting for the reply
    assert first.trace.ask_human and first.trace.sql is None
    # the reply continued the pending request: SQL for the reading it confirmed, scored right
    assert second.trace.intent == "sql" and ":reply-" in second.trace.route_decisions[0]["method"]
    assert second.trace.sql == BY_CAPACITY and second.trace.rows
    assert second.scores["ex"].value == 1.0
    # SQL generation read the pending request, the question asked back and the reply together
    assert any(REQUEST in p and repr(first.trace.ask_human) in p and repr(reply) in p for p in prompts)


def test_ask_reads_the_next_request_of_a_conversation_as_the_reply(tmp_path, monkeypatch):
    """``routerlab ask``: a turn left waiting on its question keeps it; the next request answers it."""
    from typer.testing import CliRunner

    from routerlab.cli import app
    from routerlab.conversation_store import ConversationStore

    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path))
    first = CliRunner().invoke(app, ["ask", "Which service area did best?", "--lm", "scripted:basic"])
    assert first.exit_code == 0, first.output
    conv = first.output.split("continue with --conversation ")[1].split(")")[0]
    history = ConversationStore(tmp_path / "conversations.sqlite").history(conv)
    assert history[0]["asked"] and history[0]["sql"] is None
    second = CliRunner().invoke(app, ["ask", "yes, by revenue", "--lm", "scripted:basic", "--conversation", conv])
    assert second.exit_code == 0, second.output
    assert ":reply-affirm: data_discovery" in second.output and "sql:" in second.output
    history = ConversationStore(tmp_path / "conversations.sqlite").history(conv)
    assert history[1]["intent"] == "sql" and history[1]["sql"] and "asked" not in history[1]
