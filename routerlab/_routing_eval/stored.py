"""First decisions in the results store: a routing comparison kept like an end-to-end session.

``routerlab route`` and the main job's routing part store each router's first decisions as a run
of the session's ``routing`` part (:data:`~routerlab.eval.store.ROUTING`, run id
``<session>.routing.<router>``): one :class:`~routerlab.eval.scoring.ExampleResult` per decision,
scored ``first_decision`` (1: the intent the decision implies is the gold intent or an accepted
alternate, 0: it is not), with the predicted and gold intents, the decision's wall time and LM
usage, and the conversation and turn. ``routerlab compare``, :func:`routerlab.load`, the report
and the notebook then read a routing comparison exactly as an end-to-end one: rates with
intervals (clustered by conversation), McNemar on per-example correctness, diverted, per-intent
recall and the verdict (:func:`routerlab.eval.analysis.build.build_comparison`, the routing part).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from routerlab._routing_eval.decisions import FirstDecision
from routerlab.agents.trace import Usage
from routerlab.benchmarks.dataset import Dataset
from routerlab.benchmarks.example import Example
from routerlab.eval.scoring import ExampleResult, Score
from routerlab.eval.store import ROUTING, ResultsStore, part_run_id

__all__ = ["FIRST_DECISION", "decision_result", "store_decisions"]

#: the score of a stored first decision (1: right intent, 0: wrong or no decision)
FIRST_DECISION = "first_decision"


def decision_result(
    decision: FirstDecision, example: Example, *, router: str, lm: str, dataset: str, split: str
) -> ExampleResult:
    """One first decision as a stored result.

    Its latency is the decision's wall time, its router usage the decision's LM calls and tokens
    (counted cold as well: a first decision has no cold figures of its own); a router that raised
    is an ``error`` outcome scored 0, as a crash is in an end-to-end run.
    """
    # a first decision is never cached: what its LM calls took is their cold time too
    usage = Usage(
        lm_calls=decision.lm_calls,
        latency_s=decision.lm_seconds,
        prompt_tokens=decision.prompt_tokens,
        completion_tokens=decision.completion_tokens,
        cold_prompt_tokens=decision.prompt_tokens,
        cold_completion_tokens=decision.completion_tokens,
        cold_latency_s=decision.lm_seconds,
    )
    confidence = None if math.isnan(decision.confidence) else decision.confidence
    return ExampleResult(
        example_id=decision.example_id,
        dataset=dataset,
        split=split,
        intent=decision.gold,
        difficulty=example.difficulty,
        router=router,
        lm=lm,
        outcome="ok" if decision.error is None else "error",
        error_class=decision.error,
        predicted_intent=decision.predicted,
        scores={
            FIRST_DECISION: Score(
                FIRST_DECISION,
                1.0 if decision.correct else 0.0,
                f"decided {decision.predicted or 'nothing'} ({decision.method or 'no method'}), gold {decision.gold}",
                {
                    "confidence": confidence,
                    "method": decision.method,
                    "history_turns": decision.history_turns,
                    "question": example.question,
                },
            )
        },
        latency_s=decision.seconds,
        router_usage=usage,
        conversation=decision.conversation,
        turn=decision.turn,
    )


def store_decisions(
    store: ResultsStore,
    session_id: str,
    *,
    dataset: Dataset,
    examples: Sequence[Example],
    settings: Mapping[str, Any],
    specs: Mapping[str, Mapping[str, Any]],
    by_router: Mapping[str, Sequence[FirstDecision]],
) -> list[str]:
    """Store every router's first decisions as the session's routing runs; returns their run ids.

    Args:
        store: The results store.
        session_id: The session (the id ``routerlab run`` would give it).
        dataset: The dataset decided on (its name, version and digest are recorded).
        examples: The examples decided, for their difficulty.
        settings: What the decisions depend on besides the router (split, limit, lm, history...),
            recorded as the runs' config.
        specs: ``router name -> component spec`` (its recorded arguments), recorded as params.
        by_router: ``router name -> first decisions``.
    """
    by_id = {e.id: e for e in examples}
    lm = str(settings.get("lm") or "")
    split = str(settings.get("split") or "all")
    run_ids = []
    for name, decisions in by_router.items():
        run_id = part_run_id(session_id, name, ROUTING)
        store.create_run(
            run_id,
            router=name,
            lm=lm,
            dataset=dataset,
            split=split,
            config=settings,
            params={"router": dict(specs.get(name, {})), "session": session_id, "part": ROUTING},
            part=ROUTING,
        )
        results = [
            decision_result(d, by_id[d.example_id], router=name, lm=lm, dataset=dataset.name, split=split)
            for d in decisions
        ]
        store.add_results(run_id, results)
        store.finish_run(run_id)
        run_ids.append(run_id)
    return run_ids
