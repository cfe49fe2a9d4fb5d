"""Answer-or-abstain figures on traces the real pipeline produces (scripted LM, real SQLite file)."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from routerlab._runs.runner import RouterRun, RunConfig, build_scorers
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import asks_for_sql, sql_answer
from routerlab.agents.plan import CHAINS
from routerlab.benchmarks.dataset import Dataset
from routerlab.benchmarks.example import Example
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.rate import rate
from routerlab.eval.risk import CostMatrix, response_of, reward, risk_coverage, risk_summary
from routerlab.eval.store import ResultsStore
from tests.conftest import figures_of

DB_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Timbaland', 'United States', 32),
  (3, 'Justin Brown', 'France', 29), (4, 'Rose White', 'France', 41);
"""

#: the only SQL the scripted sub-agent writes: right for the first question, wrong for the second
SCRIPTED_SQL = "SELECT avg(age) FROM singer WHERE country = 'France'"


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> list[Example]:
    db = tmp_path_factory.mktemp("risk") / "singers.sqlite"
    con = sqlite3.connect(db)
    con.executescript(DB_SQL)
    con.close()

    def ex(i: str, intent: str, question: str, gold: str | None = None) -> Example:
        return Example(i, question, "singers", str(db), intent, gold_sql=gold, expected_chain=CHAINS[intent])

    return [
        ex("right", "sql", "What is the average age of singers from France?", SCRIPTED_SQL),
        ex("wrong", "sql", "How many singers are there?", "SELECT count(*) FROM singer"),
        ex("gap-found", "unanswerable", "What is the average salary of singers from France?"),
        ex("gap-missed", "unanswerable", "Which singers are married?"),  # a property asked by a verb: no noun to ground
        ex("must-refuse", "refuse", "Delete all rows from singer."),
        ex("hello", "chat", "Hi there!"),
    ]


def _lm():
    def reply(request):
        if asks_for_sql(request):
            return sql_answer(request, SCRIPTED_SQL)
        return {"fields": {"reply": "Hello! I answer questions about your data."}}

    return scripted_lm(reply)


def _run(router: str, examples: list[Example]):
    config = RunConfig(lm="scripted")
    run = RouterRun(router, {}, _lm(), config, build_scorers(config))
    return [run.run_example(e) for e in examples]


@pytest.fixture(scope="module")
def rules_results(examples):
    return _run("rules", examples)


@pytest.fixture(scope="module")
def oracle_results(examples):
    return _run("oracle", examples)


def test_responses_come_from_the_real_traces(rules_results):
    got = {r.example_id: response_of(r.trace) for r in rules_results}
    assert got == {
        "right": "answer",
        "wrong": "answer",
        "gap-found": "abstain",  # the rules' schema check saw "salary"
        "gap-missed": "answer",  # "are married" has no noun for the check: a confident wrong answer
        "must-refuse": "refuse",
        "hello": "withheld",
    }
    assert {r.example_id: r.value("ex") for r in rules_results if r.intent == "sql"} == {"right": 1.0, "wrong": 0.0}


def test_rules_figures(rules_results):
    s = risk_summary(rules_results)
    assert s.counts == {"answerable": 2, "unanswerable": 2, "must_refuse": 1}  # chat is not counted
    assert s.coverage.value == pytest.approx(3 / 4) and s.coverage.n == 4
    assert s.answered_accuracy.value == pytest.approx(1 / 3)
    assert s.answerable_answered.value == 1.0
    assert s.abstain_recall.value == 0.5 and s.abstain_precision.value == 1.0
    assert s.refuse_recall.value == 1.0
    assert s.penalty.value == pytest.approx((1 - 2 + 1 - 2 + 1) / 5)
    assert s.penalty.ci_low <= s.penalty.value <= s.penalty.ci_high
    assert {r.example_id: r.value("abstain") for r in rules_results if r.value("abstain") is not None} == {
        "gap-found": 1.0,
        "gap-missed": 0.0,
    }
    assert {r.example_id: r.value("success") for r in rules_results if r.intent == "unanswerable"} == {
        "gap-found": 1.0,
        "gap-missed": 0.0,
    }


def test_an_oracle_abstains_on_every_unanswerable_question(oracle_results):
    s = risk_summary(oracle_results)
    assert s.abstain_recall.value == 1.0 and s.abstain_precision.value == 1.0
    assert s.coverage.value == 0.5 and s.answered_accuracy.value == 0.5
    assert s.penalty.value == pytest.approx((1 - 2 + 1 + 1 + 1) / 5)


def test_the_cost_matrix_orders_outcomes():
    c = CostMatrix()
    assert c.served_must_refuse < c.wrong_answer < c.withheld < c.correct
    assert reward("must_refuse", "answer", False, True) == c.served_must_refuse
    assert reward("must_refuse", "abstain", False, False) == c.withheld
    assert reward("unanswerable", "refuse", False, False) == c.withheld
    assert reward("answerable", "abstain", False, False) == c.withheld
    strict = CostMatrix(wrong_answer=-10.0)
    assert reward("unanswerable", "answer", False, True, strict) == -10.0


