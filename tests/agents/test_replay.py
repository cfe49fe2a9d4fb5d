"""Router replay: stored sub-agent outcomes answer the same calls of a later run, and only those."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from routerlab import routers
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.agents.replay import OutcomeCache, lm_identity, outcome_key
from routerlab.cli import app

QUESTION = "How many areas have EV charging?"


def counting_lm(calls: list[str], sql: str = "SELECT count(*) AS n FROM areas WHERE has_ev"):
    """A scripted LM answering the sub-agents' programs and counting every call it gets."""

    def reply(request):
        field = requested_field(request)
        calls.append(field)
        return answer_field(request, {"sql": sql, "fixed_sql": sql, "explanation": "It counts.", "reply": "Hi"}[field])

    return scripted_lm(reply)


def pipeline(router: str, lm, cache) -> Pipeline:
    return Pipeline(routers.router.build(router), lm, config=PipelineConfig(replay=str(cache)))


def test_second_router_replays_every_call_when_it_decides_alike(sales_db, tmp_path):
    cache = tmp_path / "outcomes.sqlite"
    calls: list[str] = []
    first = pipeline("rules", counting_lm(calls), cache).run(QUESTION, str(sales_db))
    assert calls == ["sql"] and not any(c.get("replayed") for c in first.tool_calls)
    assert len(OutcomeCache(cache)) == 3  # discovery, generation, execution

    calls.clear()
    second = pipeline("oracle", counting_lm(calls), cache).run(QUESTION, str(sales_db), oracle_intent="sql")
    assert calls == []  # no sub-agent LM call: generate_sql was replayed
    assert [c["name"] for c in second.tool_calls] == [c["name"] for c in first.tool_calls]
    assert all(c["replayed"] for c in second.tool_calls)
    assert (second.sql, second.rows, second.answer) == (first.sql, first.rows, first.answer)
    # counted as DSPy counts a response-cache hit: one call, a cache hit, no tokens, no latency
    assert second.subagent_usage.lm_calls == first.subagent_usage.lm_calls == 1
    assert second.subagent_usage.cache_hits == 1 and second.subagent_usage.latency_s == 0.0
    assert second.subagent_usage.prompt_tokens == second.subagent_usage.completion_tokens == 0


def test_a_different_request_lm_or_database_is_not_replayed(sales_db, tmp_path):
    cache = tmp_path / "outcomes.sqlite"
    calls: list[str] = []
    pipeline("rules", counting_lm(calls), cache).run(QUESTION, str(sales_db))
    calls.clear()
    pipeline("rules", counting_lm(calls), cache).run("How many areas are there in total?", str(sales_db))
    assert calls == ["sql"]
    other_lm = counting_lm(calls)
    other_lm.kwargs["temperature"] = 0.7
    calls.clear()
    pipeline("rules", other_lm, cache).run(QUESTION, str(sales_db))
    assert calls == ["sql"]
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(sales_db.read_bytes())
    calls.clear()
    pipeline("rules", counting_lm(calls), cache).run(QUESTION, str(copy))
    assert calls == ["sql"]


def test_keys_follow_cited_outputs_not_call_ids(sales_db):
    state = {
        "question": "q",
        "database": str(sales_db),
        "tool_calls": {
            "a1": {"name": "data_discovery", "status": "success", "output": {"tables": ["areas"]}},
            "b7": {"name": "data_discovery", "status": "success", "output": {"tables": ["areas"]}},
            "c3": {"name": "data_discovery", "status": "success", "output": {"tables": ["revenue"]}},
            "e9": {"name": "data_discovery", "status": "error", "output": "failed"},
        },
    }
    fixed = {"lm": lm_identity(None), "context": {}}
    refs = {"discovery_call_id": ("data_discovery",)}

    def key(call_id):
        return outcome_key("generate_sql", {"question": "q", "discovery_call_id": call_id}, refs, state, **fixed)

    assert key("a1") == key("b7")  # different ids, same cited output
    assert key("a1") != key("c3")
    assert key("e9") is None and key("missing") is None  # failed or unknown citation: run the tool
    st = sales_db.stat()
    before = key("a1")
    os.utime(sales_db, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert key("a1") != before  # an edited database is a new key


def test_failures_are_not_stored(sales_db, tmp_path):
    cache = tmp_path / "outcomes.sqlite"
    calls: list[str] = []
    trace = pipeline("rules", counting_lm(calls, sql="SELECT nope FROM areas"), cache).run(QUESTION, str(sales_db))
    failed = [c for c in trace.tool_calls if c["status"] == "error"]
    assert failed, "the bad SQL should fail to execute"
    calls.clear()
    again = pipeline("rules", counting_lm(calls, sql="SELECT nope FROM areas"), cache).run(QUESTION, str(sales_db))
    assert not any(c.get("replayed") for c in again.tool_calls if c["status"] == "error")


def test_replay_off_by_default_stores_nothing(sales_db, tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path / "cache"))
    calls: list[str] = []
    Pipeline(routers.router.build("rules"), counting_lm(calls)).run(QUESTION, str(sales_db))
    assert not (tmp_path / "cache" / "replay").exists()


def test_replay_and_faults_are_refused_together():
    out = CliRunner().invoke(app, ["run", "--lm", "scripted:basic", "--replay", "--faults", "rate=0.2,seed=1"])
    assert out.exit_code == 2
    assert "faults and replay cannot be combined" in out.output and "--replay" in out.output


@pytest.mark.parametrize("flag", [True, False])
def test_replay_is_recorded_in_the_run_config(flag):
    from routerlab._runs.config import load_run_config

    config = load_run_config(None, replay=flag or None)
    assert config.to_dict()["pipeline"]["replay"] is flag
