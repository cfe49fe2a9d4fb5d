"""The abstention path on the real embedded model (marked ``model``; a few requests)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from routerlab import routers
from routerlab.agents.graph import Pipeline

pytestmark = pytest.mark.model

DB_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Timbaland', 'United States', 32),
  (3, 'Justin Brown', 'France', 29), (4, 'Rose White', 'France', 41);
"""


@pytest.fixture(scope="module")
def singers(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("abstain_model") / "singers.sqlite"
    con = sqlite3.connect(path)
    con.executescript(DB_SQL)
    con.close()
    return path


@pytest.fixture(scope="module")
def lm():
    from routerlab.agents.lm import resolve_lm

    return resolve_lm("local", max_tokens=128)


def test_hybrid_abstains_without_a_model_call_and_answers_with_one(lm, singers: Path):
    pipeline = Pipeline(routers.router.build("hybrid"), lm)
    gap = pipeline.run("What is the average salary of singers from France?", str(singers))
    assert gap.tool_names == ["abstain"] and gap.intent == "unanswerable"
    assert not gap.executed and gap.router_usage.lm_calls == 0 and gap.subagent_usage.lm_calls == 0
    assert "salary" in (gap.answer or "")
    answered = pipeline.run("How many singers are from France?", str(singers))
    assert answered.intent == "sql" and answered.executed and answered.subagent_usage.lm_calls >= 1
    assert answered.rows == [[2]]  # the real model's SQL, run read-only


def test_the_llm_router_is_offered_abstain_and_its_choice_runs_cleanly(singers: Path):
    """Routing quality is measured by the benchmark; here: a real reply for an unanswerable
    question is a well-formed decision, and an abstention from it runs no SQL (the contract, so the
    small embedded model)."""
    from routerlab.agents.lm import resolve_lm

    lm = resolve_lm("local:0.5b", max_tokens=128)
    trace = Pipeline(routers.router.build("llm"), lm).run("What is the email address of Joe Sharp?", str(singers))
    assert trace.route_decisions and trace.router_usage.lm_calls >= 1
    assert trace.error_class != "unknown_tool"
    if trace.intent == "unanswerable":
        assert trace.tool_names == ["abstain"] and not trace.executed and "email" in (trace.answer or "")
