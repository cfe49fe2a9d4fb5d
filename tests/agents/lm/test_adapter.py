"""The lenient ChatAdapter: header-less single-field replies, markers on the value's line."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils.exceptions import AdapterParseError

from routerlab.agents.lm.adapter import LenientChatAdapter
from routerlab.agents.tools.programs import ExplainSQL, GenerateSQL


class _TwoOutputs(dspy.Signature):
    """Two outputs."""

    question: str = dspy.InputField()
    sql: str = dspy.OutputField()
    note: str = dspy.OutputField()


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("[[ ## sql ## ]]\nSELECT 1\n\n[[ ## completed ## ]]", "SELECT 1"),
        ("[[ ## sql ## ]]\nSELECT 1 [[ ## completed ## ]]", "SELECT 1"),
        ("```sql\nSELECT 1\n```", "```sql\nSELECT 1\n```"),
        ("SELECT 1 [[ ## completed ## ]]", "SELECT 1"),
    ],
)
def test_single_output_replies(completion, expected):
    assert LenientChatAdapter().parse(GenerateSQL, completion) == {"sql": expected}


def test_wrong_header_and_two_outputs_still_fail():
    with pytest.raises(AdapterParseError):
        LenientChatAdapter().parse(ExplainSQL, "[[ ## sql ## ]]\nSELECT 1")
    with pytest.raises(AdapterParseError):
        LenientChatAdapter().parse(_TwoOutputs, "SELECT 1")


def test_no_json_adapter_retry():
    assert LenientChatAdapter().use_json_adapter_fallback is False


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("[[ ## intent ## ]]\n= clarify", "clarify"),  # seen from the 1.5B model
        ("intent: sql", "sql"),
        ("[[ ## intent ## ]]\nrefuse\n[[ ## completed ## ]]", "refuse"),
        ("The request is a fix.", "fix"),
    ],
)
def test_a_literal_output_takes_the_one_choice_the_reply_names(completion, expected):
    from routerlab.routers.dspy_router import RouteRequest

    assert LenientChatAdapter().parse(RouteRequest, completion) == {"intent": expected}


@pytest.mark.parametrize("completion", ["sql or chat", "nothing useful", "sql-ish", "chatty", ""])
def test_a_literal_output_naming_no_choice_or_several_fails_to_parse(completion):
    from routerlab.routers.dspy_router import RouteRequest

    with pytest.raises(AdapterParseError):
        LenientChatAdapter().parse(RouteRequest, completion)
