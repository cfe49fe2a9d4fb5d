"""Multi-turn conversations in `routerlab run`: replayed turn by turn, scored per turn and per conversation.

A scripted LM writes a turn's gold SQL only when its prompt carries what the turn needs: the
question, and for a follow-up the earlier turn's SQL as this run produced it. The runs go
through the real pipeline, the real built-in DuckDB file and the real scorers.
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import routerlab.benchmarks.builtin  # noqa: F401  (registers the built-in datasets)
from routerlab._runs.runner import RouterRun, RunConfig, build_scorers, conversation_units, run_router
from routerlab.agents.errors import ConfigError
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.selection import of_intents, stratified_subset
from routerlab.cli import app
from routerlab.eval.conversation_metrics import conversation_summary
from routerlab.eval.scoring import ExampleResult
from tests.conftest import figures_of
from tests.conftest import turn_result as _result

EXAMPLES = dataset.build("builtin_conversations").examples


def _flat(text: str) -> str:
    return " ".join(text.split())


def context_lm(*, use_context: bool = True):
    """Gold SQL for a first turn; for a follow-up only when the prompt carries the previous turn's SQL."""
    by_id = {e.id: e for e in EXAMPLES}
    prompts: dict[str, str] = {}

    def reply(request):
        field = requested_field(request)
        if field != "sql":
            return answer_field(request, "ok")
        text = _flat(" ".join(getattr(p, "text", str(p)) for msg in request.messages for p in msg.parts))
        # a follow-up's prompt carries the previous turn in any follow-up context mode
        # (``parenthesis``: "Earlier in this conversation ... asked: '...'"; ``edit``: "Previous request: ...")
        in_context = "Earlier in this conversation" in text or "Previous SQL:" in text
        if use_context and in_context:
            for e in EXAMPLES:
                before = by_id.get(f"{e.conversation}-t{e.turn - 1}")
                shown = before and (
                    f"asked: {before.question!r}" in text or f"Previous request: {_flat(before.question)}" in text
                )
                if e.turn > 1 and e.question in text and shown:
                    prompts[e.id] = text
                    return answer_field(request, e.gold_sql)
        elif not in_context:
            for e in EXAMPLES:
                if e.turn == 1 and e.question in text:
                    return answer_field(request, e.gold_sql)
        return answer_field(request, "SELECT 1")

    lm = scripted_lm(reply)
    lm.follow_up_prompts = prompts  # type: ignore[attr-defined]
    return lm


def _run(examples, lm, **kw) -> list[ExampleResult]:
    config = RunConfig(dataset="builtin_conversations", lm="scripted:context")
    run = RouterRun("rules", {}, lm, config, build_scorers(config))
    out: list[ExampleResult] = []
    run_router(run, examples, on_result=out.append, **kw)
    return out


def test_turns_see_the_earlier_turns_and_are_scored_one_by_one():
    lm = context_lm()
    results = _run(EXAMPLES, lm)
    # every follow-up's SQL prompt carried the SQL the previous turn ran in this run
    by_id = {r.example_id: r for r in results}
    for e in EXAMPLES:
        if e.turn > 1:
            previous = by_id[f"{e.conversation}-t{e.turn - 1}"].trace.sql
            assert _flat(previous) in lm.follow_up_prompts[e.id], e.id
    assert [r.example_id for r in results] == [e.id for e in EXAMPLES]
    assert all(r.value("ex") == 1 and r.value("success") == 1 for r in results), [
        (r.example_id, r.value("ex")) for r in results if r.value("ex") != 1
    ]
    assert {(r.conversation, r.turn, r.turns) for r in results} == {(e.conversation, e.turn, e.turns) for e in EXAMPLES}
    summary = conversation_summary(results)
    assert summary is not None and summary.conversations == 8 and summary.incomplete == 0
    assert summary.per_conversation["success"].value == 1.0 and summary.per_turn["3"]["ex"].n == 2


def test_without_the_context_only_first_turns_succeed():
    results = _run(EXAMPLES, context_lm(use_context=False))
    summary = conversation_summary(results)
    assert summary is not None
    assert summary.per_turn["1"]["ex"].value == 1.0
    assert summary.per_turn["2"]["ex"].value == 0.0
    assert summary.per_conversation["ex"].value == 0.0 and summary.per_conversation["ex"].n == 8


def test_concurrent_runs_keep_each_conversation_in_order():
    results = _run(EXAMPLES, context_lm(), concurrency=3)
    assert sorted(r.example_id for r in results) == sorted(e.id for e in EXAMPLES)
    assert all(r.value("ex") == 1 for r in results)


def test_a_turn_the_deadline_stopped_makes_its_conversation_incomplete():
    first = [e for e in EXAMPLES if e.conversation == "sa-conv-01"]
    config = RunConfig(dataset="builtin_conversations", lm="scripted:context")
    run = RouterRun("rules", {}, context_lm(), config, build_scorers(config))
    original = run.run_example
    deadline = [time.monotonic() + 3600]

    def run_example(e, a=0, history=None):
        out = original(e, a, history)
        deadline[0] = time.monotonic() - 1  # the run's time is up once the first turn ran
        return out

    run.run_example = run_example  # type: ignore[method-assign]
    results: list[ExampleResult] = []

    class Deadline(float):
        # run_router reads the deadline when each turn starts
        def __ge__(self, other):
            return deadline[0] >= other

        def __le__(self, other):
            return deadline[0] <= other

    run_router(run, first, on_result=results.append, deadline=Deadline(deadline[0]))
    assert [r.outcome for r in results] == ["ok", "not_run"]
    summary = conversation_summary([r for r in results if r.outcome != "not_run"])
    assert summary is not None and summary.conversations == 0 and summary.incomplete == 1


