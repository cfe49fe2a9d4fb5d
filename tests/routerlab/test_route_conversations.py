"""``routerlab route`` over conversations: each turn decided with the earlier turns as the assistant holds them.

Real routers, the real pipeline binding, the shared SParC/CoSQL files and their real SQLite
databases; the scripted LM only writes SQL for the equivalence check with a real pipeline run.
Skipped where the shared data is absent (``ROUTERLAB_SPIDER_DEV``).
"""

from __future__ import annotations

import dataclasses
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
import routerlab.routers as routers_pkg
from routerlab._routing_eval.decisions import first_decisions, gold_turn, predicted_turn, runs_sql, summary_table
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.agents.turn_history import turn_from_trace
from routerlab.benchmarks.dataset import dataset
from routerlab.cli import app
from tests.conftest import SPIDER_DEV_A

COSQL = SPIDER_DEV_A.parent / "cosql-dev-a"
EXAMPLE_FILE = Path(__file__).parents[2] / "docs" / "examples" / "conversations.jsonl"

pytestmark = pytest.mark.skipif(
    not (COSQL / "dev.json").is_file() or not (SPIDER_DEV_A / "database").is_dir(),
    reason="shared conversation data not found (set ROUTERLAB_SPIDER_DEV)",
)


@pytest.fixture(scope="module")
def cosql() -> list[Any]:
    return dataset.build("cosql", path=str(COSQL)).examples


@pytest.fixture
def seen(monkeypatch) -> dict[str, list[dict]]:
    """The history each decision of the real ``rules`` / ``oracle`` routers was given, by example question."""
    record: dict[str, list[dict]] = {}
    for cls in (routers_pkg.router.get("rules"), routers_pkg.router.get("oracle")):
        original = cls.decide

        def decide(self, state, original=original):
            record[state["question"]] = [dict(t) for t in state.get("history") or []]
            return original(self, state)

        monkeypatch.setattr(cls, "decide", decide)
    return record


def test_follow_up_sees_the_exact_gold_history(cosql, seen):
    """Turn 3 of cosql-dev-0000 (car_1) sees turns 1 and 2 as ``ask --conversation`` keeps them."""
    conv = [e for e in cosql if e.conversation == "cosql-dev-0000"]
    assert [e.turn for e in conv] == [1, 2, 3]
    decisions = first_decisions("rules", {}, list(reversed(conv)), None)
    # decided in turn order whatever the input order, each after its earlier turns
    assert [d.turn for d in decisions] == [1, 2, 3] and [d.history_turns for d in decisions] == [0, 1, 2]
    assert seen[conv[0].question] == []
    history = seen[conv[2].question]
    assert [t["question"] for t in history] == [conv[0].question, conv[1].question]
    first = history[0]
    # the gold SQL run on the real database, summarised as the execution tool summarises it
    con = sqlite3.connect(conv[0].db_path)
    cur = con.execute(conv[0].gold_sql)
    rows = cur.fetchall()
    columns = [c[0] for c in cur.description]
    head = ", ".join(f"{c}={v!r}" for c, v in zip(columns, rows[0], strict=True))
    summary = f"{len(rows)} row(s); columns: {', '.join(columns)}; first row: {head}."
    assert first == {
        "question": "How many car models are produced by each maker? List the count and the maker full name.",
        "answer": summary,
        "intent": "sql",
        "sql": conv[0].gold_sql,
        "columns": columns,
        "row_count": len(rows),
        "summary": summary,
        "tables": ["car_makers", "model_list"],
        "error_class": None,
    }
    assert history[1]["sql"] == conv[1].gold_sql and history[1]["intent"] == "sql"
    # the same turns a routing prompt shows
    from routerlab.agents.turn_history import history_text

    assert "SQL SELECT Count ( * )" in history_text(history)


def test_gold_turn_is_the_turn_a_pipeline_run_leaves(cosql):
    """A real pipeline run that answers turn 1 right leaves the turn ``gold_turn`` builds."""
    from routerlab._runs.runner import RouterRun, RunConfig, build_scorers, run_router

    e = next(x for x in cosql if x.conversation == "cosql-dev-0000" and x.turn == 1)

    def reply(request):
        field = requested_field(request)
        return answer_field(request, e.gold_sql if field == "sql" else "ok")

    config = RunConfig(dataset="cosql", lm="scripted:gold")
    out: list[Any] = []
    run_router(RouterRun("oracle", {}, scripted_lm(reply), config, build_scorers(config)), [e], on_result=out.append)
    ran = turn_from_trace(e.question, out[0].trace)
    gold = gold_turn(e)
    assert ran["sql"] is not None, out[0].trace.error_class
    # schema linking may find more tables than the query reads; everything else is the same turn
    assert {k: v for k, v in ran.items() if k != "tables"} == {k: v for k, v in gold.items() if k != "tables"}
    assert set(gold["tables"]) <= set(ran["tables"])


def test_clarify_turn_in_history_and_predicted_history(cosql, seen):
    """A clarification exchange at turn >= 2: gold history keeps intent clarify and the SQL run after
    the reply; predicted history keeps what the router decided instead."""
    target = next(e for e in cosql if e.intent == "clarify" and e.turn >= 2 and e.turn < e.turns)
    conv = [e for e in cosql if e.conversation == target.conversation]
    after = conv[target.turn]  # the turn after the exchange
    first_decisions("oracle", {}, conv, None)
    gold_seen = seen[after.question][target.turn - 1]
    assert (gold_seen["intent"], gold_seen["sql"], gold_seen["question"]) == (
        "clarify",
        target.gold_sql,
        target.question,
    )
    decisions = first_decisions("oracle", {}, conv, None, history="predicted")
    predicted = next(d.predicted for d in decisions if d.turn == target.turn)
    mine = seen[after.question][target.turn - 1]
    assert mine["intent"] == predicted
    assert (mine["sql"] is not None) == runs_sql(predicted)


