"""Swarm tools come from plain functions through the pipeline's own schema code."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest

from routerlab.agents.errors import ContractError, ToolError
from routerlab.agents.swarm import Context, ContextVariables, FunctionTool, function_tool, is_context_hint
from routerlab.agents.tools.schema import INJECTED, function_schema


def lookup_price(item: str, ctx: Context, currency: Literal["EUR", "USD"] = "EUR") -> str:
    """Look up the price of an item.

    Args:
        item: The item to price.
        currency: Currency of the answer.
    """
    return f"{item}: 3 {currency} for {ctx.get('customer', 'nobody')}"


def no_doc(item: str) -> str:
    return item


def bare_context(item: str, ctx: ContextVariables) -> str:
    """Use a bare annotation.

    Args:
        item: The item.
    """
    return item


def foreign_injection(item: str, db: Annotated[object, INJECTED]) -> str:
    """Ask for something the swarm cannot give.

    Args:
        item: The item.
    """
    return item


def test_schema_is_the_pipeline_schema_and_hides_the_context():
    ft = function_tool(lookup_price)
    description, parameters, injected = function_schema(lookup_price)
    assert isinstance(ft, FunctionTool)
    assert ft.name == "lookup_price" and ft.context_params == ("ctx",) == injected
    fn = ft.openai_schema()["function"]
    assert fn["description"] == description == "Look up the price of an item."
    assert fn["parameters"] == parameters
    assert set(parameters["properties"]) == {"item", "currency"}
    assert parameters["required"] == ["item"]
    assert parameters["properties"]["currency"] == {
        "enum": ["EUR", "USD"],
        "description": "Currency of the answer.",
        "default": "EUR",
    }


def test_invoke_injects_the_context_and_validates_arguments():
    ft = function_tool(lookup_price, name="price")
    assert ft.name == "price"
    assert ft.invoke({"item": "tea"}, ContextVariables(customer="Ann")) == "tea: 3 EUR for Ann"
    with pytest.raises(ToolError, match="currency"):
        ft.invoke({"item": "tea", "currency": "GBP"}, ContextVariables())
    with pytest.raises(ToolError, match="item"):
        ft.invoke({}, ContextVariables())


@pytest.mark.parametrize(
    ("fn", "match"),
    [(foreign_injection, "does not have"), (lambda item: item, "is a lambda")],
)
def test_contract_is_checked_when_the_tool_is_built(fn, match):
    with pytest.raises(ContractError, match=match) as info:
        function_tool(fn)
    assert info.value.fix


def test_seed_003_tools_need_no_docstring_and_take_a_bare_context_annotation():
    """Seed 003: undocumented tools are described by their name; ``ContextVariables`` is injected."""
    undocumented = function_tool(no_doc).openai_schema()["function"]
    assert undocumented["description"] == "no doc"
    assert undocumented["parameters"]["properties"]["item"] == {"type": "string"}
    bare = function_tool(bare_context)
    assert bare.context_params == ("ctx",)
    assert list(bare.openai_schema()["function"]["parameters"]["properties"]) == ["item"]
    assert bare.invoke({"item": "tea"}, ContextVariables(a=1)) == "tea"


def test_context_hints():
    assert is_context_hint(Context) and is_context_hint(ContextVariables)
    assert not is_context_hint(dict) and not is_context_hint(Annotated[dict, INJECTED])
