"""hybrid's LM path moves a request away from the rules' decision only with evidence the rules also see.

Control flow with a scripted LM (generation path, every request sent to the LM) on a real SQLite
file: what the LM says is fixed by the script, so each test shows which decision stands and why.
"""

from __future__ import annotations

import sqlite3

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.lm import scripted_lm
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import initial_state
from routerlab.agents.tools import DEFAULT_TOOLS

SCHEMA = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Rose White', 'France', 41);
"""


#: valid arguments of each tool the scripted LM calls
ARGS = {
    "chat": {"message": "Hello!"},
    "ask_human": {"question": "Which one?"},
    "refuse": {"reason": "no"},
    "abstain": {"question": "q"},
    "data_discovery": {"question": "q"},
}


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("hybrid") / "singers.sqlite"
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.close()
    return str(path)


def _hybrid(tool: str, **args):
    """hybrid asking the LM on every request (threshold above every rule); the LM always calls ``tool``."""
    lm = scripted_lm(lambda request: {"name": tool, "args": ARGS[tool]})
    r = routers.router.build("hybrid", threshold=1.01, one_pass=False, **args)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    return r


@pytest.mark.parametrize("tool", ["chat", "ask_human", "refuse"])
def test_a_data_question_is_not_sent_away_on_the_lm_s_word_alone(db, tool):
    d = _hybrid(tool).decide(initial_state("How many singers are from France?", db))
    assert d.intent == "sql" and d.method.startswith("hybrid:rule:data_question(lm-unbacked:")
    assert d.tool_calls[0]["name"] == "data_discovery" and d.usage.lm_calls == 1
    # without the backing rule the LM decides, as before
    assert _hybrid(tool, lm_backed=False).decide(initial_state("How many singers are from France?", db)).intent != "sql"


def test_the_lm_decides_where_a_rule_of_its_intent_matched(db):
    # a greeting is the rules' chat too: the LM agrees with evidence the rules see
    assert _hybrid("chat").decide(initial_state("Hello there!", db)).method == "hybrid:generation"
    # a write request: the rules' unsafe_verb matched, so the LM's refusal stands
    d = _hybrid("refuse").decide(initial_state("Delete every singer from France", db))
    assert (d.intent, d.method) == ("refuse", "hybrid:generation")


def test_a_gap_the_rules_see_backs_an_abstention_but_not_a_chat(db):
    text = "List all sponsors of the singers."
    assert _hybrid("abstain").decide(initial_state(text, db)).intent == "unanswerable"
    d = _hybrid("chat").decide(initial_state(text, db))
    assert (d.intent, d.method) == ("unanswerable", "hybrid:rule:schema_gap(lm-unbacked:chat)")


def test_the_lm_may_always_answer_the_data_question(db):
    # the rules would decline (a gap they see); the LM reads a data question: sql needs no backing
    d = _hybrid("data_discovery").decide(initial_state("List all sponsors of the singers.", db))
    assert d.intent in ("sql", "unanswerable")  # the schema gate may still abstain (abstain_check)
    d = _hybrid("data_discovery", abstain_check=False).decide(initial_state("List all sponsors of the singers.", db))
    assert d.intent == "sql" and d.method == "hybrid:generation"


def test_the_argument_is_recorded(db):
    from routerlab.agents.registry import component_spec

    assert component_spec(_hybrid("chat", lm_backed=False))["args"]["lm_backed"] is False
