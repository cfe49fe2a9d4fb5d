"""Bounds with clear errors: attempts, client budgets, question length, and a linear rules router.

The probes (issue 50, item 6): ``--attempts 1000000000`` grew to 15 GB and was killed by the
kernel; ``router_args.max_tokens = 2**63`` was forwarded to the provider; a 128k-character question
took the rules router 137 s (quadratic); loaders accepted a question of any length, and a lone
surrogate crashed its example mid-run (exit 3) instead of failing at load (exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from routerlab import cli, routers
from routerlab._runs.runner import MAX_ATTEMPTS, RunConfig
from routerlab.agents.errors import ConfigError
from routerlab.benchmarks.example import MAX_QUESTION_CHARS
from routerlab.routers.rules import RulesRouter


def test_attempts_beyond_the_bound_are_refused_naming_the_option() -> None:
    assert RunConfig(attempts=MAX_ATTEMPTS).attempts == MAX_ATTEMPTS
    with pytest.raises(ConfigError) as caught:
        RunConfig(attempts=1_000_000_000)
    text = str(caught.value)
    assert "--attempts" in text and f"from 1 to {MAX_ATTEMPTS}" in text and "1000000000" in text


def test_the_cli_exits_2_on_a_billion_attempts(tmp_path: Path) -> None:
    out = CliRunner().invoke(
        cli.app,
        [
            *("run", "--lm", "scripted:basic", "--router", "rules", "--attempts", "1000000000"),
            *("--store", str(tmp_path / "r.duckdb"), "--no-mlflow"),
        ],
    )
    assert out.exit_code == 2, out.output
    assert not (tmp_path / "r.duckdb").exists()


@pytest.mark.parametrize(
    ("name", "args", "arg"),
    [
        ("llm", {"max_tokens": 2**63}, "max_tokens"),
        ("hybrid", {"max_tokens": 10**9}, "max_tokens"),
        ("dspy", {"fix_budget": 10**6}, "fix_budget"),
        ("retrieval", {"k": 10**9}, "k"),
    ],
)
def test_client_budgets_are_bounded(name: str, args: dict, arg: str) -> None:
    with pytest.raises(ConfigError) as caught:
        routers.router.build(name, **args)
    text = str(caught.value)
    assert "out-of-range" in text and repr(arg) in text


def test_a_long_or_broken_question_fails_at_load_with_exit_2(tmp_path: Path, sales_db: Path) -> None:
    import shutil

    shutil.copy(sales_db, tmp_path / "sales.duckdb")
    for case, question in [("long", "how many areas " * (MAX_QUESTION_CHARS // 10)), ("surrogate", "areas \ud800?")]:
        path = tmp_path / f"{case}.jsonl"
        record = {"question": question, "gold_sql": "SELECT count(*) FROM areas", "db_path": "sales.duckdb"}
        # json.dumps writes the lone surrogate as the escape a real file would carry
        path.write_text(json.dumps(record) + "\n")
        out = CliRunner().invoke(
            cli.app,
            [
                *("run", "--lm", "scripted:basic", "--router", "rules", "--dataset", "jsonl"),
                *("--dataset-path", str(path), "--store", str(tmp_path / f"{case}.duckdb"), "--no-mlflow"),
            ],
        )
        text = " ".join(out.output.split())
        assert out.exit_code == 2, (case, text)
        assert "line 1" in text and "question" in text, (case, text)


def test_the_rules_router_parses_a_linear_amount_of_the_question(monkeypatch: pytest.MonkeyPatch) -> None:
    # the fault was work, not a clock: every write keyword handed the whole rest of the text to
    # sqlglot (quadratic; 137 s for 128k characters). Counting the characters parsed is exact on
    # any machine; the seconds are measured by `routerlab perf --section "rules scaling"`.
    import sqlglot

    from routerlab.perf import RULES_WORST_TEXTS
    from routerlab.routers import rules as rules_module

    parsed: list[int] = []
    real_parse = sqlglot.parse

    def counting(sql: str, *args: object, **kwargs: object) -> object:
        parsed.append(len(sql))
        return real_parse(sql, *args, **kwargs)

    monkeypatch.setattr(sqlglot, "parse", counting)
    router = RulesRouter()
    fixed = rules_module._WRITE_TRIES * rules_module._WRITE_WINDOW  # the bounded write probe
    for label, text in RULES_WORST_TEXTS.items():
        work = {}
        for n in (16_000, 128_000):
            parsed.clear()
            request = text * (n // len(text))
            router.match(request)
            work[n] = (sum(parsed), len(parsed))
            # a few whole-text parses (SQL detection) plus the bounded write probe, never one
            # parse of the rest of the text per keyword
            assert sum(parsed) <= 4 * len(request) + fixed, (label, n, work[n])
        assert work[128_000][1] <= work[16_000][1] + 4, (label, work)  # the number of parses does not grow


def test_the_rules_scaling_section_reports_each_length_and_the_ratio() -> None:
    from routerlab.perf import RULES_WORST_TEXTS, rules_scaling

    figures = rules_scaling(sizes=(700, 1400), repeats=1)
    assert [f.section for f in figures] == ["rules scaling"] * (3 * len(RULES_WORST_TEXTS))
    ratios = [f for f in figures if f.unit == "x"]
    assert len(ratios) == len(RULES_WORST_TEXTS)
    assert all(f.goal.startswith("<= 4 (linear: 2, quadratic: 4)") and f.value > 0 for f in ratios)
    assert all(f.met == (f.value <= 4) for f in ratios)


def test_a_jsonl_file_with_a_utf8_bom_is_read(tmp_path: Path) -> None:
    # issue 50, item 9: editors on Windows write a byte-order mark; it was refused as invalid JSON
    from routerlab.benchmarks.loaders._common import read_jsonl

    path = tmp_path / "bom.jsonl"
    record = {"question": "How many areas?", "gold_sql": "SELECT count(*) FROM areas", "db_path": "x.duckdb"}
    path.write_bytes(b"\xef\xbb\xbf" + (json.dumps(record) + "\n").encode() * 2)
    assert read_jsonl(path) == [(1, record), (2, record)]
