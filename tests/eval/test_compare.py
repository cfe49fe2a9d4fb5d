"""compare: per-run rates with CIs, cost columns, paired tests on common examples, every format."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from routerlab.agents.errors import ConfigError
from routerlab.eval.compare import compare_runs, render, verdicts
from routerlab.eval.store import ResultsStore


def _ex(correct: set[int], n: int = 10) -> dict[int, float]:
    return {i: 1.0 if i in correct else 0.0 for i in range(n)}


@pytest.fixture
def two_runs(tmp_path, make_result, toy_dataset) -> ResultsStore:
    """Run A (rules) right on e0-e5; run B (llm) right on e0-e3 and e6-e9, plus an e10 only B has.

    Discordant pairs on the 10 common examples: b01 = 4 (e6-e9), b10 = 2 (e4, e5), so McNemar's
    exact two-sided p = 2 * P(Binom(6, 1/2) <= 2) = 2 * (1 + 6 + 15) / 64 = 0.6875.
    """
    store = ResultsStore(tmp_path / "results.duckdb")
    for run_id, router in (("s.rules", "rules"), ("s.llm", "llm")):
        store.create_run(run_id, router=router, lm="scripted", dataset=toy_dataset, split="dev")
    a, b = _ex(set(range(6))), _ex({0, 1, 2, 3, 6, 7, 8, 9})
    store.add_results(
        "s.rules",
        [
            make_result(
                f"e{i}",
                "rules",
                {"ex": a[i], "route": None if i == 0 else 1.0},
                latency=1.0 + i,
                router_tokens=(10, 0),
                subagent_tokens=(100, 0),
                lm_calls=(0, 2),
            )
            for i in range(10)
        ],
    )
    store.add_results(
        "s.llm",
        [
            make_result(
                f"e{i}",
                "llm",
                {"ex": b[i], "route": 1.0 if i % 2 else 0.0},
                latency=2.0,
                router_tokens=(50, 10),
                subagent_tokens=(100, 0),
                lm_calls=(2, 2),
            )
            for i in range(10)
        ]
        + [
            make_result(
                "e10",
                "llm",
                {"ex": 1.0, "route": 1.0},
                latency=2.0,
                router_tokens=(50, 10),
                subagent_tokens=(100, 0),
                lm_calls=(2, 2),
            )
        ],
    )
    return store


def test_rows_have_rates_with_cis_and_costs(two_runs):
    c = compare_runs(two_runs, ["s.rules", "s.llm"])
    rules, llm = c.runs
    assert (rules.router, rules.label, rules.lm, rules.n) == ("rules", "rules", "scripted", 10)
    assert llm.n == 11
    assert rules.rates["ex"].value == pytest.approx(0.6)
    assert llm.rates["ex"].value == pytest.approx(9 / 11)
    for r in (rules, llm):
        ex = r.rates["ex"]
        assert ex.ci_low <= ex.value <= ex.ci_high
        assert ex.ci_low < ex.ci_high
    assert rules.rates["route"].n == 9  # None (not applicable) is out of the denominator
    assert rules.latency_p50_s == pytest.approx(5.5)
    assert rules.router_tokens_per_ex == 10 and llm.router_tokens_per_ex == 60
    assert rules.subagent_tokens_per_ex == 100
    assert rules.lm_calls_per_ex == 2 and llm.lm_calls_per_ex == 4


def test_paired_tests_on_common_examples(two_runs):
    c = compare_runs(two_runs, ["s.rules", "s.llm"])
    ex = next(t for t in c.pairs if t.scorer == "ex")
    assert (ex.run_a, ex.run_b) == ("s.rules", "s.llm")
    assert ex.n_common == 10 and ex.n == 10  # e10 is only in one run
    assert (ex.b01, ex.b10) == (4, 2)
    assert ex.mcnemar_p == pytest.approx(0.6875)
    assert (ex.rate_a, ex.rate_b) == (pytest.approx(0.6), pytest.approx(0.8))
    assert ex.diff == pytest.approx(0.2)
    assert ex.diff_low <= 0.2 <= ex.diff_high
    assert 0 <= ex.bootstrap_p <= 1
    route = next(t for t in c.pairs if t.scorer == "route")
    assert route.n == 9  # e0 has no route score in run A


def test_lopsided_discordance_is_significant_enough(tmp_path, make_result, toy_dataset):
    store = ResultsStore(tmp_path / "r.duckdb")
    for run_id in ("s.rules", "s.hybrid"):
        store.create_run(run_id, router=run_id[2:], lm="scripted", dataset=toy_dataset, split="dev")
    store.add_results("s.rules", [make_result(f"e{i}", "rules", {"ex": 0.0}) for i in range(5)])
    store.add_results("s.hybrid", [make_result(f"e{i}", "hybrid", {"ex": 1.0}) for i in range(5)])
    (t,) = compare_runs(store, ["s.rules", "s.hybrid"], scorers=("ex",)).pairs
    assert (t.b01, t.b10) == (5, 0)
    assert t.mcnemar_p == pytest.approx(2 / 32)  # 2 * 0.5**5
    assert t.diff == t.diff_low == t.diff_high == 1.0


def test_pairing_first_or_all(two_runs, make_result, toy_dataset):
    two_runs.create_run("s.oracle", router="oracle", lm="scripted", dataset=toy_dataset, split="dev")
    two_runs.add_results("s.oracle", [make_result(f"e{i}", "oracle", {"ex": 1.0}) for i in range(10)])
    ids = ["s.rules", "s.llm", "s.oracle"]
    first = compare_runs(two_runs, ids, scorers=("ex",))
    assert [(t.run_a, t.run_b) for t in first.pairs] == [("s.rules", "s.llm"), ("s.rules", "s.oracle")]
    every = compare_runs(two_runs, ids, scorers=("ex",), pairing="all")
    assert len(every.pairs) == 3
    assert ("s.llm", "s.oracle") in [(t.run_a, t.run_b) for t in every.pairs]


def test_baselines_are_labelled_everywhere(two_runs, make_result, toy_dataset):
    two_runs.create_run("s.random", router="random", lm="scripted", dataset=toy_dataset, split="dev")
    two_runs.add_results("s.random", [make_result(f"e{i}", "random", {"ex": float(i % 2)}) for i in range(10)])
    c = compare_runs(two_runs, ["s.rules", "s.random"])
    assert c.runs[1].label == "random (baseline)" and c.runs[1].baseline
    assert not c.runs[0].baseline
    for fmt in ("table", "markdown", "csv", "json"):
        text = render(c, fmt, width=250)
        assert "random (baseline)" in text, fmt
    assert "random (baseline) vs rules" in render(c, "markdown")


def test_every_format_renders(two_runs):
    c = compare_runs(two_runs, ["s.rules", "s.llm"])
    data = json.loads(render(c, "json"))
    assert [r["router"] for r in data["runs"]] == ["rules", "llm"]
    assert data["runs"][0]["rates"]["ex"]["value"] == pytest.approx(0.6)
    assert data["pairs"][0]["mcnemar_p"] == pytest.approx(0.6875)

    text = render(c, "csv")
    runs_part, pairs_part = text.split("\n\n")
    rows = list(csv.DictReader(io.StringIO(runs_part)))
    assert rows[0]["run_id"] == "s.rules" and float(rows[0]["ex"]) == pytest.approx(0.6)
    assert {"ex_ci_low", "ex_ci_high", "latency_p50_s", "router_tokens_per_ex"} <= set(rows[0])
    pairs = list(csv.DictReader(io.StringIO(pairs_part)))
    assert pairs[0]["scorer"] == "ex" and float(pairs[0]["mcnemar_p"]) == pytest.approx(0.6875)

    md = render(c, "markdown")
    assert "| router | lm | n | ex | route | chain_valid | success | diverted | p50 s |" in md
    assert "0.60 [" in md and "0.688" in md

    table = render(c, "table", width=250)
    assert "Router comparison" in table and "0.60 [" in table and "Paired differences" in table

    with pytest.raises(ConfigError, match="unknown format"):
        render(c, "html")


def test_empty_and_unknown_runs(tmp_path, toy_dataset, make_result):
    store = ResultsStore(tmp_path / "r.duckdb")
    store.create_run("s.rules", router="rules", lm="scripted", dataset=toy_dataset, split="dev")
    store.create_run("s.llm", router="llm", lm="scripted", dataset=toy_dataset, split="dev")
    store.add_result("s.llm", make_result("e0", "llm"))
    c = compare_runs(store, ["s.rules", "s.llm"])
    assert c.runs[0].n == 0 and math.isnan(c.runs[0].rates["ex"].value)
    assert c.pairs[0].n_common == 0 and c.pairs[0].n == 0
    assert "n/a" in render(c, "markdown")
    assert json.loads(render(c, "json"))["runs"][0]["rates"]["ex"]["value"] is None  # NaN -> null
    with pytest.raises(ConfigError, match="unknown run"):
        compare_runs(store, ["s.nope"])
    with pytest.raises(ConfigError, match="pairing"):
        compare_runs(store, ["s.rules"], pairing="some")


def test_same_router_twice_is_told_apart(two_runs, make_result, toy_dataset):
    two_runs.create_run("t.rules", router="rules", lm="scripted", dataset=toy_dataset, split="dev")
    two_runs.add_results("t.rules", [make_result(f"e{i}", "rules", {"ex": 1.0}) for i in range(10)])
    md = render(compare_runs(two_runs, ["s.rules", "t.rules"]), "markdown")
    assert "rules (t.rules) vs rules (s.rules)" in md


def test_each_pair_says_what_it_could_detect_and_the_summary_says_it_in_words(
    two_runs, tmp_path, make_result, toy_dataset
):
    c = compare_runs(two_runs, ["s.rules", "s.llm"], scorers=("ex",))
    (t,) = c.pairs
    # 10 pairs, differences: four +1, two -1, four 0 -> sd = sqrt((4*0.8^2 + 2*1.2^2 + 4*0.2^2)/9)
    sd = math.sqrt((4 * 0.8**2 + 2 * 1.2**2 + 4 * 0.2**2) / 9)
    z = 1.959964 + 0.841621
    assert t.mdd == pytest.approx(z * sd / math.sqrt(10), rel=1e-5)
    assert t.n_for_target == math.ceil((z * sd / 0.10) ** 2)
    (line,) = verdicts(c)
    assert line.startswith("ex: cannot tell apart llm vs rules (+0.20)")
    assert f"detects only differences of {t.mdd:.2f} or more" in line and f"n={t.n_for_target}" in line
    text = render(c, "table", width=250)
    assert line in " ".join(text.split()) or "cannot tell apart" in text
    assert "MDD" in text and json.loads(render(c, "json"))["verdicts"] == [line]

    # a lopsided pair is called significant, in words
    store = ResultsStore(tmp_path / "r.duckdb")
    for run_id in ("s.rules", "s.hybrid"):
        store.create_run(run_id, router=run_id[2:], lm="scripted", dataset=toy_dataset, split="dev")
    store.add_results("s.rules", [make_result(f"e{i}", "rules", {"ex": 0.0}) for i in range(8)])
    store.add_results("s.hybrid", [make_result(f"e{i}", "hybrid", {"ex": 1.0}) for i in range(8)])
    (line,) = verdicts(compare_runs(store, ["s.rules", "s.hybrid"], scorers=("ex",)))
    assert line == "ex: hybrid better than rules (+1.00, p=0.008)."


def test_one_test_decides_and_the_columns_are_named_by_router(two_runs, tmp_path, make_result, toy_dataset):
    """The paired table names its deciding test and its routers; the bootstrap gives only the interval."""
    c = compare_runs(two_runs, ["s.rules", "s.llm"], scorers=("ex",))
    (t,) = c.pairs
    assert t.test == "McNemar" and t.p_value == t.mcnemar_p == pytest.approx(0.6875)
    md = render(c, "markdown")
    assert "| McNemar p |" in md and "bootstrap p" not in md
    assert "| first |" not in md and "| second |" not in md
    # A is the router named first in "A vs B", and its column carries its name and its rate
    assert "| llm vs rules | ex | 10 | 10 | llm 0.80 | rules 0.60 | +0.20 [" in md
    # the verdict line and the table agree: the same p decides
    (line,) = verdicts(c)
    assert "cannot tell apart llm vs rules (+0.20)" in line and "| 0.688 |" in md

    # a graded rate is decided by the sign-flip test, and the table says which test each row used
    store = ResultsStore(tmp_path / "graded.duckdb")
    for run_id in ("g.rules", "g.hybrid"):
        store.create_run(run_id, router=run_id[2:], lm="scripted", dataset=toy_dataset, split="dev")
    store.add_results("g.rules", [make_result(f"e{i}", "rules", {"ex": 0.0, "chain_f1": 0.5}) for i in range(8)])
    store.add_results("g.hybrid", [make_result(f"e{i}", "hybrid", {"ex": 1.0, "chain_f1": 1.0}) for i in range(8)])
    g = compare_runs(store, ["g.rules", "g.hybrid"], scorers=("ex", "chain_f1"))
    tests = {p.scorer: p for p in g.pairs}
    assert tests["ex"].test == "McNemar" and tests["chain_f1"].test == "sign-flip"
    assert tests["chain_f1"].p_value == pytest.approx(2 / 256)
    md = render(g, "markdown")
    assert "| McNemar / sign-flip p | test |" in md
    assert any(line.startswith("chain_f1: hybrid better than rules (+0.50, p=0.008)") for line in verdicts(g))


def test_the_table_caption_keeps_the_guards_rule_names(two_runs):
    # issue 62: rich read "[only_select]" in the gold note as markup and dropped it
    import dataclasses

    c = compare_runs(two_runs, ["s.rules", "s.llm"])
    first = "gold guard_violation: refused by SQL guard [only_select]: only SELECT is allowed [/b]"
    runs = [dataclasses.replace(c.runs[0], gold_failed=2, gold_failed_first=first), *c.runs[1:]]
    table = render(dataclasses.replace(c, runs=runs), "table", width=400)
    assert "[only_select]" in table and "[/b]" in table