def test_units_and_subsets_keep_conversations_whole():
    mixed = list(reversed(EXAMPLES))
    units = conversation_units(mixed)
    assert all([e.turn for e in u] == list(range(1, u[0].turns + 1)) for u in units)
    subset = stratified_subset(EXAMPLES, 3)
    assert [e.id for e in subset] == ["sa-conv-01-t1", "sa-conv-01-t2", "sa-conv-02-t1", "sa-conv-02-t2"]


def test_an_intent_filter_keeps_conversations_whole_under_their_first_turns_intent():
    firsts = {e.conversation: e.intent for e in EXAMPLES if e.turn == 1}
    wanted = next(iter(sorted(set(firsts.values()))))
    kept = of_intents(EXAMPLES, (wanted,))
    assert kept and {firsts[e.conversation] for e in kept} == {wanted}
    # every turn of a kept conversation stays, whatever its own intent
    for e in kept:
        assert sum(k.conversation == e.conversation for k in kept) == e.turns
    assert of_intents(EXAMPLES, None) == EXAMPLES


def test_run_settings_reject_an_unknown_intent_naming_the_closest():
    with pytest.raises(ConfigError) as err:
        RunConfig(intents=("sql", "clarfy"))
    assert err.value.found == "'clarfy'" and "did you mean 'clarify'" in err.value.fix
    with pytest.raises(ConfigError):
        RunConfig(intents=())
    assert RunConfig(intents=["sql"]).intents == ("sql",)  # a YAML list becomes a tuple


ATTEMPTS = [_result("a", 1, 2, 1.0), _result("a", 2, 2, 1.0), _result("a", 1, 2, 1.0, 1), _result("a", 2, 2, 0.0, 1)]


@pytest.mark.parametrize(
    ("results", "value", "n", "incomplete"),
    [
        ([_result("a", 1, 2, 1.0), _result("a", 2, 2, 1.0)], 1.0, 1, 0),  # every turn right
        ([_result("a", 1, 2, 1.0), _result("a", 2, 2, 0.0)], 0.0, 1, 0),  # one turn wrong
        ([_result("a", 1, 2, 1.0), _result("a", 2, 2, None)], math.nan, 0, 0),  # a turn not scorable: left out
        ([_result("a", 1, 2, 1.0)], math.nan, 0, 1),  # a turn missing: incomplete
        # attempts are separate conversations
        (ATTEMPTS, 0.5, 2, 0),
    ],
)
def test_per_conversation_rate_case_by_case(results, value, n, incomplete):
    summary = conversation_summary(results)
    assert summary is not None
    rate = summary.per_conversation["ex"]
    assert rate.n == n and summary.incomplete == incomplete
    assert (math.isnan(rate.value) and math.isnan(value)) or rate.value == value


def test_single_requests_have_no_conversation_figures(tmp_path: Path):
    single = _result("a", 1, 1, 1.0)
    single.conversation = None
    assert conversation_summary([single]) is None
    figures = figures_of(tmp_path / "r.duckdb", [single]).figures
    assert not any(k.startswith(("conversation", "question", "turn")) for k in figures)


def test_mlflow_metrics_per_turn_and_per_conversation(tmp_path: Path):
    metrics = figures_of(
        tmp_path / "r.duckdb",
        [_result("a", 1, 2, 1.0), _result("a", 2, 2, 0.0), _result("b", 1, 2, 1.0), _result("b", 2, 2, 1.0)],
    ).figures
    assert metrics["conversation.ex"] == 0.5 and metrics["conversation.ex_n"] == 2
    assert metrics["turn.1.ex"] == 1.0 and metrics["turn.2.ex"] == 0.5
    assert metrics["conversation.n"] == 2


def test_run_command_prints_the_conversation_table(tmp_path: Path):
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--dataset",
            "builtin_conversations",
            "--split",
            "all",
            "--limit",
            "0",
            "--lm",
            "scripted:basic",
            "--router",
            "rules",
            "--no-mlflow",
            "--store",
            str(tmp_path / "r.duckdb"),
        ],
    )
    assert result.exit_code == 0, result.output
    # the closing table's conversation figures (eval/analysis/console.py renders the one model)
    assert "Conversations (question EX: every turn" in result.output
    assert "turn 3 EX" in result.output


def test_resume_replays_a_conversation_whose_turn_is_missing(tmp_path: Path):
    import duckdb

    store = tmp_path / "r.duckdb"
    where = ["--lm", "scripted:basic", "--no-mlflow", "--store", str(store)]
    first = CliRunner().invoke(
        app,
        ["run", "--dataset", "builtin_conversations", "--split", "all", "--limit", "0", "--router", "rules", *where],
    )
    assert first.exit_code == 0, first.output
    session = re.search(r"session id: (\S+)", first.output).group(1)
    con = duckdb.connect(str(store))
    stamps = dict(con.execute("SELECT example_id, recorded_at FROM examples").fetchall())
    # as if the run had stopped before the last turn of sa-conv-05
    con.execute("DELETE FROM examples WHERE example_id = 'sa-conv-05-t3'")
    con.execute("UPDATE runs SET status = 'KILLED'")
    con.close()
    again = CliRunner().invoke(app, ["run", "--resume", session, "--store", str(store), "--no-mlflow"])
    assert again.exit_code == 0, again.output
    con = duckdb.connect(str(store), read_only=True)
    after = dict(con.execute("SELECT example_id, recorded_at FROM examples").fetchall())
    con.close()
    assert set(after) == set(stamps)
    replayed = {k for k in after if after[k] != stamps[k]}
    assert replayed == {"sa-conv-05-t1", "sa-conv-05-t2", "sa-conv-05-t3"}  # the whole conversation ran again
