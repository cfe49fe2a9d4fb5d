"""How the embedded engine turns a completion into a reply, without the model.

``llama_cpp.Llama`` is replaced by an object that returns canned completions (the model is the
one part not run here; the lead runs the ``model`` tests). Everything after it is the real engine
and the real ``chat``: a text reply, a budget cut, a valid tool call, the answer pseudo-tool, an
unparsable call and a call to a tool that is not offered.
"""

from __future__ import annotations

import json

import dspy
import pytest

from routerlab.agents.lm.chat import chat
from routerlab.agents.lm.check import string_tools
from routerlab.agents.lm.local import ANSWER_TOOL, LlamaEngine

TOOLS = string_tools([("fix_sql", "Repair a SQL query.", "sql"), ("chat", "Small talk.", "message")])


class _CannedLlama:
    """Stands in for ``llama_cpp.Llama``: one canned completion per call, in order."""

    cache = None

    def __init__(self, contents: list[tuple[str, str]]) -> None:
        self.contents = list(contents)

    def create_chat_completion(self, messages, **kwargs):
        content, finish = self.contents.pop(0)
        return {
            "id": "cmpl-1",
            "choices": [{"message": {"content": content}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        }


def _reply(monkeypatch, content: str, *, tools=TOOLS, finish: str = "stop"):
    fake = _CannedLlama([(content, finish)])
    monkeypatch.setattr(LlamaEngine, "llama", lambda self: fake)
    engine = LlamaEngine("/nonexistent/model.gguf", max_tokens=32)
    lm = dspy.LM("local/fake", engine=engine, cache=False, max_tokens=32)
    return chat(lm, [{"role": "user", "content": "fix SELECT nme FROM t"}], tools)


def test_a_text_reply_and_a_reply_cut_at_the_budget(monkeypatch):
    r = _reply(monkeypatch, "SELECT 1", tools=None)
    assert (r.text, r.tool_calls, r.invalid_tool_calls) == ("SELECT 1", [], [])
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (7, 3)
    assert _reply(monkeypatch, "SELECT na", tools=None, finish="length").text == "SELECT na"


def test_a_valid_tool_call(monkeypatch):
    r = _reply(monkeypatch, json.dumps({"name": "fix_sql", "arguments": {"sql": "SELECT name FROM t"}}))
    assert r.text == "" and r.invalid_tool_calls == []
    [call] = r.tool_calls
    assert call["name"] == "fix_sql" and call["args"] == {"sql": "SELECT name FROM t"}
    assert call["id"].startswith("call_") and len(call["id"]) == len("call_") + 12


def test_the_answer_pseudo_tool_is_a_text_reply(monkeypatch):
    r = _reply(monkeypatch, json.dumps({"name": ANSWER_TOOL, "arguments": {"text": "Hello!"}}))
    assert (r.text, r.tool_calls, r.invalid_tool_calls) == ("Hello!", [], [])


@pytest.mark.parametrize(
    ("content", "name", "error"),
    [
        ('{"name": "fix_sql", "arguments": ', None, "unparsable tool call"),
        ('{"name": "fix_sql", "arguments": "SELECT 1"}', None, "unparsable tool call: arguments is not an object"),
        (json.dumps({"name": "drop_table", "arguments": {"t": "x"}}), "drop_table", "unknown tool 'drop_table'"),
    ],
)
def test_a_call_that_cannot_be_used_is_reported_invalid_with_the_text_kept(monkeypatch, content, name, error):
    r = _reply(monkeypatch, content)
    assert r.tool_calls == [] and r.text == content
    [bad] = r.invalid_tool_calls
    assert bad["name"] == name and bad["error"].startswith(error) and bad["id"].startswith("call_")