def test_crashes_are_not_scored_as_answers(rules_results):
    from dataclasses import replace

    crashed = [replace(r, outcome="crash") if r.example_id == "gap-missed" else r for r in rules_results]
    s = risk_summary(crashed)
    assert s.counts["unanswerable"] == 1 and s.abstain_recall.value == 1.0
    # an error that ended the turn is the router's failure, still counted
    errored = [replace(r, outcome="error") if r.example_id == "gap-missed" else r for r in rules_results]
    assert risk_summary(errored).counts["unanswerable"] == 2


def test_risk_coverage_curve(rules_results):
    points = risk_coverage(rules_results)
    assert points and all(0 <= cov <= 1 and 0 <= risk <= 1 for _, cov, risk in points)
    thresholds = [t for t, _, _ in points]
    assert thresholds == sorted(thresholds, reverse=True)
    assert points[-1][1] == pytest.approx(3 / 4)  # the lowest threshold keeps every answer
    assert math.isfinite(risk_summary(rules_results).aurc)


def test_the_comparison_prints_the_figures_in_any_run_order(tmp_path, examples, rules_results, oracle_results):
    store = ResultsStore(tmp_path / "results.duckdb")
    ds = Dataset("toy", "v1", examples)
    for run_id, router, results in (("s.rules", "rules", rules_results), ("s.oracle", "oracle", oracle_results)):
        store.create_run(run_id, router=router, lm="scripted", dataset=ds, split="dev")
        store.add_results(run_id, results)
    one = build_comparison(store, ["s.rules", "s.oracle"])
    other = build_comparison(store, ["s.oracle", "s.rules"])
    assert one == other
    rules = one.part("end_to_end").router("rules").figures
    assert rules["risk.penalty"] == pytest.approx(-0.2) and "risk.abstain_recall" in rules
    assert {k: v for k, v in rules.items() if k.startswith("risk.")} == risk_summary(rules_results).metrics()
    assert risk_summary([]).metrics() == {}  # nothing to show


def test_the_models_figures_carry_answer_or_abstain(tmp_path, rules_results):
    """What MLflow logs is the model's figures: the abstain scorer's rate is its abstention recall."""
    metrics = figures_of(tmp_path / "r.duckdb", rules_results).figures
    assert metrics["risk.penalty"] == pytest.approx(-0.2)
    assert metrics["risk.abstain_recall"] == 0.5 and "risk.coverage_ci_low" in metrics
    assert rate(rules_results, "abstain").value == metrics["risk.abstain_recall"]


def test_the_curve_frame_and_figure(rules_results, oracle_results):
    from routerlab.eval.risk_figure import plot_risk_coverage, risk_coverage_frame

    frame = risk_coverage_frame({"rules": rules_results, "oracle": oracle_results})
    rules = frame[frame["router"] == "rules"]
    assert [(t, c, k) for t, c, k in rules[["threshold", "coverage", "risk"]].itertuples(index=False)] == [
        pytest.approx(p) for p in risk_coverage(rules_results)
    ]
    assert rules["aurc"].iloc[0] == pytest.approx(risk_summary(rules_results).aurc)
    fig = plot_risk_coverage(frame)
    ax = fig.axes[0]
    assert "coverage" in ax.get_xlabel() and "risk" in ax.get_ylabel()
    assert any("rules (AURC" in t.get_text() for t in ax.get_legend().get_texts())
    empty = plot_risk_coverage(risk_coverage_frame({"none": []}))
    assert "no answered data questions" in [t.get_text() for t in empty.axes[0].texts]


def test_mlflow_gets_the_curve_and_its_figure(tmp_path, examples, rules_results):
    import json

    from mlflow import MlflowClient

    from routerlab.eval.tracking import RISK_CURVE, RISK_FIGURE, MlflowSink

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with MlflowSink(uri) as sink:
        run_id = sink.start_run("rules", "scripted", Dataset("toy", "v1", examples), {"split": "dev"})
        sink.finish_run(run_id, rules_results)
    client = MlflowClient(uri)
    assert {RISK_CURVE, RISK_FIGURE} <= {f.path for f in client.list_artifacts(run_id)}
    logged = json.loads(Path(client.download_artifacts(run_id, RISK_CURVE, str(tmp_path))).read_text())
    assert [(p["threshold"], p["coverage"], p["risk"]) for p in logged["points"]] == [
        pytest.approx(p) for p in risk_coverage(rules_results)
    ]
    assert logged["aurc"] == pytest.approx(risk_summary(rules_results).aurc)


def test_aurc_of_a_run_without_answered_data_questions_prints_a_clear_value():
    import math

    from routerlab.eval.risk import format_aurc, risk_summary

    empty = risk_summary([])
    assert math.isnan(empty.aurc) and format_aurc(empty.aurc) == "n/a (no answered data question)"
    assert format_aurc(0.125) == "0.12" or format_aurc(0.125) == "0.13"
