"""Execution-guided selection case by case: candidates executed on a real Spider SQLite file, chosen by agreement."""

from __future__ import annotations

from pathlib import Path

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError, GuardViolation
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools.selection import Candidate, choose, result_key, select


def ran(key: object) -> Candidate:
    return Candidate("SELECT 1", key=(key,))


def failed() -> Candidate:
    return Candidate("SELECT nope", error="no such column: nope")


@pytest.mark.parametrize(
    ("candidates", "chosen"),
    [
        # the majority beats the greedy query
        ([ran("a"), ran("b"), ran("b")], 1),
        # a tie goes to the greedy query's group
        ([ran("a"), ran("b")], 0),
        ([ran("a"), ran("b"), ran("a"), ran("b")], 0),
        # errors are dropped: a failing greedy query loses to any candidate that ran
        ([failed(), ran("b")], 1),
        ([failed(), failed(), ran("c")], 2),
        # a tie without the greedy query goes to the group that came first
        ([failed(), ran("c"), ran("b"), ran("b"), ran("c")], 1),
        # nothing ran: the greedy query stays (the retry and fix_sql deal with its error)
        ([failed(), failed()], 0),
        # an empty result is a result like any other
        ([ran(()), ran("b"), ran(())], 0),
        # alone, the greedy query is chosen
        ([ran("a")], 0),
    ],
)
def test_choose_case_by_case(candidates, chosen):
    assert choose(candidates) == chosen


def test_result_keys_ignore_row_order_and_float_noise_but_not_multiplicity():
    assert result_key([[1, "a"], [2, "b"]]) == result_key([[2, "b"], [1, "a"]])
    assert result_key([[0.1 + 0.2]]) == result_key([[0.3]])
    assert result_key([[2.0]]) == result_key([[2]])
    assert result_key([[True]]) == result_key([[1]])
    assert result_key([[1], [1]]) != result_key([[1]])
    assert result_key([[None]]) != result_key([])


class FakeClock:
    """Time advances by ``step`` seconds every time sampling asks for it."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_the_budget_stops_sampling_and_says_so(singers):
    db = open_database(singers)
    asked: list[int] = []

    def sample(seed: int) -> dict:
        asked.append(seed)
        return {"sql": "SELECT count(*) FROM singer"}

    def run(sql: str) -> list[list]:
        return db.execute(sql).rows

    # each clock read costs 1 s; a 1.5 s budget lets the first sample start, not the other three
    chosen = select({"sql": "SELECT count(*) FROM stadium"}, sample, run, k=5, budget_s=1.5, clock=FakeClock(1.0))
    assert asked == [1] and chosen.stopped
    assert len(chosen.candidates) == 2 and chosen.chosen == 0  # one against one: the greedy query
    # a generous budget samples all of them and the majority wins
    asked.clear()
    chosen = select({"sql": "SELECT count(*) FROM stadium"}, sample, run, k=4, budget_s=60, clock=FakeClock(1.0))
    assert asked == [1, 2, 3] and not chosen.stopped and chosen.chosen == 1
    record = chosen.record()
    assert [c["votes"] for c in record["candidates"]] == [1, 3, 3, 3]
    assert [c["rows"] for c in record["candidates"]] == [1, 1, 1, 1]


def test_a_candidate_the_guard_refuses_is_dropped_not_run(singers):
    db = open_database(singers)
    runs: list[str] = []

    def sample(seed: int) -> dict:
        raise GuardViolation("only_select", "DROP is not allowed")

    def run(sql: str) -> list[list]:
        runs.append(sql)
        return db.execute(sql).rows

    chosen = select({"sql": "SELECT Name FROM singer"}, sample, run, k=3, budget_s=60)
    assert runs == ["SELECT Name FROM singer"] and chosen.chosen == 0
    assert [c.error is not None for c in chosen.candidates] == [False, True, True]


def selection_lm(greedy: str, samples: dict[int, str], seen: list):
    """Greedy requests get ``greedy``; a sampled request gets ``samples[seed]``."""

    def reply(request):
        seen.append(request)
        seed = request.config.seed
        return greedy if seed is None else samples[seed]

    return scripted_lm(reply)


def run_pipeline(db: Path, lm, question: str, **tools):
    config = PipelineConfig(tools=ToolSettings(sql_framing="chat", sql_output="extract", **tools))
    return Pipeline(routers.router.build("oracle"), lm, config=config).run(question, str(db), oracle_intent="sql")


def test_the_pipeline_keeps_the_result_most_candidates_agree_on(singers):
    seen: list = []
    samples = {
        1: "SELECT count(*) FROM singer WHERE Country = 'France'",
        2: "```sql\nSELECT count(Singer_ID) FROM singer WHERE country = 'France'\n```",
        3: "DROP TABLE singer",
    }
    lm = selection_lm("SELECT count(*) FROM singer", samples, seen)
    t = run_pipeline(singers, lm, "How many singers are from France?", candidates=4, candidate_temperature=0.8)
    out = t.tool_calls[1]["output"]
    # the two samples agree on 4 singers; the greedy 6 is alone, the DROP is refused by the guard
    assert t.rows == [[4]]
    assert out["sql"] == "SELECT count(*) FROM singer WHERE Country = 'France'"
    sel = out["selection"]
    assert sel["chosen"] == 1
    assert [c["seed"] for c in sel["candidates"]] == [None, 1, 2, 3]
    assert [c["votes"] for c in sel["candidates"]] == [1, 2, 2, 0]
    assert sel["candidates"][3]["error"].startswith("guard")
    # every sample asked the greedy prompt at the candidate temperature, each with its own seed
    assert [(r.config.temperature, r.config.seed) for r in seen] == [(0.0, None), (0.8, 1), (0.8, 2), (0.8, 3)]
    assert len({str(r.messages) for r in seen}) == 1
    assert t.error is None


def test_a_tie_keeps_the_greedy_query(singers):
    seen: list = []
    lm = selection_lm("SELECT count(*) FROM singer", {1: "SELECT count(*) FROM stadium"}, seen)
    t = run_pipeline(singers, lm, "How many singers are there?", candidates=2)
    assert t.tool_calls[1]["output"]["selection"]["chosen"] == 0
    assert t.rows == [[6]]


def test_one_candidate_is_the_greedy_query_alone(singers):
    seen: list = []
    lm = selection_lm("SELECT count(*) FROM singer", {}, seen)
    t = run_pipeline(singers, lm, "How many singers are there?")
    assert len(seen) == 1 and "selection" not in t.tool_calls[1]["output"]


def test_bad_selection_settings_fail_when_built():
    for bad in ({"candidates": 0}, {"candidate_temperature": -0.1}, {"selection_budget_s": -1}):
        with pytest.raises(ConfigError, match="selection"):
            ToolSettings(**bad)
