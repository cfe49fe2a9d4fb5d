"""Per-intent calibration offsets: how a one-pass distribution is re-read, and the dspy program saving them."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routerlab.agents.errors import ConfigError
from routerlab.agents.lm.scoring import ChoiceScores
from routerlab.agents.lm.scripted import ScriptedEngine
from routerlab.agents.state import INTENTS
from routerlab.agents.trace import Usage
from routerlab.routers.calibration import calibrated, shift
from routerlab.routers.dspy_router import RouteProgram, load_program
from routerlab.routers.lm_intent import OnePass

_probs = st.lists(st.floats(0.001, 1.0), min_size=len(INTENTS), max_size=len(INTENTS)).map(
    lambda xs: {k: x / sum(xs) for k, x in zip(INTENTS, xs, strict=True)}
)
_offsets = st.dictionaries(st.sampled_from(INTENTS), st.floats(-5.0, 5.0))


@given(_probs, _offsets)
def test_calibrated_is_a_distribution_over_the_same_labels_in_the_same_order(probs, offsets):
    out = calibrated(probs, offsets)
    assert list(out) == list(probs)
    assert math.isclose(sum(out.values()), 1.0, rel_tol=1e-9)
    # each label's odds against another move by exactly the difference of their offsets
    a, b = INTENTS[0], INTENTS[-1]
    moved = math.log(out[a] / out[b]) - math.log(probs[a] / probs[b])
    assert math.isclose(moved, offsets.get(a, 0.0) - offsets.get(b, 0.0), abs_tol=1e-6)


@given(_probs, st.floats(-5.0, 5.0))
def test_no_offsets_or_a_common_offset_change_nothing(probs, c):
    assert calibrated(probs, {}) == probs
    same = calibrated(probs, dict.fromkeys(INTENTS, c))
    assert all(math.isclose(same[k], probs[k], rel_tol=1e-9, abs_tol=1e-12) for k in INTENTS)


def _one(probs):
    scores = ChoiceScores(probs, 0.9, 120, 100, 20, "live", 0.01)
    return OnePass(scores.best, scores.confidence, scores, Usage.computed(120, 0, 0.01))


def test_shift_rereads_the_intent_and_its_confidence_and_keeps_the_call_accounting():
    probs = {k: 0.02 for k in INTENTS} | {"sql": 0.6, "clarify": 0.28}
    probs = {k: v / sum(probs.values()) for k, v in probs.items()}
    one = _one(probs)
    assert one.intent == "sql"
    moved = shift(one, {"clarify": math.log(3.0)})  # clarify's odds x3: 0.84 against 0.6
    assert moved.intent == "clarify" and moved.confidence == moved.scores.probs["clarify"] > 0.5
    assert moved.usage == one.usage and moved.scores.evaluated_tokens == 20
    assert shift(one, {}) is one


def test_the_program_saves_its_schema_view_and_offsets_and_an_old_program_loads_with_defaults(tmp_path):
    prog = RouteProgram(schema="columns")
    prog.route.calibration = {"clarify": 1.25, "sql": -0.5}
    path = tmp_path / "p.json"
    prog.save(str(path))
    loaded, file = load_program(str(path))
    assert file == path and loaded.route.schema == "columns"
    assert loaded.route.calibration == {"clarify": 1.25, "sql": -0.5}
    old, _ = load_program("builtin")  # committed before either existed, or with them: both load
    assert old.route.schema in ("tables", "columns") and isinstance(old.route.calibration, dict)
    with pytest.raises(ConfigError, match="schema view"):
        RouteProgram(schema="everything")


class _Engine(ScriptedEngine):
    """Scores labels as a prompt that puts clarify second behind sql; records each prefix."""

    def __init__(self) -> None:
        super().__init__(["unused: intent routing scores labels"])
        self.prefixes: list[str] = []

    def score_choices(self, prefix, messages, choices, *, reply_prefix=""):
        self.prefixes.append(prefix[0]["content"])
        probs = {k: 0.02 for k in choices} | {"sql": 0.55, "clarify": 0.35}
        total = sum(probs.values())
        return ChoiceScores({k: v / total for k, v in probs.items()}, 0.9, 100, 80, 20, "live", 0.0)

    def continue_reply(self, prefix, messages, reply_prefix, *, stop, max_tokens=64):
        raise AssertionError("intent routing never continues a reply")


def test_the_dspy_router_applies_its_programs_offsets_and_schema_view(tmp_path, sales_db):
    import dspy

    from routerlab import routers
    from routerlab.agents.db import open_database
    from routerlab.agents.routing import RouterEnv
    from routerlab.agents.state import initial_state
    from routerlab.agents.tools import DEFAULT_TOOLS

    engine = _Engine()
    lm = dspy.LM("scripted/cal", engine=engine, cache=False)
    plain, cal = tmp_path / "plain.json", tmp_path / "cal.json"
    RouteProgram().save(str(plain))
    prog = RouteProgram(schema="columns")
    prog.route.calibration = {"clarify": 1.0}
    prog.save(str(cal))
    state = initial_state("How did that area do recently?", str(sales_db))
    decisions = []
    for path in (plain, cal):
        r = routers.router.build("dspy", program=str(path))
        r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
        decisions.append(r.classify(state))
    assert decisions[0].intent == "sql" and decisions[0].method.endswith(":logprob")
    assert decisions[1].intent == "clarify" and decisions[1].method.endswith(":logprob")
    odds = 0.35 * math.e / 0.55  # clarify against sql after the offset
    assert decisions[1].confidence == pytest.approx(odds / (odds + 1 + 5 * 0.02 / 0.55), rel=1e-6)
    tables = [t.name for t in open_database(str(sales_db)).tables()]
    assert f"Tables of the database: {', '.join(tables)}" in engine.prefixes[0]  # names only
    assert "(" in engine.prefixes[1].split("Tables of the database: ")[1]  # tables with their columns
    assert not engine.requests  # both decided in one pass
