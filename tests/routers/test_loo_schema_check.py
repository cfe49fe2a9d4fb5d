"""``scripts/loo_schema_check.py``: the leave-one-database-out rule, case by case and on the real sets."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from routerlab._routing_eval.decisions import FirstDecision
from tests.conftest import SPIDER_DEV_A

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "loo_schema_check.py"
_spec = importlib.util.spec_from_file_location("loo_schema_check", SCRIPT)
loo = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["loo_schema_check"] = loo  # its dataclasses look their module up
_spec.loader.exec_module(loo)  # type: ignore[union-attr]


def _d(i: str, gold: str, predicted: str, method: str) -> FirstDecision:
    return FirstDecision(i, gold, predicted, gold == predicted, method, 0, 0, 0, 0.0)


class FakeDecider:
    """Decisions per rule table, given; the guard accuracy per table, given."""

    def __init__(self, tables: dict[frozenset[str], dict[str, FirstDecision]], guard: dict[frozenset[str], float]):
        self.tables, self._guard, self.asked = tables, guard, []

    def decisions(self, without):
        self.asked.append(without)
        return self.tables[without]

    def guard(self, without):
        return self._guard[without]


TUNE = {"a", "b", "c"}


def _tables():
    shipped = {
        "a": _d("a", "sql", "unanswerable", "rule:schema_gap"),
        "b": _d("b", "sql", "clarify", "rule:several_values"),
        "c": _d("c", "clarify", "clarify", "rule:several_values"),
        # the held-out database: never read by the choice
        "h": _d("h", "sql", "sql", "rule:data_question"),
    }
    return {
        frozenset(): shipped,
        frozenset({"schema_gap"}): {
            **shipped,
            "a": _d("a", "sql", "sql", "rule:default"),
            "h": _d("h", "sql", "chat", "x"),
        },
        frozenset({"several_values"}): {
            **shipped,
            "b": _d("b", "sql", "sql", "rule:default"),
            "c": _d("c", "clarify", "sql", "r"),
        },
        frozenset({"schema_gap", "several_values"}): {
            **shipped,
            "a": _d("a", "sql", "sql", "rule:default"),
            "b": _d("b", "sql", "sql", "rule:default"),
            "c": _d("c", "clarify", "sql", "r"),
        },
    }


def test_the_best_tune_accuracy_within_the_guard_is_chosen():
    guard = dict.fromkeys(_tables(), 0.9)
    chosen, acc = loo.choose(FakeDecider(_tables(), guard), TUNE)
    # shipped 1 of 3; schema_gap out 2 of 3; several_values out 1 of 3 (it loses the clarification);
    # both out 2 of 3: tied with schema_gap out, which leaves fewer rules out
    assert chosen == frozenset({"schema_gap"}) and acc == pytest.approx(2 / 3)


def test_a_candidate_below_the_guard_is_not_eligible():
    guard = {**dict.fromkeys(_tables(), 0.9), frozenset({"schema_gap"}): 0.9 - loo.GUARD - 0.001}
    chosen, _ = loo.choose(FakeDecider(_tables(), guard), TUNE)
    # schema_gap out alone is not eligible: both out (2 of 3) beats the shipped table (1 of 3)
    assert chosen == frozenset({"schema_gap", "several_values"})


def test_ties_go_to_fewer_rules_then_to_the_shipped_table():
    tables = {k: _tables()[frozenset()] for k in _tables()}
    chosen, _ = loo.choose(FakeDecider(tables, dict.fromkeys(tables, 0.9)), TUNE)
    assert chosen == frozenset()


def test_rule_names_are_read_from_either_router_s_methods():
    assert loo.rule_of("rule:schema_gap") == "schema_gap"
    assert loo.rule_of("rule:vague_reference:follow-up") == "vague_reference"
    assert loo.rule_of("semantic:ambiguity-check:which_column") == "which_column"
    assert loo.rule_of("semantic:centroid") is None and loo.rule_of("semantic:fallback-rules") is None


@pytest.mark.skipif(not (SPIDER_DEV_A.parent / "sparc-dev-a" / "dev.json").is_file(), reason="shared data not found")
def test_the_real_sets_hold_eight_databases_of_turns():
    turns = loo.load_turns()
    assert len(turns) == 887 and len({e.db_id for e in turns}) == 8
    assert sum(e.intent == "sql" for e in turns) == 848
