"""``scripts/hybrid_lm_path.py``: the scripted LMs its bound rests on answer every intent through hybrid's LM path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from routerlab._routing_eval.decisions import first_decisions
from routerlab.agents.plan import TOOL_INTENT
from routerlab.benchmarks.builtin import load_builtin

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))  # the script imports loo_schema_check beside it
_spec = importlib.util.spec_from_file_location("hybrid_lm_path", ROOT / "scripts" / "hybrid_lm_path.py")
bound = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(bound)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def data_question():
    """A built-in dev data question the rules decide as one (a real SQLite database, no schema gap)."""
    return next(e for e in load_builtin().examples if e.split == "dev" and e.intent == "sql")


def test_every_intent_has_a_scripted_answer():
    assert set(bound._TOOL) == set(TOOL_INTENT.values())


@pytest.mark.parametrize("intent", sorted(set(TOOL_INTENT.values())))
def test_the_scripted_answer_is_hybrid_s_own_decision_when_it_stands(intent, data_question):
    # asked on every turn and not held to the rules' evidence, hybrid takes the LM's answer as given:
    # a tool call its schema refused would be "llm-invalid", the rules' answer, and bound nothing
    (d,) = first_decisions("hybrid", {"threshold": 1.01, "lm_backed": False}, [data_question], bound.answering(intent))
    assert d.method.startswith("hybrid:generation"), d.method
    assert d.lm_calls == 1
    assert d.predicted == intent or d.method.endswith("+schema-gap")


def test_with_the_rules_evidence_required_a_chat_answer_does_not_move_a_data_question(data_question):
    (d,) = first_decisions("hybrid", {"threshold": 1.01}, [data_question], bound.answering("chat"))
    assert d.predicted == "sql"
    assert "lm-unbacked:chat" in d.method
