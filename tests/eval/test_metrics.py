"""eval/metrics.py: pass^k and pass@k over attempts, cold latency; the comparison model's figures of them."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest
from typer.testing import CliRunner

import routerlab.cli as cli
from routerlab.agents.trace import Usage
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.metrics import cold_latency, pass_k_summary
from routerlab.eval.store import ResultsStore
from tests.conftest import figures_of


def _tries(make_result, pattern: dict[str, list[float | None]]):
    return [
        make_result(eid, "rules", {"success": v}, attempt=a)
        for eid, vals in pattern.items()
        for a, v in enumerate(vals)
    ]


def test_pass_k_counts_all_and_any_of_k_tries(make_result, tmp_path):
    results = _tries(make_result, {"e0": [1.0, 1.0, 1.0], "e1": [1.0, 0.0, 1.0], "e2": [0.0, 0.0, 0.0]})
    pk = pass_k_summary(results)
    assert (pk.k, pk.n) == (3, 3)
    assert pk.pass_hat_k == pytest.approx(1 / 3)  # only e0 passed all three
    assert pk.pass_at_k == pytest.approx(2 / 3)  # e0 and e1 passed at least once
    figures = figures_of(tmp_path / "r.duckdb", results).figures
    assert figures["pass_hat_k"] == pytest.approx(1 / 3)
    assert figures["pass_at_k"] == pytest.approx(2 / 3)
    assert figures["attempts_k"] == 3.0


def test_pass_k_leaves_out_incomplete_and_not_applicable_examples(make_result):
    results = _tries(make_result, {"e0": [1.0, 0.0], "e1": [1.0], "e2": [None, 1.0]})
    pk = pass_k_summary(results)
    assert (pk.k, pk.n, pk.n_incomplete, pk.n_not_applicable) == (2, 1, 1, 1)
    assert (pk.pass_hat_k, pk.pass_at_k) == (0.0, 1.0)


def test_one_attempt_has_no_pass_k(make_result, tmp_path):
    results = _tries(make_result, {"e0": [1.0], "e1": [0.0]})
    assert pass_k_summary(results) is None
    figures = figures_of(tmp_path / "r.duckdb", results).figures
    assert not any(k.startswith(("pass", "attempts")) for k in figures)


def test_the_confusion_holds_each_intents_precision_and_recall(make_result, tmp_path):
    """Gold x decided counts, as the model keeps them: precision and recall per intent read off them."""
    results = [
        make_result("e0", "rules", {}, intent="sql"),
        make_result("e1", "rules", {}, intent="sql", predicted_intent="chat"),
        make_result("e2", "rules", {}, intent="chat"),
    ]
    confusion = figures_of(tmp_path / "r.duckdb", results).confusion
    assert confusion == {"chat": {"chat": 1}, "sql": {"chat": 1, "sql": 1}}

    def precision(i: str) -> float:
        return confusion.get(i, {}).get(i, 0) / sum(row.get(i, 0) for row in confusion.values())

    def recall(i: str) -> float:
        return confusion[i].get(i, 0) / sum(confusion[i].values())

    assert precision("sql") == 1.0 and recall("sql") == 0.5
    assert precision("chat") == 0.5 and recall("chat") == 1.0
    # no support, no decision: no row, no column
    assert "refuse" not in confusion and all("refuse" not in row for row in confusion.values())


def test_cold_latency_swaps_lm_time_for_cold_lm_time(make_result, tmp_path):
    r = make_result("e0", "rules", {}, latency=3.0)
    hit = Usage(lm_calls=2, cache_hits=2, latency_s=0.01, cold_latency_s=1.5, cold_prompt_tokens=300)
    r = replace(r, subagent_usage=hit)
    assert cold_latency(r) == pytest.approx(3.0 - (0.2 + 0.01) + (0.2 + 1.5))
    cost = figures_of(tmp_path / "r.duckdb", [r]).cost
    # cold tokens (the router's 110 and the sub-agents' 300 as first computed), not the 110 paid here
    assert cost.tokens == 100 + 10 + 300
    assert math.isclose(cost.p50, cold_latency(r)) and math.isclose(cost.p95, cold_latency(r))


def test_attempts_show_pass_k_in_the_run_summary_compare_and_store(tmp_path):
    store = tmp_path / "r.duckdb"
    args = ["run", "--lm", "scripted:basic", "--router", "rules,oracle", "--limit", "6", "--attempts", "2"]
    out = CliRunner().invoke(cli.app, [*args, "--store", str(store), "--no-mlflow"], terminal_width=250)
    assert out.exit_code == 0, out.output
    assert "pass^2" in out.output and "pass@2" in out.output
    session = re.search(r"session id: (\S+)", out.output).group(1)
    rs = ResultsStore(store)
    c = build_comparison(rs, [f"{session}.rules", f"{session}.oracle"])
    for row in c.part("end_to_end").routers:
        results = rs.results(row.run_id)
        assert row.figures["attempts_k"] == 2 and len(results) == 12
        # the scripted LM answers the same way twice: all-of-2 and any-of-2 equal the success rate
        assert row.figures["pass_hat_k"] == row.figures["pass_at_k"] == pytest.approx(row.rates["success"].value)
    assert '"pass_hat_k"' in c.to_json()
