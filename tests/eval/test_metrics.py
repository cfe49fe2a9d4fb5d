"""eval/metrics.py: pass^k and pass@k over attempts, routing precision/recall in the summary, cold latency."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest
from typer.testing import CliRunner

import routerlab.cli as cli
from routerlab.agents.trace import Usage
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.metrics import cold_latency, pass_k_summary, summarize
from routerlab.eval.store import ResultsStore


def _tries(make_result, pattern: dict[str, list[float | None]]):
    return [
        make_result(eid, "rules", {"success": v}, attempt=a)
        for eid, vals in pattern.items()
        for a, v in enumerate(vals)
    ]


def test_pass_k_counts_all_and_any_of_k_tries(make_result):
    results = _tries(make_result, {"e0": [1.0, 1.0, 1.0], "e1": [1.0, 0.0, 1.0], "e2": [0.0, 0.0, 0.0]})
    pk = pass_k_summary(results)
    assert (pk.k, pk.n) == (3, 3)
    assert pk.pass_hat_k == pytest.approx(1 / 3)  # only e0 passed all three
    assert pk.pass_at_k == pytest.approx(2 / 3)  # e0 and e1 passed at least once
    metrics = summarize(results)
    assert metrics["pass_hat_k.success"] == pytest.approx(1 / 3)
    assert metrics["pass_at_k.success"] == pytest.approx(2 / 3)
    assert metrics["pass_k.k"] == 3.0


def test_pass_k_leaves_out_incomplete_and_not_applicable_examples(make_result):
    results = _tries(make_result, {"e0": [1.0, 0.0], "e1": [1.0], "e2": [None, 1.0]})
    pk = pass_k_summary(results)
    assert (pk.k, pk.n, pk.n_incomplete, pk.n_not_applicable) == (2, 1, 1, 1)
    assert (pk.pass_hat_k, pk.pass_at_k) == (0.0, 1.0)


def test_one_attempt_has_no_pass_k(make_result):
    results = _tries(make_result, {"e0": [1.0], "e1": [0.0]})
    assert pass_k_summary(results) is None
    assert not any(k.startswith("pass") for k in summarize(results))


def test_routing_precision_recall_reach_the_summary(make_result):
    results = [
        make_result("e0", "rules", {}, intent="sql"),
        make_result("e1", "rules", {}, intent="sql", predicted_intent="chat"),
        make_result("e2", "rules", {}, intent="chat"),
    ]
    m = summarize(results)
    assert m["routing.sql.precision"] == 1.0 and m["routing.sql.recall"] == 0.5
    assert m["routing.chat.precision"] == 0.5 and m["routing.chat.recall"] == 1.0
    assert not any(k.startswith("routing.refuse") for k in m)  # no support, no prediction: NaN, left out


def test_cold_latency_swaps_lm_time_for_cold_lm_time(make_result):
    r = make_result("e0", "rules", {}, latency=3.0)
    hit = Usage(lm_calls=2, cache_hits=2, latency_s=0.01, cold_latency_s=1.5, cold_prompt_tokens=300)
    r = replace(r, subagent_usage=hit)
    assert cold_latency(r) == pytest.approx(3.0 - (0.2 + 0.01) + (0.2 + 1.5))
    m = summarize([r])
    assert m["cold.subagent_tokens_per_ex"] == 300 and m["subagent_tokens_per_ex"] == 0
    assert math.isclose(m["cold.latency.end_to_end.p50_s"], cold_latency(r))


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
