"""Rewrite-first on the embedded model (marker ``model``: the lead runs it alone, never in the suite).

What the scripted tests cannot show: that the real model writes a usable standalone question for
a follow-up on the built-in database, and that SQL generation from it runs.
"""

from __future__ import annotations

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.tools import ToolSettings
from routerlab.agents.turn_history import turn_from_trace
from routerlab.benchmarks.builtin import builtin_database_path

pytestmark = pytest.mark.model

FIRST = "How many complaints were filed in 2024?"
FOLLOW_UP = "And in 2023?"


@pytest.fixture(scope="module")
def lm():
    from routerlab.agents.lm import resolve_lm

    return resolve_lm("local", cache=False, max_tokens=128)


def test_a_two_turn_conversation_is_rewritten_and_its_sql_runs(lm):
    db = str(builtin_database_path())
    pipeline = Pipeline(
        routers.router.build("oracle"), lm, config=PipelineConfig(tools=ToolSettings(followup_context="rewrite"))
    )
    first = pipeline.run(FIRST, db, oracle_intent="sql")
    assert first.sql, first.error_class
    second = pipeline.run(FOLLOW_UP, db, oracle_intent="sql", history=[turn_from_trace(FIRST, first)])
    generate = next(c for c in second.tool_calls if c["name"] == "generate_sql")
    standalone = generate["output"].get("standalone")
    assert standalone, generate["output"].get("rewrite_failed")
    assert standalone.strip() != FOLLOW_UP
    assert second.sql and second.error_class is None
    open_database(db).execute(second.sql, timeout_s=10.0, max_rows=10)  # raises when it does not run
    # the rewrite is one more sub-agent call of the turn
    assert second.subagent_usage.lm_calls >= 2
