"""Agents: instructions as text, callable or file; tools as functions or host tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from routerlab.agents.errors import ContractError
from routerlab.agents.swarm import Agent, Context, ContextVariables, FunctionTool
from routerlab.agents.tools import chat as chat_tool


def greet(name: str) -> str:
    """Greet someone.

    Args:
        name: Who to greet.
    """
    return f"hi {name}"


def test_instruction_as_text():
    a = Agent("a", "Be brief.")
    assert a.instructions() == "Be brief." == a.instructions({"x": 1})


def test_instruction_as_callable_gets_the_context_by_annotation():
    def instruction(ctx: Context, style: str = "short") -> str:
        return f"Serve {ctx['customer']} ({style})."

    a = Agent("a", instruction)
    assert a.instructions({"customer": "Ann"}) == "Serve Ann (short)."
    assert a.instructions(ContextVariables(customer="Bo")) == "Serve Bo (short)."


def test_instruction_callable_with_a_bare_context_annotation_and_none_at_all():
    def bare(variables: ContextVariables) -> str:
        return ",".join(sorted(variables))

    assert Agent("a", bare).instructions({"b": 1, "a": 2}) == "a,b"
    assert Agent("a", lambda: "fixed").instructions() == "fixed"


def test_instruction_from_a_file(tmp_path):
    path = tmp_path / "triage.txt"
    path.write_text("Route requests.\n", encoding="utf-8")
    a = Agent("a", path)
    path.write_text("changed", encoding="utf-8")
    assert a.instructions() == "Route requests.\n"  # read once, when the agent is built


def test_a_string_naming_a_file_is_read_other_strings_are_text(tmp_path):
    """Seed 003: "instruction may also be a text file path"; text that names no file stays text."""
    path = tmp_path / "x.txt"
    path.write_text("file text", encoding="utf-8")
    assert Agent("a", str(path)).instructions() == "file text"
    assert Agent("a", str(tmp_path / "missing.txt")).instructions() == str(tmp_path / "missing.txt")
    assert Agent("a", f"{path}\nsecond line").instructions() == f"{path}\nsecond line"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name": ""}, "needs a name"),
        ({"name": "a", "instruction": Path("/nonexistent/prompt.txt")}, "does not exist"),
        ({"name": "a", "instruction": lambda who: who}, "needs a value for 'who'"),
        ({"name": "a", "instruction": 42}, "unknown kind"),
        ({"name": "a", "tools": [greet, greet]}, "several tools named"),
    ],
)
def test_contract_errors_when_built(kwargs, match):
    with pytest.raises(ContractError, match=match):
        Agent(**kwargs)


def test_an_instruction_returning_no_string_is_a_contract_error():
    a = Agent("a", lambda: 3)
    with pytest.raises(ContractError, match="returned int"):
        a.instructions()


def test_function_and_host_tools():
    a = Agent("a", "x", [greet, chat_tool])
    assert isinstance(a.get_tool("greet"), FunctionTool)
    assert a.get_tool("chat") is chat_tool
    assert a.get_tool("nope") is None
    assert [s["function"]["name"] for s in a.schemas()] == ["greet", "chat"]
    # the pipeline tool's injected ToolContext stays out of its schema here too
    assert "ctx" not in a.schemas()[1]["function"]["parameters"]["properties"]
    assert repr(a) == "Agent('a', tools=['greet', 'chat'])"
