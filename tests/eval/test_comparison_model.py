"""The one model of a session's comparison, built from a real results store of hand-built results."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from routerlab._routing_eval.decisions import FirstDecision
from routerlab._routing_eval.stored import decision_result
from routerlab.benchmarks.example import Example
from routerlab.eval.analysis.build import build_comparison
from routerlab.eval.analysis.model import SessionComparison
from routerlab.eval.store import END_TO_END, ROUTING, ResultsStore, part_run_id
from tests.eval.conftest import build_dataset, build_result

SESSION = "20261206-050000-abcd"
INTENTS = ["sql"] * 24 + ["chat"] * 6 + ["clarify"] * 6 + ["refuse"] * 4


def _decisions(router: str) -> list[tuple[str, str]]:
    """``(gold, decided)`` per request: always_sql and single_call decide sql; the others mostly right."""
    rng = random.Random(router)
    out = []
    for gold in INTENTS:
        if router in ("always_sql", "single_call"):
            out.append((gold, "sql"))
        elif router == "rules":
            out.append((gold, gold if rng.random() < 0.7 else "sql"))
        else:
            out.append((gold, gold if rng.random() < 0.95 else "chat"))
    return out


def _routing(router: str, ms: float) -> list:
    results = []
    for i, (gold, decided) in enumerate(_decisions(router)):
        example = Example(
            id=f"q{i:02d}",
            question=f"request number {i}",
            db_id="x",
            db_path="x.db",
            intent=gold,
            gold_sql="SELECT 1",
            user_reply="yes",
        )
        d = FirstDecision(
            example_id=example.id,
            gold=gold,
            predicted=decided,
            correct=decided == gold,
            method=f"{router}:rule",
            lm_calls=0,
            prompt_tokens=0,
            completion_tokens=0,
            # the first decision of a run is slow (imports, warm-up): a median ignores it
            seconds=(ms * (30 if i == 0 else 1) + i * 0.01) / 1000,
            confidence=0.8,
        )
        results.append(decision_result(d, example, router=router, lm="scripted", dataset="toy", split="dev"))
    return results


#: which of the five end-to-end requests each router gets right (no two alike)
E2E_RIGHT = {
    "always_sql": "10101",
    "rules": "11001",
    "semantic": "01110",
    "single_call": "11100",
    "hybrid": "11111",
}


def _e2e(router: str) -> list:
    golds = ["sql", "chat", "refuse", "sql", "clarify"]
    out = []
    for i, gold in enumerate(golds):
        right = E2E_RIGHT[router][i] == "1"
        scores = {
            "success": 1.0 if right else 0.0,
            "ex": (1.0 if right else 0.0) if gold in ("sql", "clarify") else None,
            "route": 1.0 if right else 0.0,
            "chain_valid": 1.0,
        }
        out.append(build_result(f"e{i}", router, scores, intent=gold, latency=2.0 + i, question=f"e2e request {i}"))
    return out


ROUTERS = ["always_sql", "rules", "semantic", "hybrid", "single_call"]


def make_session(path: Path, order: Sequence[str] = ROUTERS, *, e2e: bool = True) -> ResultsStore:
    """A session with a routing part (and an end-to-end part), its runs stored in ``order``."""
    store = ResultsStore(path)
    dataset = build_dataset()
    for router in order:
        rid = part_run_id(SESSION, router, ROUTING)
        store.create_run(rid, router=router, lm="scripted", dataset=dataset, split="dev", part=ROUTING)
        results = _routing(router, ms=1.0 + ROUTERS.index(router))
        store.add_results(rid, list(reversed(results)) if order != ROUTERS else results)
        store.finish_run(rid)
    if e2e:
        for router in order:
            rid = part_run_id(SESSION, router, END_TO_END)
            store.create_run(rid, router=router, lm="scripted", dataset=dataset, split="dev")
            store.add_results(rid, _e2e(router))
            store.finish_run(rid)
    return store


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> SessionComparison:
    return build_comparison(make_session(tmp_path_factory.mktemp("s") / "results.duckdb"), SESSION)


def test_the_model_round_trips_through_json(model: SessionComparison) -> None:
    text = model.to_json()
    back = SessionComparison.from_json(text)
    assert back == model
    assert json.loads(back.to_json()) == json.loads(text)


def test_swapping_the_run_order_leaves_every_figure_unchanged(tmp_path: Path, model: SessionComparison) -> None:
    swapped = build_comparison(make_session(tmp_path / "swapped.duckdb", list(reversed(ROUTERS))), SESSION)
    assert swapped.to_dict() == model.to_dict()


def test_each_part_has_only_its_own_measures(model: SessionComparison) -> None:
    routing, e2e = model.part(ROUTING), model.part(END_TO_END)
    assert routing.measures == ["routing_accuracy", "diverted"]
    assert routing.verdict_measures == ["routing_accuracy"]
    assert "routing_accuracy" not in e2e.measures
    # the data has turns that expect a question: the end-to-end verdict judges what the user got
    assert e2e.verdict_measures == ["served", "ex"]
    assert e2e.measures[:2] == ["served", "ex"] and "pipeline_route" in e2e.measures
    for part in model.parts:
        for r in part.routers:
            assert set(r.rates) <= set(part.measures)


def test_a_baseline_that_repeats_another_is_shown_once_and_never_tested(model: SessionComparison) -> None:
    routing = model.part(ROUTING)
    assert routing.router("single_call").same_as == "always_sql"
    assert routing.router("always_sql").same_as is None
    tested = {t.a for t in routing.pairs} | {t.b for t in routing.pairs}
    assert "single_call" not in tested
    # one test per pair of distinct routers on the verdict measure
    assert len(routing.pairs) == 6
    assert len({(t.a, t.b) for t in routing.pairs}) == 6
    assert all(t.test == "McNemar" for t in routing.pairs)


def test_rates_failures_and_verdict_agree(model: SessionComparison) -> None:
    routing = model.part(ROUTING)
    for r in routing.routers:
        acc = r.rates["routing_accuracy"]
        wrong = sum(decided != gold for gold, decided in _decisions(r.router))
        assert acc.n == len(INTENTS) and acc.count == len(INTENTS) - wrong
        assert acc.value == pytest.approx(1 - wrong / len(INTENTS))
        assert len(r.failures) == wrong
        assert all(f.question.startswith("request number") and f.method for f in r.failures)
    v = routing.verdicts[0]
    assert (
        v.best
        == max((r for r in routing.routers if not r.baseline), key=lambda r: r.rates["routing_accuracy"].value).router
    )
    assert not v.smoke
    assert set(v.references) == {"always_sql"}


def test_costs_are_medians_and_tails_not_means(model: SessionComparison) -> None:
    rules = model.part(ROUTING).router("rules")
    # 2 ms per decision, the first one 30x slower: the median stays near 2 ms
    assert 2.0 < rules.cost.p50 < 2.5
    assert rules.cost.unit == "ms per decision"
    assert model.part(END_TO_END).router("rules").cost.unit == "s per request"


def test_disagreements_are_within_a_part_with_each_routers_reason(model: SessionComparison) -> None:
    routing = model.part(ROUTING)
    assert routing.disagreements
    for d in routing.disagreements:
        assert set(d.decisions) == {"rules", "semantic", "hybrid"}  # baselines are references
        assert len({x.intent for x in d.decisions.values()}) > 1
        assert all(x.method.endswith(":rule") and x.confidence == 0.8 for x in d.decisions.values())
        assert d.question.startswith("request number")


def test_a_tiny_end_to_end_part_is_a_smoke_check(model: SessionComparison) -> None:
    e2e = model.part(END_TO_END)
    assert e2e.smoke
    assert all(r.n == 5 for r in e2e.routers)


def test_a_route_only_session_has_one_part(tmp_path: Path) -> None:
    m = build_comparison(make_session(tmp_path / "r.duckdb", e2e=False), SESSION)
    assert [p.key for p in m.parts] == [ROUTING]


def test_the_models_baselines_are_the_registrys() -> None:
    from routerlab.eval.analysis import build
    from routerlab.routers import BASELINES

    assert build._BASELINES == BASELINES


def test_the_words_never_print_a_degenerate_interval_or_a_best_of_a_smoke_check(model: SessionComparison) -> None:
    from routerlab.eval.analysis.model import Interval
    from routerlab.eval.analysis.words import interval_text, verdict_sentences

    assert interval_text(Interval(1.0, 1.0, 1.0, 5, 5)) == "1.00 (5/5)"
    assert interval_text(Interval(0.5, 0.2, 0.8, 10, 5)) == "0.50 [0.20, 0.80]"
    e2e = model.part(END_TO_END)
    said = " ".join(verdict_sentences(e2e, e2e.verdicts[0]))
    assert "too few to compare: n=5" in said and "best" not in said
    routing = model.part(ROUTING)
    said = " ".join(verdict_sentences(routing, routing.verdicts[0]))
    best = routing.router(routing.verdicts[0].best)
    assert said.startswith(f"routing accuracy (n={len(INTENTS)}): best {best.router} ")
    assert f"p50; p95 {best.cost.p95:.1f}" in said or "Cheapest within its interval" in said
