"""``routerlab lm check`` without the model: the tools it offers and the report it makes (scripted LM)."""

from __future__ import annotations

import jsonschema

from routerlab.agents.lm.check import format_report, lm_check, string_tools


def test_string_tools_require_their_one_string_argument():
    tools = string_tools([("fix_sql", "Repair a SQL query.", "sql"), ("chat", "Small talk.", "message")])
    assert [t["function"]["name"] for t in tools] == ["fix_sql", "chat"]
    for tool, arg in zip(tools, ["sql", "message"], strict=True):
        params = tool["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(params)
        assert tool["type"] == "function" and params["required"] == [arg]
        assert params["properties"] == {arg: {"type": "string", "description": arg}}
        jsonschema.validate({arg: "x"}, params)
    assert string_tools([]) == []


def test_lm_check_completes_once_and_calls_one_of_the_sub_agent_tools():
    report = lm_check("scripted:basic")
    assert report.model == "scripted/basic" and report.spec == "scripted:basic"
    assert "SELECT" in report.completion.upper() and report.completion_tokens > 0
    # the scripted model answers a tool call from the tools it was offered
    assert report.tool_call["name"] in {"data_discovery", "explain_sql", "fix_sql", "chat"}
    assert not report.invalid_tool_calls
    text = format_report(report)
    assert "--lm scripted:basic" in text and f"'name': '{report.tool_call['name']}'" in text
