"""The DSPy optimizers ``routerlab optimize`` can compile the ``dspy`` router's program with.

One registry (:data:`optimizer`), one factory per optimizer. A factory takes plain settings only
(demos, candidates, trials, metric calls, seed), so they are recorded and a compile can be rebuilt
from its provenance; the metric and the LM are given to :meth:`Optimizer.compile`. Every
optimizer runs its evaluations on one thread: the embedded engine serves one call at a time, and
the machine has two cores.

- ``bootstrap``: ``BootstrapFewShot``, demos only; no search (the first demos the teacher gets right).
- ``random_search``: ``BootstrapFewShotWithRandomSearch``, demos; ``candidates`` demo sets, each
  scored on the held-out set.
- ``mipro``: ``MIPROv2`` (``auto=None``), instructions and demos; ``candidates`` instructions and
  demo sets, ``trials`` Bayesian trials on minibatches of the held-out set.
- ``stratified``: labelled demos, ``per_intent`` of every intent of the train set (DSPy's
  ``LabeledFewShot`` draws at random, so the rare intents seldom make it into the prompt); no search.
- ``gepa``: ``GEPA``, instructions; ``metric_calls`` metric calls, the LM reflecting on its mistakes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import dspy

from routerlab.agents.registry import Registry

__all__ = ["Optimizer", "optimizer"]

Metric = Callable[..., Any]


@runtime_checkable
class Optimizer(Protocol):
    """Compiles a student program on a train set, choosing among candidates on a held-out set."""

    def compile(
        self, student: dspy.Module, *, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric, lm: Any
    ) -> dspy.Module:
        """The compiled program (``student`` itself is left unchanged)."""
        ...


optimizer: Registry[Optimizer] = Registry("optimizer", returns=Optimizer)
"""Registry of optimizers for ``routerlab optimize --optimizer NAME``."""


@optimizer("bootstrap")
class Bootstrap:
    """``BootstrapFewShot``: up to ``demos`` demos the teacher got right, topped up with labelled ones.

    It never looks at the held-out set. The labelled top-up is drawn at random from the train
    set, so with mostly data questions most of it is ``sql``.

    Args:
        demos: Bootstrapped demos; labelled demos fill the prompt up to twice as many.
        seed: Unused by DSPy here (the walk order is the caller's shuffle); recorded.
    """

    def __init__(self, demos: int = 4, seed: int = 0) -> None:
        self.demos = demos
        self.seed = seed

    def compile(
        self, student: dspy.Module, *, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric, lm: Any
    ) -> dspy.Module:
        """Bootstrap demos from ``trainset``."""
        tp = dspy.BootstrapFewShot(
            metric=metric, max_bootstrapped_demos=self.demos, max_labeled_demos=2 * self.demos, max_rounds=1
        )
        return tp.compile(student, trainset=trainset)


@optimizer("stratified")
class Stratified:
    """Labelled demos, ``per_intent`` of every intent present in the train set, chosen per seed.

    What DSPy's ``LabeledFewShot`` does, with the draw stratified by gold intent: with data
    questions more than half of a split, a random draw of eight demos often shows no clarify or
    refuse request at all, and a one-pass reader then hardly ever answers those labels. Demos
    are ordered intent by intent, in the order of :data:`routerlab.agents.state.INTENTS`.

    Args:
        per_intent: Demos of each intent.
        seed: Which examples are drawn.
    """

    def __init__(self, per_intent: int = 1, seed: int = 0) -> None:
        self.per_intent = per_intent
        self.seed = seed

    def compile(
        self, student: dspy.Module, *, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric, lm: Any
    ) -> dspy.Module:
        """Draw the demos; no LM call."""
        import random

        from routerlab.agents.state import INTENTS

        rng = random.Random(self.seed)
        demos: list[dspy.Example] = []
        for intent in INTENTS:
            pool = [e for e in trainset if e.intent == intent]
            demos.extend(rng.sample(pool, min(self.per_intent, len(pool))))
        program = student.deepcopy()
        for predictor in program.predictors():
            predictor.demos = list(demos)
        return program


@optimizer("random_search")
class RandomSearch:
    """``BootstrapFewShotWithRandomSearch``: zero-shot, labelled-only, and ``candidates`` bootstrapped demo sets.

    Every candidate (``candidates + 3`` programs) is scored on the held-out set; the best is kept.

    Args:
        demos: Most bootstrapped demos per candidate (each draws 1..demos); labelled demos fill up
            to ``labeled`` in all.
        labeled: Most demos per candidate.
        candidates: Shuffled bootstrap candidates (DSPy seeds 0..candidates-1).
        seed: Recorded; DSPy seeds the candidates itself.
    """

    def __init__(self, demos: int = 4, labeled: int = 8, candidates: int = 8, seed: int = 0) -> None:
        self.demos = demos
        self.labeled = labeled
        self.candidates = candidates
        self.seed = seed

    def compile(
        self, student: dspy.Module, *, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric, lm: Any
    ) -> dspy.Module:
        """Search demo sets, choose on ``valset``."""
        tp = dspy.BootstrapFewShotWithRandomSearch(
            metric=metric,
            max_bootstrapped_demos=self.demos,
            max_labeled_demos=self.labeled,
            num_candidate_programs=self.candidates,
            num_threads=1,
        )
        return tp.compile(student, trainset=trainset, valset=valset)


@optimizer("mipro")
class Mipro:
    """``MIPROv2`` with explicit budgets (``auto=None``): proposed instructions x bootstrapped demo sets.

    The LM proposes ``candidates`` instructions (each one generation) and bootstraps as many
    demo sets; ``trials`` Bayesian-optimisation trials then score combinations on minibatches of
    the held-out set. The proposer sees tips and demos but neither the program's source nor a
    data summary: on a 1.5B model those add several long generations each and little signal.

    Args:
        demos: Bootstrapped demos per demo set (labelled ones up to the same number).
        candidates: Instruction candidates and demo-set candidates.
        trials: Optimisation trials.
        minibatch_size: Held-out examples per trial (a full evaluation every 5 trials).
        seed: MIPROv2's seed.
    """

    def __init__(self, demos: int = 4, candidates: int = 4, trials: int = 8, minibatch_size: int = 20, seed: int = 0):
        self.demos = demos
        self.candidates = candidates
        self.trials = trials
        self.minibatch_size = minibatch_size
        self.seed = seed

    def compile(
        self, student: dspy.Module, *, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric, lm: Any
    ) -> dspy.Module:
        """Propose, bootstrap and search; choose on ``valset``."""
        tp = dspy.MIPROv2(
            metric=metric,
            prompt_model=lm,
            task_model=lm,
            auto=None,
            num_candidates=self.candidates,
            max_bootstrapped_demos=self.demos,
            max_labeled_demos=self.demos,
            num_threads=1,
            seed=self.seed,
            verbose=False,
        )
        return tp.compile(
            student,
            trainset=trainset,
            valset=valset,
            num_trials=self.trials,
            minibatch=len(valset) > self.minibatch_size,
            minibatch_size=self.minibatch_size,
            program_aware_proposer=False,
            data_aware_proposer=False,
            seed=self.seed,
        )


@optimizer("gepa")
class Gepa:
    """``GEPA``: the LM reads the program's mistakes on a few train examples and rewrites its instructions.

    Candidates are kept on a Pareto front of held-out scores. The reflection LM is the routing LM
    (no other model is available offline). Demos are left as the student has them.

    Args:
        metric_calls: Metric calls in all (``max_metric_calls``), held-out evaluations included.
        minibatch: Train examples per reflection.
        seed: GEPA's seed.
    """

    def __init__(self, metric_calls: int = 300, minibatch: int = 4, seed: int = 0) -> None:
        self.metric_calls = metric_calls
        self.minibatch = minibatch
        self.seed = seed

    def compile(
        self, student: dspy.Module, *, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric, lm: Any
    ) -> dspy.Module:
        """Reflect and rewrite; choose on ``valset``."""
        tp = dspy.GEPA(
            metric=metric,
            max_metric_calls=self.metric_calls,
            reflection_minibatch_size=self.minibatch,
            reflection_lm=lm,
            # weighted scores: an example of a common intent never reaches 1.0, so "perfect"
            # minibatches would never be skipped for the right reason
            skip_perfect_score=False,
            use_merge=False,
            num_threads=1,
            seed=self.seed,
            warn_on_score_mismatch=False,
        )
        return tp.compile(student, trainset=trainset, valset=valset)
