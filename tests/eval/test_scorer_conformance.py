"""Every registered scorer passes the same suite. A new scorer is done when it passes unchanged.

Like ``tests/routers/test_conformance.py`` for routers: the suite is parametrized over
``scorer.names()``, so a scorer added as one new file in ``eval/scorers/`` runs through it with no
edit here. The examples and traces are real: the gold SQL runs against a real DuckDB file.
"""

from __future__ import annotations

import math

import pytest

from routerlab.agents.registry import component_spec
from routerlab.agents.state import INTENTS
from routerlab.agents.trace import Trace
from routerlab.benchmarks.example import Example
from routerlab.eval import scorers  # noqa: F401  (registers the built-in scorers)
from routerlab.eval.scoring import Score, Scorer, scorer

GOLD = "SELECT name FROM areas WHERE region = 'Shaanxi' ORDER BY id"


def _examples(db: str) -> list[Example]:
    """One example per gold intent, each with the fields its intent requires."""
    out = []
    for intent in INTENTS:
        fields: dict = {}
        if intent in ("sql", "fix", "clarify"):
            fields["gold_sql"] = GOLD
        if intent in ("explain", "fix"):
            fields["input_sql"] = "SELECT nme FROM areas"
        if intent == "fix":
            fields["error_text"] = 'Binder Error: Referenced column "nme" not found'
        if intent == "clarify":
            fields["user_reply"] = "the Shaanxi areas"
        out.append(
            Example(
                id=f"conf-{intent}", question=f"a {intent} request", db_id="sales", db_path=db, intent=intent, **fields
            )
        )
    return out


def _call(step: int, name: str, args: dict, **extra) -> dict:
    return {"id": f"c{step}", "name": name, "args": args, "status": "success", "step": step, **extra}


def _traces(example_id: str) -> dict[str, Trace]:
    """What a scorer meets: nothing happened, a crash, a right SQL answer, an abstention."""
    sql_calls = [
        _call(0, "data_discovery", {"question": "q"}),
        _call(1, "generate_sql", {"question": "q", "discovery_call_id": "c0"}, output={"sql": GOLD}),
        _call(2, "execute_sql_and_analyze_result", {"sql_call_id": "c1"}),
    ]
    return {
        "empty": Trace(example_id=example_id),
        "crash": Trace(example_id=example_id, error="boom", error_class="crash"),
        "answer": Trace(
            example_id=example_id,
            sql=GOLD,
            executed=True,
            intent="sql",
            tool_calls=sql_calls,
            answer="Qinling North, Hanzhong East, Baoji West",
        ),
        "abstain": Trace(
            example_id=example_id,
            intent="unanswerable",
            answer="The database records no such thing.",
            tool_calls=[_call(0, "abstain", {"missing": "x"})],
        ),
    }


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    """Scorers that cache (the EX gold cache) write under a fresh cache directory."""
    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("name", scorer.names())
def test_builds_by_name_and_records_its_spec(name, isolated_cache):
    built = scorer.build(name)
    assert isinstance(built, Scorer)
    assert built.name == name
    assert component_spec(built)["kind"] == "scorer" and component_spec(built)["name"] == name
    assert (type(built).__doc__ or "").strip(), f"scorer {name!r} has no docstring"


@pytest.mark.parametrize("name", scorer.names())
def test_scores_every_intent_and_trace_without_raising(name, isolated_cache, sales_db):
    built = scorer.build(name)
    for example in _examples(str(sales_db)):
        for kind, trace in _traces(example.id).items():
            s = built.score(example, trace)
            where = f"{name} on {example.intent}/{kind}"
            assert isinstance(s, Score), where
            assert s.name == name, where
            assert s.value is None or (0.0 <= s.value <= 1.0 and not math.isnan(s.value)), f"{where}: {s.value}"
            assert isinstance(s.reason, str), where
            # the same trace scored again gives the same verdict (no hidden state between calls)
            assert built.score(example, trace).value == s.value, where
