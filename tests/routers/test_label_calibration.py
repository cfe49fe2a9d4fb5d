"""Per-intent calibration offsets: how a one-pass distribution is re-read, and the dspy program saving them."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from routerlab.agents.errors import ConfigError
from routerlab.agents.lm.scoring import ChoiceScores
from routerlab.agents.lm.scripted import ScriptedEngine
from routerlab.agents.state import INTENTS
from routerlab.agents.trace import Usage
from routerlab.routers.dspy_router import RouteProgram, load_program
from routerlab.routers.support.label_calibration import calibrated, shift
from routerlab.routers.support.lm_intent import OnePass

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


_weights = st.dictionaries(
    st.sampled_from(INTENTS), st.dictionaries(st.sampled_from(INTENTS), st.floats(-3.0, 3.0)), max_size=4
)


@given(_probs, _offsets, _weights, st.floats(0.01, 100.0))
def test_an_affine_map_gives_a_distribution_and_reads_only_the_ratios_between_labels(probs, offsets, weights, c):
    assume(offsets or weights)  # with neither, the distribution is returned as given
    out = calibrated(probs, offsets, weights)
    assert list(out) == list(probs) and math.isclose(sum(out.values()), 1.0, rel_tol=1e-9)
    scaled = calibrated({k: v * c for k, v in probs.items()}, offsets, weights)
    assert all(math.isclose(scaled[k], out[k], rel_tol=1e-6, abs_tol=1e-9) for k in INTENTS)


@given(_probs, _offsets)
def test_the_identity_matrix_is_the_offsets_alone(probs, offsets):
    identity = {k: {j: float(k == j) for j in INTENTS} for k in INTENTS}
    a, b = calibrated(probs, offsets, identity), calibrated(probs, offsets)
    assert all(math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-12) for k in INTENTS)
    partial = {"sql": identity["sql"]}  # a label without a row keeps its own log probability
    c = calibrated(probs, offsets, partial)
    assert all(math.isclose(c[k], b[k], rel_tol=1e-9, abs_tol=1e-12) for k in INTENTS)


def test_a_matrix_lets_one_labels_probability_move_anothers_decision():
    probs = {k: 0.02 for k in INTENTS} | {"sql": 0.5, "clarify": 0.2, "chat": 0.2}
    probs = {k: v / sum(probs.values()) for k, v in probs.items()}
    weights = {"clarify": {"clarify": 1.0, "chat": 1.0}}  # chat's evidence also counts for clarify
    one = shift(_one(probs), {}, weights)
    assert one.intent == "clarify" and shift(_one(probs), {}, {}).intent == "sql"


def test_the_program_saves_its_affine_map_and_the_router_applies_it(tmp_path, sales_db):
    import dspy

    from routerlab import routers
    from routerlab.agents.db import open_database
    from routerlab.agents.routing import RouterEnv
    from routerlab.agents.state import initial_state
    from routerlab.agents.tools import DEFAULT_TOOLS

    prog = RouteProgram()
    # the engine below puts sql (0.55) ahead of clarify (0.35): a matrix row that doubles
    # clarify's centred log probability is not an offset, and it flips the decision
    prog.route.calibration_weights = {"clarify": {"clarify": 2.0}}
    path = tmp_path / "affine.json"
    prog.save(str(path))
    loaded, _ = load_program(str(path))
    assert loaded.route.calibration_weights == {"clarify": {"clarify": 2.0}} and loaded.route.calibration == {}
    plain = tmp_path / "plain.json"
    RouteProgram().save(str(plain))
    assert "calibration_weights" not in plain.read_text()  # a program without a map saves as before
    lm = dspy.LM("scripted/cal", engine=_Engine(), cache=False)
    r = routers.router.build("dspy", program=str(path))
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    decision = r.classify(initial_state("How did that area do recently?", str(sales_db)))
    probs = {k: 0.02 for k in INTENTS} | {"sql": 0.55, "clarify": 0.35}
    probs = {k: v / sum(probs.values()) for k, v in probs.items()}
    expected = calibrated(probs, {}, {"clarify": {"clarify": 2.0}})
    assert decision.intent == max(expected, key=expected.__getitem__)
    assert decision.confidence == pytest.approx(expected[decision.intent], rel=1e-6)
    with dspy.context(lm=lm):
        assert loaded(tables="t", request="How did that area do recently?").intent == decision.intent
