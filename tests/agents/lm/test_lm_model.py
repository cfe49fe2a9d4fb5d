"""The real embedded model (marked ``model``; CI runs these too)."""

from __future__ import annotations

import pytest
import sqlglot

from routerlab.agents.lm import chat, resolve_lm, usage_scope
from routerlab.agents.lm.check import string_tools

pytestmark = pytest.mark.model

TOOLS = string_tools(
    [
        (
            "data_discovery",
            "Find the tables relevant to a question about the data. Call first for data questions.",
            "question",
        ),
        ("explain_sql", "Explain in plain English what a given SQL query does.", "sql"),
        ("fix_sql", "Repair a SQL query that failed, given the error message.", "sql"),
        ("chat", "Reply to greetings, thanks and small talk that need no data.", "message"),
    ]
)
PROMPTS = [
    ("How many orders were placed in 2023?", "data_discovery"),
    ("Explain this query: SELECT name FROM customers WHERE city = 'Xian'", "explain_sql"),
    ("hi, how are you today?", "chat"),
    ("Fix this SQL: SELECT nme FROM customers -- Error: column nme does not exist", "fix_sql"),
]
SYSTEM = "You route requests of a SQL assistant to exactly one tool."


@pytest.fixture(scope="module")
def lm():
    return resolve_lm("local", cache=False, max_tokens=128)


def test_sql_completion_parses(lm):
    r = chat(
        lm,
        [
            {
                "role": "system",
                "content": "Write one SQLite query. Reply with SQL only.\n"
                "CREATE TABLE customers (id INTEGER, name TEXT, city TEXT);",
            },
            {"role": "user", "content": "How many customers live in Xian?"},
        ],
    )
    sql = r.text.strip().strip("`").removeprefix("sql").strip()
    assert sqlglot.parse_one(sql, read="sqlite") is not None
    assert "count" in sql.lower()
    assert r.usage.completion_tokens > 0 and r.usage.latency_s > 0


def test_tool_calls_are_structured_with_ids(lm):
    right = 0
    for prompt, tool in PROMPTS:
        r = chat(
            lm,
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
            TOOLS,
            tool_choice="required",
        )
        assert len(r.tool_calls) == 1 and not r.invalid_tool_calls, r
        call = r.tool_calls[0]
        assert call["id"].startswith("call_") and isinstance(call["args"], dict)
        right += call["name"] == tool
    assert right >= 3


def test_repeat_is_a_cache_hit():
    # the cache is model-independent; the 0.5B model keeps this test short
    lm = resolve_lm("local:0.5b", cache=True, max_tokens=8)
    msgs = [{"role": "user", "content": "Say OK."}]
    chat(lm, msgs)
    with usage_scope() as log:
        r = chat(lm, msgs)
    assert log.total().cache_hits == 1 and r.usage.cache_hits == 1


def test_saved_prefixes_restore_state_without_changing_answers():
    """Alternating prompts: restored prefix states give the same greedy outputs as recomputing."""
    prompts = [
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPTS[0][0]}],
        [
            {"role": "system", "content": "Write one SQLite query. Reply with SQL only."},
            {"role": "user", "content": "1+1"},
        ],
    ]
    outputs = {}
    for states in (0, 4):
        lm = resolve_lm("local:0.5b", cache=False, max_tokens=24, prefix_states=states)
        engine = lm._engine_spec
        engine.forget_prefixes()
        # A, B, A, B: the second A and B can only reuse a prefix through the saved states
        outputs[states] = [chat(lm, prompts[i % 2]).text for i in range(4)]
        cache = engine.llama().cache
        if states:
            assert cache is not None and 0 < len(cache.cache_state) <= states
        else:
            assert cache is None
    assert outputs[0] == outputs[4]
    assert outputs[4][0] == outputs[4][2] and outputs[4][1] == outputs[4][3]
