"""Every LM router family reads the schema check's finding and abstains when the database lacks what is asked.

The LM is scripted (control flow only: it always answers the data path or always asks back), the
database is spider-dev-a's real concert_singer SQLite file, and each request was written for this
test: one naming a measure the database does not record, one it does, one that is both open and
short of a column.
"""

from __future__ import annotations

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.lm.scripted import scripted_lm
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import initial_state
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.routers.support.schema_outline import abstains_on_gap, schema_finding
from tests.conftest import SPIDER_DEV_A

GAP = "How many albums did each singer sell?"  # concert_singer records no albums
ANSWERABLE = "What is the average age of the singers?"
OPEN_AND_GAP = "What is the salary of a certain singer?"  # which singer, and no salary column
LM_ROUTERS = ("llm", "dspy", "hybrid")


@pytest.fixture(scope="module")
def concerts() -> str:
    path = SPIDER_DEV_A / "database" / "concert_singer" / "concert_singer.sqlite"
    if not path.is_file():
        pytest.skip(f"real Spider data not found at {SPIDER_DEV_A} (set ROUTERLAB_SPIDER_DEV)")
    return str(path)


def _lm(intent: str):
    """A scripted LM that always takes ``intent``'s path: a tool call, or a DSPy ``intent`` field."""
    tool = {"sql": "data_discovery", "clarify": "ask_human"}[intent]

    def reply(request):
        if "`intent`" in str(request.system or ""):
            return {"fields": {"intent": intent}}
        return {"name": tool, "args": {"question": "q"}}

    return scripted_lm(reply)


def _decide(name: str, text: str, db: str, intent: str, **args):
    r = routers.router.build(name, **args)
    env = RouterEnv(tools=DEFAULT_TOOLS, lm=_lm(intent), open_db=open_database)
    r.bind(env)
    # hybrid asks its LM only below its rules' confidence: threshold 1.01 sends every request there
    return r.decide(initial_state(text, db)), env


@pytest.mark.parametrize("name", LM_ROUTERS)
def test_an_lm_router_abstains_where_the_schema_check_finds_a_gap(concerts, name):
    args = {"threshold": 1.01} if name == "hybrid" else {}
    d, env = _decide(name, GAP, concerts, "sql", **args)
    assert d.intent == "unanswerable" and d.method.endswith("+schema-gap"), d.method
    assert d.tool_calls[0]["name"] == "abstain"
    assert "albums" in schema_finding(env, initial_state(GAP, concerts))
    # off: the LM alone decides, and writes SQL
    off, _ = _decide(name, GAP, concerts, "sql", abstain_check=False, **args)
    assert off.intent == "sql" and "schema-gap" not in off.method


@pytest.mark.parametrize("name", LM_ROUTERS)
def test_an_answerable_data_question_keeps_the_lms_decision(concerts, name):
    args = {"threshold": 1.01} if name == "hybrid" else {}
    d, _ = _decide(name, ANSWERABLE, concerts, "sql", **args)
    assert d.intent == "sql" and "schema-gap" not in d.method


@pytest.mark.parametrize("name", LM_ROUTERS)
def test_asking_back_is_gated_only_when_the_ambiguity_check_finds_nothing_open(concerts, name):
    args = {"threshold": 1.01} if name == "hybrid" else {}
    d, _ = _decide(name, GAP, concerts, "clarify", **args)
    assert d.intent == "unanswerable"
    # "a certain singer" is open: the reply may settle it, so the clarification is asked first
    d, _ = _decide(name, OPEN_AND_GAP, concerts, "clarify", **args)
    assert d.intent == "clarify" and d.tool_calls[0]["name"] == "ask_human"


def test_the_gate_reads_only_first_decisions_of_data_paths(concerts):
    env = RouterEnv(tools=DEFAULT_TOOLS, lm=None, open_db=open_database)
    state = initial_state(GAP, concerts)
    assert abstains_on_gap(env, state, "sql")
    for intent in ("chat", "refuse", "explain", "fix", "unanswerable", None):
        assert not abstains_on_gap(env, state, intent)
    assert not abstains_on_gap(env, initial_state(ANSWERABLE, concerts), "sql")
    # the llm router's later steps follow calls already made: never gated
    r = routers.router.build("llm")
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=_lm("sql"), open_db=open_database))
    later = initial_state(GAP, concerts)
    later["tool_calls"] = {
        "d1": {"id": "d1", "name": "data_discovery", "args": {}, "status": "success", "step": 0, "output": "x"}
    }
    assert r.decide(later).tool_calls[0]["name"] != "abstain"
