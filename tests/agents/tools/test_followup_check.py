"""The follow-up structural check: a follow-up's query keeps the previous query's tables and filters.

Case by case on sqlglot, then through the real pipeline on spider-dev-a's real ``concert_singer``
SQLite file with a scripted LM that drops the previous filter unless told what it dropped.
"""

from __future__ import annotations

import pytest

from routerlab import routers
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools.followup_check import Dropped, dropped_parts
from routerlab.agents.turn_history import turn_from_trace
from tests.conftest import SPIDER_DEV_A

CONCERT = SPIDER_DEV_A / "database" / "concert_singer" / "concert_singer.sqlite"
LIST_FRENCH = "SELECT name FROM singer WHERE country = 'France'"
JOINED = (
    "SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id "
    "WHERE T2.concert_id = 1 AND T1.age > 30"
)


@pytest.mark.parametrize(
    ("previous", "new", "tables", "filters"),
    [
        # "how many are there?" answered by counting the whole table: the filter is dropped
        (LIST_FRENCH, "SELECT count(*) FROM singer", (), ("country = 'France'",)),
        # the filter kept
        (LIST_FRENCH, "SELECT count(*) FROM singer WHERE country = 'France'", (), ()),
        # the follow-up changed the filter's value ("and in the Netherlands?"): not dropped
        (LIST_FRENCH, "SELECT name FROM singer WHERE country = 'Netherlands'", (), ()),
        # the filter moved into a subquery still reads the column
        (LIST_FRENCH, "SELECT count(*) FROM (SELECT * FROM singer WHERE country = 'France')", (), ()),
        # a join and one of two filters dropped
        (JOINED, "SELECT name FROM singer WHERE age > 30", ("singer_in_concert",), ("T2.concert_id = 1",)),
        # a HAVING condition is a filter too
        (
            "SELECT country FROM singer GROUP BY country HAVING count(*) > 1",
            "SELECT country FROM singer GROUP BY country",
            (),
            ("COUNT(*) > 1",),
        ),
        # a new subject: none of the previous tables is read, so nothing counts as dropped
        (LIST_FRENCH, "SELECT name FROM stadium", (), ()),
        # no evidence from a query that does not parse
        (LIST_FRENCH, "SELEC name FRM", (), ()),
    ],
)
def test_dropped_parts_case_by_case(previous, new, tables, filters):
    found = dropped_parts(previous, new, "sqlite")
    assert found == Dropped(tables, filters)
    assert bool(found) is bool(tables or filters)


def test_feedback_names_what_was_dropped():
    text = dropped_parts(JOINED, "SELECT name FROM singer", "sqlite").feedback()
    assert "singer_in_concert" in text and "T2.concert_id = 1" in text and "T1.age > 30" in text


FIRST = "List the names of the singers from France."
FOLLOW_UP = "How many are there?"
COUNT_ALL = "SELECT count(*) FROM singer"
COUNT_FRENCH = "SELECT count(*) FROM singer WHERE country = 'France'"


def dropping_lm():
    """Writes the first turn's list; for the follow-up, the count over the whole table unless told what it dropped."""
    calls: list[str] = []

    def reply(request):
        if requested_field(request) != "sql":
            return answer_field(request, "ok")
        text = "\n".join(text_of(m) for m in request.messages)
        calls.append(text)
        if FOLLOW_UP not in text:
            return answer_field(request, LIST_FRENCH)
        return answer_field(request, COUNT_FRENCH if "dropped" in text and "country = 'France'" in text else COUNT_ALL)

    lm = scripted_lm(reply)
    lm.calls = calls  # type: ignore[attr-defined]
    return lm


def _follow_up(check: bool):
    lm = dropping_lm()
    config = PipelineConfig(tools=ToolSettings(followup_check=check))
    pipeline = Pipeline(routers.router.build("oracle"), lm, config=config)
    first = pipeline.run(FIRST, str(CONCERT), oracle_intent="sql")
    second = pipeline.run(FOLLOW_UP, str(CONCERT), oracle_intent="sql", history=[turn_from_trace(FIRST, first)])
    return lm, second


@pytest.mark.skipif(not CONCERT.is_file(), reason="real Spider data not found (set ROUTERLAB_SPIDER_DEV)")
def test_the_repair_names_the_dropped_filter_and_keeps_the_better_query():
    lm, second = _follow_up(True)
    assert second.sql == COUNT_FRENCH and second.rows == [[4]]
    generate = next(c for c in second.tool_calls if c["name"] == "generate_sql")
    record = generate["output"]["followup_check"]
    assert record["dropped"] == {"tables": [], "filters": ["country = 'France'"]} and record["kept"]
    assert record["replaced"] == COUNT_ALL
    # exactly one more generation, and it named the dropped filter
    follow_calls = [c for c in lm.calls if FOLLOW_UP in c]
    assert len(follow_calls) == 2 and "country = 'France'" in follow_calls[1]


@pytest.mark.skipif(not CONCERT.is_file(), reason="real Spider data not found (set ROUTERLAB_SPIDER_DEV)")
def test_off_by_default_nothing_is_checked():
    assert ToolSettings().followup_check is False
    lm, second = _follow_up(False)
    assert second.sql == COUNT_ALL and second.rows == [[6]]
    generate = next(c for c in second.tool_calls if c["name"] == "generate_sql")
    assert "followup_check" not in generate["output"]
    assert len([c for c in lm.calls if FOLLOW_UP in c]) == 1