def test_predicted_history_replays_the_routers_own_turns(seen):
    """On the documented logged conversations (chat, sql, refuse, ...): every later turn sees each
    earlier turn with the intent the router gave it, and SQL only where that intent runs SQL."""
    examples = dataset.build("jsonl", path=str(EXAMPLE_FILE)).examples
    decisions = first_decisions("rules", {}, examples, None, history="predicted")
    by_id = {d.example_id: d for d in decisions}
    for e in examples:
        if e.conversation is None or e.turn == 1:
            continue
        history = seen[e.question]
        earlier = [x for x in examples if x.conversation == e.conversation and x.turn < e.turn]
        assert [t["intent"] for t in history] == [by_id[x.id].predicted for x in earlier]
        for t, x in zip(history, earlier, strict=True):
            assert t["sql"] == (x.gold_sql if runs_sql(t["intent"]) and x.gold_sql else None)
    # a refusal or chat in the gold history leaves no SQL for the follow-up either
    chat = next(x for x in examples if x.intent == "chat")
    assert gold_turn(chat)["sql"] is None and predicted_turn(gold_turn(chat), "sql")["sql"] is None


def test_summary_reports_first_turns_and_follow_ups(cosql):
    conv = [e for e in cosql if e.conversation in ("cosql-dev-0000", "cosql-dev-0001", "cosql-dev-0002")]
    by_router = {"oracle": first_decisions("oracle", {}, conv, None)}
    row = summary_table(by_router).iloc[0]
    ds = by_router["oracle"]
    first = [d for d in ds if d.turn == 1]
    later = [d for d in ds if d.turn > 1]
    assert row["n_first"] == len(first) == 3 and row["n_followup"] == len(later)
    assert row["acc_first"] == pytest.approx(sum(d.correct for d in first) / len(first))
    assert row["acc_followup"] == pytest.approx(sum(d.correct for d in later) / len(later))
    assert row["recall_clarify"] == pytest.approx(
        sum(d.correct for d in ds if d.gold == "clarify") / sum(d.gold == "clarify" for d in ds)
    )


def test_route_command_over_cosql_and_bad_history():
    base = ["route", "--dataset", "cosql", "--dataset-path", str(COSQL), "--lm", "scripted:basic", "--no-mlflow"]
    result = CliRunner().invoke(app, [*base, "--router", "rules", "--limit", "6", "--history", "predicted"])
    assert result.exit_code == 0, result.output
    assert "predicted history" in result.output
    # the session's comparison: routing accuracy per turn position and over whole conversations,
    # and next to accuracy the data questions sent away from SQL
    text = " ".join(result.output.split())
    assert "Conversations (routing accuracy per turn position" in text and "turn 2" in text
    assert "whole conversation" in text and re.search(r"rules \d\.\d\d \[\d\.\d\d, \d\.\d\d\] \d\.\d\d", text)
    bad = CliRunner().invoke(app, [*base, "--router", "rules", "--history", "oracle"])
    assert bad.exit_code == 2
    assert "--history" in bad.output and "gold" in bad.output


def test_compare_of_a_route_session_over_conversations_shows_no_end_to_end_tables(tmp_path):
    """First decisions carry no EX or served value: compare leaves the conversation tables out (no rows of n/a)."""
    store = tmp_path / "r.duckdb"
    base = ["route", "--dataset", "cosql", "--dataset-path", str(COSQL), "--lm", "scripted:basic", "--no-mlflow"]
    routed = CliRunner().invoke(app, [*base, "--router", "always_sql,rules", "--limit", "6", "--store", str(store)])
    assert routed.exit_code == 0, routed.output
    session = re.search(r"session (\S+) \(store", routed.output).group(1)  # type: ignore[union-attr]
    shown = CliRunner().invoke(app, ["compare", session, "--store", str(store)])
    assert shown.exit_code == 0, shown.output
    assert "routing accuracy per gold intent" in shown.output and "routing accuracy" in shown.output
    assert "question EX" not in shown.output and "served" not in shown.output
    assert "n/a" not in shown.output


def test_a_turn_without_sql_has_every_key_of_a_turn_and_no_result():
    """``gold_turn``, ``predicted_turn`` and a failed gold query share one turn-without-SQL shape."""
    from routerlab.agents.turn_history import Turn, turn_without_sql

    examples = dataset.build("jsonl", path=str(EXAMPLE_FILE)).examples
    chat = next(x for x in examples if x.intent == "chat")
    data = next(x for x in examples if x.intent == "sql" and x.gold_sql)
    empty = {"answer": "", "sql": None, "columns": [], "row_count": 0, "summary": None, "tables": []}
    # ``asked`` and ``replied`` are present only on a turn that asked back (Turn's docstring)
    assert set(turn_without_sql("q", "chat")) == set(Turn.__annotations__) - {"asked", "replied"}
    assert (
        gold_turn(chat)
        == turn_without_sql(chat.question, "chat")
        == {
            "question": chat.question,
            "intent": "chat",
            "error_class": None,
            **empty,
        }
    )
    assert predicted_turn(gold_turn(data), "refuse") == turn_without_sql(data.question, "refuse")
    broken = dataclasses.replace(data, gold_sql="SELECT no_such_column FROM no_such_table")
    failed = gold_turn(broken)
    assert failed == {"question": data.question, "intent": "sql", "error_class": failed["error_class"], **empty}
    assert failed["error_class"] == "sql_error"
