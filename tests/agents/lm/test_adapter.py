"""The lenient ChatAdapter: header-less single-field replies, markers on the value's line."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils.exceptions import AdapterParseError

from agents.lm.adapter import LenientChatAdapter
from agents.tools.programs import ExplainSQL, GenerateSQL


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
