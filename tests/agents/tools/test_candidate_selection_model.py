"""Selection's candidates from one batched call on the embedded model (marker ``model``: the lead runs it).

What the fake engine of ``test_candidate_selection.py`` cannot show: that the pipeline reaches the
real engine's batched decoding through dspy's LM, that the call yields the candidates, and that the
chosen query runs on the built-in database.
"""

from __future__ import annotations

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm.candidates import candidate_sampler
from routerlab.agents.tools import ToolSettings
from routerlab.benchmarks.builtin import builtin_database_path

pytestmark = pytest.mark.model


def test_generate_sql_takes_its_three_candidates_from_one_batched_call():
    from routerlab.agents.lm import resolve_lm

    lm = resolve_lm("local:0.5b", cache=False, max_tokens=128)
    engine = candidate_sampler(lm)
    assert engine is not None  # the embedded engine offers batched decoding
    batches: list[int] = []
    real = engine.sample_candidates

    def counted(messages, n, **kwargs):
        out = real(messages, n, **kwargs)
        batches.append(len(out.texts))
        return out

    engine.sample_candidates = counted  # the real call, counted
    db = builtin_database_path()
    config = PipelineConfig(tools=ToolSettings(candidates=3, candidate_temperature=0.7))
    t = Pipeline(routers.router.build("oracle"), lm, config=config).run(
        "How many service areas are there?", str(db), oracle_intent="sql"
    )
    out = next(c["output"] for c in t.tool_calls if c["name"] == "generate_sql")
    sel = out["selection"]
    assert batches == [3]  # ONE batched call produced the three candidates
    assert sel["sampling"] == "batched" and sel["batch"]["n"] == 3
    assert [c["seed"] for c in sel["candidates"]] == [None, 1, 2]
    assert sel["batch"]["completion_tokens"] > 0 and sel["batch"]["seconds"] > 0
    assert t.error is None, t.error
    open_database(db).execute(out["sql"], timeout_s=10, max_rows=10)  # the chosen query runs
