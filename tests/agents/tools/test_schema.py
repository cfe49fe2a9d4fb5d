from typing import Annotated, Literal

import pytest

from routerlab.agents.errors import ContractError, ToolError
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.schema import INJECTED, function_schema, parse_docstring


def google(question: str, limit: int, ctx: Annotated[object, INJECTED], mode: Literal["a", "b"] = "a") -> dict:
    """Find things.

    More words.

    Args:
        question: The question
            spanning two lines.
        limit: How many.
        mode: Which mode.
    """
    return {}


def numpy_style(name: str, ratio: float | None = None) -> dict:
    """Do a numpy thing.

    Parameters
    ----------
    name : str
        The name.
    ratio : float, optional
        A ratio.
    """
    return {}


def rest_style(items: list[str], flag: bool = False) -> dict:
    """Do a reST thing.

    :param items: The items.
    :param flag: A flag.
    :returns: nothing.
    """
    return {}


def test_google_docstring_schema_hides_injected_parameters():
    desc, schema, injected = function_schema(google)
    assert desc == "Find things.\n\nMore words."
    assert injected == ("ctx",)
    props = schema["properties"]
    assert set(props) == {"question", "limit", "mode"}
    assert props["question"] == {"type": "string", "description": "The question spanning two lines."}
    assert props["limit"]["type"] == "integer"
    assert props["mode"] == {"enum": ["a", "b"], "description": "Which mode.", "default": "a"}
    assert schema["required"] == ["question", "limit"]
    assert schema["additionalProperties"] is False


def test_numpy_docstring():
    desc, schema, _ = function_schema(numpy_style)
    assert desc == "Do a numpy thing."
    assert schema["properties"]["name"]["description"] == "The name."
    assert schema["properties"]["ratio"] == {"type": "number", "description": "A ratio."}
    assert schema["required"] == ["name"]


def test_rest_docstring():
    desc, schema, _ = function_schema(rest_style)
    assert desc == "Do a reST thing."
    assert schema["properties"]["items"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "The items.",
    }
    assert schema["properties"]["flag"]["default"] is False


def test_undocumented_parameter_is_a_contract_error():
    def f(x: int) -> dict:
        """Does f."""
        return {}

    with pytest.raises(ContractError) as info:
        function_schema(f)
    assert "undocumented" in str(info.value)


def test_missing_hint_and_docstring_are_contract_errors():
    def nohint(x) -> dict:  # type: ignore[no-untyped-def]
        """Doc.

        Args:
            x: An x.
        """
        return {}

    def nodoc(x: int) -> dict:
        return {}

    with pytest.raises(ContractError):
        function_schema(nohint)
    with pytest.raises(ContractError):
        function_schema(nodoc)


def test_parse_docstring_empty():
    assert parse_docstring(None) == ("", {})


def test_tool_validates_arguments_and_reports_every_problem():
    desc, schema, injected = function_schema(google)
    t = Tool("google", desc, schema, google, injected)
    assert t.validate_args({"question": "q", "limit": 2}) == {"question": "q", "limit": 2}
    with pytest.raises(ToolError) as info:
        t.validate_args({"question": 3, "extra": 1})
    text = str(info.value)
    assert "limit" in text and "question" in text and "extra" in text
    assert info.value.error_class == "invalid_tool_args"


def test_tool_call_injects_only_declared_parameters():
    seen = {}

    def f(a: str, ctx: Annotated[object, INJECTED]) -> dict:
        """F.

        Args:
            a: An a.
        """
        seen["ctx"] = ctx
        return {"a": a}

    desc, schema, injected = function_schema(f)
    t = Tool("f", desc, schema, f, injected)
    assert t({"a": "x"}, ctx="C", other="ignored") == {"a": "x"}
    assert seen["ctx"] == "C"
    assert "ctx" not in t.openai_schema()["function"]["parameters"]["properties"]
