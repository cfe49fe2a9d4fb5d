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
- ``calibrated``: any of the above (``base``), then a calibration of the one-pass distribution
  fitted on the train set (:mod:`routerlab.fit.label_calibration_fit`): per-intent log-prior offsets that
  maximise the routing score (``map=offsets``) or an L2-regularised affine map of the labels' log
  probabilities (``map=affine``), optionally choosing among instruction variants (``instructions``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import dspy

from routerlab.agents.errors import ConfigError
from routerlab.agents.registry import Registry
from routerlab.agents.state import INTENTS
from routerlab.fit.label_calibration_fit import MAPS, score_with_map
from routerlab.routers.dspy_router import INSTRUCTIONS
from routerlab.routers.support.lm_intent import IntentPrompt, classify_one_pass

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

# The optimizers whose settings are plain fields are dataclasses: the generated constructor is
# the one home of their settings plumbing, and the registry reads its signature like any other.


class _Teleprompted:
    """The compile step shared by the optimizers that are one DSPy teleprompter each.

    A subclass says which teleprompter its settings build (:meth:`_teleprompter`) and any
    options its ``compile`` takes beyond the sets (:meth:`_compile_options`); this class runs it.
    """

    #: whether the teleprompter chooses among candidates on the held-out set
    uses_valset: ClassVar[bool] = True

    def _teleprompter(self, metric: Metric, lm: Any) -> Any:
        """The DSPy teleprompter these settings build (``metric`` scores, ``lm`` proposes or reflects)."""
        raise NotImplementedError

    def _compile_options(self, valset: list[dspy.Example]) -> dict[str, Any]:
        """Options of the teleprompter's ``compile`` beyond the sets (none by default)."""
        return {}

    def compile(
        self, student: dspy.Module, *, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric, lm: Any
    ) -> dspy.Module:
        """Build the teleprompter and compile ``student`` with it."""
        sets = {"trainset": trainset, **({"valset": valset} if self.uses_valset else {})}
        return self._teleprompter(metric, lm).compile(student, **sets, **self._compile_options(valset))


@optimizer("bootstrap")
@dataclass
class Bootstrap(_Teleprompted):
    """``BootstrapFewShot``: up to ``demos`` demos the teacher got right, topped up with labelled ones.

    It never looks at the held-out set. The labelled top-up is drawn at random from the train
    set, so with mostly data questions most of it is ``sql``.

    Attributes:
        demos: Bootstrapped demos; labelled demos fill the prompt up to twice as many.
        seed: Unused by DSPy here (the walk order is the caller's shuffle); recorded.
    """

    uses_valset: ClassVar[bool] = False
    demos: int = 4
    seed: int = 0

    def _teleprompter(self, metric: Metric, lm: Any) -> Any:
        """Bootstraps demos from the train set only."""
        return dspy.BootstrapFewShot(
            metric=metric, max_bootstrapped_demos=self.demos, max_labeled_demos=2 * self.demos, max_rounds=1
        )


@optimizer("stratified")
@dataclass
class Stratified:
    """Labelled demos, ``per_intent`` of every intent present in the train set, chosen per seed.

    What DSPy's ``LabeledFewShot`` does, with the draw stratified by gold intent: with data
    questions more than half of a split, a random draw of eight demos often shows no clarify or
    refuse request at all, and a one-pass reader then hardly ever answers those labels. Demos
    are ordered intent by intent, in the order of :data:`routerlab.agents.state.INTENTS`.

    Attributes:
        per_intent: Demos of each intent.
        seed: Which examples are drawn.
    """

    per_intent: int = 1
    seed: int = 0

    def compile(
        self, student: dspy.Module, *, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric, lm: Any
    ) -> dspy.Module:
        """Draw the demos; no LM call."""
        import random

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
@dataclass
class RandomSearch(_Teleprompted):
    """``BootstrapFewShotWithRandomSearch``: zero-shot, labelled-only, and ``candidates`` bootstrapped demo sets.

    Every candidate (``candidates + 3`` programs) is scored on the held-out set; the best is kept.

    Attributes:
        demos: Most bootstrapped demos per candidate (each draws 1..demos); labelled demos fill up
            to ``labeled`` in all.
        labeled: Most demos per candidate.
        candidates: Shuffled bootstrap candidates (DSPy seeds 0..candidates-1).
        seed: Recorded; DSPy seeds the candidates itself.
    """

    demos: int = 4
    labeled: int = 8
    candidates: int = 8
    seed: int = 0

    def _teleprompter(self, metric: Metric, lm: Any) -> Any:
        """Searches demo sets, chooses on the held-out set."""
        return dspy.BootstrapFewShotWithRandomSearch(
            metric=metric,
            max_bootstrapped_demos=self.demos,
            max_labeled_demos=self.labeled,
            num_candidate_programs=self.candidates,
            num_threads=1,
        )


@optimizer("mipro")
@dataclass
class Mipro(_Teleprompted):
    """``MIPROv2`` with explicit budgets (``auto=None``): proposed instructions x bootstrapped demo sets.

    The LM proposes ``candidates`` instructions (each one generation) and bootstraps as many
    demo sets; ``trials`` Bayesian-optimisation trials then score combinations on minibatches of
    the held-out set. The proposer sees tips and demos but neither the program's source nor a
    data summary: on a 1.5B model those add several long generations each and little signal.

    Attributes:
        demos: Bootstrapped demos per demo set (labelled ones up to the same number).
        candidates: Instruction candidates and demo-set candidates.
        trials: Optimisation trials.
        minibatch_size: Held-out examples per trial (a full evaluation every 5 trials).
        seed: MIPROv2's seed.
    """

    demos: int = 4
    candidates: int = 4
    trials: int = 8
    minibatch_size: int = 20
    seed: int = 0

    def _teleprompter(self, metric: Metric, lm: Any) -> Any:
        """Proposes, bootstraps and searches; chooses on the held-out set."""
        return dspy.MIPROv2(
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

    def _compile_options(self, valset: list[dspy.Example]) -> dict[str, Any]:
        return {
            "num_trials": self.trials,
            "minibatch": len(valset) > self.minibatch_size,
            "minibatch_size": self.minibatch_size,
            "program_aware_proposer": False,
            "data_aware_proposer": False,
            "seed": self.seed,
        }


@optimizer("gepa")
@dataclass
class Gepa(_Teleprompted):
    """``GEPA``: the LM reads the program's mistakes on a few train examples and rewrites its instructions.

    Candidates are kept on a Pareto front of held-out scores. The reflection LM is the routing LM
    (no other model is available offline). Demos are left as the student has them.

    Attributes:
        metric_calls: Metric calls in all (``max_metric_calls``), held-out evaluations included.
        minibatch: Train examples per reflection.
        seed: GEPA's seed.
    """

    metric_calls: int = 300
    minibatch: int = 4
    seed: int = 0

    def _teleprompter(self, metric: Metric, lm: Any) -> Any:
        """Reflects and rewrites; chooses on the held-out set."""
        return dspy.GEPA(
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


@optimizer("calibrated")
class Calibrated:
    """A ``base`` optimizer's program, then a calibration of its one-pass distribution fitted on the train set.

    The base optimizer compiles first (``stratified`` by default: a demo of every intent). Then
    every train example that is not one of the program's demos (a demo would read its own label
    back) is scored once in one pass with the compiled prompt, and the ``map``
    (:data:`routerlab.fit.label_calibration_fit.MAPS`) is fitted on those distributions: ``offsets``, one
    log-prior offset per intent chosen to maximise the routing score
    (:func:`routerlab.fit.label_calibration_fit.fit_offsets`), or ``affine``, a matrix and offsets over the
    labels' log probabilities, L2-regularised towards the identity
    (:func:`routerlab.fit.label_calibration_fit.fit_affine`). With ``instructions``, each named instruction
    variant (:data:`routerlab.routers.dspy_router.INSTRUCTIONS`) replaces the program's
    instructions in turn, its train distributions are read and its map fitted, and the variant
    whose cross-validated routing score on those distributions is highest is kept (ties: the
    first named). The calibration is saved in the program; the held-out set is never read (the
    caller scores it afterwards, as for every optimizer). The routing score is the metric's (its
    ``safety`` multiplier). After a compile, ``notes`` holds the routing score of the train
    distributions before and after the calibration, what cross-validation chose, and the
    distributions themselves (``calibration_data``: gold, accepted, probabilities).

    Args:
        base: The optimizer whose program is calibrated (any registered one but ``calibrated``).
        base_args: Its settings (its ``seed`` defaults to ``seed``).
        max_offset: ``map=offsets``: bound on every offset, in nats.
        folds: 0: no cross-validation (``offsets`` fits with ``max_offset``, ``affine`` with
            ``l2``); 2 or more: ``offsets`` chooses its bound among 0, 0.25, 0.5, 1, 1.5, 2, 3
            (up to ``max_offset``), ``affine`` its L2 strength among
            :data:`routerlab.fit.label_calibration_fit.L2_GRID` unless ``l2`` is given, by ``folds``-fold
            cross-validation on the same train distributions.
        seed: The base optimizer's seed; the fit itself is deterministic.
        map: ``offsets`` (the default) or ``affine``.
        l2: ``map=affine``: the L2 strength (None: chosen by cross-validation, which needs folds).
        instructions: Instruction variants to choose among (None: the base program's own).

    Raises:
        ConfigError: ``base`` is ``calibrated`` or unknown, ``base_args`` do not fit it, or a
            map, instruction variant or number of folds that cannot be used.
    """

    def __init__(
        self,
        base: str = "stratified",
        base_args: dict[str, Any] | None = None,
        max_offset: float = 3.0,
        folds: int = 0,
        seed: int = 0,
        map: str = "offsets",  # shadows the builtin: it is the argument's name on the command line
        l2: float | None = None,
        instructions: list[str] | None = None,
    ) -> None:
        if base == "calibrated":
            raise ConfigError(
                "the calibrated optimizer cannot calibrate itself",
                expected="a base optimizer among " + ", ".join(n for n in optimizer.names() if n != "calibrated"),
                found="base=calibrated",
                fix="pass --optimizer-arg base=stratified (or bootstrap, random_search, mipro, gepa)",
            )
        if max_offset < 0:
            raise ConfigError(
                "max_offset must be non-negative",
                expected="a bound in nats, e.g. 3.0",
                found=str(max_offset),
                fix="pass --optimizer-arg max_offset=3",
            )
        if folds == 1 or folds < 0:
            raise ConfigError(
                "folds must be 0 (no cross-validation) or at least 2",
                expected="0, or a number of folds >= 2",
                found=str(folds),
                fix="pass --optimizer-arg folds=5",
            )
        if map not in MAPS:
            raise ConfigError(
                f"unknown calibration map {map!r}",
                expected="one of " + ", ".join(MAPS),
                found=repr(map),
                fix="pass --optimizer-arg map=offsets or map=affine",
            )
        if l2 is not None and l2 < 0:
            raise ConfigError(
                "l2 must be non-negative",
                expected="an L2 strength, e.g. 0.1",
                found=str(l2),
                fix="pass --optimizer-arg l2=0.1, or leave it out and pass folds=5 to choose it",
            )
        if map == "affine" and l2 is None and not folds:
            raise ConfigError(
                "map=affine needs an L2 strength or cross-validation to choose one",
                expected="l2=VALUE, or folds >= 2",
                found="neither l2 nor folds",
                fix="pass --optimizer-arg folds=5 (or --optimizer-arg l2=0.1)",
            )
        unknown = [v for v in instructions or [] if v not in INSTRUCTIONS]
        if instructions is not None and (not instructions or unknown):
            raise ConfigError(
                "instructions must name known instruction variants",
                expected="a non-empty list among " + ", ".join(INSTRUCTIONS),
                found=repr(instructions),
                fix='pass --optimizer-arg \'instructions=["brief", "tools"]\'',
            )
        if instructions and len(instructions) > 1 and not folds:
            raise ConfigError(
                "choosing among instruction variants needs cross-validation",
                expected="folds >= 2 with two or more instruction variants",
                found=f"folds=0, instructions={instructions}",
                fix="pass --optimizer-arg folds=5",
            )
        self.base = base
        self.base_args = dict(base_args or {})
        self.max_offset = max_offset
        self.folds = folds
        self.seed = seed
        self.map = map
        self.l2 = l2
        self.instructions = list(instructions) if instructions is not None else None
        self._base = optimizer.build(base, **{"seed": seed, **self.base_args})
        self.notes: dict[str, Any] = {}

    def _read(self, program: dspy.Module, trainset: list[dspy.Example], lm: Any) -> tuple[list, list, list]:
        """The one-pass distributions of the train examples the program does not show as demos."""
        prompt = IntentPrompt.from_predict(program.route)
        shown = {demo[1] for demo in prompt.demos}
        dists, gold, accepted = [], [], []
        for ex in trainset:
            if ex.request in shown:
                continue
            one = classify_one_pass(
                lm,
                prompt,
                tables=ex.tables,
                request=ex.request,
                conversation=ex.conversation,
                note=str(ex.get("evidence", "") or ""),
            )
            if one is None:
                raise ConfigError(
                    "calibration needs the LM's label probabilities",
                    expected="an LM that scores labels in one pass (the embedded engine, or log probabilities)",
                    found=f"{getattr(lm, 'model', lm)!r} cannot score labels",
                    fix="compile with --lm local, or use an optimizer other than calibrated",
                )
            dists.append(one.scores.probs)
            gold.append(ex.intent)
            accepted.append(list(ex.accepted))
        if not dists:
            raise ConfigError(
                "no train example left to fit the calibration on",
                expected="train examples that are not among the program's demos",
                found=f"{len(trainset)} train examples, all shown as demos",
                fix="use more train examples or fewer demos",
            )
        return dists, gold, accepted

    def compile(
        self, student: dspy.Module, *, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric, lm: Any
    ) -> dspy.Module:
        """Compile with the base optimizer, read the train distributions, fit and set the calibration."""
        base = self._base.compile(student, trainset=trainset, valset=valset, metric=metric, lm=lm)
        safety = float(getattr(metric, "safety", 2.0))
        fit_map = MAPS[self.map]
        tried: list[tuple[float, str | None, dspy.Module, Any, tuple[list, list, list]]] = []
        variants: list[str | None] = [*(self.instructions or [])] or [None]
        for variant in variants:
            program = base.deepcopy()
            if variant is not None:
                program.route.signature = program.route.signature.with_instructions(INSTRUCTIONS[variant])
            data = self._read(program, trainset, lm)
            fitted = fit_map(
                *data, labels=INTENTS, safety=safety, folds=self.folds, max_offset=self.max_offset, l2=self.l2
            )
            cv = [v for k, v in fitted.notes.items() if k.startswith("calibration_cv_score")]
            tried.append((max(cv, default=float("nan")), variant, program, fitted, data))
        # the best cross-validated score; ties (and a single variant) keep the first named
        best = max(range(len(tried)), key=lambda i: (tried[i][0], -i)) if len(tried) > 1 else 0
        _, variant, program, fitted, (dists, gold, accepted) = tried[best]
        program.route.calibration = dict(fitted.offsets)
        program.route.calibration_weights = {k: dict(row) for k, row in fitted.weights.items()}
        self.notes = {
            "calibration_map": self.map,
            "calibration_examples": len(dists),
            **fitted.notes,
            **({"instructions": variant} if variant is not None else {}),
            **{f"instructions_cv_score_{v}": round(s, 4) for s, v, *_ in tried if v is not None and len(tried) > 1},
            "calibration_score_before": round(
                score_with_map(dists, gold, accepted, {}, {}, labels=INTENTS, safety=safety), 4
            ),
            "calibration_score_after": round(
                score_with_map(dists, gold, accepted, fitted.weights, fitted.offsets, labels=INTENTS, safety=safety),
                4,
            ),
            # what the calibration was fitted on, so it can be refitted (and checked) without the model
            "calibration_data": [
                {"gold": g, "accepted": a, "probs": {k: float(v) for k, v in d.items()}}
                for d, g, a in zip(dists, gold, accepted, strict=True)
            ],
        }
        return program
