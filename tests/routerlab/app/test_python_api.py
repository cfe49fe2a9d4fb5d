"""The Python API as a user calls it: ``routerlab.run``, ``load``, ``route``, ``compare`` and the registries.

Each is checked against the command line on the same settings (real DuckDB stores, the scripted
LM): the API and the CLI are one application layer, so their figures must be the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import routerlab
from routerlab.agents.errors import ConfigError
from routerlab.cli import app
from routerlab.eval.analysis.words import count_text, interval_text


def _cli(*args: str) -> str:
    out = CliRunner().invoke(app, list(args))
    assert out.exit_code == 0, out.output
    return out.output


def _session_of(output: str) -> str:
    (line,) = [line for line in output.splitlines() if line.startswith("session id: ")]
    return line.split()[2]


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[routerlab.LoadedSession, str, Path]:
    """The same comparison, run once through ``routerlab.run`` and once through ``routerlab run``."""
    tmp = tmp_path_factory.mktemp("api")
    api_store, cli_store = tmp / "api.duckdb", tmp / "cli.duckdb"
    loaded = routerlab.run(["rules", "oracle"], lm="scripted:basic", store=str(api_store), tracking_uri=None)
    output = _cli("run", "--router", "rules,oracle", "--lm", "scripted:basic", "--store", str(cli_store), "--no-mlflow")
    return loaded, _session_of(output), cli_store


def test_run_returns_the_same_rates_as_the_cli_on_the_same_settings(both) -> None:
    loaded, cli_session, cli_store = both
    from_cli = routerlab.load(cli_session, store=str(cli_store)).rates()
    rates = loaded.rates()
    # one row per router, each measure of the part with its interval and n, then cost
    measures = loaded.comparison.part("end_to_end").measures
    columns = [f"{m}{suffix}" for m in measures for suffix in ("", "_low", "_high", "_n")]
    assert list(rates.columns[: len(columns)]) == columns and "routing_accuracy" not in rates.columns
    # the built-in benchmark's default subset on both sides: 7 requests, one per intent
    shown = rates[rates["same_as"] == ""]
    assert len(shown) and (shown["pipeline_route_n"] == 7).all()
    # the same figures as the command line's session (latency is measured, so it differs)
    pd.testing.assert_frame_equal(rates[columns], from_cli[columns])
    assert loaded.outcome is not None and loaded.outcome.run_ids == loaded.run_ids
    assert not loaded.outcome.interrupted and not loaded.outcome.failed


def test_loaded_session_repr_is_a_short_readable_summary(both) -> None:
    loaded, _, _ = both
    text = repr(loaded)
    lines = text.splitlines()
    # a screen, not the 146,696 characters of the results; the verdict and each router's rates
    assert len(text) < 2_500 and len(lines) <= 30 and max(len(line) for line in lines) <= 100
    assert loaded.session_id in lines[0] and "builtin/dev" in lines[0] and "lm scripted:basic" in lines[0]
    part = loaded.comparison.part("end_to_end")
    flat = " ".join(text.split())
    for r in part.routers:
        for rate in r.rates.values():
            assert interval_text(rate) in flat or count_text(rate) in flat
    assert lines[-1].startswith(".rates(part)") and "too few to compare" in flat
    assert str(loaded) == text
    shown = loaded._repr_html_()
    assert shown.startswith("<h4>Session") and "<table>" in shown and "nan" not in shown.lower()


def test_load_reads_a_stored_session_with_frames(both) -> None:
    _, cli_session, cli_store = both
    again = routerlab.load(cli_session, store=str(cli_store))
    assert again.session_id == cli_session and again.outcome is None
    assert sorted(again.run_ids) == [f"{cli_session}.oracle", f"{cli_session}.rules"]
    results = again.results()
    assert isinstance(results, pd.DataFrame) and len(results) == 14
    assert results["question"].str.len().gt(0).all() and results["method"].str.len().gt(0).all()
    assert set(again.rates()["status"]) == {"FINISHED"}
    assert again.comparison == routerlab.compare(cli_session, store=str(cli_store))


def test_load_of_an_unknown_session_names_the_sessions_there(both) -> None:
    _, _, cli_store = both
    with pytest.raises(ConfigError, match="no-such-session"):
        routerlab.load("no-such-session", store=str(cli_store))


def test_compare_is_the_cli_comparison(both) -> None:
    _, cli_session, cli_store = both
    compared = routerlab.compare(cli_session, store=str(cli_store))
    assert compared.notes == []
    printed = _cli("compare", cli_session, "--store", str(cli_store), "--format", "json")
    assert json.loads(printed) == json.loads(compared.to_json())


def test_route_decides_what_the_cli_decides(tmp_path: Path) -> None:
    # no store: the decisions are compared in a temporary one, which is gone afterwards
    outcome = routerlab.route(["rules", "random"], lm="scripted:basic", limit=7, store=None, tracking_uri=None)
    assert outcome.store is None and outcome.comparison.session == outcome.session_id
    assert len(outcome.by_router) == 2
    assert all(len(ds) == len(outcome.examples) == 7 for ds in outcome.by_router.values())
    outcome.write_csv(tmp_path / "api.csv")
    args = ["route", "--router", "rules,random", "--lm", "scripted:basic", "--limit", "7", "--no-mlflow"]
    printed = _cli(*args, "--out", str(tmp_path / "cli.csv"))
    # every decision the same (timings aside), and the figures the CLI prints are the API's
    api, cli = (pd.read_csv(tmp_path / f"{n}.csv").drop(columns="seconds") for n in ("api", "cli"))
    pd.testing.assert_frame_equal(api, cli)
    # the rates the CLI prints are the API's: the same decisions, the same comparison
    from routerlab.eval.analysis.words import count_text, interval_text

    flat = " ".join(printed.split())
    for r in outcome.comparison.part("routing").routers:
        rate = r.rates["routing_accuracy"]
        assert interval_text(rate) in flat or count_text(rate) in flat, r.router
    assert list(outcome.rates()["routing_accuracy_n"]) == [7, 7]


def test_registries_are_reexported() -> None:
    assert "rules" in routerlab.router.names() and "hybrid" in routerlab.router.names()
    assert routerlab.routers.router is routerlab.router
    assert {"ex", "route", "success"} <= set(routerlab.scorer.names())
    assert {"builtin", "spider", "jsonl"} <= set(routerlab.dataset.names())
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = routerlab.nope


def test_import_routerlab_stays_cheap() -> None:
    code = (
        "import sys, routerlab\n"
        "heavy = [m for m in ('routerlab.app', 'duckdb', 'mlflow', 'pandas', 'dspy') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
